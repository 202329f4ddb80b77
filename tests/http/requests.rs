//! Requests to the API the test modules share: leads, events, every page of a listing,
//! inbound messages.

use serde_json::{json, Value};

use engaged::testkit::{enc, Response, TestServer};

use crate::answers::{expect, EPOCH};

pub fn lead_path(id: &str) -> String {
    format!("/v1/leads/{id}")
}

/// Follows `nextToken` to the end. `path_and_query` must already contain a `?`.
/// Returns every item of `field` and the number of pages.
pub async fn walk(
    srv: &TestServer,
    key: &str,
    path_and_query: &str,
    field: &str,
) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &token {
            Some(t) => format!("{path_and_query}&nextToken={}", enc(t)),
            None => path_and_query.to_string(),
        };
        let r = srv.get(key, &path).await;
        let page = expect(&r, 200);
        pages += 1;
        items.extend(
            page[field]
                .as_array()
                .unwrap_or_else(|| panic!("{field} array: {page}"))
                .iter()
                .cloned(),
        );
        match &page["nextToken"] {
            Value::Null => return (items, pages),
            Value::String(t) => token = Some(t.clone()),
            other => panic!("nextToken is a string or null: {other}"),
        }
        assert!(pages < 10_000, "pagination does not end");
    }
}

/// Every lead of the key's organization, by a full listing from the epoch.
pub async fn all_leads(srv: &TestServer, key: &str) -> Vec<Value> {
    walk(
        srv,
        key,
        &format!("/v1/leads?updatedSince={}&limit=1000", enc(EPOCH)),
        "leads",
    )
    .await
    .0
}

/// Every event of a lead.
pub async fn all_events(srv: &TestServer, key: &str, lead: &str) -> Vec<Value> {
    walk(
        srv,
        key,
        &format!("/v1/leads/{lead}/events?limit=1000"),
        "events",
    )
    .await
    .0
}

/// A lead with a phone and an email (so outreach passes the compliance gate).
pub async fn reachable_lead(srv: &TestServer, key: &str, id: &str) -> Value {
    srv.create_lead(
        key,
        &json!({"id": id, "firstName": "Ada", "phone": "+15551234567", "email": "ada@example.com"}),
    )
    .await
}

pub async fn get_lead(srv: &TestServer, key: &str, id: &str) -> Value {
    expect(&srv.get(key, &lead_path(id)).await, 200)
}

pub async fn post_event(srv: &TestServer, key: &str, lead: &str, body: &Value) -> Value {
    let r = srv
        .post(key, &format!("/v1/leads/{lead}/events"), body)
        .await;
    expect(&r, 200)
}

/// `POST /v1/inbound/sms`; returns its answer (200).
pub async fn inbound_sms(srv: &TestServer, key: &str, from: &str, text: &str) -> Value {
    expect(
        &srv.post(key, "/v1/inbound/sms", &json!({"from": from, "text": text}))
            .await,
        200,
    )
}

/// `POST /v1/inbound/email`.
pub async fn inbound_email(
    srv: &TestServer,
    key: &str,
    from: &str,
    subject: &str,
    text: &str,
) -> Response {
    srv.post(
        key,
        "/v1/inbound/email",
        &json!({"from": from, "subject": subject, "text": text}),
    )
    .await
}
