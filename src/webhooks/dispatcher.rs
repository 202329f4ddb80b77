//! The dispatcher: sends what the outbox holds and records every attempt.
//!
//! It wakes when a commit adds outbox rows (`Store::outbox_wake`), when an attempt
//! finishes, and when the earliest retry falls due. Each pass asks every enabled
//! endpoint for due deliveries up to its free concurrency, so one slow or dead endpoint
//! only ever occupies its own slots. A delivery being attempted is leased in memory
//! (only one process can open the database); its outbox row stays due on disk until
//! the attempt's result is committed, so after a crash mid-attempt it is simply
//! attempted again: at least once, never zero times.
//!
//! An attempt's `error` (in the delivery's record, which read keys see, and in the log)
//! is a short class (`timeout`, `connect`, `tls`, ...): a receiver's URL may point
//! anywhere, and nothing of what answers there is repeated.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::signing;
use crate::config::WebhookConfig;
use crate::error::Result;
use crate::http_client::{AttemptOutcome, HttpClient};
use crate::http_failure::Failure;
use crate::store::rows::{AttemptRecord, DeliveryRecord, DeliveryState, EndpointRecord};
use crate::store::Reader;
use crate::store::{Store, WriteTx};
use crate::time::{self, now_micros, Micros};

/// Longest sleep between passes when nothing is due (a safety net; commits wake us).
const IDLE_PASS: Duration = Duration::from_secs(30);
/// How long attempts in flight may finish once shutdown starts.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How often finished deliveries past retention are pruned, and how many per pass.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
const PRUNE_BATCH: usize = 1000;
/// `Retry-After` is honoured up to this long.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Per endpoint: the deliveries leased to an attempt whose result is not yet
/// committed (never started again meanwhile), and how many of them are still talking to
/// the receiver (what the concurrency cap counts).
#[derive(Default)]
struct EndpointSlots {
    leased: HashSet<String>,
    sending: usize,
}

type InFlight = Arc<Mutex<HashMap<String, EndpointSlots>>>;

pub struct Dispatcher {
    store: Arc<Store>,
    client: HttpClient,
    config: WebhookConfig,
    in_flight: InFlight,
}

impl Dispatcher {
    /// A dispatcher delivering through `client` (the server's outbound client: its
    /// timeout `webhook_timeout`, its roots with `outbound_ca_file`, its addresses
    /// `outbound_allow_private`).
    pub fn new(
        store: Arc<Store>,
        config: WebhookConfig,
        client: HttpClient,
    ) -> Result<Dispatcher, String> {
        Ok(Dispatcher {
            store,
            client,
            config,
            in_flight: Arc::default(),
        })
    }

    /// Runs until `stop` turns true; then lets attempts in flight finish briefly.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let wake = self.store.outbox_wake();
        let mut attempts = JoinSet::new();
        let mut last_prune: Option<std::time::Instant> = None;
        loop {
            if *stop.borrow() {
                break;
            }
            let next_due = match self.start_due(&mut attempts) {
                Ok(next) => next,
                Err(e) => {
                    tracing::error!(error = %e.to_string_for_logs(), "webhook dispatch pass failed");
                    Some(now_micros() + 1_000_000)
                }
            };
            if last_prune.is_none_or(|t| t.elapsed() >= PRUNE_EVERY) {
                last_prune = Some(std::time::Instant::now());
                self.prune().await;
            }
            while attempts.try_join_next().is_some() {}
            let sleep = match next_due {
                Some(due) => {
                    Duration::from_micros((due - now_micros()).max(0) as u64).min(IDLE_PASS)
                }
                None => IDLE_PASS,
            };
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(sleep) => {}
                _ = stop.changed() => {}
            }
        }
        // Unfinished attempts keep their outbox rows and run again after the restart.
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
            while attempts.join_next().await.is_some() {}
        })
        .await;
        attempts.abort_all();
    }

    /// Starts every due attempt there is room for; returns the next due time.
    fn start_due(&self, attempts: &mut JoinSet<()>) -> Result<Option<Micros>> {
        let now = now_micros();
        // Leases first, snapshot second: an attempt drops its lease only after its
        // result is committed, so a lease missing here means the snapshot below already
        // shows that result. The other order could send a delivered webhook again.
        let slots = self.all_slots()?;
        let read = self.store.read()?;
        let mut next_due: Option<Micros> = None;
        for endpoint in read.all_webhook_endpoints()? {
            if endpoint.disabled_at.is_some() {
                continue;
            }
            let (leased, sending) = slots.get(&endpoint.id).cloned().unwrap_or_default();
            let free = self
                .config
                .max_in_flight_per_endpoint
                .saturating_sub(sending);
            if free == 0 {
                continue;
            }
            let batch = read.due_deliveries(&endpoint.id, now, &leased, free)?;
            if let Some(due) = batch.next_due {
                next_due = Some(next_due.map_or(due, |n| n.min(due)));
            }
            let endpoint = Arc::new(endpoint);
            for delivery in batch.due {
                self.lease(&endpoint.id, &delivery.id);
                let task = Attempt {
                    store: self.store.clone(),
                    client: self.client.clone(),
                    schedule: self.config.retry_schedule.clone(),
                    in_flight: self.in_flight.clone(),
                    endpoint: endpoint.clone(),
                    delivery,
                };
                attempts.spawn(task.run());
            }
        }
        Ok(next_due)
    }

    /// Per endpoint: the leased deliveries and how many are talking to the receiver.
    fn all_slots(&self) -> Result<HashMap<String, (HashSet<String>, usize)>> {
        let map = self
            .in_flight
            .lock()
            .map_err(|_| crate::error::Error::Internal("webhook lease lock poisoned".into()))?;
        Ok(map
            .iter()
            .map(|(id, e)| (id.clone(), (e.leased.clone(), e.sending)))
            .collect())
    }

    fn lease(&self, endpoint: &str, delivery: &str) {
        if let Ok(mut map) = self.in_flight.lock() {
            let slots = map.entry(endpoint.to_string()).or_default();
            slots.leased.insert(delivery.to_string());
            slots.sending += 1;
        }
    }

    async fn prune(&self) {
        let cutoff = now_micros() - self.config.retention.as_micros() as i64;
        let endpoints = match self.store.read().and_then(|r| r.all_webhook_endpoints()) {
            Ok(e) => e,
            Err(e) => {
                return tracing::warn!(error = %e.to_string_for_logs(), "cannot list endpoints to prune")
            }
        };
        for endpoint in endpoints {
            loop {
                let id = endpoint.id.clone();
                match self
                    .store
                    .write(move |tx| tx.prune_deliveries(&id, cutoff, PRUNE_BATCH))
                    .await
                {
                    Ok(n) if n == PRUNE_BATCH => continue,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e.to_string_for_logs(), "pruning deliveries failed");
                        break;
                    }
                }
            }
        }
    }
}

/// One attempt of one delivery.
struct Attempt {
    store: Arc<Store>,
    client: HttpClient,
    schedule: Vec<Duration>,
    in_flight: InFlight,
    endpoint: Arc<EndpointRecord>,
    delivery: DeliveryRecord,
}

impl Attempt {
    async fn run(self) {
        let started_at = now_micros();
        let outcome = self.send(started_at).await;
        if !outcome.status.is_some_and(|s| (200..300).contains(&s)) {
            self.log_failure(&outcome);
        }
        // The receiver is done with us: its slot is free while the result commits.
        self.update_slots(|slots| slots.sending = slots.sending.saturating_sub(1));
        self.store.outbox_wake().notify_one();
        let (endpoint, delivery_id) = (self.endpoint.clone(), self.delivery.id.clone());
        let schedule = self.schedule.clone();
        let recorded = self
            .store
            .write(move |tx| {
                record_attempt(tx, &endpoint, &delivery_id, started_at, &outcome, &schedule)
            })
            .await;
        if let Err(e) = recorded {
            tracing::error!(error = %e.to_string_for_logs(), delivery = %self.delivery.id, "cannot record a webhook attempt");
        }
        // Recorded (or not): the delivery may be picked up again when due.
        self.update_slots(|slots| {
            slots.leased.remove(&self.delivery.id);
        });
        self.store.outbox_wake().notify_one();
    }

    /// A failed attempt, at the default level: the endpoint, the receiver's host (not
    /// its whole URL, which may carry a token) and the status or the error.
    fn log_failure(&self, outcome: &AttemptOutcome) {
        let host = self
            .endpoint
            .url
            .parse::<hyper::Uri>()
            .ok()
            .and_then(|u| u.host().map(str::to_string))
            .unwrap_or_default();
        let status = outcome
            .status
            .map_or_else(|| "none".to_string(), |s| s.to_string());
        tracing::warn!(
            endpoint = %self.endpoint.id,
            %host,
            delivery = %self.delivery.id,
            attempt = self.delivery.attempts.len() + 1,
            %status,
            error = %outcome.error,
            "webhook attempt failed"
        );
    }

    fn update_slots(&self, change: impl FnOnce(&mut EndpointSlots)) {
        if let Ok(mut map) = self.in_flight.lock() {
            if let Some(slots) = map.get_mut(&self.endpoint.id) {
                change(slots);
                if slots.leased.is_empty() && slots.sending == 0 {
                    map.remove(&self.endpoint.id);
                }
            }
        }
    }

    async fn send(&self, now: Micros) -> AttemptOutcome {
        let d = &self.delivery;
        let body = json!({"event": d.event, "data": d.data.0, "timestamp": time::format(now)})
            .to_string()
            .into_bytes();
        let unix = now.div_euclid(1_000_000);
        let signature = match signing::sign(&self.endpoint.secret, &d.id, unix, &body) {
            Ok(s) => s,
            Err(e) => {
                return AttemptOutcome {
                    status: None,
                    error: e.to_string_for_logs(),
                    retry_after: None,
                    latency: Duration::ZERO,
                    untrusted_certificate: false,
                }
            }
        };
        let headers = [
            ("webhook-id", d.id.clone()),
            ("webhook-timestamp", unix.to_string()),
            ("webhook-signature", signature),
        ];
        let mut outcome = self.client.post(&self.endpoint.url, &headers, body).await;
        // The attempt's record (shown to read keys) and the log say a class, never the
        // transport's words nor anything of the receiver's answer.
        if !outcome.error.is_empty() {
            outcome.error = Failure::of_transport(&outcome.error).to_string();
        }
        outcome
    }
}

/// Records an attempt's outcome and decides what happens next to the delivery.
fn record_attempt(
    tx: &mut WriteTx,
    endpoint: &EndpointRecord,
    delivery_id: &str,
    at: Micros,
    outcome: &AttemptOutcome,
    schedule: &[Duration],
) -> Result<()> {
    // Deleted meanwhile (endpoint removed): nothing to record.
    let Some(mut delivery) = tx.delivery(delivery_id)? else {
        return Ok(());
    };
    if delivery.state != DeliveryState::Pending {
        return Ok(());
    }
    let previous_due = delivery.next_attempt_at;
    delivery.attempts.push(AttemptRecord {
        at,
        status: outcome.status,
        error: outcome.error.clone(),
        latency_micros: outcome.latency.as_micros() as i64,
    });
    delivery.cycle_attempts += 1;
    let now = now_micros();
    match outcome.status {
        Some(s) if (200..300).contains(&s) => {
            delivery.state = DeliveryState::Delivered;
            delivery.next_attempt_at = None;
        }
        Some(410) => {
            delivery.state = DeliveryState::Failed;
            delivery.next_attempt_at = None;
            if let Some(mut current) = tx.webhook_endpoint(&endpoint.org_id, &endpoint.id)? {
                current.disabled_at = Some(now);
                current.disabled_reason = "the receiver answered 410 Gone".into();
                tx.put_webhook_endpoint(&current)?;
            }
        }
        // An untrusted certificate fails the same way every time: the delivery rests in
        // `failed` at once, to be retried by hand once the trust is mended.
        None if outcome.untrusted_certificate => {
            delivery.state = DeliveryState::Failed;
            delivery.next_attempt_at = None;
        }
        status => match schedule.get(delivery.cycle_attempts as usize - 1) {
            Some(delay) => {
                let honoured = matches!(status, Some(429 | 502 | 503 | 504))
                    .then_some(outcome.retry_after)
                    .flatten()
                    .map(|d| d.min(MAX_RETRY_AFTER));
                // Never sooner than the receiver asked, nor than the schedule says.
                let scheduled = jitter(*delay);
                let wait = honoured.map_or(scheduled, |asked| asked.max(scheduled));
                delivery.next_attempt_at = Some(now + wait.as_micros() as i64);
            }
            None => {
                delivery.state = DeliveryState::Failed;
                delivery.next_attempt_at = None;
            }
        },
    }
    tx.put_delivery(&delivery, previous_due)
}

/// ±20 %, so that receivers that fail together are not retried together.
fn jitter(delay: Duration) -> Duration {
    let factor = rand::thread_rng().gen_range(0.8..1.2);
    delay.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_twenty_percent() {
        for _ in 0..100 {
            let d = jitter(Duration::from_secs(100));
            assert!(
                d >= Duration::from_secs(80) && d <= Duration::from_secs(120),
                "{d:?}"
            );
        }
    }
}
