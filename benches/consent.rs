//! Consent benches (issue 32's figures): reading an inbound message for a revocation
//! (`revocation::read`), and the gate's consent check on a lead whose ledger holds
//! 1,000 entries (`consent::allows`, one lookup, and the gate's local steps around it,
//! `compliance::check_locally`). Prints p50 and p99 of single calls.
//!
//! `cargo bench --bench consent`

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use engaged::channel::Channel;
use engaged::domain::contact::compliance::{self, Initiative};
use engaged::domain::contact::revocation;
use engaged::domain::engagement::reactions::React;
use engaged::domain::records::consent::{self, ConsentInput};
use engaged::domain::records::leads;
use engaged::store::rows::{ConsentSource, ConsentStatus, Proof, Purpose};
use engaged::store::{Reader, Store};

/// Messages a lead sends: short replies, the spec's opt-outs, and a long paragraph.
const MESSAGES: [&str; 8] = [
    "Yes, Tuesday works",
    "Stop please",
    "I want to stop getting these but call me next week",
    "Remove me from your list",
    "ＳＴＯＰ",
    "I'll be there at the end of the day",
    "Can you tell me more about the panels and the financing options? We have a south-facing roof of about 40 square meters and two cars, and I'd like to know whether a battery makes sense for us.",
    "wrong number",
];

fn report(name: &str, samples: &[Duration]) {
    eprintln!(
        "{name}: p50 {:.2} µs, p99 {:.2} µs ({} calls)",
        support::percentile(samples, 0.5).as_secs_f64() * 1e6,
        support::percentile(samples, 0.99).as_secs_f64() * 1e6,
        samples.len()
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        // `cargo test --benches` builds and starts benches without `--bench`.
        return;
    }
    let own = vec!["basta".to_string()];
    let mut samples = Vec::with_capacity(80_000);
    for _ in 0..10_000 {
        for text in MESSAGES {
            let started = Instant::now();
            std::hint::black_box(revocation::read(std::hint::black_box(text), &own));
            samples.push(started.elapsed());
        }
    }
    report("revocation::read of an inbound message", &samples);

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(Store::open(&dir.path().join("bench.redb")).expect("store"));
    let (_, caller) = rt.block_on(support::org_with_key(&store, "write"));
    let c = caller.clone();
    rt.block_on(store.write(move |tx| {
        let body = support::object(json!({"id": "L1", "phone": "+15551234567"}));
        leads::create(tx, &c, leads::LeadInput::from_json(&body)?).react(tx)?;
        for i in 0..1_000i64 {
            let input = ConsentInput {
                channel: Channel::Voice,
                status: if i % 2 == 0 {
                    ConsentStatus::Granted
                } else {
                    ConsentStatus::Revoked
                },
                purpose: Purpose::Marketing,
                source: ConsentSource::Api,
                at: Some(1_700_000_000_000_000 + i * 1_000_000),
                proof: Proof::default(),
            };
            let lead = tx
                .lead(&c.org_id, "L1")?
                .ok_or_else(|| engaged::error::Error::Internal("the lead is gone".into()))?;
            consent::record(tx, &c.org_id, lead, input).react(tx)?;
        }
        Ok(())
    }))
    .expect("seed the ledger");
    let read = store.read().expect("read");
    let mut samples = Vec::with_capacity(100_000);
    for _ in 0..100_000 {
        let started = Instant::now();
        let allowed = consent::allows(
            &read,
            &caller.org_id,
            "L1",
            Channel::Voice,
            Purpose::Marketing,
        )
        .expect("check");
        samples.push(started.elapsed());
        std::hint::black_box(allowed);
    }
    report("consent::allows on a ledger of 1,000 entries", &samples);

    // The gate's local steps with the policy (voice marketing, a new organization's
    // default) on that lead: DNC, the settings, the consent lookup, quiet hours.
    let org = read.org(&caller.org_id).expect("org").expect("the org");
    let lead = read
        .lead(&caller.org_id, "L1")
        .expect("lead")
        .expect("the lead");
    let outreach = Initiative::Outreach(Purpose::Marketing);
    let mut samples = Vec::with_capacity(100_000);
    for _ in 0..100_000 {
        let started = Instant::now();
        let block =
            compliance::check_locally(&read, &org, &lead, Channel::Voice, outreach).expect("check");
        samples.push(started.elapsed());
        std::hint::black_box(block);
    }
    report(
        "compliance::check_locally (consent required) on 1,000 entries",
        &samples,
    );
}
