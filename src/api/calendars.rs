//! Handlers of calendars (`/v1/calendars...`): the calendar itself, its feed token, its
//! open times and its iCalendar feed (opened by its token, no key).

use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG};
use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::request::Query;
use super::response::{full, json as reply, Body};
use super::AppState;
use crate::domain::records::meetings;
use crate::domain::settings::calendars;
use crate::domain::Caller;
use crate::error::Result;
use crate::store::calendars::CalendarRecord;
use crate::time;

fn base(state: &AppState) -> Option<String> {
    state.engine.public_url().map(str::to_string)
}

/// The calendar's wire shape, with `caldavStatus` (what the last read of its collection
/// could not read as the owner wrote it) when it has `caldav`.
fn view(state: &AppState, org: &str, calendar: &CalendarRecord, base: Option<&str>) -> Value {
    let mut view = calendars::view(calendar, base);
    if calendar.caldav.is_some() {
        if let Some(object) = view.as_object_mut() {
            let unreadable = state.engine.unreadable_zones(org, &calendar.name);
            let too_many = state.engine.too_many_occurrences(org, &calendar.name);
            object.insert(
                "caldavStatus".into(),
                json!({ "unreadableTimeZones": unreadable, "tooManyOccurrences": too_many }),
            );
        }
    }
    view
}

/// `GET /v1/calendars`: every calendar of the organization (at most 20), by name.
pub fn list(state: &AppState, caller: &Caller) -> Result<Response<Body>> {
    let all = calendars::list(&state.store.read()?, caller)?;
    let base = base(state);
    let items: Vec<Value> = all
        .iter()
        .map(|c| view(state, &caller.org_id, c, base.as_deref()))
        .collect();
    Ok(reply(StatusCode::OK, &json!({ "calendars": items })))
}

pub fn get(state: &AppState, caller: &Caller, name: &str) -> Result<Response<Body>> {
    let calendar = calendars::find(&state.store.read()?, &caller.org_id, name)?;
    Ok(reply(
        StatusCode::OK,
        &view(state, &caller.org_id, &calendar, base(state).as_deref()),
    ))
}

pub async fn put(
    state: &AppState,
    caller: Caller,
    name: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    calendars::check_name(name)?;
    let input = calendars::CalendarInput::from_json(&body)?;
    let org = caller.org_id.clone();
    let name = name.to_string();
    let policy = state.engine.http_client().policy();
    let calendar = state
        .store
        .write(move |tx| calendars::put(tx, &caller, &name, &input, policy))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &view(state, &org, &calendar, base(state).as_deref()),
    ))
}

pub async fn delete(state: &AppState, caller: Caller, name: &str) -> Result<Response<Body>> {
    // A DELETE checks that its target exists before it opens a table for writing.
    calendars::find(&state.store.read()?, &caller.org_id, name)?;
    let name = name.to_string();
    state
        .store
        .write(move |tx| calendars::delete(tx, &caller, &name))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": "Calendar deleted successfully."}),
    ))
}

pub async fn rotate(state: &AppState, caller: Caller, name: &str) -> Result<Response<Body>> {
    let org = caller.org_id.clone();
    let name = name.to_string();
    let calendar = state
        .store
        .write(move |tx| calendars::rotate_feed_token(tx, &caller, &name))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &view(state, &org, &calendar, base(state).as_deref()),
    ))
}

/// `GET /v1/calendars/{name}/times?from=&to=`.
pub async fn times(
    state: &AppState,
    caller: &Caller,
    name: &str,
    query: &Query,
) -> Result<Response<Body>> {
    let from = query.timestamp("from")?;
    let to = query.timestamp("to")?;
    // A CalDAV collection's busy times, read before the snapshot (424 when unreachable).
    let external = state.engine.external_busy(&caller.org_id, name).await?;
    let (calendar, times) =
        meetings::open_times(&state.store.read()?, caller, name, from, to, &external)?;
    let times: Vec<Value> = times
        .iter()
        .map(|&start| {
            json!({
                "start": time::format(start),
                "end": time::format(start + i64::from(calendar.meeting_minutes) * 60_000_000),
            })
        })
        .collect();
    Ok(reply(
        StatusCode::OK,
        &json!({"calendar": calendar.name, "timeZone": calendar.time_zone, "times": times}),
    ))
}

/// `GET /v1/calendars/{name}/feed.ics?token=`: 404 unless the token is the calendar's.
/// Its `ETag` is a digest of the document; a client that sends it back in
/// `If-None-Match` gets 304 while no meeting changed.
pub fn feed(
    state: &AppState,
    name: &str,
    query: &Query,
    if_none_match: Option<&HeaderValue>,
) -> Result<Response<Body>> {
    let token = query.get("token").unwrap_or("");
    let text = meetings::feed(&state.store.read()?, name, token)?;
    let etag = format!(
        "\"{}\"",
        &hex::encode(Sha256::digest(text.as_bytes()))[..32]
    );
    let unchanged = if_none_match
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .map(|tag| tag.trim().trim_start_matches("W/"))
                .any(|tag| tag == "*" || tag == etag)
        });
    let mut response = if unchanged {
        let mut response = Response::new(full(String::new()));
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        Response::new(full(text))
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(ETAG, value);
    }
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/calendar; charset=utf-8"),
    );
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=300"),
    );
    Ok(response)
}
