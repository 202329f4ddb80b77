//! A bulk "Add to campaign" of 50,000 leads while another organization writes.
//!
//! `cargo bench --bench enrol` (not criterion: it prints one measured run). Organization
//! `bench` holds 50,000 leads (imported in-process, no campaign) and a campaign `solar`
//! whose first step is a week away; organization `other` writes (a lead created per
//! request, over HTTPS on 127.0.0.1, one at a time). It prints `other`'s write p50/p99
//! idle and while the bulk enrolment of all of `bench`'s leads runs (issue 29's bound:
//! the p99 during at most 3× the idle one), and the enrolment's duration.
//!
//! `ENGAGED_BENCH_ROWS` changes the size.

mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;

use engaged::domain::conversation::bulk_enrolment;
use engaged::domain::records::search::LeadFilter;
use engaged::domain::Caller;
use engaged::store::enrolments::enrolment_job;
use engaged::store::rows::Person;
use engaged::testkit::TestServer;

fn rows() -> usize {
    std::env::var("ENGAGED_BENCH_ROWS")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(50_000)
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

/// `other`'s writes, one at a time, until `until` says stop (at least `min` of them).
async fn writes(
    server: &TestServer,
    key: &str,
    tag: &str,
    min: usize,
    until: impl Fn() -> bool,
) -> Vec<Duration> {
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < min || !until() {
        let started = Instant::now();
        let r = server
            .send_json(
                hyper::Method::POST,
                key,
                "/v1/leads",
                &json!({"firstName": format!("{tag}{i}"), "email": format!("{tag}{i}@other.example")}),
            )
            .await;
        out.push(started.elapsed());
        assert_eq!(r.status, 201, "{}", r.text());
        i += 1;
        if out.len() >= 200_000 {
            break;
        }
    }
    out
}

fn ms(samples: &[Duration], p: f64) -> f64 {
    support::percentile(samples, p).as_secs_f64() * 1e3
}

async fn run() {
    let n = rows();
    let server = TestServer::start().await;
    let admin = server.key("bench", "admin").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "7d", "channel": "sms", "text": "Hi {{firstName}}"}]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("leads.csv");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("csv"));
        writeln!(file, "First Name,Phone Number,Email").expect("write");
        for i in 0..n {
            writeln!(
                file,
                "First{i},+1512{:07},lead{i}@bench.example",
                5_000_000 + i
            )
            .expect("write");
        }
    }
    let request = engaged::admin::AdminRequest::Import {
        org: "bench".into(),
        ndjson: false,
        dry_run: false,
        create_only: false,
        on_match: engaged::domain::import::OnMatch::Update,
        profile: None,
    };
    let seeded = Instant::now();
    let file = tokio::fs::File::open(&path).await.expect("open csv");
    engaged::admin::import(server.server.store(), &request, file)
        .await
        .expect("import");
    println!(
        "seeded {n} leads in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );

    let other = server.key("other", "write").await;
    let idle = writes(&server, &other, "idle", 500, || true).await;
    println!(
        "other organization's write, idle: p50 {:.2} ms, p99 {:.2} ms ({} writes)",
        ms(&idle, 0.50),
        ms(&idle, 0.99),
        idle.len()
    );

    let org = server.org_id("bench").await;
    let store = server.server.store().clone();
    let caller = Caller::system(&org);
    let person = Person {
        user_id: "bench".into(),
        name: "Bench".into(),
    };
    let started = Instant::now();
    let id = bulk_enrolment::start(&store, &caller, &person, "solar", &LeadFilter::default())
        .await
        .expect("start");
    let created = started.elapsed();
    let finished = || {
        store
            .read()
            .ok()
            .and_then(|r| enrolment_job(&r, &org, &id).ok().flatten())
            .is_some_and(|j| j.finished_at.is_some())
    };
    let during = writes(&server, &other, "busy", 50, finished).await;
    let took = started.elapsed();
    let job = enrolment_job(&store.read().expect("read"), &org, &id)
        .expect("job")
        .expect("job exists");
    println!(
        "bulk enrolment of {} leads: {:.1} s ({:.2} s to capture the set and create the job), {}",
        job.total,
        took.as_secs_f64(),
        created.as_secs_f64(),
        bulk_enrolment::result_words(&job)
    );
    println!(
        "other organization's write, during the enrolment: p50 {:.2} ms, p99 {:.2} ms ({} writes); p99 ratio {:.2} (bound 3)",
        ms(&during, 0.50),
        ms(&during, 0.99),
        during.len(),
        ms(&during, 0.99) / ms(&idle, 0.99)
    );
}
