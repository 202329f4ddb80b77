//! Handlers of meetings: booking for a lead (`POST /v1/leads/{id}/meetings`), moving,
//! cancelling and closing one, reading one and the incremental listing.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::request::Query;
use super::response::{json as reply, Body};
use super::AppState;
use crate::domain::engagement::reactions::React;
use crate::domain::records::meetings::{self, BookInput, MeetingQuery};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::calendars::{BookedBy, MeetingStatus};
use crate::store::Store;

pub async fn book(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let input = BookInput::from_json(&body)?;
    let id = lead_id.to_string();
    // A CalDAV collection's busy times, read before the write (424 when unreachable).
    let external = state
        .engine
        .external_busy(&caller.org_id, &input.calendar)
        .await?;
    let meeting = state
        .store
        .write(move |tx| {
            meetings::book(tx, &caller, &id, &input, BookedBy::Api, &external).react(tx)
        })
        .await?;
    Ok(reply(StatusCode::CREATED, &meetings::view(&meeting)))
}

pub async fn reschedule(
    state: &AppState,
    caller: Caller,
    id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let start = meetings::reschedule_input(&body)?;
    let calendar = meetings::find(&state.store.read()?, &caller, id)?.calendar;
    let external = state
        .engine
        .external_busy(&caller.org_id, &calendar)
        .await?;
    let id = id.to_string();
    let meeting = state
        .store
        .write(move |tx| meetings::reschedule(tx, &caller, &id, start, &external).react(tx))
        .await?;
    Ok(reply(StatusCode::OK, &meetings::view(&meeting)))
}

pub async fn cancel(store: &Store, caller: Caller, id: &str) -> Result<Response<Body>> {
    let id = id.to_string();
    let meeting = store
        .write(move |tx| meetings::cancel(tx, &caller, &id).react(tx))
        .await?;
    Ok(reply(StatusCode::OK, &meetings::view(&meeting)))
}

pub async fn update(
    store: &Store,
    caller: Caller,
    id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let status = meetings::status_input(&body)?;
    let id = id.to_string();
    let meeting = store
        .write(move |tx| meetings::set_status(tx, &caller, &id, status).react(tx))
        .await?;
    Ok(reply(StatusCode::OK, &meetings::view(&meeting)))
}

pub fn get(store: &Store, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let meeting = meetings::find(&store.read()?, caller, id)?;
    Ok(reply(StatusCode::OK, &meetings::view(&meeting)))
}

/// `GET /v1/meetings?since=&calendar=&status=&limit=&nextToken=`.
pub fn list(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let status = match query.get("status") {
        None | Some("") => None,
        Some(text) => {
            Some(MeetingStatus::parse(text).ok_or_else(|| Error::invalid_field("status"))?)
        }
    };
    let q = MeetingQuery {
        since: query.timestamp("since")?,
        calendar: query
            .get("calendar")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        status,
        limit: query.limit_or_default()?,
        next_token: query.next_token(),
    };
    let page = meetings::list(&store.read()?, store.cursor_key(), caller, &q)?;
    let items: Vec<Value> = page.items.iter().map(meetings::view).collect();
    Ok(reply(
        StatusCode::OK,
        &json!({"meetings": items, "nextToken": page.next_token}),
    ))
}
