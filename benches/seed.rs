//! Seeds a stopped `engaged` database for `benches/load.sh`: leads, calls and events
//! written through the library (`engaged::domain`), in large write jobs, so a million
//! leads take a minute rather than an hour of HTTP requests. Prints how long each part
//! took. The organization and its key come from the `engaged` command line first.
//!
//! Under plain `cargo bench` it only says how to run it.
//!   ENGAGED_SEED_DB=<data dir>/engaged.redb ENGAGED_SEED_KEY=<write key> \
//!   ENGAGED_SEED_LEADS=10000 ENGAGED_SEED_CALLS=1000 ENGAGED_SEED_EVENTS=0 \
//!   ENGAGED_SEED_BUDGET_SECS=600 target/release/deps/seed-<hash>
//!
//! Leads are `lead-0` .. `lead-{n-1}`; call `call-i` belongs to `lead-i`; event `e-j`
//! (type `CUSTOM`) belongs to `lead-{j mod leads}`. Events stop early, with a note, when
//! the time budget is spent.

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use engaged::domain::engagement::reactions::React;
use engaged::domain::records::auth;
use engaged::domain::records::calls;
use engaged::domain::records::events;
use engaged::domain::records::leads;
use engaged::domain::Caller;
use engaged::store::rows::Scope;
use engaged::store::{Store, WriteTx};

/// Rows per write job: large transactions, few fsyncs.
const ROWS_PER_JOB: usize = 20_000;

/// Writes numbered rows in large write jobs.
struct Seeder<'a> {
    rt: &'a tokio::runtime::Runtime,
    store: &'a Arc<Store>,
    caller: &'a Caller,
}

impl Seeder<'_> {
    /// Writes rows `0..n` with `row`, a job of `ROWS_PER_JOB` at a time, until `deadline`
    /// if one is given; returns how many were written.
    fn rows(
        &self,
        what: &str,
        n: usize,
        deadline: Option<Instant>,
        row: impl Fn(&mut WriteTx, &Caller, usize) -> engaged::error::Result<()>
            + Clone
            + Send
            + 'static,
    ) -> usize {
        let mut written = 0;
        while written < n && deadline.is_none_or(|d| Instant::now() < d) {
            let (first, last) = (written, (written + ROWS_PER_JOB).min(n));
            let (caller, row) = (self.caller.clone(), row.clone());
            self.rt
                .block_on(
                    self.store
                        .write(move |tx| (first..last).try_for_each(|i| row(tx, &caller, i))),
                )
                .unwrap_or_else(|e| panic!("seeding {what}: {e}"));
            written = last;
        }
        written
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (Ok(db), Ok(key)) = (
        std::env::var("ENGAGED_SEED_DB"),
        std::env::var("ENGAGED_SEED_KEY"),
    ) else {
        println!("seeder: run by benches/load.sh (set ENGAGED_SEED_DB and ENGAGED_SEED_KEY)");
        return;
    };
    let leads_n = env_usize("ENGAGED_SEED_LEADS", 10_000).max(1);
    let calls_n = env_usize("ENGAGED_SEED_CALLS", 1_000).min(leads_n);
    let events_n = env_usize("ENGAGED_SEED_EVENTS", 0);
    let budget = Duration::from_secs(env_usize("ENGAGED_SEED_BUDGET_SECS", 600) as u64);
    let path = PathBuf::from(db);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let store =
        Arc::new(Store::open(&path).expect("open the database (is engaged serve running?)"));
    let caller = auth::authenticate(&store, Some(&key), Scope::Write).expect("a write key");
    let started = Instant::now();

    let seeder = Seeder {
        rt: &rt,
        store: &store,
        caller: &caller,
    };
    let t = Instant::now();
    seeder.rows("leads", leads_n, None, |tx, c, i| {
        let body = support::object(json!({
            "id": format!("lead-{i}"),
            "firstName": "Load",
            "lastName": format!("Test {i}"),
            "phone": format!("+15{:09}", i % 1_000_000_000), // unique: a live lead's phone is its own
            "email": format!("lead{i}@example.com"),
        }));
        leads::create(tx, c, leads::LeadInput::from_json(&body)?)
            .react(tx)
            .map(drop)
    });
    let leads_took = t.elapsed();
    println!(
        "seeded {leads_n} leads in {:.1} s ({:.0} leads/s)",
        leads_took.as_secs_f64(),
        leads_n as f64 / leads_took.as_secs_f64()
    );

    let t = Instant::now();
    seeder.rows("calls", calls_n, None, |tx, c, i| {
        let body = support::object(json!({
            "leadId": format!("lead-{i}"),
            "direction": "OUTBOUND",
            "callStatus": "COMPLETE",
            "durationSeconds": 42,
            "transcript": [{"speaker": "lead", "text": "hello"}, {"speaker": "agent", "text": "hi, how can I help?"}],
        }));
        let id = format!("call-{i}");
        calls::put(tx, c, &id, calls::CallInput::from_json(&id, &body)?).react(tx).map(drop)
    });
    println!(
        "seeded {calls_n} calls in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let written = seeder.rows(
        "events",
        events_n,
        Some(started + budget),
        move |tx, c, j| {
            let input = events::EventInput::from_json(support::object(json!({
                "type": "CUSTOM",
                "id": format!("e-{j}"),
                "data": {"n": j, "note": "seeded by benches/seed.rs"},
            })))?;
            events::upsert(tx, c, &format!("lead-{}", j % leads_n), input)
                .react(tx)
                .map(drop)
        },
    );
    if written < events_n {
        println!("event seeding stopped by the {} s budget", budget.as_secs());
    }
    if events_n > 0 {
        let took = t.elapsed();
        println!(
            "seeded {written} events in {:.1} s ({:.0} events/s)",
            took.as_secs_f64(),
            written as f64 / took.as_secs_f64().max(1e-9)
        );
    }
    store.shutdown();
    drop(store);
    println!(
        "seeding took {:.1} s; database file {:.0} MiB",
        started.elapsed().as_secs_f64(),
        std::fs::metadata(&path).map_or(0, |m| m.len()) as f64 / (1024.0 * 1024.0)
    );
}
