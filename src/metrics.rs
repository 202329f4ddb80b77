//! Prometheus metrics, kept in atomics and rendered as text on `GET /metrics`.
//!
//! Counting must cost a request almost nothing: each route's counters are atomics used
//! under a shared read lock (the write lock is taken once per route, the first time it
//! is seen), statuses index an array, and a histogram observation is three atomic adds.
//! Gauges that live in the store (outbox depth, database size) are read at scrape time
//! instead of being kept up to date.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub use crate::histogram::{Histogram, BATCH_SIZES, LATENCY_SECONDS};

/// Request metrics of the HTTP interface.
#[derive(Default)]
pub struct Metrics {
    routes: RwLock<BTreeMap<&'static str, Arc<RouteMetrics>>>,
}

/// One route's counters: requests by status code, and latency.
struct RouteMetrics {
    /// Indexed by `status - 100`: every valid HTTP status has its own counter.
    statuses: Vec<AtomicU64>,
    latency: Histogram,
}

const STATUS_RANGE: std::ops::Range<u16> = 100..600;

impl RouteMetrics {
    fn new() -> Self {
        RouteMetrics {
            statuses: STATUS_RANGE.map(|_| AtomicU64::new(0)).collect(),
            latency: Histogram::new(LATENCY_SECONDS),
        }
    }
}

/// What continuous replication (`crate::replica`) reports: kept up to date by its
/// uploader, read by `/metrics` and `GET /v1/admin/replica`.
#[derive(Default)]
pub struct ReplicaStatus {
    /// Bytes uploaded (snapshots and segments).
    pub bytes_total: AtomicU64,
    /// Failed uploads, listings, deletions and snapshots, and spool overflows.
    pub errors_total: AtomicU64,
    /// When the oldest batch not yet uploaded committed (ms since the epoch); 0: none
    /// waits.
    pub oldest_pending_ms: AtomicU64,
    /// The last batch the writer handed to the replica (its sequence number).
    pub committed_seq: AtomicU64,
    /// The last sequence number uploaded in the current generation.
    pub uploaded_seq: AtomicU64,
    /// When the last snapshot was uploaded (ms since the epoch); 0: none yet.
    pub snapshot_ms: AtomicU64,
    /// When the last upload succeeded (ms since the epoch); 0: none yet.
    pub synced_ms: AtomicU64,
    /// Bytes of batches waiting in the spool.
    pub spooled_bytes: AtomicU64,
    /// The current generation's name and the last error, if any.
    pub text: RwLock<ReplicaText>,
}

/// The replica's status that is not a number.
#[derive(Default, Clone)]
pub struct ReplicaText {
    pub url: String,
    pub generation: Option<String>,
    pub last_error: Option<String>,
    /// Set while replication is paused (the spool overflowed): a console banner.
    pub paused: Option<String>,
}

impl ReplicaStatus {
    /// Seconds the oldest batch not yet uploaded has waited: 0 when none waits.
    pub fn lag_seconds(&self) -> f64 {
        let oldest = self.oldest_pending_ms.load(Ordering::Relaxed);
        if oldest == 0 {
            return 0.0;
        }
        let now = crate::time::now_micros() / 1000;
        (now.saturating_sub(oldest as i64)).max(0) as f64 / 1000.0
    }

    pub fn text(&self) -> ReplicaText {
        self.text.read().map(|t| t.clone()).unwrap_or_default()
    }

    pub fn update(&self, change: impl FnOnce(&mut ReplicaText)) {
        if let Ok(mut text) = self.text.write() {
            change(&mut text);
        }
    }

    /// The three metrics, in Prometheus's text format.
    pub fn render(&self, out: &mut String) {
        let lines = [
            (
                "engaged_replica_lag_seconds",
                "gauge",
                "Age of the oldest committed batch not yet in the replica.",
                self.lag_seconds(),
            ),
            (
                "engaged_replica_bytes_total",
                "counter",
                "Bytes uploaded to the replica.",
                self.bytes_total.load(Ordering::Relaxed) as f64,
            ),
            (
                "engaged_replica_errors_total",
                "counter",
                "Failed replica uploads, snapshots, listings and deletions, and spool overflows.",
                self.errors_total.load(Ordering::Relaxed) as f64,
            ),
        ];
        for (name, kind, help, value) in lines {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        }
    }
}

/// Values read from the store when scraped.
pub struct StoreGauges {
    pub outbox_depth: u64,
    pub outbox_oldest_age_seconds: f64,
    pub database_bytes: u64,
    pub writer_commits: u64,
    pub writer_jobs: u64,
}

impl Metrics {
    pub fn record(&self, route: &'static str, status: u16, elapsed: Duration) {
        let count = |stats: &RouteMetrics| {
            if STATUS_RANGE.contains(&status) {
                stats.statuses[usize::from(status - STATUS_RANGE.start)]
                    .fetch_add(1, Ordering::Relaxed);
            }
            stats.latency.observe(elapsed.as_secs_f64());
        };
        // The common case counts under the shared lock, touching no reference count.
        if let Ok(routes) = self.routes.read() {
            if let Some(stats) = routes.get(route) {
                return count(stats);
            }
        }
        if let Ok(mut routes) = self.routes.write() {
            count(
                routes
                    .entry(route)
                    .or_insert_with(|| Arc::new(RouteMetrics::new())),
            );
        }
    }

    pub fn render(&self, writer: &crate::store::WriterStats, gauges: &StoreGauges) -> String {
        let mut out = String::with_capacity(8192);
        out.push_str("# HELP engaged_requests_total HTTP requests by route and status.\n# TYPE engaged_requests_total counter\n");
        let routes: Vec<_> = match self.routes.read() {
            Ok(map) => map.iter().map(|(r, m)| (*r, m.clone())).collect(),
            Err(_) => Vec::new(),
        };
        for (route, stats) in &routes {
            for (status, n) in STATUS_RANGE.zip(&stats.statuses) {
                let n = n.load(Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "engaged_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
                    );
                }
            }
        }
        out.push_str("# HELP engaged_request_duration_seconds Time to answer a request, by route.\n# TYPE engaged_request_duration_seconds histogram\n");
        for (route, stats) in &routes {
            stats.latency.render(
                &mut out,
                "engaged_request_duration_seconds",
                &format!("route=\"{route}\""),
            );
        }
        out.push_str("# HELP engaged_writer_batch_size Write jobs per commit.\n# TYPE engaged_writer_batch_size histogram\n");
        writer
            .batch_sizes
            .render(&mut out, "engaged_writer_batch_size", "");
        out.push_str("# HELP engaged_writer_commit_seconds Time to run and durably commit one batch.\n# TYPE engaged_writer_commit_seconds histogram\n");
        writer
            .commit_seconds
            .render(&mut out, "engaged_writer_commit_seconds", "");
        let gauges_text = [
            (
                "engaged_writer_commits_total",
                "counter",
                "Write transactions committed or aborted.",
                gauges.writer_commits as f64,
            ),
            (
                "engaged_writer_jobs_total",
                "counter",
                "Write jobs run.",
                gauges.writer_jobs as f64,
            ),
            (
                "engaged_outbox_depth",
                "gauge",
                "Webhook deliveries waiting in the outbox.",
                gauges.outbox_depth as f64,
            ),
            (
                "engaged_outbox_oldest_pending_seconds",
                "gauge",
                "Age of the oldest due webhook delivery.",
                gauges.outbox_oldest_age_seconds,
            ),
            (
                "engaged_database_bytes",
                "gauge",
                "Size of the database file.",
                gauges.database_bytes as f64,
            ),
        ];
        for (name, kind, help, value) in gauges_text {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_route_and_status() {
        let m = Metrics::default();
        m.record("get_lead", 200, Duration::from_millis(2));
        m.record("get_lead", 200, Duration::from_millis(3));
        m.record("get_lead", 404, Duration::from_millis(1));
        let writer = crate::store::WriterStats::default();
        let gauges = StoreGauges {
            outbox_depth: 0,
            outbox_oldest_age_seconds: 0.0,
            database_bytes: 1,
            writer_commits: 0,
            writer_jobs: 0,
        };
        let text = m.render(&writer, &gauges);
        assert!(
            text.contains("engaged_requests_total{route=\"get_lead\",status=\"200\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("engaged_requests_total{route=\"get_lead\",status=\"404\"} 1"),
            "{text}"
        );
        assert!(text.contains("engaged_database_bytes 1"), "{text}");
    }
}
