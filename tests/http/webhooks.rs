//! Webhooks: registration (admin scope), signed delivery to a real receiver on loopback,
//! retries, `Retry-After`, 410, the deliveries log, manual retry, endpoint isolation,
//! and the once-only call events.
//!
//! The receiver is the test kit's ([`WebhookReceiver`]): it records every request and
//! answers from a per-test policy. Signatures are checked with a verifier written here
//! from the Standard Webhooks spec, independent of the server's signing code.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use hyper::Method;
use serde_json::{json, Value};
use sha2::Sha256;

use engaged::testkit::webhooks::{Received, Reply, WebhookReceiver};
use engaged::testkit::{closed_addr, TestServer};

use crate::answers::*;
use crate::requests::*;

/// How long a test waits for something that should happen promptly.
const WAIT: Duration = Duration::from_secs(10);
/// How far a `webhook-timestamp` may be from now (the spec's usual tolerance).
const TOLERANCE_SECS: i64 = 5 * 60;

// ---------------------------------------------------------------------------------------
// An independent Standard Webhooks verifier
// ---------------------------------------------------------------------------------------

/// True when one of the space-separated `v1,<base64>` signatures in `header` is the
/// HMAC-SHA256, keyed with the base64-decoded part of `whsec_<base64>`, of
/// `{id}.{timestamp}.{body}`.
fn signature_matches(secret: &str, id: &str, timestamp: &str, body: &[u8], header: &str) -> bool {
    let Some(encoded) = secret.strip_prefix("whsec_") else {
        return false;
    };
    let Ok(key) = B64.decode(encoded) else {
        return false;
    };
    header
        .split(' ')
        .filter(|s| !s.is_empty())
        .any(|candidate| {
            let Some(("v1", sig)) = candidate.split_once(',') else {
                return false;
            };
            let Ok(sig) = B64.decode(sig) else {
                return false;
            };
            let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.as_bytes());
            mac.update(b".");
            mac.update(body);
            mac.verify_slice(&sig).is_ok()
        })
}

/// Checks everything a receiver checks, and the envelope; panics with the reason.
pub fn verify(secret: &str, r: &Received) {
    assert_eq!(r.method, "POST", "webhooks are POSTed");
    assert!(
        r.header("content-type").starts_with("application/json"),
        "content-type: {}",
        r.header("content-type")
    );
    let (id, timestamp, signature) = (
        r.header("webhook-id"),
        r.header("webhook-timestamp"),
        r.header("webhook-signature"),
    );
    assert!(!id.is_empty(), "webhook-id is not empty");
    let unix: i64 = timestamp
        .parse()
        .unwrap_or_else(|_| panic!("webhook-timestamp is integer seconds: {timestamp:?}"));
    let now = Utc::now().timestamp();
    assert!(
        (now - unix).abs() <= TOLERANCE_SECS,
        "webhook-timestamp {unix} is within {TOLERANCE_SECS} s of now {now}"
    );
    assert!(
        signature_matches(secret, id, timestamp, &r.body, signature),
        "signature {signature:?} does not verify for id {id}, timestamp {timestamp}, body {}",
        String::from_utf8_lossy(&r.body)
    );
    let body = r.json();
    let envelope = body
        .as_object()
        .unwrap_or_else(|| panic!("envelope is an object: {body}"));
    let mut keys: Vec<&str> = envelope.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["data", "event", "timestamp"],
        "envelope fields: {body}"
    );
    assert!(body["event"].is_string(), "event is a string: {body}");
    assert!(body["data"].is_object(), "data is an object: {body}");
    let sent = DateTime::parse_from_rfc3339(str_of(&body["timestamp"]))
        .unwrap_or_else(|e| panic!("envelope timestamp is RFC 3339 ({e}): {body}"))
        .with_timezone(&Utc);
    assert!(
        (Utc::now() - sent).num_seconds().abs() <= TOLERANCE_SECS,
        "envelope timestamp {sent} is close to now"
    );
}

// ---------------------------------------------------------------------------------------
// Server-side helpers
// ---------------------------------------------------------------------------------------

fn ms(values: &[u64]) -> Vec<Duration> {
    values.iter().map(|v| Duration::from_millis(*v)).collect()
}

/// A server whose retries follow `schedule` (milliseconds), and an admin key of "acme".
async fn start(schedule: &[u64]) -> (TestServer, String) {
    let schedule = ms(schedule);
    let ts = TestServer::start_with(move |cfg| {
        cfg.webhooks.retry_schedule = schedule;
        cfg.webhooks.timeout = Duration::from_secs(5);
    })
    .await;
    let key = ts.key("acme", "admin").await;
    (ts, key)
}

struct Hook {
    id: String,
    secret: String,
}

async fn register(ts: &TestServer, key: &str, url: &str, events: Option<&[&str]>) -> Hook {
    let mut body = json!({ "url": url });
    if let Some(events) = events {
        body["events"] = json!(events);
    }
    let created = expect(&ts.post(key, "/v1/webhooks", &body).await, 201);
    Hook {
        id: str_of(&created["id"]).to_string(),
        secret: str_of(&created["secret"]).to_string(),
    }
}

async fn put_call(ts: &TestServer, key: &str, id: &str, body: &Value) -> Value {
    let r = ts.put(key, &format!("/v1/calls/{id}"), body).await;
    assert!(
        r.status == 200 || r.status == 201,
        "PUT call {id}: {} {}",
        r.status,
        text(&r)
    );
    r.json()
}

fn completed(lead: &str) -> Value {
    json!({"leadId": lead, "direction": "OUTBOUND", "callStatus": "COMPLETE", "durationSeconds": 60})
}

fn in_progress(lead: &str) -> Value {
    json!({"leadId": lead, "direction": "OUTBOUND", "callStatus": "IN_PROGRESS"})
}

/// Every delivery of an endpoint, oldest first.
async fn deliveries(ts: &TestServer, key: &str, hook: &str) -> Vec<Value> {
    walk(
        ts,
        key,
        &format!("/v1/webhooks/{hook}/deliveries?limit=1000"),
        "deliveries",
    )
    .await
    .0
}

/// Waits until the endpoint has at least `n` deliveries and none is pending; asserts
/// there are exactly `n` and returns them.
async fn settle(ts: &TestServer, key: &str, hook: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let all = deliveries(ts, key, hook).await;
        if all.len() >= n && all.iter().all(|d| d["state"] != json!("pending")) {
            assert_eq!(all.len(), n, "deliveries: {all:#?}");
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "deliveries did not settle to {n} within {WAIT:?}: {all:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls the deliveries log until `ready` holds for it (bounded).
async fn wait_log(
    ts: &TestServer,
    key: &str,
    hook: &str,
    what: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let all = deliveries(ts, key, hook).await;
        if ready(&all) {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "deliveries never showed {what}: {all:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn events_of(deliveries: &[Value]) -> Vec<String> {
    deliveries
        .iter()
        .map(|d| str_of(&d["event"]).to_string())
        .collect()
}

fn statuses(delivery: &Value) -> Vec<Value> {
    delivery["attempts"]
        .as_array()
        .unwrap_or_else(|| panic!("attempts array: {delivery}"))
        .iter()
        .map(|a| a["status"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_receiver_with_a_private_ca_is_reached_only_through_outbound_ca_file() {
    // Another engaged server is the receiver: HTTPS with its own self-signed
    // certificate, which no built-in root covers. Its answer (404 here) is the proof
    // that TLS succeeded.
    let receiver = TestServer::start().await;
    let ca = receiver.data_dir.join("tls/cert.pem");
    for trusted in [true, false] {
        let ts = TestServer::start_with(|c| c.outbound_ca_file = trusted.then(|| ca.clone())).await;
        let admin = ts.key("acme", "admin").await;
        let url = format!("{}/hooks", receiver.base);
        let created = expect(
            &ts.post(&admin, "/v1/webhooks", &json!({"url": url})).await,
            201,
        );
        let hook = str_of(&created["id"]).to_string();
        reachable_lead(&ts, &admin, "L1").await;
        put_call(&ts, &admin, "c1", &completed("L1")).await;
        let log = wait_log(&ts, &admin, &hook, "an attempt", |all| {
            all.iter()
                .any(|d| !d["attempts"].as_array().unwrap().is_empty())
        })
        .await;
        let attempt = log
            .iter()
            .find_map(|d| d["attempts"].as_array().unwrap().first().cloned())
            .unwrap();
        if trusted {
            assert_eq!(attempt["status"], json!(404), "{attempt}");
        } else {
            assert_eq!(attempt.get("status"), None, "{attempt}");
            assert_eq!(attempt["error"], json!("tls"), "{attempt}");
            // Not tried again: the delivery rests in `failed`, after that one attempt.
            let log = wait_log(&ts, &admin, &hook, "the delivery failed", |all| {
                all.iter().any(|d| d["state"] == json!("failed"))
            })
            .await;
            let failed = log.iter().find(|d| d["state"] == json!("failed")).unwrap();
            assert_eq!(failed["attempts"].as_array().unwrap().len(), 1, "{failed}");
        }
    }
}

async fn endpoint_view(ts: &TestServer, key: &str, hook: &str) -> Value {
    let list = expect(&ts.get(key, "/v1/webhooks").await, 200);
    list["webhooks"]
        .as_array()
        .expect("webhooks array")
        .iter()
        .find(|w| w["id"] == json!(hook))
        .cloned()
        .unwrap_or_else(|| panic!("{hook} is listed: {list}"))
}

/// Requests grouped by `webhook-id`, each group in arrival order.
fn by_id(requests: &[Received]) -> BTreeMap<String, Vec<Received>> {
    let mut groups: BTreeMap<String, Vec<Received>> = BTreeMap::new();
    for r in requests {
        groups
            .entry(r.id().to_string())
            .or_default()
            .push(r.clone());
    }
    groups
}

// ---------------------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------------------

#[test]
fn independent_verifier_accepts_the_standard_webhooks_test_vector() {
    let (secret, id, ts, body) = (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "1614265330",
        br#"{"test": 2432232314}"#,
    );
    let good = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    assert!(signature_matches(secret, id, ts, body, good));
    assert!(signature_matches(
        secret,
        id,
        ts,
        body,
        &format!("v1,AAAA {good}")
    ));
    assert!(!signature_matches(secret, id, "1614265331", body, good));
    assert!(!signature_matches(secret, "msg_other", ts, body, good));
    assert!(!signature_matches(
        secret,
        id,
        ts,
        br#"{"test": 2432232315}"#,
        good
    ));
    assert!(!signature_matches(
        secret,
        id,
        ts,
        body,
        &good.replace("v1,", "v2,")
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_delivery_is_signed_per_standard_webhooks() {
    let (ts, key) = start(&[200, 200]).await;
    // The first request fails, so a retry (with a fresh timestamp) is checked as well.
    let rx = WebhookReceiver::scripted(vec![Reply::status(500)], Reply::ok()).await;
    let hook = register(&ts, &key, &rx.url, None).await;
    let other = register(
        &ts,
        &key,
        "http://127.0.0.1:9/unused",
        Some(&["lead.opted_out"]),
    )
    .await;
    reachable_lead(&ts, &key, "L1").await;
    let mut call = completed("L1");
    call["dispositionId"] = json!("disp-1");
    call["transferStatus"] = json!("connected");
    put_call(&ts, &key, "c1", &call).await;
    put_call(&ts, &key, "c2", &completed("L1")).await;

    let log = settle(&ts, &key, &hook.id, 4).await;
    let attempts: usize = log
        .iter()
        .map(|d| d["attempts"].as_array().unwrap().len())
        .sum();
    assert_eq!(attempts, 5, "four deliveries, one retried: {log:#?}");
    let requests = rx.wait_for_within(5, WAIT).await;
    assert_eq!(requests.len(), 5);
    for r in &requests {
        assert_eq!(r.path, rx.path);
        verify(&hook.secret, r);
        // The verifier is not trivially satisfied.
        assert!(!signature_matches(
            &other.secret,
            r.id(),
            r.header("webhook-timestamp"),
            &r.body,
            r.header("webhook-signature")
        ));
        let mut tampered = r.body.to_vec();
        tampered.push(b' ');
        assert!(!signature_matches(
            &hook.secret,
            r.id(),
            r.header("webhook-timestamp"),
            &tampered,
            r.header("webhook-signature")
        ));
    }
    // `webhook-id` is the delivery's id, and each event went out as its delivery says.
    let groups = by_id(&requests);
    assert_eq!(groups.len(), 4);
    for d in &log {
        let id = str_of(&d["id"]);
        let sent = groups
            .get(id)
            .unwrap_or_else(|| panic!("delivery {id} arrived"));
        for r in sent {
            assert_eq!(r.json()["event"], d["event"]);
            assert_eq!(r.json()["data"], d["data"]);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_is_validated() {
    let (ts, key) = start(&[]).await;
    for bad in [
        json!("ftp://example.com/hook"),
        json!("example.com/hook"),
        json!("/relative/hook"),
        json!(""),
        json!("https://"),
        json!("http://a b/hook"),
        json!(42),
        json!(["http://127.0.0.1/x"]),
    ] {
        let r = ts.post(&key, "/v1/webhooks", &json!({ "url": bad })).await;
        assert_error(&r, 400, "Invalid format for field: url");
    }
    for bad in [
        json!(["call.completed", "call.exploded"]),
        json!(["CALL.COMPLETED"]),
        json!("call.completed"),
        json!([42]),
    ] {
        let body = json!({"url": "https://crm.example.com/hook", "events": bad});
        let r = ts.post(&key, "/v1/webhooks", &body).await;
        assert_error(&r, 400, "Invalid format for field: events");
    }
    for missing in [json!({}), json!({"events": ["call.completed"]})] {
        let r = ts.post(&key, "/v1/webhooks", &missing).await;
        assert_error(&r, 400, "Missing required field: url");
    }
    let none = expect(&ts.get(&key, "/v1/webhooks").await, 200);
    assert_eq!(none, json!({"webhooks": []}), "nothing was registered");

    let body = json!({"url": "https://crm.example.com/hooks?x=1", "events": ["call.completed", "call.transfer.failed"]});
    let created = expect(&ts.post(&key, "/v1/webhooks", &body).await, 201);
    let mut keys: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["createdAt", "disabled", "events", "id", "secret", "url"],
        "{created}"
    );
    assert_eq!(created["url"], body["url"]);
    assert_eq!(created["events"], body["events"]);
    assert_eq!(created["disabled"], json!(false));
    time_of(&created["createdAt"]);

    let all = expect(
        &ts.post(
            &key,
            "/v1/webhooks",
            &json!({"url": "http://127.0.0.1:1/x"}),
        )
        .await,
        201,
    );
    assert_eq!(all["events"], json!([]), "no filter: every event");
    assert_ne!(all["id"], created["id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_administration_needs_the_admin_scope() {
    let (ts, admin) = start(&[]).await;
    let hook = register(&ts, &admin, "https://crm.example.com/hook", None).await;
    for scope in ["read", "write"] {
        let key = ts.key("acme", scope).await;
        let body = json!({"url": "https://crm.example.com/other"});
        assert_error(
            &ts.post(&key, "/v1/webhooks", &body).await,
            403,
            "Forbidden",
        );
        assert_error(&ts.get(&key, "/v1/webhooks").await, 403, "Forbidden");
        let path = format!("/v1/webhooks/{}", hook.id);
        assert_error(&ts.delete(&key, &path).await, 403, "Forbidden");
        let path = format!("/v1/webhooks/{}/deliveries", hook.id);
        assert_error(&ts.get(&key, &path).await, 403, "Forbidden");
        let path = format!("/v1/webhooks/{}/deliveries/msg_x/retry", hook.id);
        assert_error(&ts.post(&key, &path, &json!({})).await, 403, "Forbidden");
    }
    let list = expect(&ts.get(&admin, "/v1/webhooks").await, 200);
    let ids: Vec<&Value> = list["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["id"])
        .collect();
    assert_eq!(ids, [&json!(hook.id)], "forbidden calls changed nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_is_shown_only_at_creation() {
    let (ts, key) = start(&[]).await;
    let rx = WebhookReceiver::ok().await;
    let a = register(&ts, &key, &rx.url, None).await;
    let b = register(&ts, &key, "https://crm.example.com/b", None).await;
    for secret in [&a.secret, &b.secret] {
        let encoded = secret.strip_prefix("whsec_").expect("whsec_ prefix");
        assert_eq!(B64.decode(encoded).expect("base64").len(), 32, "{secret}");
    }
    assert_ne!(a.secret, b.secret);

    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;
    settle(&ts, &key, &a.id, 1).await;

    let list = ts.get(&key, "/v1/webhooks").await;
    let listed = expect(&list, 200);
    let hooks = listed["webhooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 2);
    for w in hooks {
        let mut keys: Vec<&str> = w.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["createdAt", "disabled", "events", "id", "url"],
            "{w}"
        );
    }
    let log = ts
        .get(&key, &format!("/v1/webhooks/{}/deliveries", a.id))
        .await;
    for r in [&list, &log] {
        let body = text(r);
        for secret in [&a.secret, &b.secret] {
            let encoded = secret.strip_prefix("whsec_").unwrap();
            assert!(!body.contains(encoded), "secret leaked: {body}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Retries and the deliveries log
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_twice_then_succeeding_is_three_attempts_of_one_delivery() {
    let (ts, key) = start(&[200, 200, 200]).await;
    let rx =
        WebhookReceiver::scripted(vec![Reply::status(500), Reply::status(500)], Reply::ok()).await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;

    let requests = rx.wait_for_within(3, WAIT).await;
    let log = settle(&ts, &key, &hook.id, 1).await;
    assert_eq!(rx.count(), 3, "delivered on the third attempt, no more");
    let delivery = &log[0];
    for r in &requests {
        verify(&hook.secret, r);
        assert_eq!(r.id(), str_of(&delivery["id"]), "one webhook-id throughout");
        assert_eq!(r.event(), "call.completed");
    }
    assert_eq!(delivery["state"], json!("delivered"));
    assert_eq!(delivery["event"], json!("call.completed"));
    assert_eq!(statuses(delivery), [json!(500), json!(500), json!(200)]);
    assert!(
        delivery.get("nextAttemptAt").is_none(),
        "nothing left to do: {delivery}"
    );
    let mut previous = None;
    for attempt in delivery["attempts"].as_array().unwrap() {
        let at = time_of(&attempt["at"]);
        assert!(previous.is_none_or(|p| p <= at), "attempts in order");
        previous = Some(at);
        assert!(
            attempt["latencyMs"].as_f64().is_some_and(|l| l >= 0.0),
            "{attempt}"
        );
        assert!(attempt.get("error").is_none(), "{attempt}");
    }
    time_of(&delivery["createdAt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_retries_fail_and_a_manual_retry_delivers() {
    let (ts, key) = start(&[100, 100]).await;
    let rx = WebhookReceiver::scripted(vec![Reply::status(500); 3], Reply::ok()).await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;

    let log = settle(&ts, &key, &hook.id, 1).await;
    let failed = &log[0];
    assert_eq!(failed["state"], json!("failed"), "{failed}");
    assert_eq!(statuses(failed), [json!(500), json!(500), json!(500)]);
    assert!(failed.get("nextAttemptAt").is_none(), "{failed}");
    assert_eq!(rx.count(), 3, "one attempt plus one per schedule entry");
    let id = str_of(&failed["id"]).to_string();

    let path = format!("/v1/webhooks/{}/deliveries/{id}/retry", hook.id);
    // No body is needed.
    let requeued = ts
        .request(Method::POST, &path, Some(&key), None, Vec::new())
        .await;
    let requeued = expect(&requeued, 202);
    assert_eq!(requeued["id"], json!(id));
    assert_eq!(requeued["state"], json!("pending"));
    assert_eq!(requeued["attempts"].as_array().unwrap().len(), 3);

    let requests = rx.wait_for_within(4, WAIT).await;
    assert_eq!(
        requests[3].id(),
        id,
        "the same delivery, the same webhook-id"
    );
    verify(&hook.secret, &requests[3]);
    let log = settle(&ts, &key, &hook.id, 1).await;
    assert_eq!(log[0]["state"], json!("delivered"));
    assert_eq!(
        statuses(&log[0]),
        [json!(500), json!(500), json!(500), json!(200)]
    );

    assert_error_status(&ts.post(&key, &path, &json!({})).await, 409);
    let unknown = format!("/v1/webhooks/{}/deliveries/msg_nope/retry", hook.id);
    assert_error_status(&ts.post(&key, &unknown, &json!({})).await, 404);
    let unknown = format!("/v1/webhooks/wh_nope/deliveries/{id}/retry");
    assert_error(
        &ts.post(&key, &unknown, &json!({})).await,
        404,
        "Webhook not found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_disables_the_endpoint() {
    let (ts, key) = start(&[100, 100]).await;
    let gone = WebhookReceiver::scripted(vec![Reply::status(410)], Reply::ok()).await;
    let control = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &gone.url, None).await;
    let other = register(&ts, &key, &control.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;

    let log = settle(&ts, &key, &hook.id, 1).await;
    assert_eq!(log[0]["state"], json!("failed"), "410 is final: {log:#?}");
    assert_eq!(statuses(&log[0]), [json!(410)]);
    assert_eq!(
        endpoint_view(&ts, &key, &hook.id).await["disabled"],
        json!(true)
    );
    assert_eq!(
        endpoint_view(&ts, &key, &other.id).await["disabled"],
        json!(false)
    );

    put_call(&ts, &key, "c2", &completed("L1")).await;
    control.wait_for_within(2, WAIT).await;
    settle(&ts, &key, &other.id, 2).await;
    assert_eq!(
        deliveries(&ts, &key, &hook.id).await.len(),
        1,
        "no delivery is queued for a disabled endpoint"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        gone.count(),
        1,
        "nothing more reached the disabled endpoint"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_retry_re_enables_an_endpoint_disabled_by_gone() {
    let (ts, key) = start(&[100]).await;
    let rx = WebhookReceiver::scripted(vec![Reply::status(410)], Reply::ok()).await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;
    let log = settle(&ts, &key, &hook.id, 1).await;
    assert_eq!(
        endpoint_view(&ts, &key, &hook.id).await["disabled"],
        json!(true)
    );

    let id = str_of(&log[0]["id"]).to_string();
    let path = format!("/v1/webhooks/{}/deliveries/{id}/retry", hook.id);
    expect(&ts.post(&key, &path, &json!({})).await, 202);
    assert_eq!(
        endpoint_view(&ts, &key, &hook.id).await["disabled"],
        json!(false)
    );
    let requests = rx.wait_for_within(2, WAIT).await;
    assert_eq!(requests[1].id(), id);
    put_call(&ts, &key, "c2", &completed("L1")).await;
    let log = settle(&ts, &key, &hook.id, 2).await;
    assert!(
        log.iter().all(|d| d["state"] == json!("delivered")),
        "{log:#?}"
    );
    rx.wait_for_within(3, WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_honoured_for_429_502_503_504() {
    // The schedule is short: only Retry-After can make a retry wait a second.
    let (ts, key) = start(&[50, 50]).await;
    let rx = WebhookReceiver::with_policy(Arc::new(|r: &Received, earlier: usize| {
        if earlier > 0 {
            return Reply::ok();
        }
        let call = r.json()["data"]["callId"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let status = call.trim_start_matches('c').parse().unwrap_or(500);
        Reply::status(status).with("retry-after", "1")
    }))
    .await;
    let hook = register(&ts, &key, &rx.url, Some(&["call.completed"])).await;
    reachable_lead(&ts, &key, "L1").await;
    for status in [429, 502, 503, 504] {
        put_call(&ts, &key, &format!("c{status}"), &completed("L1")).await;
    }
    let requests = rx.wait_for_within(8, WAIT).await;
    let log = settle(&ts, &key, &hook.id, 4).await;
    for (id, attempts) in by_id(&requests) {
        assert_eq!(attempts.len(), 2, "{id}: one Retry-After, then success");
        let gap = attempts[1].at - attempts[0].at;
        assert!(
            gap >= Duration::from_millis(900),
            "{id} ({}): retried after {gap:?}, before Retry-After: 1",
            attempts[0].json()["data"]["callId"]
        );
    }
    for d in &log {
        let status: u16 = str_of(&d["data"]["callId"])[1..].parse().unwrap();
        assert_eq!(statuses(d), [json!(status), json!(200)]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_ignored_for_other_failures() {
    let (ts, key) = start(&[50]).await;
    let rx = WebhookReceiver::scripted(
        vec![Reply::status(500).with("retry-after", "8")],
        Reply::ok(),
    )
    .await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;
    let requests = rx.wait_for_within(2, Duration::from_secs(6)).await;
    assert_eq!(requests[0].id(), requests[1].id());
    assert!(
        requests[1].at - requests[0].at < Duration::from_secs(6),
        "a 500's Retry-After does not delay the scheduled retry"
    );
    let log = settle(&ts, &key, &hook.id, 1).await;
    assert_eq!(statuses(&log[0]), [json!(500), json!(200)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_retry_is_listed_and_each_attempt_has_a_fresh_timestamp() {
    let (ts, key) = start(&[50]).await;
    let rx = WebhookReceiver::scripted(
        vec![Reply::status(503).with("retry-after", "2")],
        Reply::ok(),
    )
    .await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;

    // Between the two attempts: Retry-After keeps them two seconds apart, ample time
    // to read the log.
    let log = wait_log(&ts, &key, &hook.id, "one recorded attempt", |all| {
        all.len() == 1 && !all[0]["attempts"].as_array().unwrap().is_empty()
    })
    .await;
    let waiting = &log[0];
    assert_eq!(waiting["state"], json!("pending"), "{waiting}");
    assert_eq!(statuses(waiting), [json!(503)]);
    let at = time_of(&waiting["attempts"][0]["at"]);
    let next = time_of(&waiting["nextAttemptAt"]);
    assert!(
        next - at >= chrono::Duration::milliseconds(1900),
        "the next attempt follows Retry-After: {waiting}"
    );

    let requests = rx.wait_for_within(2, WAIT).await;
    for r in &requests {
        verify(&hook.secret, r);
    }
    assert_eq!(requests[0].id(), requests[1].id());
    let first: i64 = requests[0].header("webhook-timestamp").parse().unwrap();
    let second: i64 = requests[1].header("webhook-timestamp").parse().unwrap();
    assert!(
        second > first,
        "webhook-timestamp {second} is fresh (first {first})"
    );
    assert_ne!(
        requests[0].json()["timestamp"],
        requests[1].json()["timestamp"],
        "the envelope timestamp is the attempt's"
    );
    assert_eq!(requests[0].json()["data"], requests[1].json()["data"]);
    settle(&ts, &key, &hook.id, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_log_pages_oldest_first() {
    let (ts, key) = start(&[]).await;
    let rx = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    for id in ["c1", "c2", "c3"] {
        put_call(&ts, &key, id, &completed("L1")).await;
    }
    let all = settle(&ts, &key, &hook.id, 3).await;
    let calls: Vec<&Value> = all.iter().map(|d| &d["data"]["callId"]).collect();
    assert_eq!(calls, [&json!("c1"), &json!("c2"), &json!("c3")]);
    for d in &all {
        let mut keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["attempts", "createdAt", "data", "event", "id", "state"],
            "{d}"
        );
    }

    let base = format!("/v1/webhooks/{}/deliveries", hook.id);
    let first = expect(&ts.get(&key, &format!("{base}?limit=2")).await, 200);
    assert_eq!(first["deliveries"].as_array().unwrap().len(), 2);
    let token = str_of(&first["nextToken"]);
    let path = format!("{base}?limit=2&nextToken={}", engaged::testkit::enc(token));
    let second = expect(&ts.get(&key, &path).await, 200);
    assert_eq!(second["deliveries"].as_array().unwrap().len(), 1);
    assert_eq!(second["nextToken"], Value::Null);
    let paged: Vec<&Value> = first["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["deliveries"].as_array().unwrap())
        .map(|d| &d["id"])
        .collect();
    let whole: Vec<&Value> = all.iter().map(|d| &d["id"]).collect();
    assert_eq!(paged, whole);

    assert_error(
        &ts.get(&key, "/v1/webhooks/wh_nope/deliveries").await,
        404,
        "Webhook not found",
    );
}

// ---------------------------------------------------------------------------------------
// Endpoints: deletion, isolation, the events filter, a dead neighbour
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_endpoint_stops_its_deliveries() {
    // A retry would come about a second after the first attempt, if it still existed.
    let (ts, key) = start(&[1000]).await;
    let doomed = WebhookReceiver::scripted(vec![Reply::status(500)], Reply::ok()).await;
    let control = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &doomed.url, None).await;
    let other = register(&ts, &key, &control.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;
    let first = doomed.wait_for_within(1, WAIT).await[0].clone();
    let delivery = first.id().to_string();

    let path = format!("/v1/webhooks/{}", hook.id);
    let deleted = expect(&ts.delete(&key, &path).await, 200);
    assert_eq!(deleted, json!({"message": "Webhook deleted."}));
    assert_error(&ts.delete(&key, &path).await, 404, "Webhook not found");
    assert_error(
        &ts.get(&key, &format!("{path}/deliveries")).await,
        404,
        "Webhook not found",
    );
    assert_error(
        &ts.post(
            &key,
            &format!("{path}/deliveries/{delivery}/retry"),
            &json!({}),
        )
        .await,
        404,
        "Webhook not found",
    );
    let list = expect(&ts.get(&key, "/v1/webhooks").await, 200);
    let ids: Vec<&Value> = list["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["id"])
        .collect();
    assert_eq!(ids, [&json!(other.id)]);

    put_call(&ts, &key, "c2", &completed("L1")).await;
    control.wait_for_within(2, WAIT).await;
    settle(&ts, &key, &other.id, 2).await;
    // Past the moment the scheduled retry (1 s ± 20 %) would have come.
    let until = first.at + Duration::from_millis(2000);
    tokio::time::sleep(until.saturating_duration_since(Instant::now())).await;
    assert_eq!(
        doomed.count(),
        1,
        "neither the retry nor the new event reached the deleted endpoint"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organizations_see_and_feed_only_their_own_endpoints() {
    let (ts, acme) = start(&[]).await;
    let beta = ts.key("beta", "admin").await;
    let rx = WebhookReceiver::ok().await;
    let hook = register(&ts, &acme, &rx.url, None).await;

    let list = expect(&ts.get(&beta, "/v1/webhooks").await, 200);
    assert_eq!(list, json!({"webhooks": []}));
    let path = format!("/v1/webhooks/{}", hook.id);
    assert_error(&ts.delete(&beta, &path).await, 404, "Webhook not found");
    assert_error(
        &ts.get(&beta, &format!("{path}/deliveries")).await,
        404,
        "Webhook not found",
    );

    reachable_lead(&ts, &beta, "L1").await;
    put_call(&ts, &beta, "c1", &completed("L1")).await;
    reachable_lead(&ts, &acme, "L1").await;
    put_call(&ts, &acme, "c9", &completed("L1")).await;
    let log = settle(&ts, &acme, &hook.id, 1).await;
    assert_eq!(log[0]["data"]["callId"], json!("c9"), "only acme's call");
    rx.wait_for_within(1, WAIT).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_with_events_gets_only_those() {
    let (ts, key) = start(&[]).await;
    let (a, b, c) = (
        WebhookReceiver::ok().await,
        WebhookReceiver::ok().await,
        WebhookReceiver::ok().await,
    );
    let some = register(
        &ts,
        &key,
        &a.url,
        Some(&["call.completed", "call.transfer.failed"]),
    )
    .await;
    let every = register(&ts, &key, &b.url, None).await;
    let one = register(&ts, &key, &c.url, Some(&["call.dispositioned"])).await;
    reachable_lead(&ts, &key, "L1").await;
    let mut call = completed("L1");
    call["dispositionId"] = json!("disp-1");
    call["transferStatus"] = json!("connected");
    put_call(&ts, &key, "c1", &call).await;

    let mut everything = events_of(&settle(&ts, &key, &every.id, 3).await);
    everything.sort();
    assert_eq!(
        everything,
        [
            "call.completed",
            "call.dispositioned",
            "call.transfer.connected"
        ]
    );
    assert_eq!(
        events_of(&settle(&ts, &key, &some.id, 1).await),
        ["call.completed"]
    );
    assert_eq!(
        events_of(&settle(&ts, &key, &one.id, 1).await),
        ["call.dispositioned"]
    );
    let got: Vec<String> = a
        .wait_for_within(1, WAIT)
        .await
        .iter()
        .map(|r| r.event())
        .collect();
    assert_eq!(got, ["call.completed"]);
    let got: Vec<String> = c
        .wait_for_within(1, WAIT)
        .await
        .iter()
        .map(|r| r.event())
        .collect();
    assert_eq!(got, ["call.dispositioned"]);
    b.wait_for_within(3, WAIT).await;
    assert_eq!((a.count(), c.count()), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_endpoint_does_not_delay_another() {
    const DEAD_TIMEOUT: Duration = Duration::from_secs(10);
    let ts = TestServer::start_with(|cfg| {
        cfg.webhooks.retry_schedule = ms(&[200]);
        cfg.webhooks.timeout = DEAD_TIMEOUT;
        cfg.webhooks.max_in_flight_per_endpoint = 1;
    })
    .await;
    let key = ts.key("acme", "admin").await;
    let dead = WebhookReceiver::dead().await;
    let healthy = WebhookReceiver::ok().await;
    let dead_hook = register(&ts, &key, &dead.url, None).await;
    let healthy_hook = register(&ts, &key, &healthy.url, None).await;
    reachable_lead(&ts, &key, "L1").await;

    let started = Instant::now();
    for id in ["c1", "c2", "c3"] {
        put_call(&ts, &key, id, &completed("L1")).await;
    }
    let arrived = healthy.wait_for_within(3, Duration::from_secs(5)).await;
    let last = arrived.iter().map(|r| r.at).max().unwrap();
    assert!(
        last - started < DEAD_TIMEOUT,
        "the healthy endpoint got everything while the dead one still hangs"
    );
    for r in &arrived {
        verify(&healthy_hook.secret, r);
    }
    settle(&ts, &key, &healthy_hook.id, 3).await;

    // The dead endpoint holds its one slot and nothing of it has finished yet.
    dead.wait_for_within(1, WAIT).await;
    assert_eq!(dead.count(), 1, "max_in_flight_per_endpoint = 1");
    let stuck = deliveries(&ts, &key, &dead_hook.id).await;
    assert_eq!(stuck.len(), 3);
    assert!(
        stuck
            .iter()
            .all(|d| d["state"] == json!("pending") && d["attempts"] == json!([])),
        "{stuck:#?}"
    );
    assert!(
        started.elapsed() < DEAD_TIMEOUT,
        "checked before the timeout"
    );
}

// ---------------------------------------------------------------------------------------
// Call events
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_completed_is_sent_once() {
    let (ts, key) = start(&[]).await;
    let rx = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;
    for status in ["QUEUED", "RINGING", "IN_PROGRESS"] {
        let body = json!({"leadId": "L1", "direction": "OUTBOUND", "callStatus": status});
        put_call(&ts, &key, "c1", &body).await;
    }
    assert_eq!(
        deliveries(&ts, &key, &hook.id).await,
        Vec::<Value>::new(),
        "ongoing calls cause no webhook"
    );
    put_call(&ts, &key, "c1", &completed("L1")).await;
    for change in [
        json!({"callStatus": "COMPLETE", "durationSeconds": 61, "summary": "Talked."}),
        json!({"callStatus": "FAILED"}),
        json!({"callStatus": "in_progress"}),
        json!({"callStatus": "NO_ANSWER"}),
    ] {
        let mut body = completed("L1");
        body.as_object_mut()
            .unwrap()
            .extend(change.as_object().unwrap().clone());
        put_call(&ts, &key, "c1", &body).await;
    }
    let log = settle(&ts, &key, &hook.id, 1).await;
    assert_eq!(events_of(&log), ["call.completed"]);
    let data = &log[0]["data"];
    assert_eq!(data["callId"], json!("c1"));
    assert_eq!(data["leadId"], json!("L1"));
    assert_eq!(data["callStatus"], json!("COMPLETE"));
    assert_eq!(data["durationSeconds"], json!(60));
    assert_eq!(data["direction"], json!("OUTBOUND"));
    let requests = rx.wait_for_within(1, WAIT).await;
    verify(&hook.secret, &requests[0]);
    assert_eq!(requests[0].json()["data"], *data);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_dispositioned_is_sent_once_with_exactly_the_documented_fields() {
    let (ts, key) = start(&[]).await;
    let rx = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &rx.url, None).await;
    let lead = ts
        .create_lead(
            &key,
            &json!({
                "id": "L7",
                "firstName": "Grace",
                "phone": "+15557654321",
                "customerProfile": "solar-homeowner",
                "externalLeadId": "crm-123",
                "secondaryCrmLeadId": "crm2-456"
            }),
        )
        .await;
    let mut call = json!({
        "leadId": "L7",
        "direction": "INBOUND",
        "callStatus": "COMPLETE",
        "durationSeconds": 187,
        "summary": "Wants a quote.",
        "midCallTransfer": true,
        "isTransfer": false,
        "transcript": [{"role": "agent", "text": "Hello"}],
        "endedBy": "AGENT",
        "hasVoicemail": false
    });
    put_call(&ts, &key, "c7", &call).await;
    assert_eq!(
        events_of(&deliveries(&ts, &key, &hook.id).await),
        ["call.completed"],
        "no disposition yet"
    );

    call["dispositionId"] = json!("disp-1");
    call["dispositionName"] = json!("Interested");
    call["dispositionClassifiedAt"] = json!("2026-11-22T10:15:30.123456Z");
    put_call(&ts, &key, "c7", &call).await;
    // The disposition changes afterwards: no second webhook.
    call["dispositionId"] = json!("disp-2");
    call["dispositionName"] = json!("Not interested");
    put_call(&ts, &key, "c7", &call).await;
    call["dispositionId"] = Value::Null;
    put_call(&ts, &key, "c7", &call).await;
    call["dispositionId"] = json!("disp-3");
    put_call(&ts, &key, "c7", &call).await;

    let log = settle(&ts, &key, &hook.id, 2).await;
    assert_eq!(events_of(&log), ["call.completed", "call.dispositioned"]);
    let expected = json!({
        "leadId": "L7",
        "externalLeadId": "crm-123",
        "secondary_crm_leadId": "crm2-456",
        "phone": lead["phone"],
        "profile": "solar-homeowner",
        "callId": "c7",
        "durationSeconds": 187,
        "direction": "INBOUND",
        "summary": "Wants a quote.",
        "midCallTransfer": true,
        "isTransfer": false,
        "dispositionId": "disp-1",
        "dispositionName": "Interested",
        "dispositionClassifiedAt": "2026-11-22T10:15:30.123456Z"
    });
    assert_eq!(lead["phone"], json!("+15557654321"));
    assert_eq!(log[1]["data"], expected);
    let requests = rx.wait_for_within(2, WAIT).await;
    let sent = requests
        .iter()
        .find(|r| r.event() == "call.dispositioned")
        .expect("dispositioned arrived");
    verify(&hook.secret, sent);
    assert_eq!(sent.json()["data"], expected);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_dispositioned_leaves_out_what_is_not_known() {
    let (ts, key) = start(&[]).await;
    let rx = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &rx.url, Some(&["call.dispositioned"])).await;
    let lead = ts
        .create_lead(&key, &json!({"id": "L8", "phone": "+15550001234"}))
        .await;
    let call = json!({
        "leadId": "L8",
        "direction": "OUTBOUND",
        "callStatus": "NO_ANSWER",
        "dispositionId": "disp-9"
    });
    put_call(&ts, &key, "c8", &call).await;
    let log = settle(&ts, &key, &hook.id, 1).await;
    let expected = json!({
        "leadId": "L8",
        "phone": lead["phone"],
        "profile": lead["customerProfile"],
        "callId": "c8",
        "durationSeconds": 0,
        "direction": "OUTBOUND",
        "dispositionId": "disp-9"
    });
    assert!(
        expected["profile"].is_string(),
        "profile is a string: {lead}"
    );
    assert_eq!(log[0]["data"], expected);
    let requests = rx.wait_for_within(1, WAIT).await;
    verify(&hook.secret, &requests[0]);
    assert_eq!(requests[0].json()["data"], expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disposition_given_before_completion_is_sent_when_the_call_completes() {
    let (ts, key) = start(&[]).await;
    let rx = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &rx.url, Some(&["call.dispositioned"])).await;
    reachable_lead(&ts, &key, "L1").await;
    let mut call = in_progress("L1");
    call["dispositionId"] = json!("disp-early");
    put_call(&ts, &key, "c1", &call).await;
    put_call(&ts, &key, "c1", &call).await;
    assert_eq!(
        deliveries(&ts, &key, &hook.id).await,
        Vec::<Value>::new(),
        "not while the call is under way"
    );
    // Completing the call without repeating the disposition: the stored one counts.
    put_call(&ts, &key, "c1", &completed("L1")).await;
    put_call(&ts, &key, "c1", &completed("L1")).await;
    let log = settle(&ts, &key, &hook.id, 1).await;
    assert_eq!(events_of(&log), ["call.dispositioned"]);
    assert_eq!(log[0]["data"]["dispositionId"], json!("disp-early"));
    assert_eq!(log[0]["data"]["durationSeconds"], json!(60));
    let requests = rx.wait_for_within(1, WAIT).await;
    verify(&hook.secret, &requests[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_events_are_sent_once_when_the_transfer_status_is_first_set() {
    let (ts, key) = start(&[]).await;
    let rx = WebhookReceiver::ok().await;
    let hook = register(&ts, &key, &rx.url, None).await;
    reachable_lead(&ts, &key, "L1").await;

    put_call(&ts, &key, "c1", &in_progress("L1")).await;
    let mut one = in_progress("L1");
    one["transferStatus"] = json!("connected");
    one["transferNumber"] = json!("+15550001111");
    put_call(&ts, &key, "c1", &one).await;
    one["transferStatus"] = json!("failed");
    put_call(&ts, &key, "c1", &one).await;

    let mut two = in_progress("L1");
    two["transferStatus"] = json!("failed");
    two["transferFailureCode"] = json!("agent_not_connected");
    put_call(&ts, &key, "c2", &two).await;
    two["transferStatus"] = json!("connected");
    put_call(&ts, &key, "c2", &two).await;

    let log = settle(&ts, &key, &hook.id, 2).await;
    assert_eq!(
        events_of(&log),
        ["call.transfer.connected", "call.transfer.failed"]
    );
    let (connected, failed) = (&log[0]["data"], &log[1]["data"]);
    assert_eq!(connected["callId"], json!("c1"));
    assert_eq!(connected["leadId"], json!("L1"));
    assert_eq!(connected["transferStatus"], json!("connected"));
    assert_eq!(failed["callId"], json!("c2"));
    assert_eq!(failed["leadId"], json!("L1"));
    assert_eq!(failed["transferStatus"], json!("failed"));
    let requests = rx.wait_for_within(2, WAIT).await;
    for r in &requests {
        verify(&hook.secret, r);
    }
    let mut got: Vec<String> = requests.iter().map(|r| r.event()).collect();
    got.sort();
    assert_eq!(got, ["call.transfer.connected", "call.transfer.failed"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.count(), 2);
}

// ---------------------------------------------------------------------------------------
// What a failed attempt says
// ---------------------------------------------------------------------------------------

/// A receiver's URL may point anywhere: a failed attempt's `error` is a short class
/// (`connect`, `tls`, ...), never the transport's words nor anything it answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_says_a_short_class_only() {
    let (ts, key) = start(&[60_000]).await;
    // A port nothing listens on, and a plain-HTTP receiver called over https.
    let refused = format!("http://{}/hook", closed_addr());
    let plain = WebhookReceiver::ok().await;
    let tls = plain.url.replacen("http://", "https://", 1);
    let refused_hook = register(&ts, &key, &refused, None).await;
    let tls_hook = register(&ts, &key, &tls, None).await;
    reachable_lead(&ts, &key, "L1").await;
    put_call(&ts, &key, "c1", &completed("L1")).await;
    for (hook, class) in [(&refused_hook, "connect"), (&tls_hook, "tls")] {
        let log = wait_log(&ts, &key, &hook.id, "a failed attempt", |all| {
            all.first()
                .and_then(|d| d["attempts"].as_array())
                .is_some_and(|a| !a.is_empty())
        })
        .await;
        let attempt = &log[0]["attempts"][0];
        assert_eq!(attempt["error"], json!(class), "{attempt}");
        assert!(
            attempt.get("status").is_none_or(Value::is_null),
            "{attempt}"
        );
    }
}
