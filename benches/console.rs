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
//! 5. The inbox's "Needs attention", "All" and "Replied" tabs (target: p99 at most
//!    50 ms; the bench user has opened some of the leads that wrote, so the rows carry
//!    unread markers, per person), and its first load in bytes: the page, the stylesheet
//!    and the script (target: at most 150 KB).
//! 6. A committed inbound message reaching an open inbox: from the request's answer to
//!    the `change` on the event stream, and to the inbox page fetched again, as the
//!    script does (target: p95 at most 1 s).
//! 7. `GET /v1/calls/{id}` with no stream open, then with 50, a lead changing every 10 ms
//!    in both (target: p99 within 10 %).
//!
//! `ENGAGED_BENCH_LEADS` and `ENGAGED_BENCH_EVENTS` change the sizes.

mod support;

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::json;

use engaged::domain::engagement::reactions::React;
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
            // One lead in a hundred is a person's: its unanswered messages need attention.
            "isAiOn": i % 100 != 0,
        });
        leads::create(
            tx,
            caller,
            leads::LeadInput::from_json(&support::object(body))?,
        )
        .react(tx)
        .map(drop)
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
        events::record(tx, &caller.org_id, lead, kind, &format!("e-{j}"), data, |_| {}).react(tx).map(drop)
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

    // The bench user opens every other lead of the "Replied" tab's first page: those
    // rows read as seen, the others as unread (each view one small write, batched).
    for k in 0..25 {
        let path = format!(
            "/console/leads/lead-{}",
            n_leads.saturating_sub(10 * (2 * k + 1)) / 10 * 10
        );
        server.console(Method::GET, &path, cookie, None, &[]).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for tab in ["all", "replied"] {
        let page = server
            .console(
                Method::GET,
                &format!("/console/inbox?tab={tab}"),
                cookie,
                None,
                &[],
            )
            .await
            .text();
        println!(
            "inbox ?tab={tab}: {} rows, {} unread for the bench user",
            page.matches("data-row").count(),
            page.matches("class=\"unread\"").count()
        );
    }
    for path in [
        "/console/inbox",
        "/console/inbox?tab=all",
        "/console/inbox?tab=replied",
    ] {
        timed(&server, path, cookie, None).await;
        report(
            &format!("inbox {path}"),
            &timed(&server, path, cookie, None).await,
        );
    }
    let inbox = server
        .console(Method::GET, "/console/inbox", cookie, None, &[])
        .await;
    let mut first_load = inbox.body.len();
    let page = inbox.text();
    for ext in [".css\"", ".js\""] {
        let end = page.find(ext).expect("an asset link") + ext.len() - 1;
        let start = page[..end]
            .rfind("/console/assets/")
            .expect("an asset path");
        let asset = server
            .console(Method::GET, &page[start..end], None, None, &[])
            .await;
        first_load += asset.body.len();
    }
    println!("inbox first load: {first_load} bytes (page, stylesheet, script; uncompressed)");

    let write = server.key("bench", "write").await;
    let mut stream = server.events(&session.cookie, None).await;
    let mut to_event = Vec::new();
    let mut to_page = Vec::new();
    for i in 0..100 {
        let started = Instant::now();
        let answer = server
            .post(
                &write,
                "/v1/inbound/sms",
                &json!({"from": format!("+1512{:07}", 200 + i), "text": "Still on?"}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        let event = stream.next(Duration::from_secs(5)).await.expect("a change");
        assert!(event.contains("change"), "{event}");
        to_event.push(started.elapsed());
        server
            .console(Method::GET, "/console/inbox", cookie, None, &[])
            .await;
        to_page.push(started.elapsed());
    }
    drop(stream);
    report("inbound message to the stream's change", &to_event);
    println!(
        "inbound message to the inbox page fetched again: p95 {:.2} ms",
        support::percentile(&to_page, 0.95).as_secs_f64() * 1e3
    );

    let call = server
        .put(
            &write,
            "/v1/calls/call-1",
            &json!({"leadId": "lead-1", "direction": "OUTBOUND", "callStatus": "COMPLETE"}),
        )
        .await;
    assert!(call.status < 300, "{}", call.text());
    // Both phases see the same commits (a lead touched every 10 ms), so that the streams
    // are the only difference; 2,000 requests each, so that a p99 is not one outlier.
    let toucher = {
        let (store, caller) = (server.server.store().clone(), caller.clone());
        tokio::spawn(async move {
            for i in 0.. {
                let caller = caller.clone();
                let _ = store
                    .write(move |tx| {
                        let patch = support::object(json!({"summary": format!("touch {i}")}));
                        leads::update(tx, &caller, "lead-2", leads::LeadPatch::from_json(&patch)?)
                            .react(tx)
                            .map(drop)
                    })
                    .await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    timed(&server, "/v1/calls/call-1", None, Some(&key)).await;
    let mut none = Vec::new();
    for _ in 0..10 {
        none.extend(timed(&server, "/v1/calls/call-1", None, Some(&key)).await);
    }
    let mut readers = Vec::new();
    for _ in 0..50 {
        let mut stream = server.events(&session.cookie, None).await;
        readers.push(tokio::spawn(async move {
            while stream.next(Duration::from_secs(60)).await.is_some() {}
        }));
    }
    let mut with = Vec::new();
    for _ in 0..10 {
        with.extend(timed(&server, "/v1/calls/call-1", None, Some(&key)).await);
    }
    toucher.abort();
    for reader in readers {
        reader.abort();
    }
    report(
        "GET /v1/calls/{id}, no stream open (a commit every 10 ms)",
        &none,
    );
    report(
        "GET /v1/calls/{id}, 50 streams open (a commit every 10 ms)",
        &with,
    );
    println!(
        "calls p99 ratio, 50 streams / none: {:.2}",
        support::percentile(&with, 0.99).as_secs_f64()
            / support::percentile(&none, 0.99).as_secs_f64()
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
