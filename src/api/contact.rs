//! Handlers of a lead's contact controls: unsubscribe and resubscribe, the assistant
//! switch, and tags.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::request::{read_body, RequestBody};
use super::response::{json as reply, Body};
use super::AppState;
use crate::channel::Channel;
use crate::domain::engagement::reactions::React;
use crate::domain::records::leads;
use crate::domain::records::limits;
use crate::domain::records::subscriptions;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Store;

fn channel_names(channels: &[Channel]) -> Vec<&'static str> {
    channels.iter().map(|c| c.as_str()).collect()
}

/// `POST /v1/leads/{id}/unsubscribe` or `/resubscribe`. An unreadable body gets the
/// interface's channels message, never a generic JSON error.
pub async fn subscription(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    body: RequestBody,
    unsubscribe: bool,
) -> Result<Response<Body>> {
    let bytes = read_body(body, state.max_body_bytes).await?;
    let id = lead_id.to_string();
    let applied = if unsubscribe {
        let requested = subscriptions::parse_channels(&bytes)?;
        state
            .store
            .write(move |tx| {
                subscriptions::unsubscribe(tx, &caller, &id, requested.as_deref()).react(tx)
            })
            .await?
    } else {
        let request = subscriptions::parse_resubscribe(&bytes)?;
        state
            .store
            .write(move |tx| subscriptions::resubscribe(tx, &caller, &id, &request).react(tx))
            .await?
    };
    let message = if unsubscribe {
        "Lead unsubscribed successfully."
    } else {
        "Lead resubscribed successfully."
    };
    Ok(reply(
        StatusCode::OK,
        &json!({"message": message, "channels": channel_names(&applied)}),
    ))
}

pub async fn set_ai(
    store: &Store,
    caller: Caller,
    lead_id: &str,
    on: bool,
) -> Result<Response<Body>> {
    let id = lead_id.to_string();
    let lead = store
        .write(move |tx| subscriptions::set_ai(tx, &caller, &id, on).react(tx))
        .await?;
    let message = if on {
        "Lead turned on successfully."
    } else {
        "Lead turned off successfully."
    };
    Ok(reply(
        StatusCode::OK,
        &json!({"message": message, "isAiOn": lead.is_ai_on}),
    ))
}

pub async fn add_tags(
    store: &Store,
    caller: Caller,
    lead_id: &str,
    mut body: Map<String, Value>,
) -> Result<Response<Body>> {
    let tags = leads::tags(&body.remove("tags").unwrap_or(Value::Null))?;
    if let Some(other) = body.keys().next() {
        return Err(Error::unknown_field(other));
    }
    let id = lead_id.to_string();
    let lead = store
        .write(move |tx| subscriptions::add_tags(tx, &caller, &id, tags.clone()).react(tx))
        .await?;
    Ok(reply(StatusCode::OK, &json!({"tags": lead.tags})))
}

pub async fn remove_tags(
    store: &Store,
    caller: Caller,
    lead_id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let invalid = || Error::invalid_field("tagIds");
    let items = body
        .get("tagIds")
        .and_then(Value::as_array)
        .ok_or_else(invalid)?;
    if let Some(other) = body.keys().find(|k| *k != "tagIds") {
        return Err(Error::unknown_field(other));
    }
    limits::count("tagIds", items.len(), limits::TAGS)?;
    let ids: Vec<String> = items
        .iter()
        .map(|v| v.as_str().map(str::to_string).ok_or_else(invalid))
        .collect::<Result<_>>()?;
    let id = lead_id.to_string();
    let lead = store
        .write(move |tx| subscriptions::remove_tags(tx, &caller, &id, &ids).react(tx))
        .await?;
    // This answer carries only `id` and `name`, as the interface shows.
    let tags: Vec<Value> = lead
        .tags
        .iter()
        .map(|t| json!({"id": t.id, "name": t.name}))
        .collect();
    Ok(reply(StatusCode::OK, &json!({ "tags": tags })))
}
