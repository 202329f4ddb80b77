//! Handlers of messages a lead sends, handed over by an integration: inbound SMS and
//! inbound email. Each then takes the engine's path (keywords, stop rules, a reply).

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::response::{json as reply, Body};
use super::views::MessageView;
use crate::channel::Channel;
use crate::domain::conversation::inbound;
use crate::domain::records::limits;
use crate::domain::records::messages::EmailHeaders;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Store;

pub async fn inbound_sms(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let from = body
        .get("from")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_field("from"))?;
    // Read in the organization's `defaultCountry` when it has no `+`.
    let phone = crate::domain::settings::org::read_phone(&store.read()?, &caller.org_id, from)?
        .map_err(|_| Error::invalid_field("from"))?;
    let text = body
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_field("text"))?
        .to_string();
    if let Some(other) = body.keys().find(|k| *k != "from" && *k != "text") {
        return Err(Error::unknown_field(other));
    }
    limits::inbound(&text, None, true)?;
    let inbound = store
        .write(move |tx| {
            inbound::door_open(tx, &caller.org_id, Channel::Sms)?;
            inbound::inbound_sms(tx, &caller, &phone, &text)
        })
        .await?;
    let message = MessageView::of(&inbound.message)
        .ok_or_else(|| Error::Internal("an inbound SMS is not message-shaped".into()))?;
    Ok(reply(
        StatusCode::OK,
        &json!({"leadId": inbound.lead_id, "message": message, "optOut": inbound.opted_out, "optIn": inbound.opted_in}),
    ))
}

/// `POST /v1/inbound/email` `{"from", "subject"?, "text", "messageId"?, "references"?}`
/// (the last two: the email's headers, kept for a reply to thread to).
pub async fn inbound_email(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let text_field = |name: &str| body.get(name).and_then(Value::as_str).map(str::to_string);
    let from = text_field("from")
        .map(|f| f.trim().to_string())
        .filter(|f| f.contains('@'))
        .ok_or_else(|| Error::invalid_field("from"))?;
    let text = text_field("text").ok_or_else(|| Error::invalid_field("text"))?;
    let subject = match body.get("subject") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(Error::invalid_field("subject")),
    };
    let header = |name: &str| match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(Error::invalid_field(name)),
    };
    let headers = EmailHeaders::parse(header("messageId")?, header("references")?);
    if let Some(other) = body.keys().find(|k| {
        !matches!(
            k.as_str(),
            "from" | "subject" | "text" | "messageId" | "references"
        )
    }) {
        return Err(Error::unknown_field(other));
    }
    limits::inbound(&text, subject.as_deref(), false)?;
    let inbound = store
        .write(move |tx| {
            inbound::door_open(tx, &caller.org_id, Channel::Email)?;
            inbound::inbound_email(tx, &caller, &from, subject.as_deref(), &text, &headers)
        })
        .await?;
    let message = MessageView::of(&inbound.message)
        .ok_or_else(|| Error::Internal("an inbound email is not message-shaped".into()))?;
    Ok(reply(
        StatusCode::OK,
        &json!({"leadId": inbound.lead_id, "message": message, "optOut": inbound.opted_out}),
    ))
}
