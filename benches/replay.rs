//! A replay measured in one run: a profile's draft tried on 200 past conversations of
//! 10 lead turns each against a local model server answering in 50 ms.
//!
//! `cargo bench --bench replay` (not criterion: it prints one measured run;
//! `REPLAY_CONVERSATIONS` and `REPLAY_TURNS` change the size). The server runs
//! in-process; the conversations are written through the API (the leads' assistant
//! off, so nothing answers them live); the model is the test kit's, answering after
//! 50 ms. A replay asks one model request at a time, so its floor is turns × 50 ms;
//! the run prints the wall time and its ratio to that floor (target: at most 2).
//!
//! Meanwhile another organization posts single events one after another, as the hostile
//! load script's organization B does (`benches/hostile.py`): its write p99 during the
//! replay against its p99 in the 5 s before it (target: at most 3×, or 50 ms).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use engaged::testkit::{FakeModel, Step, TestServer};

const MODEL_DELAY: Duration = Duration::from_millis(50);

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn run() {
    let conversations = env("REPLAY_CONVERSATIONS", 200);
    let turns = env("REPLAY_TURNS", 10);
    let ts = TestServer::start().await;
    let (key, _) = support::org_with_key(ts.server.store(), "admin").await;
    let model = FakeModel::start().await;
    model.set_default(Step::text("Sure, happy to help.").delayed(MODEL_DELAY));
    let settings =
        json!({"assistant": {"baseUrl": model.base_url(), "model": "bench", "timeoutMs": 10000}});
    assert_eq!(ts.patch(&key, "/v1/org", &settings).await.status, 200);
    let profile = json!({"instructions": "You are Sam from Acme Solar."});
    assert_eq!(
        ts.put(&key, "/v1/profiles/assist", &profile).await.status,
        200
    );

    let seeding = Instant::now();
    for n in 0..conversations {
        let id = format!("lead-{n}");
        let lead = json!({"id": id, "firstName": "Ada", "phone": format!("+1555030{n:04}"),
                          "customerProfile": "assist"});
        assert_eq!(ts.post(&key, "/v1/leads", &lead).await.status, 201);
        assert_eq!(
            ts.patch(&key, &format!("/v1/leads/{id}"), &json!({"isAiOn": false}))
                .await
                .status,
            200
        );
        let path = format!("/v1/leads/{id}/messages");
        for t in 0..turns {
            for (owner, text) in [
                ("lead", format!("Question {t}?")),
                ("user", format!("Answer {t}.")),
            ] {
                let body = json!({"owner": owner, "channel": "sms", "content": {"text": text}});
                assert_eq!(ts.post(&key, &path, &body).await.status, 201);
            }
        }
    }
    println!(
        "replay, one run on this machine ({} cores): {conversations} conversations × {turns} turns written in {:.1} s",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        seeding.elapsed().as_secs_f64()
    );

    // Organization B: one lead, its events written one after another.
    let (key_b, _) = support::named_org_with_key(ts.server.store(), "other", "write").await;
    let lead_b = json!({"id": "b-1", "firstName": "Bo", "phone": "+15550399999"});
    assert_eq!(ts.post(&key_b, "/v1/leads", &lead_b).await.status, 201);
    let stop = AtomicBool::new(false);
    let (idle, ()) = tokio::join!(writes(&ts, &key_b, &stop), async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        stop.store(true, Ordering::Relaxed);
    });

    let asked_before = model.count();
    let body = json!({"draft": {"instructions": "You are Sam from Acme Solar. Offer a call."},
                      "conversations": conversations});
    let started = Instant::now();
    let r = ts.post(&key, "/v1/profiles/assist/replays", &body).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let id = r.json()["id"].as_str().expect("id").to_string();
    let stop = AtomicBool::new(false);
    let poll = async {
        let done: Value = loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let replay = ts.get(&key, &format!("/v1/replays/{id}")).await.json();
            if replay["status"] != json!("running") {
                break replay;
            }
        };
        stop.store(true, Ordering::Relaxed);
        done
    };
    let (done, during) = tokio::join!(poll, writes(&ts, &key_b, &stop));
    let wall = started.elapsed();
    assert_eq!(done["status"], json!("done"), "{}", done["summary"]);
    let replayed = done["summary"]["turns"].as_u64().unwrap_or(0) as usize;
    let requests = model.count() - asked_before;
    let floor = MODEL_DELAY * u32::try_from(replayed).unwrap_or(u32::MAX);
    println!(
        "  {replayed} turns replayed ({requests} model requests, {} tokens) in {:.1} s; \
         turns × 50 ms = {:.1} s; ratio {:.2} (target ≤ 2)",
        done["summary"]["modelTokens"],
        wall.as_secs_f64(),
        floor.as_secs_f64(),
        wall.as_secs_f64() / floor.as_secs_f64().max(f64::EPSILON)
    );
    let idle_p99 = support::percentile(&idle, 0.99);
    let during_p99 = support::percentile(&during, 0.99);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  another organization's event write: idle p99 {:.1} ms ({} writes), during the replay \
         p50 {:.1} ms, p99 {:.1} ms ({} writes); {:.2}× idle p99 (target ≤ 3×, or 50 ms)",
        ms(idle_p99),
        idle.len(),
        ms(support::percentile(&during, 0.5)),
        ms(during_p99),
        during.len(),
        during_p99.as_secs_f64() / idle_p99.as_secs_f64().max(f64::EPSILON)
    );
}

/// Organization B's single-event writes, one after another with 10 ms between them,
/// until `stop`; their latencies.
async fn writes(ts: &TestServer, key: &str, stop: &AtomicBool) -> Vec<Duration> {
    let mut took = Vec::new();
    loop {
        let body = json!({"type": "NOTE", "data": {"n": took.len()}});
        let sent = Instant::now();
        let r = ts.post(key, "/v1/leads/b-1/events", &body).await;
        assert!(r.status == 200 || r.status == 201, "{}", r.text());
        took.push(sent.elapsed());
        if stop.load(Ordering::Relaxed) {
            return took;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
