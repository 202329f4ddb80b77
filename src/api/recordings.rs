//! Handlers of call recordings: upload, link, delete, and the signed download link.
//!
//! `PUT /v1/calls/{id}/recording` streams the body into a `RecordingUpload` (chunk by
//! chunk, never a whole file in memory, never a write transaction held across network
//! reads). `GET` answers a link to `/v1/recordings/{org}/{callId}`, which
//! needs no key: its `expires` and `sig` query values are checked instead, and it
//! streams the audio chunk by chunk from short read transactions, honouring one `Range`.

use http_body_util::BodyExt;
use hyper::header::{
    HeaderMap, HeaderValue, ACCEPT_RANGES, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_RANGE,
    CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, HOST, IF_RANGE, RANGE, X_CONTENT_TYPE_OPTIONS,
};
use hyper::http::request::Parts;
use hyper::http::uri::Authority;
use hyper::{Response, StatusCode};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Serialize;
use serde_json::json;

use super::recording_body::{ByteRange, ChunkReader};
use super::request::{Query, RequestBody};
use super::response::{json as reply, Body};
use super::AppState;
use crate::domain::records::recording_upload::RecordingUpload;
use crate::domain::records::recordings::{self, LinkKey};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::RecordingRecord;
use crate::store::Store;
use crate::time::Timestamp;

/// What path segments of a link leave unencoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What the recording handlers need from the configuration and the store.
#[derive(Debug, Clone)]
pub struct Settings {
    pub link_key: LinkKey,
    pub link_ttl_secs: u64,
    pub max_bytes: u64,
    /// Scheme, host and optional path prefix of links; `None`: from each request.
    pub public_url: Option<String>,
    /// The scheme of links built from a request's host.
    pub scheme: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordingView<'a> {
    call_id: &'a str,
    content_type: &'a str,
    size_bytes: u64,
    sha256: &'a str,
    uploaded_at: Timestamp,
}

impl<'a> RecordingView<'a> {
    fn of(r: &'a RecordingRecord) -> Self {
        RecordingView {
            call_id: &r.call_id,
            content_type: &r.content_type,
            size_bytes: r.size,
            sha256: &r.sha256,
            uploaded_at: Timestamp(r.uploaded_at),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LinkView<'a> {
    url: String,
    expires_at: Timestamp,
    content_type: &'a str,
    size_bytes: u64,
}

/// `PUT /v1/calls/{callId}/recording`: 201 with the recording, 200 when it replaced one.
pub async fn upload(
    state: &AppState,
    caller: Caller,
    call_id: &str,
    headers: &HeaderMap,
    mut body: RequestBody,
) -> Result<Response<Body>> {
    let settings = &state.recordings;
    // An upload may be long: it is held to a minimum rate, not a deadline.
    body.stream(settings.max_bytes);
    let content_type =
        recordings::content_type(headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()))?;
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > settings.max_bytes) {
        return Err(Error::PayloadTooLarge);
    }
    let mut upload =
        RecordingUpload::begin(state.store.clone(), caller, call_id, settings.max_bytes).await?;
    loop {
        let Some(frame) = body.frame().await else {
            break;
        };
        let frame = frame?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        upload.write(&data).await?;
    }
    let (record, replaced) = upload.finish(content_type).await?;
    let status = if replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(reply(status, &RecordingView::of(&record)))
}

/// `GET /v1/calls/{callId}/recording`: a signed, expiring download link.
pub fn link(
    state: &AppState,
    caller: &Caller,
    call_id: &str,
    parts: &Parts,
) -> Result<Response<Body>> {
    let settings = &state.recordings;
    let org = caller.org_id.as_str();
    let record = recordings::find(&state.store.read()?, org, call_id)?;
    let base = base_url(settings, parts)?;
    let expires = recordings::link_expiry(recordings::now_secs(), settings.link_ttl_secs);
    let sig = settings.link_key.sign(org, call_id, expires)?;
    let url = format!(
        "{base}/v1/recordings/{}/{}?expires={expires}&sig={sig}",
        utf8_percent_encode(org, SEGMENT),
        utf8_percent_encode(call_id, SEGMENT),
    );
    let expires_at = i64::try_from(expires)
        .ok()
        .and_then(|s| s.checked_mul(1_000_000))
        .ok_or_else(|| Error::Internal("link expiry out of range".into()))?;
    Ok(reply(
        StatusCode::OK,
        &LinkView {
            url,
            expires_at: Timestamp(expires_at),
            content_type: &record.content_type,
            size_bytes: record.size,
        },
    ))
}

/// Where links point: `public_url` when set, else the scheme this server speaks and the
/// host the request named (`:authority` in HTTP/2, `Host` in HTTP/1.1).
fn base_url(settings: &Settings, parts: &Parts) -> Result<String> {
    if let Some(url) = &settings.public_url {
        return Ok(url.clone());
    }
    let from_header = || {
        parts
            .headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.trim().parse::<Authority>().ok())
    };
    let authority = parts
        .uri
        .authority()
        .cloned()
        .or_else(from_header)
        .filter(|a| !a.as_str().contains('@') && !a.host().is_empty())
        .ok_or_else(|| Error::BadRequest("A Host header is required".into()))?;
    Ok(format!("{}://{}", settings.scheme, authority.as_str()))
}

/// `DELETE /v1/calls/{callId}/recording` (admin).
pub async fn delete(store: &Store, caller: Caller, call_id: &str) -> Result<Response<Body>> {
    let call_id = call_id.to_string();
    store
        .write(move |tx| recordings::delete(tx, &caller, &call_id))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": "Recording deleted."}),
    ))
}

/// `GET /v1/recordings/{org}/{callId}?expires=..&sig=..`: the audio, no key needed.
pub fn download(
    state: &AppState,
    parts: &Parts,
    org: &str,
    call_id: &str,
) -> Result<Response<Body>> {
    let settings = &state.recordings;
    let query = Query::parse(parts.uri.query()).map_err(|_| Error::Forbidden)?;
    settings.link_key.verify(
        org,
        call_id,
        query.get("expires"),
        query.get("sig"),
        recordings::now_secs(),
    )?;
    let record = recordings::find(&state.store.read()?, org, call_id)?;
    let etag = format!("\"{}\"", record.sha256);
    let header = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let range = match header(IF_RANGE) {
        // A range of another version of the file would corrupt a resumed download.
        Some(validator) if validator.trim() != etag => ByteRange::Full,
        _ => ByteRange::parse(header(RANGE), record.size),
    };
    let (status, start, end) = match range {
        ByteRange::Full => (StatusCode::OK, 0, record.size),
        ByteRange::Partial { first, last } => (StatusCode::PARTIAL_CONTENT, first, last + 1),
        ByteRange::Unsatisfiable => {
            let mut response = reply(
                StatusCode::RANGE_NOT_SATISFIABLE,
                &json!({"message": "Range not satisfiable"}),
            );
            insert(
                &mut response,
                CONTENT_RANGE,
                &format!("bytes */{}", record.size),
            );
            insert(&mut response, ACCEPT_RANGES, "bytes");
            return Ok(response);
        }
    };
    let body = ChunkReader::new(state.store.clone(), &record, start, end);
    let mut response = Response::new(body.boxed());
    *response.status_mut() = status;
    let content_type = HeaderValue::from_str(&record.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    insert(&mut response, CONTENT_LENGTH, &(end - start).to_string());
    insert(&mut response, ETAG, &etag);
    insert(&mut response, ACCEPT_RANGES, "bytes");
    insert(&mut response, CACHE_CONTROL, "private");
    // Audio only: never sniffed into a page, and sandboxed if a browser shows it.
    insert(&mut response, X_CONTENT_TYPE_OPTIONS, "nosniff");
    insert(&mut response, CONTENT_SECURITY_POLICY, "sandbox");
    if status == StatusCode::PARTIAL_CONTENT {
        insert(
            &mut response,
            CONTENT_RANGE,
            &format!("bytes {start}-{}/{}", end - 1, record.size),
        );
    }
    Ok(response)
}

fn insert(response: &mut Response<Body>, name: hyper::header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}
