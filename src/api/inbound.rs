//! Handlers of messages a lead sends: inbound SMS handed over by an integration.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::response::{json as reply, Body};
use super::views::MessageView;
use crate::domain::{contact, Caller};
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
    let phone = crate::phone::normalize(from).ok_or_else(|| Error::invalid_field("from"))?;
    let text = body
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_field("text"))?
        .to_string();
    if let Some(other) = body.keys().find(|k| *k != "from" && *k != "text") {
        return Err(Error::unknown_field(other));
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
