//! Handlers of replays: a profile's draft tried on past conversations
//! (`POST /v1/profiles/{name}/replays`, `GET /v1/replays`, `GET /v1/replays/{id}`,
//! `POST /v1/replays/{id}/cancel`). The draft is read exactly as `PUT` reads a profile
//! and refused the same way (400 naming the field, with every refusal in `errors`)
//! before any model request; the running is `engine::replay`.

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::response::{json as reply, Body};
use crate::domain::settings::profiles::ProfileInput;
use crate::domain::settings::replays as rules;
use crate::domain::Caller;
use crate::engine::{Engine, ReplayRequest};
use crate::error::{Error, Result};
use crate::store::calendars::CalendarReader;
use crate::store::rows::ProfileRecord;
use crate::store::Store;

/// The members of a replay request.
const MEMBERS: &[&str] = &["draft", "conversations", "leadIds"];

/// A draft read as `PUT /v1/profiles/{name}` reads its body: the profile it would
/// save (with its tests), or the answer refusing it.
pub fn read_draft(
    store: &Store,
    caller: &Caller,
    name: &str,
    draft: &Map<String, Value>,
) -> Result<std::result::Result<ProfileRecord, Response<Body>>> {
    let input = match ProfileInput::from_json_all(draft, name) {
        Ok(input) => input,
        Err((first, refusals)) => return Ok(Err(super::profiles::refused(&first, &refusals))),
    };
    let profile = input.record(name)?;
    if !profile.calendar.is_empty()
        && store
            .read()?
            .calendar(&caller.org_id, &profile.calendar)?
            .is_none()
    {
        return Err(Error::field("calendar", "Calendar not found"));
    }
    Ok(Ok(profile))
}

/// `POST /v1/profiles/{name}/replays`: 202 with the replay as it starts.
pub async fn create(
    engine: &std::sync::Arc<Engine>,
    store: &Store,
    caller: &Caller,
    name: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    if let Some(unknown) = body.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(Error::unknown_field(unknown));
    }
    let draft = match body.get("draft") {
        Some(Value::Object(draft)) => draft,
        Some(_) => return Err(Error::invalid_field("draft")),
        None => {
            return Err(Error::field(
                "draft",
                "draft is required: the whole profile, as PUT /v1/profiles/{name} takes it",
            ))
        }
    };
    let selection = rules::selection(&body)?;
    let draft = match read_draft(store, caller, name, draft)? {
        Ok(draft) => draft,
        Err(refused) => return Ok(refused),
    };
    let request = ReplayRequest {
        profile: name.to_string(),
        draft,
        selection,
    };
    let replay = engine.start_replay(&caller.org_id, request).await?;
    Ok(reply(StatusCode::ACCEPTED, &rules::view(&replay, true)))
}

/// `GET /v1/replays/{id}`: its progress and results.
pub fn get(engine: &Engine, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let replay = engine
        .replay(&caller.org_id, id)?
        .ok_or_else(|| Error::NotFound("Replay not found".into()))?;
    Ok(reply(StatusCode::OK, &rules::view(&replay, true)))
}

/// `GET /v1/replays`: the organization's replays of the last 30 days, newest first,
/// each without its conversations.
pub fn list(engine: &Engine, caller: &Caller) -> Result<Response<Body>> {
    let replays: Vec<Value> = engine
        .replays(&caller.org_id)?
        .iter()
        .map(|r| rules::view(r, false))
        .collect();
    Ok(reply(StatusCode::OK, &json!({ "replays": replays })))
}

/// `POST /v1/replays/{id}/cancel`: the replay stops after its current turn.
pub fn cancel(engine: &Engine, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let replay = engine.cancel_replay(&caller.org_id, id)?;
    Ok(reply(StatusCode::ACCEPTED, &rules::view(&replay, false)))
}
