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

/// A histogram with fixed upper bounds (in the unit the caller observes).
pub struct Histogram {
    bounds: &'static [f64],
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    /// Sum in millionths of the unit, to stay in integers.
    sum_micro: AtomicU64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micro: AtomicU64::new(0),
        }
    }

    /// Counts `value` in the first bucket that holds it (buckets are made cumulative when
    /// rendered), so an observation costs three atomic adds whatever the bucket count.
    pub fn observe(&self, value: f64) {
        if let Some(bucket) = self
            .bounds
            .iter()
            .zip(&self.buckets)
            .find_map(|(bound, bucket)| (value <= *bound).then_some(bucket))
        {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micro
            .fetch_add((value * 1e6) as u64, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(
            out,
            "{name}_sum{braces} {}",
            self.sum_micro.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "{name}_count{braces} {count}");
    }
}

pub const LATENCY_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];
pub const BATCH_SIZES: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

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
    fn histograms_are_cumulative() {
        let h = Histogram::new(&[1.0, 10.0]);
        h.observe(0.5);
        h.observe(5.0);
        h.observe(50.0);
        let mut out = String::new();
        h.render(&mut out, "x", "");
        assert!(out.contains("x_bucket{le=\"1\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"10\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_count 3\n"), "{out}");
    }

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
