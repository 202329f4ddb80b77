//! The console measured in one run, at 100,000 leads and 1,000,000 events.
//!
//! `cargo bench --bench console` (not criterion: it prints one measured run). The
//! server runs in-process over HTTPS on 127.0.0.1 (the test kit's `TestServer`); the
//! data is written through the library in large write jobs first. Times are what the
//! client sees for a whole answer over loopback TLS, so they include the server's time.
//!
//! 1. The leads list with two filters (`profile` and `hot`, about 2,000 matches; and a
//!    broad pair, `aiOn=true&replied=false`, about 90,000), p50 and p99 (target: p99
//!    at most 50 ms).
//! 2. A lead page with 500 timeline items, p50 and p99 (target: at most 50 ms).
//! 3. `GET /v1/leads/search` with the same two filters.
//! 4. One argon2id password check with the production parameters (target: 50-250 ms).
//!
//! `ENGAGED_BENCH_LEADS` and `ENGAGED_BENCH_EVENTS` change the sizes.

mod support;

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::json;

use engaged::domain::people::passwords;
use engaged::domain::records::{events, leads};
use engaged::domain::Caller;
use engaged::store::{Reader, WriteTx};
use engaged::testkit::TestServer;

const ROWS_PER_JOB: usize = 20_000;
const PROFILES: usize = 5;
const REQUESTS: usize = 200;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn write_rows(
    server: &TestServer,
    caller: &Caller,
    n: usize,
    row: impl Fn(&mut WriteTx, &Caller, usize) -> engaged::error::Result<()> + Clone + Send + 'static,
) {
    let mut written = 0;
    while written < n {
        let (first, last) = (written, (written + ROWS_PER_JOB).min(n));
        let (caller, row) = (caller.clone(), row.clone());
        server
            .server
            .store()
            .write(move |tx| (first..last).try_for_each(|i| row(tx, &caller, i)))
            .await
            .expect("seed");
        written = last;
    }
}

async fn timed(
    server: &TestServer,
    path: &str,
    cookie: Option<&str>,
    key: Option<&str>,
) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        let started = Instant::now();
        let answer = match key {
            Some(key) => server.get(key, path).await,
            None => server.console(Method::GET, path, cookie, None, &[]).await,
        };
        samples.push(started.elapsed());
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
    }
    samples
}

fn report(what: &str, samples: &[Duration]) {
    println!(
        "{what}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} requests)",
        support::percentile(samples, 0.50).as_secs_f64() * 1e3,
        support::percentile(samples, 0.99).as_secs_f64() * 1e3,
        samples
            .iter()
            .max()
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3,
        samples.len()
    );
}

async fn run() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n_leads = env_usize("ENGAGED_BENCH_LEADS", 100_000);
    let n_events = env_usize("ENGAGED_BENCH_EVENTS", 1_000_000);
    let server = TestServer::start().await;
    let key = server.key("bench", "read").await;
    let password = server
        .user("bench", "ana@bench.example", "Ana Ruiz", "agent")
        .await;
    let org = {
        let read = server.server.store().read().expect("read");
        read.key(&engaged::domain::records::auth::hash_key(&key))
            .expect("key")
            .expect("the key")
            .org_id
    };
    let caller = Caller::system(&org);

    let started = Instant::now();
    write_rows(&server, &caller, n_leads, |tx, caller, i| {
        let body = json!({
            "id": format!("lead-{i}"),
            "firstName": format!("First{i}"),
            "lastName": format!("Last{}", i % 1000),
            "phone": format!("+1512{:07}", i),
            "email": format!("lead{i}@bench.example"),
            "customerProfile": format!("p{}", i % PROFILES),
            "isHot": i % 10 == 0,
        });
        leads::create(tx, caller, support::object(body)).map(drop)
    })
    .await;
    println!(
        "seeded {n_leads} leads in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // 500 messages on lead-1 (its page), the rest spread over every lead: a tenth of
    // them messages from the lead (so those leads replied), the others custom events.
    let started = Instant::now();
    let page_lead = 500.min(n_events);
    write_rows(&server, &caller, n_events, move |tx, caller, j| {
        let (lead_id, data, kind) = if j < page_lead {
            let owner = if j % 2 == 0 { "lead" } else { "user" };
            let data = json!({"owner": owner, "channel": "sms", "content": {"text": format!("Message {j} of the conversation about solar panels and a quote.")}, "origin": "api"});
            ("lead-1".to_string(), data, "MESSAGE")
        } else if j % 10 == 0 {
            let data = json!({"owner": "lead", "channel": "sms", "content": {"text": "Is the offer still on?"}});
            (format!("lead-{}", j % n_leads), data, "MESSAGE")
        } else {
            (format!("lead-{}", j % n_leads), json!({"note": j}), "CUSTOM")
        };
        let lead = tx
            .lead(&caller.org_id, &lead_id)?
            .ok_or_else(|| engaged::error::Error::lead_not_found(&lead_id))?;
        events::record(tx, &caller.org_id, lead, kind, &format!("e-{j}"), data, |_| {}).map(drop)
    })
    .await;
    println!(
        "seeded {n_events} events in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let session = server.sign_in("ana@bench.example", &password).await;
    let cookie = Some(session.cookie.as_str());
    let narrow = "/console/leads?profile=p1&hot=true";
    let broad = "/console/leads?aiOn=true&replied=false";
    // One warm-up each, so the page cache holds what a page reads.
    for path in [narrow, broad, "/console/leads/lead-1"] {
        timed(&server, path, cookie, None).await;
    }
    report(
        "leads list, profile=p1&hot=true",
        &timed(&server, narrow, cookie, None).await,
    );
    report(
        "leads list, aiOn=true&replied=false",
        &timed(&server, broad, cookie, None).await,
    );
    report(
        "lead page, 500 timeline items",
        &timed(&server, "/console/leads/lead-1", cookie, None).await,
    );
    report(
        "GET /v1/leads/search?profile=p1&hot=true",
        &timed(
            &server,
            "/v1/leads/search?profile=p1&hot=true&limit=50",
            None,
            Some(&key),
        )
        .await,
    );

    let hash = passwords::hash("correct horse battery staple").expect("hash");
    let mut checks = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        assert!(passwords::verify("correct horse battery staple", &hash));
        checks.push(started.elapsed());
    }
    report("argon2id password check", &checks);
}
