//! Handlers of the organization's Do Not Contact list.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::request::Query;
use super::response::{json as reply, Body};
use crate::domain::engagement::reactions::React;
use crate::domain::records::dnc;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Store;

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
        return Err(Error::unknown_field(other));
    }
    let phone = dnc::phone(raw)?;
    store
        .write(move |tx| dnc::register(tx, &caller, &phone).react(tx))
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
