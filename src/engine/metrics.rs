//! The engine's metrics: assistant requests and their time, provider requests by
//! channel, kind and outcome. The agenda's gauges are read from the store at scrape time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::histogram::Histogram;
use crate::time::{now_micros, Micros};

pub struct EngineMetrics {
    assistant_ok: AtomicU64,
    assistant_error: AtomicU64,
    /// Replies that were empty after the output guard (nothing sent).
    assistant_empty: AtomicU64,
    assistant_seconds: Histogram,
    /// (channel, kind, outcome) → count.
    providers: Mutex<BTreeMap<(&'static str, &'static str, &'static str), u64>>,
    /// Call relays open now.
    relays: AtomicU64,
    /// The relay's own time per answered prompt: prompt in → text frame out, less the
    /// model's time.
    relay_added_seconds: Histogram,
    /// Recordings fetched from providers, by outcome.
    recordings: Mutex<BTreeMap<&'static str, u64>>,
}

impl Default for EngineMetrics {
    fn default() -> Self {
        EngineMetrics {
            assistant_ok: AtomicU64::new(0),
            assistant_error: AtomicU64::new(0),
            assistant_empty: AtomicU64::new(0),
            assistant_seconds: Histogram::new(ASSISTANT_SECONDS),
            providers: Mutex::new(BTreeMap::new()),
            relays: AtomicU64::new(0),
            relay_added_seconds: Histogram::new(RELAY_SECONDS),
            recordings: Mutex::new(BTreeMap::new()),
        }
    }
}

/// A model answers in seconds, not milliseconds: the request buckets reach further.
const ASSISTANT_SECONDS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// The relay's own work is sub-millisecond: its buckets start low.
const RELAY_SECONDS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

impl EngineMetrics {
    pub fn relay_opened(&self) {
        self.relays.fetch_add(1, Ordering::Relaxed);
    }

    pub fn relay_closed(&self) {
        self.relays.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn relay_turn(&self, added: std::time::Duration) {
        self.relay_added_seconds.observe(added.as_secs_f64());
    }

    /// A recording fetch ended: `fetched`, `retried`, `given_up`.
    pub fn recording(&self, outcome: &'static str) {
        if let Ok(mut map) = self.recordings.lock() {
            *map.entry(outcome).or_default() += 1;
        }
    }

    pub fn assistant(&self, ok: bool, seconds: f64) {
        let counter = if ok {
            &self.assistant_ok
        } else {
            &self.assistant_error
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.assistant_seconds.observe(seconds);
    }

    /// A reply was empty after the output guard: nothing was sent.
    pub fn assistant_empty(&self) {
        self.assistant_empty.fetch_add(1, Ordering::Relaxed);
    }

    pub fn provider(&self, channel: &'static str, kind: &'static str, outcome: &'static str) {
        if let Ok(mut map) = self.providers.lock() {
            *map.entry((channel, kind, outcome)).or_default() += 1;
        }
    }

    /// Appends the engine's metrics; `due` and `oldest_due` describe the agenda now.
    pub fn render(&self, out: &mut String, rows: u64, due: u64, oldest_due: Option<Micros>) {
        let oldest = oldest_due.map_or(0.0, |t| (now_micros() - t).max(0) as f64 / 1e6);
        let _ = writeln!(out, "# HELP engaged_agenda_rows Rows in the engine's agenda.\n# TYPE engaged_agenda_rows gauge\nengaged_agenda_rows {rows}");
        let _ = writeln!(out, "# HELP engaged_agenda_due Agenda rows due now.\n# TYPE engaged_agenda_due gauge\nengaged_agenda_due {due}");
        let _ = writeln!(out, "# HELP engaged_agenda_oldest_due_seconds How long the oldest due row has waited.\n# TYPE engaged_agenda_oldest_due_seconds gauge\nengaged_agenda_oldest_due_seconds {oldest}");
        let _ = writeln!(out, "# HELP engaged_assistant_requests_total Assistant conversations by outcome (after retries).\n# TYPE engaged_assistant_requests_total counter");
        let _ = writeln!(
            out,
            "engaged_assistant_requests_total{{outcome=\"ok\"}} {}",
            self.assistant_ok.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "engaged_assistant_requests_total{{outcome=\"error\"}} {}",
            self.assistant_error.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "engaged_assistant_requests_total{{outcome=\"empty\"}} {}",
            self.assistant_empty.load(Ordering::Relaxed)
        );
        out.push_str("# HELP engaged_assistant_seconds Time of one assistant request, retries included.\n# TYPE engaged_assistant_seconds histogram\n");
        self.assistant_seconds
            .render(out, "engaged_assistant_seconds", "");
        let _ = writeln!(out, "# HELP engaged_relays Call relays (ConversationRelay WebSockets) open now.\n# TYPE engaged_relays gauge\nengaged_relays {}", self.relays.load(Ordering::Relaxed));
        out.push_str("# HELP engaged_relay_added_seconds The relay's own time per answered prompt (prompt in to text out, less the model's time).\n# TYPE engaged_relay_added_seconds histogram\n");
        self.relay_added_seconds
            .render(out, "engaged_relay_added_seconds", "");
        out.push_str("# HELP engaged_recording_fetches_total Call recordings fetched from a provider, by outcome.\n# TYPE engaged_recording_fetches_total counter\n");
        if let Ok(map) = self.recordings.lock() {
            for (outcome, n) in map.iter() {
                let _ = writeln!(
                    out,
                    "engaged_recording_fetches_total{{outcome=\"{outcome}\"}} {n}"
                );
            }
        }
        out.push_str("# HELP engaged_provider_requests_total Provider requests by channel, kind and outcome.\n# TYPE engaged_provider_requests_total counter\n");
        if let Ok(map) = self.providers.lock() {
            for ((channel, kind, outcome), n) in map.iter() {
                let _ = writeln!(out, "engaged_provider_requests_total{{channel=\"{channel}\",kind=\"{kind}\",outcome=\"{outcome}\"}} {n}");
            }
        }
    }
}
