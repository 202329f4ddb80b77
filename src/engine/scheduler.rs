//! The scheduler: one task that leases due agenda rows and runs each in its own task.
//!
//! It reads the due rows from a snapshot, leases them in memory (a row stays in the
//! table until the job's claim commits, so a crash means the row runs again after the
//! restart), and sleeps until the writer says a commit added rows or the earliest row
//! falls due: it never polls in a loop. At most `MAX_IN_FLIGHT` jobs run at once; when
//! that many are leased it waits for one to finish. A send keeps its provider's rate
//! (`pacing`): its job waits for a near slot in its lane; a job whose slot is further off
//! hands its lane back and its row is **parked** (in memory, the row stays in the agenda)
//! until the slot comes, then runs holding it. A burst of due sends is so spread over
//! time without filling the lanes other due rows need.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use super::jobs::Ran;
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
    let parked: Arc<Mutex<Parked>> = Arc::default();
    loop {
        if *stop.borrow() {
            break;
        }
        let sleep = match lease_due(&engine, &leased, &parked, &done) {
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

/// Rows whose job waits for a pacing slot, by job id: when the slot comes.
type Parked = HashMap<String, Micros>;

/// How long after its slot a parked row that never came back (it left the agenda) is
/// forgotten.
const PARKED_GRACE: Micros = 60_000_000;

/// Leases and starts every due row it can; answers when to look again (`Some(now)` or
/// earlier: when a job ends).
fn lease_due(
    engine: &Arc<Engine>,
    leased: &Arc<Mutex<HashSet<String>>>,
    parked: &Arc<Mutex<Parked>>,
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
    // Parked rows are not due before their slot; the earliest slot is a time to look.
    let (mut taken, next_slot) = {
        let mut parked = lock(parked);
        parked.retain(|_, until| *until > now - PARKED_GRACE);
        let waiting: HashSet<String> = parked
            .iter()
            .filter(|(_, until)| **until > now)
            .map(|(id, _)| id.clone())
            .collect();
        let next = parked.values().filter(|until| **until > now).min().copied();
        (waiting, next)
    };
    taken.extend(lock(leased).iter().cloned());
    let due = engine.store.read()?.due_agenda(now, &taken, room)?;
    let saturated = due.due.len() == room;
    for (at, id, job) in due.due {
        lock(leased).insert(id.clone());
        // A row back from parking holds its slot.
        let paced = lock(parked).remove(&id).is_some();
        let (engine, leased, parked, done) =
            (engine.clone(), leased.clone(), parked.clone(), done.clone());
        tokio::spawn(async move {
            let key = (at, id.clone());
            let failed = match engine.run_job(key, job, paced).await {
                Ok(Ran::Done) => false,
                Ok(Ran::Parked(far)) => {
                    let until = now_micros().saturating_add(far.as_micros() as Micros);
                    lock(&parked).insert(id.clone(), until);
                    false
                }
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
    Ok(match (due.next_due, next_slot) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

fn lock<T>(shared: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
