//! Handlers of a lead's consent ledger: `POST /v1/leads/{id}/consent` (one entry) and
//! `GET /v1/leads/{id}/consent` (the ledger oldest first with each channel's current
//! status, or `?format=csv` for a dispute).

use hyper::header::{HeaderValue, CONTENT_DISPOSITION, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::request::Query;
use super::response::{full, json as reply, Body};
use crate::domain::engagement::reactions::React;
use crate::domain::records::consent::{self, ConsentInput};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Store;

/// `POST /v1/leads/{id}/consent`: 201 with the entry written.
pub async fn post(
    store: &Store,
    caller: Caller,
    lead_id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let input = ConsentInput::from_json(&body, consent::recorded_by_key(&caller))?;
    let id = lead_id.to_string();
    let entry = store
        .write(move |tx| consent::post(tx, &caller, &id, input.clone()).react(tx))
        .await?;
    Ok(reply(StatusCode::CREATED, &consent::entry_json(&entry)))
}

/// `GET /v1/leads/{id}/consent[?format=json|csv]`.
pub fn get(store: &Store, caller: &Caller, lead_id: &str, query: &Query) -> Result<Response<Body>> {
    let mut csv = false;
    for (name, value) in query.pairs() {
        match (name, value) {
            ("format", "json") => {}
            ("format", "csv") => csv = true,
            ("format", _) => return Err(Error::invalid_field("format")),
            (other, _) => return Err(Error::BadRequest(format!("Unknown parameter: {other}"))),
        }
    }
    let read = store.read()?;
    let ledger = consent::ledger(&read, caller, lead_id)?;
    if csv {
        let bytes = consent::csv(lead_id, &ledger.entries)?;
        let mut response = Response::new(full(bytes));
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/csv; charset=utf-8"),
        );
        headers.insert(
            CONTENT_DISPOSITION,
            HeaderValue::from_static("attachment; filename=\"consent-record.csv\""),
        );
        return Ok(response);
    }
    let mut current = Map::new();
    for (channel, state) in &ledger.current {
        current.insert(
            channel.as_str().to_string(),
            json!(consent::status_word(state)),
        );
    }
    let entries: Vec<Value> = ledger.entries.iter().map(consent::entry_json).collect();
    Ok(reply(
        StatusCode::OK,
        &json!({"leadId": lead_id, "current": current, "entries": entries}),
    ))
}
