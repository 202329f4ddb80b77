//! The engine measured in one run: a burst of cadence steps, and an idle agenda.
//!
//! `cargo bench --bench engine` (not criterion: it prints one measured run). The server
//! runs in-process with its real scheduler and the sandbox providers.
//!
//! 1. Burst: 10,000 leads enrolled at once in a profile whose first step is `0s` SMS.
//!    Reports the time until every first message is recorded (`delivered`, nothing left
//!    in the agenda or `sending`), as steps per second, and the p50/p99 of HTTPS
//!    `GET /v1/leads/{id}` answered meanwhile by 4 concurrent clients.
//! 2. Idle: 100,000 leads with a step due in one day. Reports the process's CPU use over
//!    5 s of nothing due, then how late 20 single steps (`1s` after enrolment) run
//!    after their due time.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use serde_json::json;

use engaged::domain::engagement::reactions::React;
use engaged::domain::records::leads;
use engaged::domain::settings::profiles;
use engaged::domain::Caller;
use engaged::store::{Flow, Reader, Start, Store};
use engaged::testkit::TestServer;

const BURST: usize = 10_000;
const WAITING: usize = 100_000;
const CHUNK: usize = 1_000;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let ts = TestServer::start().await;
    let store = ts.server.store().clone();
    let (key, caller) = support::org_with_key(&store, "admin").await;
    for (name, after) in [("burst", "0s"), ("later", "1d"), ("soon", "1s")] {
        let c = caller.clone();
        let body = support::object(json!({
            "cadence": [{"after": after, "channel": "sms", "text": "Hi {{firstName}}, still interested?"}]
        }));
        store
            .write(move |tx| {
                profiles::put(tx, &c, name, &profiles::ProfileInput::from_json(&body)?)
            })
            .await
            .expect("profile");
    }
    enrol(&store, &caller, "probe", "", 1).await;
    println!(
        "engine, one run on this machine ({} cores):",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // 1. Burst, with GETs alongside.
    let client = engaged::testkit::https_client(&ts.cert(), engaged::testkit::Versions::Http1);
    let base = ts.base.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (client, base, key) = (client.clone(), base.clone(), key.clone());
        let (stop, latencies) = (stop.clone(), latencies.clone());
        readers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let req = Request::get(format!("{base}/v1/leads/probe-0"))
                    .header("x-api-key", &key)
                    .body(Full::new(Bytes::new()))
                    .expect("request");
                let started = Instant::now();
                let resp = client.request(req).await.expect("response");
                assert_eq!(resp.status(), 200);
                let _ = resp.into_body().collect().await;
                if let Ok(mut l) = latencies.lock() {
                    l.push(started.elapsed());
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle_gets = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    if let Ok(mut l) = latencies.lock() {
        l.clear();
    }
    let started = Instant::now();
    enrol(&store, &caller, "burst", "burst", BURST).await;
    let enrolled = started.elapsed();
    let done = drained(&store, Duration::from_secs(120)).await;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let _ = r.await;
    }
    let during = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    let sent = count_delivered(&store, &caller.org_id, "burst", BURST);
    println!(
        "  burst: {BURST} leads enrolled in {:.2} s; {} first messages delivered after {:.2} s = {:.0} steps/s{}",
        enrolled.as_secs_f64(),
        sent,
        elapsed.as_secs_f64(),
        sent as f64 / elapsed.as_secs_f64(),
        if done { "" } else { " (NOT drained)" },
    );
    println!(
        "  GET /v1/leads/{{id}} over HTTPS, 4 clients: during the burst p50 {:.2} ms, p99 {:.2} ms ({} requests); idle p50 {:.2} ms, p99 {:.2} ms",
        ms(support::percentile(&during, 0.50)),
        ms(support::percentile(&during, 0.99)),
        during.len(),
        ms(support::percentile(&idle_gets, 0.50)),
        ms(support::percentile(&idle_gets, 0.99)),
    );

    // 2. An agenda of 100k rows due tomorrow.
    let started = Instant::now();
    enrol(&store, &caller, "later", "later", WAITING).await;
    println!(
        "  idle: {WAITING} leads with a step due in one day enrolled in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu_before = cpu_seconds();
    let wall = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let cpu = cpu_seconds() - cpu_before;
    println!(
        "  idle: process CPU over {:.1} s with {} agenda rows waiting: {:.3} s ({:.2} % of one core)",
        wall.elapsed().as_secs_f64(),
        store.read().expect("read").agenda_depth(0).expect("depth").0,
        cpu,
        cpu / wall.elapsed().as_secs_f64() * 100.0,
    );
    let mut lateness = Vec::new();
    for i in 0..20 {
        let id = format!("soon-{i}-0");
        enrol(&store, &caller, &format!("soon-{i}"), "soon", 1).await;
        let due = store
            .read()
            .expect("read")
            .engagement(&caller.org_id, &id)
            .expect("engagement")
            .and_then(|e| e.step_job)
            .map(|(due, _)| due)
            .expect("a step due");
        let created = first_message_at(&store, &caller.org_id, &id, Duration::from_secs(10)).await;
        lateness.push(Duration::from_micros((created - due).max(0) as u64));
    }
    lateness.sort();
    println!(
        "  idle: 20 steps due 1 s after enrolment ran late by p50 {:.2} ms, max {:.2} ms",
        ms(support::percentile(&lateness, 0.50)),
        ms(support::percentile(&lateness, 1.0)),
    );
    ts.server.shutdown().await;
}

/// The first phone number of the next `enrol`: a live lead's phone is its own, so every
/// call takes numbers no earlier call took.
static NEXT_PHONE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Creates `n` leads `{prefix}-{i}` following `profile` ("" for none), a chunk per job.
async fn enrol(store: &Arc<Store>, caller: &Caller, prefix: &str, profile: &str, n: usize) {
    let phones = NEXT_PHONE.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    for chunk in 0..n.div_ceil(CHUNK) {
        let (c, prefix, profile) = (caller.clone(), prefix.to_string(), profile.to_string());
        let first = chunk * CHUNK;
        let last = (first + CHUNK).min(n);
        store
            .write(move |tx| {
                for i in first..last {
                    let body = support::object(json!({
                        "id": format!("{prefix}-{i}"),
                        "firstName": "Bench",
                        "phone": format!("+1555{:07}", phones + i),
                        "customerProfile": profile,
                    }));
                    leads::create(tx, &c, leads::LeadInput::from_json(&body)?).react(tx)?;
                }
                Ok(())
            })
            .await
            .expect("enrol");
    }
}

/// Waits until nothing is due in the agenda and no send is in flight.
async fn drained(store: &Store, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        let read = store.read().expect("read");
        let (_, due, _) = read
            .agenda_depth(engaged::time::now_micros())
            .expect("depth");
        if due == 0 && read.sending().expect("sending").is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

/// How many of the `n` leads `{prefix}-{i}` have a delivered first message.
fn count_delivered(store: &Store, org: &str, prefix: &str, n: usize) -> usize {
    let read = store.read().expect("read");
    (0..n)
        .filter(|i| {
            let mut delivered = false;
            let lead = format!("{prefix}-{i}");
            let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
            read.scan_messages(org, &lead, start, |row| {
                delivered |= row.record.data.0["status"] == json!("delivered");
                Ok(Flow::Continue)
            })
            .expect("messages");
            delivered
        })
        .count()
}

/// When the lead's first message was recorded (its `createdAt`, micros).
async fn first_message_at(store: &Store, org: &str, lead: &str, limit: Duration) -> i64 {
    let started = Instant::now();
    while started.elapsed() < limit {
        let mut at = None;
        let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
        store
            .read()
            .expect("read")
            .scan_messages(org, lead, start, |row| {
                at = Some(row.record.created_at);
                Ok(Flow::Stop)
            })
            .expect("messages");
        if let Some(at) = at {
            return at;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("the step of {lead} did not run");
}

/// User and system CPU time of this process so far, from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
