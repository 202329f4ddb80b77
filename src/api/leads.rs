//! Handlers of `/v1/leads` and `/v1/leads/{id}`.

use hyper::{Response, StatusCode};
use serde_json::{Map, Value};

use super::request::Query;
use super::response::{json as reply, json_bytes, Body};
use super::views;
use crate::domain::engagement::reactions::React;
use crate::domain::records::leads;
use crate::domain::records::listing::{self, LeadQuery};
use crate::domain::records::search::{self, After, LeadFilter};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Reader;
use crate::store::Store;

pub fn list(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let q = LeadQuery {
        updated_since: query.timestamp("updatedSince")?,
        created_since: query.timestamp("createdSince")?,
        limit: query.limit_or_default()?,
        next_token: query.next_token(),
    };
    let read = store.read()?;
    let body = views::leads_page(q.limit, |out| {
        listing::leads(&read, store.cursor_key(), caller, &q, out)
    })?;
    Ok(json_bytes(StatusCode::OK, body))
}

/// `GET /v1/leads/search`: the console's lead query for integrators.
pub fn search(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let filter = LeadFilter::from_params(query.pairs())?;
    let limit = query.limit_or_default()?;
    let after: Option<After> = match query.next_token() {
        Some(token) => Some(search::open_token(
            store.cursor_key(),
            &caller.org_id,
            &filter,
            &token,
        )?),
        None => None,
    };
    let read = store.read()?;
    let page = search::search(&read, &caller.org_id, &filter, limit, after.as_ref())?;
    let mut leads = Vec::with_capacity(page.leads.len());
    for found in &page.leads {
        let Some(lead) = read.lead(&caller.org_id, &found.id)? else {
            continue;
        };
        let engagement = read.engagement(&caller.org_id, &found.id)?;
        leads.push(views::lead_with_engagement(&lead, engagement.as_ref())?);
    }
    let next_token = match &page.next {
        Some(next) => Some(search::seal_next(
            store.cursor_key(),
            &caller.org_id,
            &filter,
            next,
        )?),
        None => None,
    };
    Ok(reply(
        StatusCode::OK,
        &serde_json::json!({"leads": leads, "total": page.total, "nextToken": next_token}),
    ))
}

pub fn get(store: &Store, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let lead = store
        .read()?
        .lead(&caller.org_id, id)?
        .ok_or_else(|| Error::lead_not_found(id))?;
    Ok(json_bytes(StatusCode::OK, views::lead(&lead)?))
}

pub async fn create(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let input = leads::LeadInput::from_json(&body)?;
    let lead = store
        .write(move |tx| leads::create(tx, &caller, input.clone()).react(tx))
        .await?;
    Ok(json_bytes(StatusCode::CREATED, views::lead(&lead)?))
}

pub async fn update(
    store: &Store,
    caller: Caller,
    id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let patch = leads::LeadPatch::from_json(&body)?;
    let id = id.to_string();
    let lead = store
        .write(move |tx| leads::update(tx, &caller, &id, patch.clone()).react(tx))
        .await?;
    Ok(json_bytes(StatusCode::OK, views::lead(&lead)?))
}

pub async fn delete(store: &Store, caller: Caller, id: &str) -> Result<Response<Body>> {
    let id = id.to_string();
    let lead = store
        .write(move |tx| leads::delete(tx, &caller, &id).react(tx))
        .await?;
    Ok(json_bytes(StatusCode::OK, views::lead(&lead)?))
}

/// `POST /v1/leads/import?dryRun=&mode=&onMatch=&profile=`: the body is the file (`text/csv` or
/// `application/x-ndjson`), read as it arrives, at most `max_import_bytes` (a declared
/// length over it: 413 before a byte is read; a body growing past it: 413 at the cap);
/// answers the report, the first refusals listed, every one in the file at
/// `refusedUrl`.
pub async fn import(
    state: &super::AppState,
    caller: Caller,
    headers: &hyper::HeaderMap,
    query: &Query,
    mut body: super::request::RequestBody,
) -> Result<Response<Body>> {
    use crate::domain::import::files;
    let max = state.imports.max_bytes;
    body.stream(max);
    let mut options = import_options(headers, query)?;
    if hyper::body::Body::size_hint(&body).lower() > max {
        body.refuse_rest();
        return Err(Error::PayloadTooLarge);
    }
    let token = files::new_token();
    options.refused_to = Some(files::refused_path(
        state.store.dir(),
        &caller.org_id,
        &token,
    ));
    let frames = futures_util::stream::unfold((body, 0u64), move |(mut body, read)| async move {
        use http_body_util::BodyExt;
        loop {
            match body.frame().await? {
                Ok(frame) => match frame.into_data() {
                    Ok(data) => {
                        let read = read + data.len() as u64;
                        if read > max {
                            // Cut at the cap: the rest is not read (the connection closes).
                            body.refuse_rest();
                            let cut = std::io::Error::other(Error::PayloadTooLarge);
                            return Some((Err(cut), (body, read)));
                        }
                        return Some((Ok(data), (body, read)));
                    }
                    Err(_) => continue, // trailers
                },
                Err(e) => return Some((Err(std::io::Error::other(Error::from(e))), (body, read))),
            }
        }
    });
    let reader = tokio_util::io::StreamReader::new(Box::pin(frames));
    let report =
        crate::domain::import::run(&state.store, &caller, &options, reader, |_| {}).await?;
    let mut answer = serde_json::to_value(&report)
        .map_err(|e| Error::Internal(format!("the import's report: {e}")))?;
    let url = report
        .refused_file
        .is_some()
        .then(|| format!("/v1/leads/import/{token}/refused.csv"));
    answer["refusedUrl"] = url.map_or(serde_json::Value::Null, serde_json::Value::String);
    Ok(reply(StatusCode::OK, &answer))
}

/// `GET /v1/leads/import/{id}/refused.csv`: an import's refused rows, kept an hour.
pub async fn import_refused(
    state: &super::AppState,
    caller: &Caller,
    id: &str,
) -> Result<Response<Body>> {
    use crate::domain::import::files;
    let gone = || Error::NotFound("Resource not found: refused rows of this import".into());
    if !files::valid_token(id) {
        return Err(gone());
    }
    let path = files::refused_path(state.store.dir(), &caller.org_id, id);
    let file = tokio::fs::File::open(&path).await.map_err(|_| gone())?;
    let stream = tokio_util::io::ReaderStream::new(file);
    let body = http_body_util::StreamBody::new(futures_util::StreamExt::map(stream, |chunk| {
        chunk.map(hyper::body::Frame::data)
    }));
    let mut response = Response::new(http_body_util::BodyExt::boxed(body));
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        hyper::header::CONTENT_DISPOSITION,
        hyper::header::HeaderValue::from_static("attachment; filename=\"refused-rows.csv\""),
    );
    Ok(response)
}

/// The import's options from its `Content-Type` and query; anything unknown is a 400.
fn import_options(
    headers: &hyper::HeaderMap,
    query: &Query,
) -> Result<crate::domain::import::Options> {
    use crate::domain::import::{Format, OnMatch, Options};
    let content_type = headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let format = Format::of_content_type(content_type).ok_or_else(|| {
        Error::UnsupportedMediaType("Content-Type must be text/csv or application/x-ndjson".into())
    })?;
    let mut options = Options {
        format,
        dry_run: false,
        create_only: false,
        on_match: OnMatch::Update,
        profile: None,
        fields: None,
        refused_to: None,
    };
    for (name, value) in query.pairs() {
        match (name, value) {
            ("dryRun", "true") => options.dry_run = true,
            ("dryRun", "false") => options.dry_run = false,
            ("mode", "create-only") => options.create_only = true,
            ("mode", "update") => options.create_only = false,
            ("onMatch", value) if OnMatch::parse(value).is_some() => {
                options.on_match = OnMatch::parse(value).unwrap_or_default()
            }
            ("profile", "") => options.profile = None,
            ("profile", value) => options.profile = Some(value.to_string()),
            ("dryRun" | "mode" | "onMatch", _) => return Err(Error::invalid_field(name)),
            (other, _) => return Err(Error::BadRequest(format!("Unknown parameter: {other}"))),
        }
    }
    Ok(options)
}
