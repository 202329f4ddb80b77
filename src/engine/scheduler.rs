//! The scheduler: one task that leases due agenda rows and runs each in its own task.
//!
//! It reads the due rows from a snapshot, leases them in memory (a row stays in the
//! table until the job's claim commits, so a crash means the row runs again after the
//! restart), and sleeps until the writer says a commit added rows or the earliest row
//! falls due: it never polls in a loop. At most `MAX_IN_FLIGHT` jobs run at once; when
//! that many are leased it waits for one to finish. A send keeps its provider's rate:
//! its job waits for its pacing slot (`pacing`) while leased, before its claim, so a
//! burst of due sends is spread over time (and, while it lasts, holds lanes other due
//! rows wait for).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use super::Engine;
use crate::time::{now_micros, Micros};

/// Jobs running at once (each is mostly waiting on a provider or the model).
const MAX_IN_FLIGHT: usize = 512;
/// How long a row whose job failed (a storage error) is left alone before it is tried
/// again.
const FAILED_JOB_PAUSE: Duration = Duration::from_secs(5);
/// How long a stop waits for jobs in flight to commit their outcome.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The longest sleep with nothing due (a clock stepped forward is noticed by then).
const IDLE_SLEEP: Duration = Duration::from_secs(60);

pub async fn run(engine: Arc<Engine>, mut stop: watch::Receiver<bool>) {
    let wake = engine.store.agenda_wake();
    let done = Arc::new(Notify::new());
    let leased: Arc<Mutex<HashSet<String>>> = Arc::default();
    loop {
        if *stop.borrow() {
            break;
        }
        let sleep = match lease_due(&engine, &leased, &done) {
            Ok(Some(next)) => Duration::from_micros((next - now_micros()).max(0) as u64),
            Ok(None) => IDLE_SLEEP,
            Err(e) => {
                tracing::error!(error = %e.to_string_for_logs(), "the scheduler cannot read the agenda");
                FAILED_JOB_PAUSE
            }
        };
        if sleep.is_zero() {
            // Saturated: wait for a job to end (or a stop).
            tokio::select! {
                _ = done.notified() => {}
                _ = stop.changed() => {}
            }
            continue;
        }
        tokio::select! {
            _ = wake.notified() => {}
            _ = done.notified() => {}
            _ = tokio::time::sleep(sleep.min(IDLE_SLEEP)) => {}
            _ = stop.changed() => {}
        }
    }
    // Let jobs in flight commit what their provider answered; a send cut short here is
    // `unknown` after the restart, never sent twice.
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while !lock(&leased).is_empty() && tokio::time::Instant::now() < deadline {
        let _ = tokio::time::timeout_at(deadline, done.notified()).await;
    }
}

/// Leases and starts every due row it can; answers when to look again (`Some(now)` or
/// earlier: when a job ends).
fn lease_due(
    engine: &Arc<Engine>,
    leased: &Arc<Mutex<HashSet<String>>>,
    done: &Arc<Notify>,
) -> crate::error::Result<Option<Micros>> {
    let room = {
        let leased = lock(leased);
        MAX_IN_FLIGHT.saturating_sub(leased.len())
    };
    if room == 0 {
        return Ok(Some(i64::MIN));
    }
    let now = now_micros();
    let taken = lock(leased).clone();
    let due = engine.store.read()?.due_agenda(now, &taken, room)?;
    let saturated = due.due.len() == room;
    for (at, id, job) in due.due {
        lock(leased).insert(id.clone());
        let (engine, leased, done) = (engine.clone(), leased.clone(), done.clone());
        tokio::spawn(async move {
            let key = (at, id.clone());
            let failed = match engine.run_job(key, job).await {
                Ok(()) => false,
                Err(e) => {
                    tracing::error!(job = %id, error = %e.to_string_for_logs(), "an agenda job failed; it will run again");
                    true
                }
            };
            if failed {
                tokio::time::sleep(FAILED_JOB_PAUSE).await;
            }
            lock(&leased).remove(&id);
            done.notify_one();
        });
    }
    if saturated {
        return Ok(Some(i64::MIN));
    }
    Ok(due.next_due)
}

fn lock(leased: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    leased
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
