//! Small helpers shared by the black-box test modules (the harness itself is `common.rs`).
#![allow(dead_code)]

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::common::{enc, Response, TestServer};

/// The earliest instant, as a `since` value that matches everything.
pub const EPOCH: &str = "1970-01-01T00:00:00Z";

/// The body as text, for assertion messages.
pub fn text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// Asserts the status and that the body is exactly `{"message": message}`.
pub fn assert_error(r: &Response, status: u16, message: &str) {
    assert_eq!(
        r.status,
        status,
        "expected {status} {message:?}, got body {}",
        text(r)
    );
    assert_eq!(r.json(), json!({ "message": message }), "error body");
}

/// Asserts the status and that the body is `{"message": <non-empty string>}`; returns it.
pub fn assert_error_status(r: &Response, status: u16) -> String {
    assert_eq!(r.status, status, "expected {status}, got body {}", text(r));
    let v = r.json();
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("error body is not an object: {v}"));
    assert_eq!(obj.len(), 1, "error body has only `message`: {v}");
    let message = obj["message"]
        .as_str()
        .unwrap_or_else(|| panic!("message is a string: {v}"));
    assert!(!message.trim().is_empty(), "message is not empty: {v}");
    message.to_string()
}

/// Asserts the status, showing the body on failure, and returns the JSON body.
pub fn expect(r: &Response, status: u16) -> Value {
    assert_eq!(r.status, status, "expected {status}, got body {}", text(r));
    r.json()
}

/// Parses a wire timestamp after checking its exact shape: RFC 3339 UTC with exactly six
/// fraction digits and `Z` (`2026-11-22T10:15:30.123456Z`).
pub fn time_of(value: &Value) -> DateTime<Utc> {
    let s = value
        .as_str()
        .unwrap_or_else(|| panic!("timestamp is a string: {value}"));
    assert_ts_shape(s);
    DateTime::parse_from_rfc3339(s)
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

pub fn assert_ts_shape(s: &str) {
    let b = s.as_bytes();
    let ok = b.len() == 27
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            26 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    assert!(
        ok,
        "timestamp {s:?} is not RFC 3339 UTC with 6 fraction digits and Z"
    );
    assert!(
        DateTime::parse_from_rfc3339(s).is_ok(),
        "timestamp {s:?} parses"
    );
}

/// The same instant written with a `+02:00` offset (and no fraction digits trimmed).
pub fn with_offset(value: &Value) -> String {
    let t = time_of(value);
    let offset = chrono::FixedOffset::east_opt(2 * 3600).unwrap();
    t.with_timezone(&offset)
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

pub fn str_of(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string: {v}"))
}

pub fn lead_path(id: &str) -> String {
    format!("/v1/leads/{id}")
}

/// Every field a Lead always carries.
pub const LEAD_FIELDS: &[&str] = &[
    "id",
    "firstName",
    "lastName",
    "phone",
    "email",
    "customerProfile",
    "createdAt",
    "updatedAt",
    "lastActivityAt",
    "additionalInfo",
    "hasReplied",
    "hasRepliedEmail",
    "hasAiCall",
    "isHot",
    "isQualified",
    "hasTransferCall",
    "isUnsubscribed",
    "isAiOn",
    "tags",
    "summary",
    "externalLeadId",
    "deleted",
    "deletedAt",
    "secondaryCrmLeadId",
    "timeZone",
    "subscriptions",
];

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

/// Changes one character in the middle of a token (base64 there is fully significant).
pub fn tamper(token: &str) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}
