//! Handlers of the contact controls: unsubscribe and resubscribe, the assistant switch,
//! tags, the DNC list, inbound SMS, organization settings, and outbound attempts that
//! pass the compliance gate.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::request::{read_body, Query, RequestBody};
use super::response::{json as reply, Body};
use super::views::{self, EventView, MessageView};
use super::AppState;
use crate::domain::compliance::{self, Outcome};
use crate::domain::contact::{self, Channel, MAX_TAGS_PER_REQUEST};
use crate::domain::{calls, dnc, leads, messages, org_settings, Caller};
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
    let requested = contact::parse_channels(&bytes)?;
    let id = lead_id.to_string();
    let applied = state
        .store
        .write(move |tx| {
            let requested = requested.as_deref();
            if unsubscribe {
                contact::unsubscribe(tx, &caller, &id, requested)
            } else {
                contact::resubscribe(tx, &caller, &id, requested)
            }
        })
        .await?;
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
        .write(move |tx| contact::set_ai(tx, &caller, &id, on))
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
    if tags.len() > MAX_TAGS_PER_REQUEST {
        return Err(Error::BadRequest(format!(
            "tags must hold at most {MAX_TAGS_PER_REQUEST} tags"
        )));
    }
    if let Some(other) = body.keys().next() {
        return Err(Error::BadRequest(format!("Unknown field: {other}")));
    }
    let id = lead_id.to_string();
    let lead = store
        .write(move |tx| contact::add_tags(tx, &caller, &id, tags))
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
        return Err(Error::BadRequest(format!("Unknown field: {other}")));
    }
    if items.len() > MAX_TAGS_PER_REQUEST {
        return Err(Error::BadRequest(format!(
            "tagIds must hold at most {MAX_TAGS_PER_REQUEST} ids"
        )));
    }
    let ids: Vec<String> = items
        .iter()
        .map(|v| v.as_str().map(str::to_string).ok_or_else(invalid))
        .collect::<Result<_>>()?;
    let id = lead_id.to_string();
    let lead = store
        .write(move |tx| contact::remove_tags(tx, &caller, &id, &ids))
        .await?;
    // This answer carries only `id` and `name`, as the interface shows.
    let tags: Vec<Value> = lead
        .tags
        .iter()
        .map(|t| json!({"id": t.id, "name": t.name}))
        .collect();
    Ok(reply(StatusCode::OK, &json!({ "tags": tags })))
}

pub async fn register_dnc(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let raw = body
        .get("phone")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_field("phone"))?;
    if let Some(other) = body.keys().find(|k| *k != "phone") {
        return Err(Error::BadRequest(format!("Unknown field: {other}")));
    }
    let phone = dnc::phone(raw)?;
    store
        .write(move |tx| dnc::register(tx, &caller, &phone))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": "Phone number added to the Do Not Contact list."}),
    ))
}

pub fn list_dnc(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let token = query.next_token();
    let page = dnc::list(
        &store.read()?,
        store.cursor_key(),
        caller,
        query.limit_or_default()?,
        token.as_deref(),
    )?;
    let numbers: Vec<Value> = page
        .items
        .iter()
        .map(|(phone, at)| json!({"phone": phone, "addedAt": crate::time::format(*at)}))
        .collect();
    Ok(reply(
        StatusCode::OK,
        &json!({"numbers": numbers, "nextToken": page.next_token}),
    ))
}

pub async fn remove_dnc(store: &Store, caller: Caller, raw: &str) -> Result<Response<Body>> {
    let phone = dnc::phone(raw)?;
    store
        .write(move |tx| dnc::remove(tx, &caller, &phone))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": "Phone number removed from the Do Not Contact list."}),
    ))
}

pub async fn inbound_sms(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let from = body
        .get("from")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_field("from"))?;
    let phone = crate::phone::normalize(from).ok_or_else(|| Error::invalid_field("from"))?;
    let text = body
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_field("text"))?
        .to_string();
    if let Some(other) = body.keys().find(|k| *k != "from" && *k != "text") {
        return Err(Error::BadRequest(format!("Unknown field: {other}")));
    }
    let inbound = store
        .write(move |tx| contact::inbound_sms(tx, &caller, &phone, &text))
        .await?;
    let message = MessageView::of(&inbound.message)
        .ok_or_else(|| Error::Internal("an inbound SMS is not message-shaped".into()))?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": message, "optOut": inbound.opted_out, "optIn": inbound.opted_in}),
    ))
}

pub fn get_org(store: &Store, caller: &Caller) -> Result<Response<Body>> {
    let org = store
        .read()?
        .org(&caller.org_id)?
        .ok_or_else(|| Error::Internal("the caller's organization is missing".into()))?;
    Ok(reply(StatusCode::OK, &org_settings::view(&org)))
}

pub async fn update_org(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let org = store
        .write(move |tx| org_settings::update(tx, &caller, body))
        .await?;
    Ok(reply(StatusCode::OK, &org_settings::view(&org)))
}

fn blocked(event: &crate::store::EventRow) -> Response<Body> {
    reply(
        StatusCode::OK,
        &json!({"outcome": "blocked", "event": EventView::of(event)}),
    )
}

/// A message from the organization's side: outreach, so it passes the gate. The sent
/// answer is the message with `"outcome": "sent"`.
pub async fn outbound_message(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    input: messages::MessageInput,
) -> Result<Response<Body>> {
    let channel = if input.channel == "email" {
        Channel::Email
    } else {
        Channel::Sms
    };
    let send = move |tx: &mut crate::store::WriteTx,
                     caller: &Caller,
                     lead: crate::store::records::LeadRecord| {
        messages::record(tx, caller, &lead.id, input)
    };
    match compliance::pass(
        &state.store,
        &state.outbound,
        caller,
        lead_id,
        channel,
        send,
    )
    .await?
    {
        Outcome::Sent(row) => {
            let view = MessageView::of(&row)
                .ok_or_else(|| Error::Internal("a new message is not message-shaped".into()))?;
            let mut value =
                serde_json::to_value(view).map_err(|e| Error::Internal(e.to_string()))?;
            value["outcome"] = json!("sent");
            Ok(reply(StatusCode::CREATED, &value))
        }
        Outcome::Blocked(event) => Ok(blocked(&event)),
    }
}

/// `POST /v1/leads/{id}/calls` `{"direction": "OUTBOUND"}`: queues an outbound call,
/// unless the gate blocks it.
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
        return Err(Error::BadRequest(format!("Unknown field: {other}")));
    }
    let send = |tx: &mut crate::store::WriteTx,
                caller: &Caller,
                lead: crate::store::records::LeadRecord| {
        let call = json!({"leadId": lead.id, "direction": "OUTBOUND", "callStatus": "QUEUED"});
        let Value::Object(changes) = call else {
            return Err(Error::Internal("call body is not an object".into()));
        };
        calls::put(tx, caller, &crate::ids::generate("call"), changes).map(|(call, _)| call)
    };
    match compliance::pass(
        &state.store,
        &state.outbound,
        caller,
        lead_id,
        Channel::Voice,
        send,
    )
    .await?
    {
        Outcome::Sent(call) => Ok(reply(
            StatusCode::CREATED,
            &json!({"outcome": "sent", "call": views::call(&call)}),
        )),
        Outcome::Blocked(event) => Ok(blocked(&event)),
    }
}
