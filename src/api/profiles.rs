//! Handlers of the engine's resources: profiles (`/v1/profiles/{name}`) and a lead's
//! engagement (`GET /v1/leads/{id}/engagement`).

use hyper::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::request::Query;
use super::response::{json as reply, Body};
use crate::domain::engagement::enrolment;
use crate::domain::engagement::reactions::React;
use crate::domain::settings::profiles;
use crate::domain::Caller;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::store::{Reader, Store};

/// `GET /v1/profiles`: a page in name order (`limit`, `nextToken`).
pub fn list(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let token = query.next_token();
    let page = profiles::list(
        &store.read()?,
        store.cursor_key(),
        caller,
        query.limit_or_default()?,
        token.as_deref(),
    )?;
    Ok(reply(
        StatusCode::OK,
        &json!({ "profiles": page.items, "nextToken": page.next_token }),
    ))
}

pub fn get(store: &Store, caller: &Caller, name: &str) -> Result<Response<Body>> {
    let read = store.read()?;
    let profile = profiles::find(&read, caller, name)?;
    let label = read.profile_label(&caller.org_id, name)?;
    Ok(reply(
        StatusCode::OK,
        &profiles::view(&profile, label.as_deref()),
    ))
}

/// `GET /v1/profiles/{name}/stats`: the campaign's numbers (`domain::engagement::campaigns`).
pub fn stats(store: &Store, caller: &Caller, name: &str) -> Result<Response<Body>> {
    let read = store.read()?;
    let stats = crate::domain::engagement::campaigns::stats(&read, &caller.org_id, name)?;
    Ok(reply(StatusCode::OK, &stats))
}

pub async fn put(
    engine: &Engine,
    store: &Store,
    caller: Caller,
    name: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let input = match profiles::ProfileInput::from_json_all(&body, name) {
        Ok(input) => input,
        Err((first, refusals)) => return Ok(refused(&first, &refusals)),
    };
    let failures = tests_before_save(engine, store, &caller, name, &input).await?;
    if !failures.is_empty() {
        return Ok(reply(
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!({
                "message": format!(
                    "The profile's tests failed, so it was not saved: {}",
                    failures.join("; ")
                ),
                "failures": failures,
            }),
        ));
    }
    let name = name.to_string();
    let (profile, label) = store
        .write(move |tx| {
            let profile = profiles::put(tx, &caller, &name, &input)?;
            let label = tx.profile_label(&caller.org_id, &name)?;
            Ok((profile, label))
        })
        .await?;
    Ok(reply(
        StatusCode::OK,
        &profiles::view(&profile, label.as_deref()),
    ))
}

/// The refusal of a profile's members: the first refusal's `message`, as ever, and
/// every refusal beside it (`errors`).
pub(super) fn refused(first: &Error, refusals: &[profiles::Refusal]) -> Response<Body> {
    let errors: Vec<Value> = refusals
        .iter()
        .map(|r| json!({"field": (!r.field.is_empty()).then_some(&r.field), "message": r.error.to_string()}))
        .collect();
    reply(
        first.status(),
        &json!({"message": first.to_string(), "errors": errors}),
    )
}

/// `requireTestsPass`: a save that changes the instructions or the tools (the
/// calendar, which offers the booking tools) of a profile that requires its tests to
/// pass runs them first (`engine::replay`, tools dry); each failed expectation, named
/// `test: turn n: ...`. None when nothing is required or the save will be refused anyway.
async fn tests_before_save(
    engine: &Engine,
    store: &Store,
    caller: &Caller,
    name: &str,
    input: &profiles::ProfileInput,
) -> Result<Vec<String>> {
    let Ok(mut draft) = input.record(name) else {
        return Ok(Vec::new());
    };
    let old = store.read()?.profile(&caller.org_id, name)?;
    if input.tests.is_none() {
        draft.tests = old.as_ref().map(|o| o.tests.clone()).unwrap_or_default();
    }
    if input.require_tests_pass.is_none() {
        draft.require_tests_pass = old.as_ref().is_some_and(|o| o.require_tests_pass);
    }
    if input.calendar.is_none() {
        draft.calendar = old.as_ref().map(|o| o.calendar.clone()).unwrap_or_default();
    }
    let changed = old
        .as_ref()
        .is_none_or(|o| o.instructions != draft.instructions || o.calendar != draft.calendar);
    if !draft.require_tests_pass || draft.tests.is_empty() || !changed {
        return Ok(Vec::new());
    }
    let results = engine
        .run_tests(&caller.org_id, &draft, &draft.tests)
        .await?;
    Ok(results
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| format!("{}: {f}", r.name)))
        .collect())
}

pub async fn delete(store: &Store, caller: Caller, name: &str) -> Result<Response<Body>> {
    let name = name.to_string();
    store
        .write(move |tx| profiles::delete(tx, &caller, &name).react(tx))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": "Profile deleted successfully."}),
    ))
}

pub fn engagement(store: &Store, caller: &Caller, lead_id: &str) -> Result<Response<Body>> {
    let found = enrolment::find(&store.read()?, &caller.org_id, lead_id)?;
    Ok(reply(StatusCode::OK, &enrolment::view(found.as_ref())))
}
