//! Webhook delivery measured end to end: deliveries per second to a loopback receiver,
//! and commit-to-delivery latency (p50, p99).
//!
//! `cargo bench --bench webhooks` (not criterion: it prints one measured run). The
//! server runs in-process with its real dispatcher and HTTP client; the receiver is the
//! test kit's, on 127.0.0.1, answering 204.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use engaged::domain::engagement::reactions::React;
use engaged::domain::records::calls;
use engaged::domain::records::leads;
use engaged::testkit::{Reply, TestServer, WebhookReceiver};

/// When the delivery of call `id` first arrived at `receiver`.
fn arrival(receiver: &WebhookReceiver, id: &str) -> Option<Instant> {
    receiver.received().iter().find_map(|r| {
        let v: Value = serde_json::from_slice(&r.body).ok()?;
        (v["data"]["callId"].as_str() == Some(id)).then_some(r.at)
    })
}

/// Waits (bounded by `limit`) until `receiver` got `n` deliveries.
async fn wait_for(receiver: &WebhookReceiver, n: usize, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if receiver.count() >= n {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    false
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing useful.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let ts = TestServer::start().await;
    let server = &ts.server;
    let store = server.store();
    let (_, caller) = support::org_with_key(store, "admin").await;
    let receiver = WebhookReceiver::answering(Reply::status(204)).await;
    let url = receiver.url.clone();
    let c = caller.clone();
    store
        .write(move |tx| {
            engaged::domain::records::webhook_endpoints::create_endpoint(
                tx,
                &c,
                engaged::domain::records::webhook_endpoints::EndpointInput::new(
                    &url,
                    ["call.completed"],
                )?,
                engaged::outbound_address::OutboundPolicy::default(),
            )?;
            leads::create(
                tx,
                &c,
                leads::LeadInput::from_json(&support::object(json!({"id": "lead-1"})))?,
            )
            .react(tx)
        })
        .await
        .expect("setup");

    // Latency: one call completion at a time; from the acknowledged (committed) write to
    // the receiver's arrival.
    let n_latency = 300;
    let mut latencies = Vec::with_capacity(n_latency);
    for i in 0..n_latency {
        let c = caller.clone();
        let id = format!("lat-{i}");
        let call_id = id.clone();
        store
            .write(move |tx| {
                let body = support::object(
                    json!({"leadId": "lead-1", "direction": "OUTBOUND", "callStatus": "COMPLETE"}),
                );
                calls::put(
                    tx,
                    &c,
                    &call_id,
                    calls::CallInput::from_json(&call_id, &body)?,
                )
                .react(tx)
            })
            .await
            .expect("call");
        let acked = Instant::now();
        if !wait_for(&receiver, i + 1, Duration::from_secs(10)).await {
            eprintln!("delivery {i} did not arrive");
            return;
        }
        let arrived = arrival(&receiver, &id).unwrap_or(acked);
        latencies.push(arrived.saturating_duration_since(acked));
    }
    latencies.sort();

    // Throughput: 64 writers queue completions as fast as the writer takes them; the
    // clock runs from the first write to the last arrival.
    let n_throughput = 10_000;
    let before = receiver.count();
    let started = Instant::now();
    let mut writers = Vec::new();
    for w in 0..64 {
        let c = caller.clone();
        let s = server.store().clone();
        writers.push(tokio::spawn(async move {
            for i in (w..n_throughput).step_by(64) {
                let c = c.clone();
                let call_id = format!("tp-{i}");
                s.write(move |tx| {
                    let body = support::object(json!({"leadId": "lead-1", "direction": "INBOUND", "callStatus": "COMPLETE"}));
                    calls::put(tx, &c, &call_id, calls::CallInput::from_json(&call_id, &body)?).react(tx)
                })
                .await
                .expect("call");
            }
        }));
    }
    for w in writers {
        w.await.expect("writer");
    }
    let written = started.elapsed();
    let all_arrived = wait_for(&receiver, before + n_throughput, Duration::from_secs(120)).await;
    let elapsed = started.elapsed();
    let stats = server.store().writer_stats();
    println!(
        "webhooks, one run on this machine ({} cores):",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "  commit-to-delivery latency over {n_latency} sequential deliveries: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        support::percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        support::percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        support::percentile(&latencies, 1.0).as_secs_f64() * 1e3,
    );
    println!(
        "  throughput: {n_throughput} deliveries from 64 concurrent writers: {} in {:.2} s = {:.0} deliveries/s (writes took {:.2} s)",
        if all_arrived { "all arrived" } else { "NOT all arrived" },
        elapsed.as_secs_f64(),
        n_throughput as f64 / elapsed.as_secs_f64(),
        written.as_secs_f64(),
    );
    println!(
        "  writer: {:.1} jobs per commit on average",
        stats.mean_batch()
    );
    ts.server.shutdown().await;
}
