//! HTTP-level benches over TLS on loopback: the real server, a real HTTPS client.
//!
//! `cargo bench --bench http`. Prints the writer's grouping (jobs per commit) at the end.
//!
//! `cargo bench --bench http -- neighbour`: another organization's durable `POST
//! /v1/leads/{id}/events` while one organization keeps writing small events to one lead,
//! first a small lead, then a lead with every stored value at its bound
//! (`domain::records::limits`). Prints both p99s and their ratio (decisions.md: within 2×).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use serde_json::{json, Value};

use engaged::domain::engagement::reactions::React;
use engaged::domain::records::calls;
use engaged::domain::records::leads;
use engaged::domain::records::limits;
use engaged::testkit::TestServer;

struct Bench {
    ts: TestServer,
    client: engaged::testkit::HttpsClient,
    base: String,
    key: String,
}

async fn setup(leads_n: usize) -> Bench {
    let ts = TestServer::start().await;
    let store = ts.server.store();
    let (key, caller) = support::org_with_key(store, "write").await;
    for chunk in 0..leads_n.div_ceil(1000) {
        let c = caller.clone();
        let n = (leads_n - chunk * 1000).min(1000);
        store
            .write(move |tx| {
                for i in 0..n {
                    leads::create(tx, &c, leads::LeadInput::from_json(&support::object(json!({"id": format!("lead-{chunk}-{i}"), "firstName": "Bench"})))?).react(tx)?;
                }
                let call = support::object(json!({"leadId": "lead-0-0", "direction": "OUTBOUND", "callStatus": "COMPLETE", "durationSeconds": 42, "transcript": [{"speaker": "lead", "text": "hello"}]}));
                calls::put(tx, &c, "call-1", calls::CallInput::from_json("call-1", &call)?).react(tx)?;
                Ok(())
            })
            .await
            .expect("seed");
    }
    let client = engaged::testkit::https_client(&ts.cert(), engaged::testkit::Versions::Http1);
    let base = ts.base.clone();
    Bench {
        ts,
        client,
        base,
        key,
    }
}

async fn send(b: &Bench, method: &str, path: &str, body: Option<Value>) -> u16 {
    send_as(b, &b.key, method, path, body).await
}

async fn send_as(b: &Bench, key: &str, method: &str, path: &str, body: Option<Value>) -> u16 {
    let bytes = body.map(|v| v.to_string()).unwrap_or_default();
    let req = Request::builder()
        .method(method)
        .uri(format!("{}{}", b.base, path))
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(bytes)))
        .expect("request");
    let resp = b.client.request(req).await.expect("response");
    let status = resp.status().as_u16();
    let _ = resp.into_body().collect().await.expect("body");
    status
}

fn http(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let bench = Arc::new(rt.block_on(setup(10_000)));
    let mut group = c.benchmark_group("http");
    group.bench_function("get_call", |b| {
        b.to_async(&rt)
            .iter(|| async { assert_eq!(send(&bench, "GET", "/v1/calls/call-1", None).await, 200) })
    });
    group.bench_function("get_leads_page_100", |b| {
        let path = "/v1/leads?updatedSince=1970-01-01T00%3A00%3A00Z&limit=100";
        b.to_async(&rt)
            .iter(|| async { assert_eq!(send(&bench, "GET", path, None).await, 200) })
    });
    group.bench_function("post_event", |b| {
        b.to_async(&rt).iter(|| async {
            let body = json!({"type": "CUSTOM", "id": "single", "data": {"x": 1}});
            assert_eq!(
                send(&bench, "POST", "/v1/leads/lead-0-1/events", Some(body)).await,
                200
            )
        })
    });
    let stats = bench.ts.server.store().writer_stats();
    let (jobs_before, commits_before) = (
        stats.jobs.load(Ordering::Relaxed),
        stats.commits.load(Ordering::Relaxed),
    );
    group.bench_function("post_event_batch_64_concurrent", |b| {
        b.to_async(&rt).iter(|| async {
            let tasks: Vec<_> = (0..64)
                .map(|i| {
                    let bench = bench.clone();
                    tokio::spawn(async move {
                        let body =
                            json!({"type": "CUSTOM", "id": format!("c-{i}"), "data": {"i": i}});
                        send(
                            &bench,
                            "POST",
                            &format!("/v1/leads/lead-0-{}/events", i + 2),
                            Some(body),
                        )
                        .await
                    })
                })
                .collect();
            for t in tasks {
                assert_eq!(t.await.expect("task"), 200);
            }
        })
    });
    let jobs = stats.jobs.load(Ordering::Relaxed) - jobs_before;
    let commits = stats.commits.load(Ordering::Relaxed) - commits_before;
    eprintln!(
        "writer during post_event_batch_64_concurrent: {jobs} jobs in {commits} commits = {:.1} requests per commit",
        jobs as f64 / commits.max(1) as f64
    );
    group.finish();
    eprintln!(
        "writer: {} jobs in {} commits, {:.1} jobs per commit on average, largest batch {}",
        stats.jobs.load(Ordering::Relaxed),
        stats.commits.load(Ordering::Relaxed),
        stats.mean_batch(),
        stats.largest_batch.load(Ordering::Relaxed)
    );
}

/// A lead with every bounded value at its bound (`domain::records::limits`).
fn lead_at_every_maximum(id: &str) -> Value {
    let tags: Vec<Value> = (0..limits::TAGS)
        .map(|i| {
            json!({"id": format!("{i:0>width$}", width = limits::TAG_CHARS),
                   "name": "n".repeat(limits::TAG_CHARS),
                   "condition": "c".repeat(limits::TAG_CONDITION_CHARS)})
        })
        .collect();
    let mut info: serde_json::Map<String, Value> = (0..limits::ADDITIONAL_INFO_KEYS - 1)
        .map(|i| (format!("k{i:03}"), json!(i)))
        .collect();
    info.insert("pad".into(), json!(""));
    let size = Value::Object(info.clone()).to_string().len();
    info.insert(
        "pad".into(),
        json!("p".repeat(limits::ADDITIONAL_INFO_BYTES - size)),
    );
    let email = format!(
        "{}@example.com",
        "a".repeat(limits::EMAIL_CHARS - "@example.com".len())
    );
    json!({
        "id": id,
        "firstName": "f".repeat(limits::NAME_CHARS),
        "lastName": "l".repeat(limits::NAME_CHARS),
        "email": email,
        "externalLeadId": "e".repeat(limits::REFERENCE_CHARS),
        "secondaryCrmLeadId": "s".repeat(limits::REFERENCE_CHARS),
        "customerProfile": "c".repeat(limits::REFERENCE_CHARS),
        "summary": "é".repeat(limits::SUMMARY_CHARS),
        "tags": tags,
        "additionalInfo": info,
    })
}

/// Writers of the noisy organization: each posts small events to `lead` until `stop`.
const NOISY_WRITERS: usize = 4;

fn neighbour(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (bench, noisy_key) = rt.block_on(async {
        let bench = setup(1).await;
        let store = bench.ts.server.store();
        let (noisy_key, noisy) = support::named_org_with_key(store, "noisy", "write").await;
        store
            .write(move |tx| {
                leads::create(
                    tx,
                    &noisy,
                    leads::LeadInput::from_json(&support::object(
                        json!({"id": "small", "firstName": "Small"}),
                    ))?,
                )
                .react(tx)?;
                leads::create(
                    tx,
                    &noisy,
                    leads::LeadInput::from_json(&support::object(lead_at_every_maximum("max")))?,
                )
                .react(tx)?;
                Ok(())
            })
            .await
            .expect("noisy leads");
        (Arc::new(bench), noisy_key)
    });
    let mut p99 = Vec::new();
    let mut group = c.benchmark_group("neighbour");
    for noisy_lead in ["small", "max"] {
        let samples = Arc::new(Mutex::new(Vec::<Duration>::new()));
        group.bench_function(format!("other_org_post_event_beside_{noisy_lead}_lead"), |b| {
            let stop = Arc::new(AtomicBool::new(false));
            let writers: Vec<_> = (0..NOISY_WRITERS)
                .map(|w| {
                    let (bench, key, stop) = (bench.clone(), noisy_key.clone(), stop.clone());
                    rt.spawn(async move {
                        let mut i = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            let body = json!({"type": "CUSTOM", "id": format!("n-{w}-{i}"), "data": {"i": i}});
                            let path = format!("/v1/leads/{noisy_lead}/events");
                            assert_eq!(send_as(&bench, &key, "POST", &path, Some(body)).await, 200);
                            i += 1;
                        }
                    })
                })
                .collect();
            let samples = samples.clone();
            b.to_async(&rt).iter_custom(|iters| {
                let (bench, samples) = (bench.clone(), samples.clone());
                async move {
                    let mut total = Duration::ZERO;
                    for i in 0..iters {
                        let body = json!({"type": "CUSTOM", "id": format!("o-{i}"), "data": {"i": i}});
                        let started = Instant::now();
                        let status = send(&bench, "POST", "/v1/leads/lead-0-0/events", Some(body)).await;
                        let took = started.elapsed();
                        assert_eq!(status, 200);
                        total += took;
                        if let Ok(mut s) = samples.lock() {
                            s.push(took);
                        }
                    }
                    total
                }
            });
            stop.store(true, Ordering::Relaxed);
            for w in writers {
                rt.block_on(w).expect("noisy writer");
            }
        });
        let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
        if !samples.is_empty() {
            p99.push((
                noisy_lead,
                support::percentile(&samples, 0.99),
                samples.len(),
            ));
        }
    }
    group.finish();
    for (lead, p, n) in &p99 {
        eprintln!("other organization's POST p99 beside the {lead} lead: {p:?} ({n} samples)");
    }
    if let [(_, small, _), (_, max, _)] = p99.as_slice() {
        eprintln!(
            "ratio (lead at every maximum / small lead): {:.2} (target: within 2)",
            max.as_secs_f64() / small.as_secs_f64().max(f64::EPSILON)
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = http, neighbour
}
criterion_main!(benches);
