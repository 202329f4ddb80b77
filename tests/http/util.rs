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

/// Twilio's signature of a request to `url` with POST parameters `params` (none for a
/// GET or a WebSocket handshake), computed as Twilio documents it: base64 HMAC-SHA1 with
/// the auth token of the URL followed by each parameter's name and value, sorted by name.
pub fn twilio_signature(token: &str, url: &str, params: &[(&str, &str)]) -> String {
    use base64::Engine as _;
    use hmac::Mac as _;
    let mut sorted = params.to_vec();
    sorted.sort();
    let mut data = url.to_string();
    for (k, v) in sorted {
        data.push_str(k);
        data.push_str(v);
    }
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(token.as_bytes()).expect("any key");
    mac.update(data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Changes one character in the middle of a token (base64 there is fully significant).
pub fn tamper(token: &str) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

// ---------------------------------------------------------------------------------------
// The engagement engine: profiles, the engagement view, waiting for outcomes, a webhook
// receiver. Shared by `profiles.rs`, `engine.rs` and `assistant.rs`.
// ---------------------------------------------------------------------------------------

/// How long a test waits for something the engine should do promptly.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// The organization's business name (set by [`set_business`]) and its help text.
pub const BUSINESS_NAME: &str = "Acme Solar";
pub const HELP_TEXT: &str =
    "Acme Solar: help at acme.example or +1 555 010 0000. Reply STOP to opt out.";

/// Calls `check` every 50 ms until it answers `Ok`, for at most `limit`; panics with
/// `what` and the last `Err` (a description of what was seen) when time runs out.
pub async fn poll<T, F, Fut>(what: &str, limit: std::time::Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = std::time::Instant::now() + limit;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                std::time::Instant::now() < deadline,
                "{what}: not within {limit:?}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

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

/// A webhook receiver on loopback: answers 200 to every POST and keeps every body.
pub struct HookReceiver {
    pub url: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl HookReceiver {
    pub async fn start() -> HookReceiver {
        use http_body_util::BodyExt;
        let log: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind hook receiver");
        let url = format!(
            "http://{}/hooks",
            listener.local_addr().expect("receiver address")
        );
        let accept_log = log.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = accept_log.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let log = log.clone();
                            async move {
                                let body = req.into_body().collect().await.map(|b| b.to_bytes());
                                let value = body
                                    .ok()
                                    .and_then(|b| serde_json::from_slice(&b).ok())
                                    .unwrap_or(Value::Null);
                                log.lock().unwrap().push(value);
                                Ok::<_, std::convert::Infallible>(hyper::Response::new(
                                    http_body_util::Full::new(bytes::Bytes::new()),
                                ))
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        HookReceiver { url, log }
    }

    /// Registers the receiver for every event with an admin key; returns the endpoint id.
    pub async fn register(&self, srv: &TestServer, admin: &str) -> String {
        let created = expect(
            &srv.post(admin, "/v1/webhooks", &json!({"url": self.url}))
                .await,
            201,
        );
        str_of(&created["id"]).to_string()
    }

    /// Every envelope received so far, in arrival order.
    pub fn envelopes(&self) -> Vec<Value> {
        self.log.lock().unwrap().clone()
    }

    /// Waits for the first envelope whose `event` is `event`; returns its `data`.
    pub async fn wait_event(&self, event: &str) -> Value {
        poll(&format!("a {event} webhook"), WAIT, || async move {
            let all = self.envelopes();
            all.iter()
                .find(|e| e["event"] == json!(event))
                .map(|e| e["data"].clone())
                .ok_or_else(|| format!("{all:?}"))
        })
        .await
    }
}

/// Collects what the server logs: install it on a current-thread runtime before starting
/// the server, which then runs every async task on this thread, and its writer thread
/// logs where the thread that opened the store does. Keep the guard alive while the
/// server runs.
#[derive(Clone, Default)]
pub struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    /// Captures this thread's log at `level` and above until the guard is dropped.
    pub fn install(level: tracing::Level) -> (Captured, tracing::subscriber::DefaultGuard) {
        // tracing computes a line's interest with the *current thread's* subscriber
        // while only one subscriber is registered in the process: a test on another
        // thread would then cache "never" for lines this one wants. A second one, kept
        // for the whole run, makes it ask every registered subscriber instead.
        static KEEP: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
        KEEP.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).to_string()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
