//! Handlers of outreach started through the API: a message from the organization's
//! side and an outbound call. Both pass the compliance gate first.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::response::{json as reply, Body};
use super::views::{self, EventView, MessageView};
use super::AppState;
use crate::channel::Channel;
use crate::domain::contact::compliance::{self, Gate, Outcome};
use crate::domain::engagement::outbound;
use crate::domain::records::messages;
use crate::domain::voice::voice;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::providers;
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
    match send_message(state, caller, lead_id, &input, Origin::Api).await? {
        Outcome::Sent(row) => sent(&row),
        Outcome::Blocked(event) => Ok(blocked(&event)),
    }
}

/// Sends `input`'s text to the lead through the gate and the channel's provider, as
/// `origin` (the API, or a person in the console): the message event, or the block.
pub async fn send_message(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    input: &messages::MessageInput,
    origin: Origin,
) -> Result<Outcome<crate::store::EventRow>> {
    let channel = input.channel;
    let text = input.text().to_string();
    let subject = input
        .content
        .get("subject")
        .and_then(Value::as_str)
        .map(str::to_string);
    let send = move |tx: &mut crate::store::WriteTx,
                     caller: &Caller,
                     lead: crate::store::rows::LeadRecord| {
        outbound::begin(
            tx,
            &caller.org_id,
            lead,
            channel,
            &text,
            subject.as_deref(),
            origin.clone(),
        )
    };
    Ok(match gate(state, caller, lead_id, channel, send).await? {
        Outcome::Sent(attempt) => {
            let row = attempt.event.clone();
            state.engine.deliver(attempt).await?;
            Outcome::Sent(row)
        }
        Outcome::Blocked(event) => Outcome::Blocked(event),
    })
}

/// The compliance gate, then `send` inside the write job when the attempt may go.
async fn gate<T, F>(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    channel: Channel,
    send: F,
) -> Result<Outcome<T>>
where
    T: Send + 'static,
    F: FnMut(&mut crate::store::WriteTx, &Caller, crate::store::rows::LeadRecord) -> Result<T>
        + Send
        + 'static,
{
    let early = match compliance::first_steps(&state.store, &caller, lead_id, channel)? {
        Gate::Blocked(block) => Some(block),
        Gate::Ask(question) => {
            compliance::service_block(providers::compliance::ask(&state.http, &question).await)
        }
        Gate::Clear => None,
    };
    compliance::pass(&state.store, caller, lead_id, channel, early, send).await
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
    let channel = input.channel;
    let send = move |tx: &mut crate::store::WriteTx,
                     caller: &Caller,
                     lead: crate::store::rows::LeadRecord| {
        messages::record(tx, caller, &lead.id, input.clone())
    };
    match gate(state, caller, lead_id, channel, send).await? {
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
    let send =
        |tx: &mut crate::store::WriteTx, caller: &Caller, lead: crate::store::rows::LeadRecord| {
            let call = voice::start_outbound(tx, &caller.org_id, &lead, false, String::new())?;
            Ok((call, lead.phone))
        };
    let org_id = caller.org_id.clone();
    match gate(state, caller, lead_id, Channel::Voice, send).await? {
        Outcome::Sent((call, to)) => {
            state.engine.dial(org_id, call.id.clone(), to);
            Ok(reply(
                StatusCode::CREATED,
                &json!({"outcome": "sent", "call": views::call(&call)}),
            ))
        }
        Outcome::Blocked(event) => Ok(blocked(&event)),
    }
}
