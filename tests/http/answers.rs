//! Checks of the server's answers: statuses, error bodies, timestamps, a lead's fields.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use engaged::testkit::Response;

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

/// Asserts an outbound message event was delivered by the sandbox provider with `origin`.
#[track_caller]
pub fn assert_sandbox_delivered(event: &Value, origin: &str) {
    let data = &event["data"];
    assert_eq!(data["status"], json!("delivered"), "status: {event}");
    assert!(
        data["providerMessageId"]
            .as_str()
            .is_some_and(|id| id.starts_with("sbx_") && id.len() > 4),
        "providerMessageId sbx_...: {event}"
    );
    assert_eq!(data["origin"], json!(origin), "origin: {event}");
}

/// A quoted-printable body decoded (RFC 2045 §6.7): soft line breaks joined, `=XX`
/// bytes read.
pub fn quoted_printable(text: &str) -> String {
    let joined = text.replace("=\r\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).expect("UTF-8")
}
