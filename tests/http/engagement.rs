//! The engagement engine as the test modules drive it: the organization's settings,
//! profiles and cadences, the engagement view, a lead's messages, and waiting for them.
//! Shared by `profiles.rs`, `engine.rs`, `assistant.rs` and others.

use serde_json::{json, Value};

use engaged::testkit::{poll, TestServer, WAIT};

use crate::answers::expect;
use crate::requests::all_events;

/// The organization's business name (set by [`set_business`]) and its help text.
pub const BUSINESS_NAME: &str = "Acme Solar";
pub const HELP_TEXT: &str =
    "Acme Solar: help at acme.example or +1 555 010 0000. Reply STOP to opt out.";

/// `PATCH /v1/org` with an admin key; returns the settings it answers.
pub async fn set_org(srv: &TestServer, admin: &str, body: &Value) -> Value {
    expect(&srv.patch(admin, "/v1/org", body).await, 200)
}

/// Sets the business name and help text the keyword confirmations and placeholders use.
pub async fn set_business(srv: &TestServer, admin: &str) -> Value {
    set_org(
        srv,
        admin,
        &json!({"business": {"name": BUSINESS_NAME, "helpText": HELP_TEXT}}),
    )
    .await
}

pub fn profile_path(name: &str) -> String {
    format!("/v1/profiles/{name}")
}

/// `PUT /v1/profiles/{name}` with an admin key; returns the profile it answers.
pub async fn put_profile(srv: &TestServer, admin: &str, name: &str, body: &Value) -> Value {
    expect(&srv.put(admin, &profile_path(name), body).await, 200)
}

/// A profile body with `cadence` and nothing else but short instructions.
pub fn profile_with(cadence: Value) -> Value {
    json!({"instructions": "You are Sam from Acme Solar. Be brief and friendly.", "cadence": cadence})
}

pub fn sms_step(after: &str, text: &str) -> Value {
    json!({"after": after, "channel": "sms", "text": text})
}

pub fn email_step(after: &str, subject: &str, text: &str) -> Value {
    json!({"after": after, "channel": "email", "subject": subject, "text": text})
}

/// `GET /v1/leads/{lead}/engagement`.
pub async fn engagement(srv: &TestServer, key: &str, lead: &str) -> Value {
    expect(
        &srv.get(key, &format!("/v1/leads/{lead}/engagement")).await,
        200,
    )
}

/// Waits until the engagement view of `lead` satisfies `ok`; returns it.
pub async fn wait_engagement(
    srv: &TestServer,
    key: &str,
    lead: &str,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let ok = &ok;
    poll(what, WAIT, || async move {
        let view = engagement(srv, key, lead).await;
        if ok(&view) {
            Ok(view)
        } else {
            Err(view.to_string())
        }
    })
    .await
}

/// Waits until the engagement of `lead` is `state` (and, for `stopped`, has `reason`).
pub async fn wait_state(
    srv: &TestServer,
    key: &str,
    lead: &str,
    state: &str,
    reason: Option<&str>,
) -> Value {
    let what = format!("engagement of {lead} becomes {state} ({reason:?})");
    wait_engagement(srv, key, lead, &what, |v| {
        v["state"] == json!(state) && reason.is_none_or(|r| v["stoppedReason"] == json!(r))
    })
    .await
}

/// Every message of a lead, oldest first.
pub async fn messages_of(srv: &TestServer, key: &str, lead: &str) -> Vec<Value> {
    let page = expect(
        &srv.get(key, &format!("/v1/leads/{lead}/messages")).await,
        200,
    );
    page["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("messages array: {page}"))
        .clone()
}

/// The organization's messages to a lead (owner `user`), oldest first.
pub async fn outbound(srv: &TestServer, key: &str, lead: &str) -> Vec<Value> {
    messages_of(srv, key, lead)
        .await
        .into_iter()
        .filter(|m| m["owner"] == json!("user"))
        .collect()
}

/// The texts of `messages`.
pub fn texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            m["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Waits until the lead has at least `n` outbound messages; returns them all.
pub async fn wait_outbound(srv: &TestServer, key: &str, lead: &str, n: usize) -> Vec<Value> {
    poll(
        &format!("{n} outbound message(s) to {lead}"),
        WAIT,
        || async move {
            let sent = outbound(srv, key, lead).await;
            if sent.len() >= n {
                Ok(sent)
            } else {
                Err(format!("{:?}", texts(&sent)))
            }
        },
    )
    .await
}

/// Every event of `lead` whose type is `kind`.
pub async fn events_of_type(srv: &TestServer, key: &str, lead: &str, kind: &str) -> Vec<Value> {
    all_events(srv, key, lead)
        .await
        .into_iter()
        .filter(|e| e["type"] == json!(kind))
        .collect()
}

/// The `MESSAGE` or `EMAIL` event that is the message `id`.
pub async fn message_event(srv: &TestServer, key: &str, lead: &str, id: &Value) -> Value {
    all_events(srv, key, lead)
        .await
        .into_iter()
        .find(|e| (e["type"] == json!("MESSAGE") || e["type"] == json!("EMAIL")) && &e["id"] == id)
        .unwrap_or_else(|| panic!("no MESSAGE/EMAIL event with id {id} on {lead}"))
}

/// Waits until the message `id`'s event has left `sending`; returns the event.
pub async fn wait_settled(srv: &TestServer, key: &str, lead: &str, id: &Value) -> Value {
    poll(
        &format!("message {id} leaves `sending`"),
        WAIT,
        || async move {
            let event = message_event(srv, key, lead, id).await;
            match event["data"]["status"].as_str() {
                Some("sending") | None => Err(event.to_string()),
                Some(_) => Ok(event),
            }
        },
    )
    .await
}
