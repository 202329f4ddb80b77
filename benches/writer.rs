//! The writer's own cost of a single-event write, without HTTP or TLS: 64 tasks post
//! `CUSTOM` events on random leads of 10,000 through `Store::write` (the job
//! `POST /v1/leads/{id}/events` gives the writer), against the bare group-commit writer
//! of `benches/baseline.rs` (one raw row per job, one fsync per batch), back to back in
//! one run. Prints jobs/s of each, their ratio, the writer time per job and each one's
//! p50, p99 and longest wait of a job (a checkpoint that held the writer shows there).
//!
//! `cargo bench --bench writer` (about 40 s; `WRITER_SECS` per case, default 8)

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redb::Database;
use serde_json::json;
use tokio::sync::oneshot;

use engaged::domain::engagement::reactions::React;
use engaged::domain::records::{events, leads};
use engaged::store::Store;

const LEADS: usize = 10_000;
const TASKS: usize = 64;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let secs = std::env::var("WRITER_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8u64);
    let run_for = Duration::from_secs(secs);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");

    let store = Arc::new(Store::open(&dir.path().join("engaged.redb")).expect("store"));
    let (_, caller) = rt.block_on(support::org_with_key(&store, "write"));
    let seeding = Instant::now();
    for chunk in 0..LEADS.div_ceil(5_000) {
        let c = caller.clone();
        rt.block_on(store.write(move |tx| {
            for i in chunk * 5_000..((chunk + 1) * 5_000).min(LEADS) {
                let body = support::object(json!({
                    "id": format!("lead-{i}"), "firstName": "Bench", "lastName": format!("Lead {i}"),
                    "phone": format!("+1555{i:07}"), "email": format!("lead{i}@example.com"),
                }));
                leads::create(tx, &c, leads::LeadInput::from_json(&body)?).react(tx)?;
            }
            Ok(())
        }))
        .expect("seed leads");
    }
    eprintln!(
        "seeded {LEADS} leads in {:.1} s",
        seeding.elapsed().as_secs_f64()
    );

    // Engaged: each task writes one event at a time on a lead of its own sequence.
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let waits = rt.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for t in 0..TASKS {
            let (store, caller, done) = (store.clone(), caller.clone(), done.clone());
            tasks.spawn(async move {
                let mut waits = Vec::new();
                let mut n = 0usize;
                while started.elapsed() < run_for {
                    n += 1;
                    let lead = format!("lead-{}", (n * 7 + t * 1_000_003) % LEADS);
                    let body = support::object(
                        json!({"type": "CUSTOM", "id": format!("w-{t}-{n}"), "data": {"n": n}}),
                    );
                    let c = caller.clone();
                    let asked = Instant::now();
                    store
                        .write(move |tx| {
                            let input = events::EventInput::from_json(body.clone())?;
                            events::upsert(tx, &c, &lead, input).react(tx)
                        })
                        .await
                        .expect("event write");
                    waits.push(asked.elapsed());
                    done.fetch_add(1, Ordering::Relaxed);
                }
                waits
            });
        }
        let mut all = Vec::new();
        while let Some(waits) = tasks.join_next().await {
            all.extend(waits.expect("task"));
        }
        all
    });
    let engaged = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let stats = store.writer_stats();
    let batch = stats.mean_batch();
    drop(store);

    // The bare writer: the same tasks, one raw row per job.
    let db = Arc::new(Database::create(dir.path().join("bare.redb")).expect("bare db"));
    let writes = support::bare_writer::spawn(db);
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let bare_waits = rt.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for t in 0..TASKS {
            let (writes, done) = (writes.clone(), done.clone());
            tasks.spawn(async move {
                let mut waits = Vec::new();
                let mut n = 0usize;
                while started.elapsed() < run_for {
                    n += 1;
                    let body =
                        format!(r#"{{"type":"CUSTOM","id":"w-{t}-{n}","data":{{"n":{n}}}}}"#);
                    let (answer, answered) = oneshot::channel();
                    let asked = Instant::now();
                    writes
                        .send((body.into_bytes(), answer))
                        .expect("bare writer");
                    assert!(answered.await.expect("answer"), "bare commit");
                    waits.push(asked.elapsed());
                    done.fetch_add(1, Ordering::Relaxed);
                }
                waits
            });
        }
        let mut all = Vec::new();
        while let Some(waits) = tasks.join_next().await {
            all.extend(waits.expect("task"));
        }
        all
    });
    let bare = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();

    println!("writer, {TASKS} tasks, {secs} s per case, {LEADS} leads");
    println!("engaged single-event jobs: {engaged:8.0} /s ({batch:.1} jobs per commit)");
    println!("bare group-commit writer:  {bare:8.0} /s");
    println!(
        "engaged / bare: {:.2}; engaged writer time per job about {:.0} µs",
        engaged / bare,
        1e6 / engaged
    );
    println!("engaged job wait: {}", percentiles(waits));
    println!("bare job wait:    {}", percentiles(bare_waits));
}

/// p50, p99 and the longest of `waits`, in milliseconds.
fn percentiles(mut waits: Vec<Duration>) -> String {
    waits.sort();
    let at = |q: f64| {
        let i = ((waits.len() as f64 * q) as usize).min(waits.len().saturating_sub(1));
        waits.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, longest {:.2} ms",
        at(0.5),
        at(0.99),
        at(1.0)
    )
}
