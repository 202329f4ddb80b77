//! Handlers of the organization's settings (admin scope).

use hyper::{Response, StatusCode};
use serde_json::{Map, Value};

use super::response::{json as reply, Body};
use crate::domain::engagement::reactions::React;
use crate::domain::settings::org;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::outbound_address::OutboundPolicy;
use crate::store::browser_calls::BrowserCallKeys;
use crate::store::Reader;
use crate::store::Store;

pub fn get_org(store: &Store, caller: &Caller) -> Result<Response<Body>> {
    let org = store
        .read()?
        .org(&caller.org_id)?
        .ok_or_else(|| Error::Internal("the caller's organization is missing".into()))?;
    let read = store.read()?;
    let engine = read.engine_settings(&caller.org_id)?;
    let webchat = read.webchat_settings(&caller.org_id)?;
    let keys = read.browser_call_keys(&caller.org_id)?;
    Ok(reply(
        StatusCode::OK,
        &with_webchat(org::view(&org, &engine), &webchat, &keys),
    ))
}

pub async fn update_org(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
    public_url: Option<String>,
    policy: OutboundPolicy,
) -> Result<Response<Body>> {
    let patch = org::OrgPatch::from_json(&body)?;
    let (org, engine, webchat, keys) = store
        .write(move |tx| {
            let (org, engine) =
                org::update(tx, &caller, patch.clone(), public_url.as_deref(), policy).react(tx)?;
            let webchat = tx.webchat_settings(&caller.org_id)?;
            let keys = tx.browser_call_keys(&caller.org_id)?;
            Ok((org, engine, webchat, keys))
        })
        .await?;
    Ok(reply(
        StatusCode::OK,
        &with_webchat(org::view(&org, &engine), &webchat, &keys),
    ))
}

/// The organization's view with its `webchat` member, and a twilio voice provider's
/// keys of calls from the browser.
fn with_webchat(
    mut view: Value,
    webchat: &crate::store::webchat::WebchatSettings,
    keys: &BrowserCallKeys,
) -> Value {
    let voice = &mut view["providers"]["voice"];
    if voice["kind"] == "twilio" {
        *voice = crate::domain::settings::twilio::with_browser_keys(voice.take(), keys);
    }
    if let Value::Object(members) = &mut view {
        members.insert(
            "webchat".into(),
            crate::domain::settings::webchat::view(webchat),
        );
    }
    view
}
