//! Router and body errors: unknown paths, wrong methods, malformed JSON, oversized bodies.

use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::Captured;
use engaged::testkit::TestServer;

use crate::answers::*;
use crate::requests::*;

async fn start() -> (TestServer, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    ts.create_lead(
        &key,
        &json!({"id": "L1", "phone": "+15551234567", "email": "a@example.com"}),
    )
    .await;
    (ts, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_path_is_404_not_found() {
    let (ts, key) = start().await;
    for path in [
        "/v1/nope",
        "/nope",
        "/v2/leads",
        "/v1/leads/L1/nope",
        "/v1/leads/L1/events/x/y",
        "/v1/calls",
    ] {
        let r = ts.get(&key, path).await;
        assert_error(&r, 404, "Not found");
    }
    let r = ts.post(&key, "/v1/nope", &json!({})).await;
    assert_error(&r, 404, "Not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_answers_204_with_the_paths_methods_and_fixed_segments_are_no_lead_ids() {
    let (ts, key) = start().await;
    for (path, allow) in [
        ("/v1/leads/import", "POST, OPTIONS"),
        ("/v1/leads/search", "GET, HEAD, OPTIONS"),
        ("/v1/leads/L1", "GET, HEAD, PATCH, DELETE, OPTIONS"),
        ("/healthz", "GET, HEAD, OPTIONS"),
    ] {
        // No key needed: OPTIONS only names methods.
        let r = ts
            .request(Method::OPTIONS, path, None, None, Vec::new())
            .await;
        assert_eq!(r.status, 204, "OPTIONS {path}: {}", text(&r));
        assert_eq!(
            r.headers.get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "OPTIONS {path}"
        );
    }
    for id in ["search", "import"] {
        let r = ts.post(&key, "/v1/leads", &json!({"id": id})).await;
        assert_error(&r, 400, "Invalid format for field: id");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_path_with_wrong_method_is_405() {
    let (ts, key) = start().await;
    // Each 405 names the methods the path takes, HEAD wherever GET is.
    let cases = [
        (Method::PUT, "/v1/leads", "GET, HEAD, POST, OPTIONS"),
        (Method::DELETE, "/v1/leads", "GET, HEAD, POST, OPTIONS"),
        (
            Method::POST,
            "/v1/leads/L1",
            "GET, HEAD, PATCH, DELETE, OPTIONS",
        ),
        (
            Method::PUT,
            "/v1/leads/L1",
            "GET, HEAD, PATCH, DELETE, OPTIONS",
        ),
        (
            Method::DELETE,
            "/v1/leads/L1/events",
            "GET, HEAD, POST, OPTIONS",
        ),
        (
            Method::PATCH,
            "/v1/leads/L1/messages",
            "GET, HEAD, POST, OPTIONS",
        ),
        (Method::POST, "/v1/calls/c1", "GET, HEAD, PUT, OPTIONS"),
        (Method::DELETE, "/v1/calls/c1", "GET, HEAD, PUT, OPTIONS"),
        (Method::POST, "/healthz", "GET, HEAD, OPTIONS"),
        (Method::GET, "/v1/dnc/+15550001111", "DELETE, OPTIONS"),
        (Method::HEAD, "/v1/leads/L1/unsubscribe", "POST, OPTIONS"),
        (Method::PUT, "/v1/profiles", "GET, HEAD, OPTIONS"),
        (Method::PATCH, "/v1/leads/search", "GET, HEAD, OPTIONS"),
        (Method::DELETE, "/v1/leads/import", "POST, OPTIONS"),
        (
            Method::POST,
            "/v1/calls/c1/recording",
            "GET, HEAD, PUT, DELETE, OPTIONS",
        ),
    ];
    for (method, path, allow) in cases {
        let r = ts
            .request(
                method.clone(),
                path,
                Some(&key),
                Some("application/json"),
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(r.status, 405, "{method} {path}: {}", text(&r));
        assert_eq!(
            r.headers.get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {path}"
        );
        if method != Method::HEAD {
            assert_error(&r, 405, "Method not allowed");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_400_with_a_message() {
    let (ts, key) = start().await;
    let targets = [
        (Method::POST, "/v1/leads"),
        (Method::PATCH, "/v1/leads/L1"),
        (Method::POST, "/v1/leads/L1/events"),
        (Method::POST, "/v1/leads/L1/messages"),
        (Method::PUT, "/v1/calls/c1"),
    ];
    for (method, path) in targets {
        for body in [&b"{"[..], b"{\"firstName\": }", b"not json", b"{\"a\":1}}"] {
            let r = ts
                .request(
                    method.clone(),
                    path,
                    Some(&key),
                    Some("application/json"),
                    body.to_vec(),
                )
                .await;
            let message = assert_error_status(&r, 400);
            assert!(
                message.len() > 3,
                "{method} {path}: the message names the problem: {message}"
            );
        }
    }
    // Nothing was written.
    assert_eq!(all_leads(&ts, &key).await.len(), 1);
    assert!(all_events(&ts, &key, "L1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_that_is_not_an_object_is_400() {
    let (ts, key) = start().await;
    let targets = [
        (Method::POST, "/v1/leads"),
        (Method::PATCH, "/v1/leads/L1"),
        (Method::POST, "/v1/leads/L1/events"),
        (Method::POST, "/v1/leads/L1/messages"),
        (Method::PUT, "/v1/calls/c1"),
    ];
    for (method, path) in targets {
        for body in [json!([]), json!("x"), json!(42), json!(true)] {
            let r = ts.send_json(method.clone(), &key, path, &body).await;
            assert_error_status(&r, 400);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_over_one_mib_is_413() {
    let (ts, key) = start().await;
    let big = "x".repeat(1024 * 1024 + 16);
    let body = serde_json::to_vec(&json!({"id": "big", "summary": big})).unwrap();
    let r = ts
        .request(
            Method::POST,
            "/v1/leads",
            Some(&key),
            Some("application/json"),
            body,
        )
        .await;
    assert_error_status(&r, 413);
    let event = serde_json::to_vec(
        &json!({"type": "CUSTOM", "data": {"blob": "y".repeat(2 * 1024 * 1024)}}),
    )
    .unwrap();
    let r = ts
        .request(
            Method::POST,
            "/v1/leads/L1/events",
            Some(&key),
            Some("application/json"),
            event,
        )
        .await;
    assert_error_status(&r, 413);
    // Nothing was stored and the server still answers.
    assert_error(
        &ts.get(&key, "/v1/leads/big").await,
        404,
        "Resource not found: Lead with id big",
    );
    assert!(all_events(&ts, &key, "L1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_under_the_limit_is_accepted() {
    let (ts, key) = start().await;
    // Every stored value is bounded well below the body limit; a call's transcript
    // (2,000 turns of 4,000 characters) is what can fill a body.
    let turns: Vec<Value> = (0..140)
        .map(|_| json!({"role": "lead", "text": "y".repeat(4_000)}))
        .collect();
    let call = json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE", "transcript": turns});
    assert!(call.to_string().len() > 512 * 1024);
    let stored = expect(&ts.put(&key, "/v1/calls/big", &call).await, 201);
    assert_eq!(stored["transcript"].as_array().map(Vec::len), Some(140));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_bodies_are_json() {
    let (ts, key) = start().await;
    for r in [
        ts.get(&key, "/v1/nope").await,
        ts.get(&key, "/v1/leads/zzz").await,
        ts.get(&key, "/v1/leads").await,
        ts.request(Method::GET, "/v1/leads/L1", None, None, Vec::new())
            .await,
        ts.get("bad-key", "/v1/leads/L1").await,
    ] {
        let ct = r
            .headers
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        assert!(
            ct.starts_with("application/json"),
            "content-type {ct:?} for {}",
            text(&r)
        );
        assert_error_status(&r, r.status);
    }
}

/// A DELETE of something that does not exist is a plain 404: nothing is written, and
/// nothing is logged as an error (the writer logs a job that refuses after writing).
#[tokio::test(flavor = "current_thread")]
async fn deleting_what_does_not_exist_is_a_plain_404_without_an_error_log() {
    let (captured, _guard) = Captured::install(tracing::Level::INFO);
    let ts = TestServer::start().await;
    let admin = ts.key("acme", "admin").await;
    ts.create_lead(&admin, &json!({"id": "L1", "phone": "+15551234567"}))
        .await;
    ts.create_lead(&admin, &json!({"id": "L2", "phone": "+15551234568"}))
        .await;
    expect(&ts.delete(&admin, "/v1/leads/L2").await, 200);
    let call = json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE"});
    expect(&ts.put(&admin, "/v1/calls/c1", &call).await, 201);
    let cases = [
        ("/v1/leads/nope", "Resource not found: Lead with id nope"),
        ("/v1/leads/L2", "Resource not found: Lead with id L2"),
        ("/v1/dnc/+15550001111", "Phone number not found"),
        ("/v1/calls/c1/recording", "Recording not found"),
        ("/v1/calls/nope/recording", "Recording not found"),
        ("/v1/profiles/nope", "Profile not found"),
        ("/v1/webhooks/nope", "Webhook not found"),
    ];
    for (path, message) in cases {
        assert_error(&ts.delete(&admin, path).await, 404, message);
    }
    let r = ts
        .post(
            &admin,
            "/v1/leads/nope/tags/remove",
            &json!({"tagIds": ["t1"]}),
        )
        .await;
    assert_error(&r, 404, "Lead not found");
    // The writer's error line is captured (its thread logs where the server's start
    // did); lines other tests hit first may not be, so none is required here.
    let log = captured.text();
    assert!(!log.contains("ERROR"), "{log}");
    assert!(!log.contains("refused after changing"), "{log}");
}
