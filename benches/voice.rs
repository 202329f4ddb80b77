//! The relay measured in one run: what engaged adds to a spoken turn, and whether live
//! calls slow the API down.
//!
//! `cargo bench --bench voice` (not criterion: it prints one measured run). The server
//! runs in-process with a Twilio voice provider and the test kit's model server on
//! 127.0.0.1, which answers at once (and records how long its answers took it). Calls come in through
//! the signed `voice/inbound` webhook and talk over the relay WebSocket, as Twilio's
//! ConversationRelay would.
//!
//! 1. Added latency: one call, 200 prompts in turn. Each turn's time from sending the
//!    prompt to receiving the text frame, less the model server's own time for that
//!    turn; p50 and p99 (target: p99 under 5 ms).
//! 2. 50 calls at once, each prompting in a loop against a model that takes 50 ms,
//!    while 4 clients `GET /v1/leads/{id}`: the GET p50/p99 with and without the calls,
//!    measured in the same run (target: p99 under 10 ms with the calls).

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use serde_json::{json, Value};

use engaged::domain::engagement::reactions::React;
use engaged::domain::records::leads;
use engaged::domain::Caller;
use engaged::providers::twilio_signature;
use engaged::testkit::relay::{self, RelayClient, FRAME_WAIT};
use engaged::testkit::{FakeModel, Step, TestServer};

const PUBLIC_URL: &str = "https://engaged.test";
const TOKEN: &str = "bench-token";
const FROM: &str = "+15550100000";
const TURNS: usize = 200;
const CALLS: usize = 50;
const LOAD_SECONDS: u64 = 8;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

/// The test kit's model server answering "Sure." after `delay`; its `busy()` is its own
/// time.
async fn model(delay: Duration) -> FakeModel {
    let model = FakeModel::start().await;
    let sure = Step::text("Sure.");
    model.set_default(if delay.is_zero() {
        sure
    } else {
        sure.delayed(delay)
    });
    model
}

struct Bench {
    ts: TestServer,
    org: String,
    caller: Caller,
    client: engaged::testkit::HttpsClient,
    base: String,
}

impl Bench {
    async fn post_form(&self, path: &str, params: &[(&str, &str)]) -> String {
        let owned: Vec<(String, String)> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let signature = twilio_signature::sign(TOKEN, &format!("{PUBLIC_URL}{path}"), &owned);
        let body = serde_urlencoded::to_string(params).expect("form");
        let req = Request::post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-twilio-signature", signature)
            .body(Full::new(Bytes::from(body)))
            .expect("request");
        let resp = self.client.request(req).await.expect("webhook");
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        String::from_utf8_lossy(&bytes).to_string()
    }

    /// A call from lead `n`'s phone; answers the call id (from the relay URL).
    async fn inbound_call(&self, n: usize) -> String {
        let path = format!("/v1/providers/twilio/{}/voice/inbound", self.org);
        let from = format!("+1555020{n:04}");
        let sid = format!("CA{n:032}");
        let twiml = self
            .post_form(&path, &[("CallSid", &sid), ("From", &from), ("To", FROM)])
            .await;
        let start = twiml.find("/voice/").expect("a relay URL") + "/voice/".len();
        let rest = &twiml[start..];
        rest[..rest.find('/').expect("call id")].to_string()
    }

    /// The relay of `call`, signed as Twilio signs it, set up.
    async fn relay(&self, call: &str) -> RelayClient {
        let url = relay::relay_url(PUBLIC_URL, &self.org, call);
        let signature = twilio_signature::sign(TOKEN, &url, &[]);
        let mut ws = relay::connect(&self.ts, &self.org, call, &signature)
            .await
            .unwrap_or_else(|status| panic!("the relay handshake was refused with {status}"));
        ws.setup("CA1").await;
        ws
    }
}

/// Sends one prompt and waits for the text frame; answers the round trip.
async fn turn(ws: &mut RelayClient, text: &str) -> Duration {
    let started = Instant::now();
    ws.prompt(text).await;
    ws.frame_of_type("text", FRAME_WAIT).await;
    started.elapsed()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

async fn start(model_url: &str) -> Bench {
    let ts = TestServer::start_with(|config| config.public_url = Some(PUBLIC_URL.into())).await;
    let store = ts.server.store().clone();
    let (key, caller) = support::org_with_key(&store, "admin").await;
    let client = engaged::testkit::https_client(&ts.cert(), engaged::testkit::Versions::Http1);
    let base = ts.base.clone();
    let settings = json!({
        "assistant": {"baseUrl": model_url, "model": "bench", "timeoutMs": 10000},
        "providers": {"voice": {"kind": "twilio", "accountSid": "AC0000000000000000000000000000beef", "authToken": TOKEN, "from": FROM}}
    });
    let req = Request::patch(format!("{base}/v1/org"))
        .header("x-api-key", &key)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(settings.to_string())))
        .expect("request");
    let resp = client.request(req).await.expect("patch org");
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    let org: Value = serde_json::from_slice(&body).expect("org");
    let org = org["id"].as_str().expect("org id").to_string();
    for n in 0..=CALLS {
        let c = caller.clone();
        let lead = support::object(
            json!({"id": format!("lead-{n}"), "firstName": "Ada", "phone": format!("+1555020{n:04}")}),
        );
        store
            .write(move |tx| {
                leads::create(tx, &c, leads::LeadInput::from_json(&lead)?)
                    .react(tx)
                    .map(|_| ())
            })
            .await
            .expect("lead");
    }
    Bench {
        ts,
        org,
        caller,
        client,
        base,
    }
}

async fn gets(bench: &Bench, key: &str, seconds: u64) -> Vec<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (client, base, key) = (bench.client.clone(), bench.base.clone(), key.to_string());
        let (stop, latencies) = (stop.clone(), latencies.clone());
        readers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let req = Request::get(format!("{base}/v1/leads/lead-0"))
                    .header("x-api-key", &key)
                    .body(Full::new(Bytes::new()))
                    .expect("request");
                let started = Instant::now();
                let resp = client.request(req).await.expect("get");
                let _ = resp.into_body().collect().await;
                latencies.lock().expect("lock").push(started.elapsed());
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let _ = r.await;
    }
    let mut all = latencies.lock().expect("lock").clone();
    all.sort();
    all
}

async fn run() {
    println!(
        "voice, one run on this machine ({} cores):",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // 1. Added latency over 200 turns, the model answering at once.
    let fast = model(Duration::ZERO).await;
    let model_url = fast.base_url();
    let bench = start(&model_url).await;
    let call = bench.inbound_call(0).await;
    let mut ws = bench.relay(&call).await;
    for _ in 0..10 {
        turn(&mut ws, "warming up").await; // connections and caches warm
    }
    let mut added = Vec::with_capacity(TURNS);
    let mut round_trips = Vec::with_capacity(TURNS);
    for i in 0..TURNS {
        let before = fast.busy();
        let rt = turn(&mut ws, &format!("prompt number {i}")).await;
        let model_time = fast.busy() - before;
        round_trips.push(rt);
        added.push(rt.saturating_sub(model_time));
    }
    added.sort();
    round_trips.sort();
    println!(
        "  relay, {TURNS} turns: added latency (prompt sent to text frame received, less the model's own time) p50 {} p99 {} max {}; whole round trip p50 {} p99 {}",
        ms(support::percentile(&added, 0.5)),
        ms(support::percentile(&added, 0.99)),
        ms(support::percentile(&added, 1.0)),
        ms(support::percentile(&round_trips, 0.5)),
        ms(support::percentile(&round_trips, 0.99)),
    );
    drop(ws);
    let admin_key = {
        let created = engaged::admin::run(
            bench.ts.server.store(),
            engaged::admin::AdminRequest::KeyCreate {
                org: "bench".into(),
                scope: engaged::store::rows::Scope::Read,
                name: None,
            },
        )
        .await
        .expect("key");
        created["key"].as_str().expect("key").to_string()
    };
    let _ = &bench.caller;

    // 2. GET latency alone, then with 50 calls talking to a 50 ms model.
    let quiet = gets(&bench, &admin_key, LOAD_SECONDS).await;
    let slow_fake = model(Duration::from_millis(50)).await;
    let slow_model = slow_fake.base_url();
    let slow = start(&slow_model).await;
    let slow_key = {
        let created = engaged::admin::run(
            slow.ts.server.store(),
            engaged::admin::AdminRequest::KeyCreate {
                org: "bench".into(),
                scope: engaged::store::rows::Scope::Read,
                name: None,
            },
        )
        .await
        .expect("key");
        created["key"].as_str().expect("key").to_string()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let turns = Arc::new(AtomicU64::new(0));
    let mut talkers = Vec::new();
    for n in 1..=CALLS {
        let call = slow.inbound_call(n).await;
        let mut ws = slow.relay(&call).await;
        let (stop, turns) = (stop.clone(), turns.clone());
        talkers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                turn(&mut ws, "tell me more about the offer").await;
                turns.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let busy = gets(&slow, &slow_key, LOAD_SECONDS).await;
    stop.store(true, Ordering::Relaxed);
    for t in talkers {
        let _ = t.await;
    }
    println!(
        "  GET /v1/leads/{{id}}, 4 clients, {LOAD_SECONDS} s: alone p50 {} p99 {} ({} requests); with {CALLS} calls talking p50 {} p99 {} ({} requests, {} turns answered)",
        ms(support::percentile(&quiet, 0.5)),
        ms(support::percentile(&quiet, 0.99)),
        quiet.len(),
        ms(support::percentile(&busy, 0.5)),
        ms(support::percentile(&busy, 0.99)),
        busy.len(),
        turns.load(Ordering::Relaxed),
    );
    slow.ts.server.shutdown().await;
    bench.ts.server.shutdown().await;
}
