//! HTTP-level benches over TLS on loopback: the real server, a real HTTPS client.
//!
//! `cargo bench --bench http`. Prints the writer's grouping (jobs per commit) at the end.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use serde_json::{json, Value};

use engaged::config::Config;
use engaged::domain::{calls, leads};
use engaged::server::Server;

struct Bench {
    _dir: tempfile::TempDir,
    server: Server,
    client: support::HttpsClient,
    base: String,
    key: String,
}

async fn setup(leads_n: usize) -> Bench {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(Config::for_tests(dir.path().to_path_buf()))
        .await
        .expect("server");
    let store = server.store();
    let (key, caller) = support::org_with_key(store, "write").await;
    for chunk in 0..leads_n.div_ceil(1000) {
        let c = caller.clone();
        let n = (leads_n - chunk * 1000).min(1000);
        store
            .write(move |tx| {
                for i in 0..n {
                    leads::create(tx, &c, support::object(json!({"id": format!("lead-{chunk}-{i}"), "firstName": "Bench"})))?;
                }
                let call = support::object(json!({"leadId": "lead-0-0", "direction": "OUTBOUND", "callStatus": "COMPLETE", "durationSeconds": 42, "transcript": [{"speaker": "lead", "text": "hello"}]}));
                calls::put(tx, &c, "call-1", call)?;
                Ok(())
            })
            .await
            .expect("seed");
    }
    let client = support::https_client(dir.path());
    let base = format!("https://localhost:{}", server.local_addr().port());
    Bench {
        _dir: dir,
        server,
        client,
        base,
        key,
    }
}

async fn send(b: &Bench, method: &str, path: &str, body: Option<Value>) -> u16 {
    let bytes = body.map(|v| v.to_string()).unwrap_or_default();
    let req = Request::builder()
        .method(method)
        .uri(format!("{}{}", b.base, path))
        .header("x-api-key", &b.key)
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
    let stats = bench.server.store().writer_stats();
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

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = http
}
criterion_main!(benches);
