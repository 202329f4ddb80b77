//! Handlers of the organization's settings (admin scope).

use hyper::{Response, StatusCode};
use serde_json::{Map, Value};

use super::response::{json as reply, Body};
use crate::domain::engagement::reactions::React;
use crate::domain::settings::org;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::outbound_address::OutboundPolicy;
use crate::store::Reader;
use crate::store::Store;

pub fn get_org(store: &Store, caller: &Caller) -> Result<Response<Body>> {
    let org = store
        .read()?
        .org(&caller.org_id)?
        .ok_or_else(|| Error::Internal("the caller's organization is missing".into()))?;
    let engine = store.read()?.engine_settings(&caller.org_id)?;
    Ok(reply(StatusCode::OK, &org::view(&org, &engine)))
}

pub async fn update_org(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
    public_url: Option<String>,
    policy: OutboundPolicy,
) -> Result<Response<Body>> {
    let patch = org::OrgPatch::from_json(&body)?;
    let (org, engine) = store
        .write(move |tx| {
            org::update(tx, &caller, patch.clone(), public_url.as_deref(), policy).react(tx)
        })
        .await?;
    Ok(reply(StatusCode::OK, &org::view(&org, &engine)))
}
