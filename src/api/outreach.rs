//! Handlers of outreach started through the API: a message from the organization's
//! side and an outbound call. Both pass the compliance gate first, in the engine
//! (`engine::gate`): these parse the request and render the outcome.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::response::{json as reply, Body};
use super::views::{self, EventView, MessageView};
use super::AppState;
use crate::domain::engagement::gate::Outcome;
use crate::domain::records::messages;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::Origin;

fn blocked(event: &crate::store::EventRow) -> Response<Body> {
    reply(
        StatusCode::OK,
        &json!({"outcome": "blocked", "event": EventView::of(event)}),
    )
}

/// A message from the organization's side: outreach, so it passes the gate, then goes
/// out through the channel's provider (`recordOnly`: recorded only, sent elsewhere).
/// The sent answer is the message with `"outcome": "sent"`.
pub async fn outbound_message(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    input: messages::MessageInput,
) -> Result<Response<Body>> {
    if input.record_only {
        return record_only(state, caller, lead_id, input).await;
    }
    let sending = state
        .engine
        .send_message(caller, lead_id, &input, Origin::Api);
    match sending.await? {
        Outcome::Sent(row) => sent(&row),
        Outcome::Blocked(event) => Ok(blocked(&event)),
    }
}

fn sent(row: &crate::store::EventRow) -> Result<Response<Body>> {
    let view = MessageView::of(row)
        .ok_or_else(|| Error::Internal("a new message is not message-shaped".into()))?;
    let mut value = serde_json::to_value(view).map_err(|e| Error::Internal(e.to_string()))?;
    value["outcome"] = json!("sent");
    Ok(reply(StatusCode::CREATED, &value))
}

/// `recordOnly`: a message sent elsewhere, recorded after the gate.
async fn record_only(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    input: messages::MessageInput,
) -> Result<Response<Body>> {
    match state.engine.record_message(caller, lead_id, input).await? {
        Outcome::Sent(row) => sent(&row),
        Outcome::Blocked(event) => Ok(blocked(&event)),
    }
}

/// `POST /v1/leads/{id}/calls` `{"direction": "OUTBOUND"}`: queues an outbound call and
/// dials it through the voice provider, unless the gate blocks it.
pub async fn request_call(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    if body.get("direction").and_then(Value::as_str) != Some("OUTBOUND") {
        return Err(Error::invalid_field("direction"));
    }
    if let Some(other) = body.keys().find(|k| *k != "direction") {
        return Err(Error::unknown_field(other));
    }
    match state.engine.request_call(caller, lead_id).await? {
        Outcome::Sent(call) => Ok(reply(
            StatusCode::CREATED,
            &json!({"outcome": "sent", "call": views::call(&call)}),
        )),
        Outcome::Blocked(event) => Ok(blocked(&event)),
    }
}
