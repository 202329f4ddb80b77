//! Handlers of `/v1/calls/{id}`.

use hyper::{Response, StatusCode};
use serde_json::{Map, Value};

use super::response::{json as reply, Body};
use super::views;
use crate::domain::engagement::reactions::React;
use crate::domain::records::calls;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Reader;
use crate::store::Store;

pub fn get(store: &Store, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let call = store
        .read()?
        .call(&caller.org_id, id)?
        .ok_or_else(|| Error::NotFound("Call not found".into()))?;
    Ok(reply(StatusCode::OK, &views::call(&call)))
}

/// `PUT`: 201 when it created the call, 200 when it updated it.
pub async fn put(
    store: &Store,
    caller: Caller,
    id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let changes = calls::CallInput::from_json(id, &body)?;
    let id = id.to_string();
    let (call, created) = store
        .write(move |tx| calls::put(tx, &caller, &id, changes.clone()).react(tx))
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(reply(status, &views::call(&call)))
}
