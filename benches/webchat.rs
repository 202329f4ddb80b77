//! Web chat's cost at rest: N visitors (1,000 unless `WEBCHAT_SESSIONS` says) each
//! holding the session's event stream open, over HTTP/1.1 connections of their own as
//! browsers do, against the real server in this process; then one visitor's message
//! until it is on the organization's Web chat page of the console data (the session
//! record) and on its stream.
//!
//!     cargo bench --bench webchat
//!
//! Prints the resident memory before and after the streams opened (the client's side of
//! the connections, in this same process, counted too: an upper bound of the server's).

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use serde_json::json;

use engaged::domain::conversation::webchat as chat;
use engaged::testkit::https::{https_client, Versions};
use engaged::testkit::TestServer;

const SITE: &str = "https://shop.example";

/// `VmRSS` of this process, in MiB.
fn rss() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let n: usize = std::env::var("WEBCHAT_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let server = TestServer::start_with(|c| {
        c.limits.max_connections = n * 2 + 64;
        c.limits.max_connections_per_ip = 0;
    })
    .await;
    let admin = server.key("acme", "admin").await;
    let org = server.org_id("acme").await;
    let set = server
        .patch(
            &admin,
            "/v1/org",
            &json!({"webchat": {"enabled": true, "allowedOrigins": [SITE], "maxSessionsPerHour": 100_000}}),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    // The sessions are made in the store (the per-address bound allows 5 a minute).
    let mut sessions = Vec::with_capacity(n);
    for _ in 0..n {
        let token = chat::new_token();
        let hash = chat::token_hash(&token);
        let o = org.clone();
        let (session, _) = server
            .server
            .store()
            .write(move |tx| {
                chat::create(
                    tx,
                    &o,
                    &hash,
                    &chat::Visitor::default(),
                    engaged::time::now_micros(),
                )
            })
            .await
            .expect("a session");
        sessions.push((session.id, token));
    }
    let client = https_client::<Full<Bytes>>(&server.cert(), Versions::Http1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss();
    let mut streams = Vec::with_capacity(n);
    for (id, token) in &sessions {
        let request = Request::builder()
            .method(Method::GET)
            .uri(format!(
                "{}/webchat/{org}/sessions/{id}/events?token={token}",
                server.base
            ))
            .header("origin", SITE)
            .body(Full::new(Bytes::new()))
            .expect("request");
        let response = client.request(request).await.expect("a stream");
        assert_eq!(response.status(), 200);
        let mut body = response.into_body();
        // The opening frame (retry, session) has arrived: the stream is live.
        body.frame().await.expect("a frame").expect("data");
        streams.push(body);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss();
    println!(
        "webchat: {n} open event streams: RSS {before:.1} MiB before, {after:.1} MiB after: {:.1} MiB above idle ({:.1} KiB a stream, client side included)",
        after - before,
        (after - before) * 1024.0 / n as f64
    );
    // One visitor's message: from its POST to its line on the visitor's own stream.
    let (id, token) = &sessions[0];
    let started = Instant::now();
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!(
            "{}/webchat/{org}/sessions/{id}/messages",
            server.base
        ))
        .header("origin", SITE)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(br#"{"text": "Hello"}"#)))
        .expect("request");
    let answer = client.request(request).await.expect("an answer");
    assert_eq!(answer.status(), 202);
    loop {
        let frame = streams[0].frame().await.expect("a frame").expect("data");
        if let Ok(data) = frame.into_data() {
            if String::from_utf8_lossy(&data).contains("Hello") {
                break;
            }
        }
    }
    println!(
        "webchat: a visitor's message committed and on its stream in {:.1} ms (with {n} streams open)",
        started.elapsed().as_secs_f64() * 1000.0
    );
    drop(streams);
}
