//! Store-level benches: the cost of a sync page and of grouped event writes, without
//! HTTP or TLS in the way.
//!
//! `cargo bench --bench store`

mod support;

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;

use engaged::domain::engagement::reactions::React;
use engaged::domain::records::events;
use engaged::domain::records::leads;
use engaged::domain::records::listing::{self, EventQuery, LeadQuery};
use engaged::domain::Caller;
use engaged::store::Store;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    caller: Caller,
    lead_id: String,
}

/// A store with `leads` leads and `events` events on the first of them.
fn fixture(rt: &tokio::runtime::Runtime, leads_n: usize, events_n: usize) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(Store::open(&dir.path().join("bench.redb")).expect("store"));
    let (_, caller) = rt.block_on(support::org_with_key(&store, "write"));
    let seeding = std::time::Instant::now();
    // Seed in large transactions: one job per chunk keeps seeding fast.
    for chunk in 0..leads_n.div_ceil(20_000) {
        let c = caller.clone();
        let n = (leads_n - chunk * 20_000).min(20_000);
        rt.block_on(store.write(move |tx| {
            for i in 0..n {
                let body = support::object(json!({"id": format!("lead-{chunk}-{i}"), "firstName": "Bench", "phone": format!("+1555{:07}", chunk * 20_000 + i)}));
                leads::create(tx, &c, leads::LeadInput::from_json(&body)?).react(tx)?;
            }
            Ok(())
        }))
        .expect("seed leads");
    }
    if leads_n >= 10_000 {
        let took = seeding.elapsed().as_secs_f64();
        eprintln!(
            "seeded {leads_n} leads in {took:.1} s ({:.0} leads/s)",
            leads_n as f64 / took
        );
    }
    let lead_id = "lead-0-0".to_string();
    for chunk in 0..events_n.div_ceil(1000) {
        let c = caller.clone();
        let id = lead_id.clone();
        let n = (events_n - chunk * 1000).min(1000);
        rt.block_on(store.write(move |tx| {
            for i in 0..n {
                let kind = if i % 2 == 0 { "CUSTOM" } else { "TOOL_CALL" };
                let input = events::EventInput::from_json(support::object(
                    json!({"type": kind, "id": format!("e-{chunk}-{i}"), "data": {"n": i}}),
                ))?;
                events::upsert(tx, &c, &id, input).react(tx)?;
            }
            Ok(())
        }))
        .expect("seed events");
    }
    Fixture {
        _dir: dir,
        store,
        caller,
        lead_id,
    }
}

/// A time halfway through the fixture's leads: a page from there starts in the middle of
/// the index, away from its cached first leaf.
fn middle(f: &Fixture) -> i64 {
    let read = f.store.read().expect("read");
    let mut start = 0;
    read.scan_leads(
        &f.caller.org_id,
        false,
        engaged::store::Start::AtOrAfter((0, String::new())),
        |lead| {
            start = lead.sort_time;
            Ok(engaged::store::Flow::Stop)
        },
    )
    .expect("first lead");
    start + (engaged::time::now_micros() - start) / 2
}

fn pages(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut group = c.benchmark_group("store");
    // The page at 1M leads against the page at 10k: keyset pagination should not care.
    // The page starts in the middle of the index, away from its cached first leaf.
    // ENGAGED_BENCH_LEADS=10000 skips the 1M case (seeding it takes about a minute).
    let sizes: Vec<usize> = match std::env::var("ENGAGED_BENCH_LEADS") {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) => vec![10_000, 1_000_000],
    };
    // Every fixture first, so the ratio below can alternate between them.
    let fixtures: Vec<(usize, Fixture, LeadQuery)> = sizes
        .iter()
        .map(|&leads_n| {
            let f = fixture(&rt, leads_n, 0);
            let q = LeadQuery {
                updated_since: Some(middle(&f)),
                created_since: None,
                limit: 100,
                next_token: None,
            };
            (leads_n, f, q)
        })
        .collect();
    let page = |f: &Fixture, q: &LeadQuery| {
        let read = f.store.read().expect("read");
        let mut out = Vec::with_capacity(100 << 10);
        let next =
            listing::leads(&read, f.store.cursor_key(), &f.caller, q, &mut out).expect("page");
        // A page from the middle: full, with another after it.
        assert!(next.is_some() && !out.is_empty());
    };
    for (leads_n, f, q) in &fixtures {
        group.bench_with_input(
            BenchmarkId::new("lead_page_100_by_updatedSince", leads_n),
            f,
            |b, f| b.iter(|| page(f, q)),
        );
    }
    // The ratio the target is stated in: medians of our own, taken in alternating rounds
    // so that a busy neighbour slows both sizes alike.
    let mut times: Vec<Vec<std::time::Duration>> = vec![Vec::new(); fixtures.len()];
    for _ in 0..20 {
        for (i, (_, f, q)) in fixtures.iter().enumerate() {
            for _ in 0..25 {
                let started = std::time::Instant::now();
                page(f, q);
                times[i].push(started.elapsed());
            }
        }
    }
    let medians: Vec<(usize, std::time::Duration)> = fixtures
        .iter()
        .zip(&mut times)
        .map(|((n, _, _), t)| {
            t.sort();
            (*n, t[t.len() / 2])
        })
        .collect();
    for &(n, median) in &medians {
        eprintln!(
            "lead page of 100 at {n} leads: median {:.3} ms over {} pages",
            median.as_secs_f64() * 1e3,
            times[0].len()
        );
    }
    if let (Some(&(small_n, small)), Some(&(large_n, large))) = (medians.first(), medians.last()) {
        if large_n > small_n {
            eprintln!(
                "lead page at {large_n} / at {small_n} leads: {:.2}x (target <= 1.3)",
                large.as_secs_f64() / small.as_secs_f64()
            );
        }
    }
    drop(fixtures);
    {
        let leads_n = 10_000usize;
        let f = fixture(&rt, leads_n, 10_000);
        group.bench_with_input(
            BenchmarkId::new("events_page_100_by_since", 10_000),
            &f,
            |b, f| {
                let q = EventQuery {
                    since: Some(0),
                    types: Vec::new(),
                    limit: 100,
                    next_token: None,
                };
                b.iter(|| {
                    let read = f.store.read().expect("read");
                    let page =
                        listing::events(&read, f.store.cursor_key(), &f.caller, &f.lead_id, &q)
                            .expect("page");
                    assert_eq!(page.items.len(), 100);
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("event_upsert_batch_64", leads_n), &f, |b, f| {
            b.to_async(&rt).iter(|| async {
                let writes = (0..64).map(|i| {
                    let c = f.caller.clone();
                    let id = f.lead_id.clone();
                    let store = f.store.clone();
                    async move {
                        store
                            .write(move |tx| {
                                let body = support::object(json!({"type": "CUSTOM", "id": format!("w-{i}"), "data": {"i": i}}));
                                events::upsert(tx, &c, &id, events::EventInput::from_json(body)?).react(tx)
                            })
                            .await
                    }
                });
                for result in futures_join_all(writes).await {
                    result.expect("write");
                }
            })
        });
        let stats = f.store.writer_stats();
        eprintln!(
            "writer: {} jobs in {} commits, {:.1} jobs per commit on average, largest batch {}",
            stats.jobs.load(std::sync::atomic::Ordering::Relaxed),
            stats.commits.load(std::sync::atomic::Ordering::Relaxed),
            stats.mean_batch(),
            stats
                .largest_batch
                .load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    group.finish();
}

/// Awaits every future concurrently (a tiny `join_all`, to avoid a dependency).
async fn futures_join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

criterion_group! {
    name = benches;
    // Bounded: the 1M fixture alone takes about a minute to seed.
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = pages
}
criterion_main!(benches);
