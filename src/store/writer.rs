//! The single writer: group commit of every write request.
//!
//! redb allows one write transaction at a time, and a durable commit (an fsync) costs far
//! more than the work inside it. So every write goes, as a job, to one thread that takes
//! whatever jobs are waiting, runs them in one transaction, commits once with
//! `Durability::Immediate`, and only then answers each job. Under load one fsync covers
//! many requests; alone, a request pays for one.
//!
//! A job that fails (validation, not found) must leave no trace, so write operations
//! check everything before they change anything; the job's error is simply its answer
//! and its neighbours commit. A storage error or a panic inside a job poisons the
//! transaction: the whole batch is aborted and every job in it answers 500, and nothing
//! of it is on disk.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use redb::{Database, Durability};
use tokio::sync::Notify;

use super::key_cache::KeyCache;
use super::write::WriteTx;
use crate::error::{Error, Result};
use crate::histogram::{Histogram, BATCH_SIZES, LATENCY_SECONDS};

/// What a job hands back after running: called with the commit's outcome.
pub(crate) type Completion = Box<dyn FnOnce(Option<&Error>) + Send>;
pub(crate) type Job = Box<dyn FnOnce(&mut WriteTx) -> (Completion, bool) + Send>;

/// The most jobs one transaction takes; bounds the latency a batch adds.
const MAX_BATCH: usize = 1024;

/// Counters of the writer's work, for the metrics and the benches.
pub struct WriterStats {
    pub commits: AtomicU64,
    pub jobs: AtomicU64,
    pub largest_batch: AtomicU64,
    pub batch_sizes: Histogram,
    pub commit_seconds: Histogram,
}

impl Default for WriterStats {
    fn default() -> Self {
        WriterStats {
            commits: AtomicU64::new(0),
            jobs: AtomicU64::new(0),
            largest_batch: AtomicU64::new(0),
            batch_sizes: Histogram::new(BATCH_SIZES),
            commit_seconds: Histogram::new(LATENCY_SECONDS),
        }
    }
}

impl WriterStats {
    /// Average jobs per commit so far.
    pub fn mean_batch(&self) -> f64 {
        let commits = self.commits.load(Ordering::Relaxed);
        if commits == 0 {
            return 0.0;
        }
        self.jobs.load(Ordering::Relaxed) as f64 / commits as f64
    }
}

pub(crate) fn spawn(
    db: Arc<Database>,
    clock: i64,
    stats: Arc<WriterStats>,
    outbox_wake: Arc<Notify>,
    keys: Arc<KeyCache>,
) -> Result<(mpsc::Sender<Job>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Job>();
    let handle = std::thread::Builder::new()
        .name("engaged-writer".into())
        .spawn(move || run(&db, clock, &rx, &stats, &outbox_wake, &keys))?;
    Ok((tx, handle))
}

fn run(
    db: &Database,
    mut clock: i64,
    rx: &mpsc::Receiver<Job>,
    stats: &WriterStats,
    outbox_wake: &Notify,
    keys: &KeyCache,
) {
    // Ends when every sender is gone: the store was dropped and nothing is queued.
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let size = batch.len() as u64;
        let started = std::time::Instant::now();
        clock = commit_batch(db, clock, batch, outbox_wake, keys);
        stats
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        stats.batch_sizes.observe(size as f64);
        stats.commits.fetch_add(1, Ordering::Relaxed);
        stats.jobs.fetch_add(size, Ordering::Relaxed);
        stats.largest_batch.fetch_max(size, Ordering::Relaxed);
    }
}

/// Runs `batch` in one transaction and answers every job; returns the clock to go on
/// from (never lower than before, committed or not).
fn commit_batch(
    db: &Database,
    clock: i64,
    batch: Vec<Job>,
    outbox_wake: &Notify,
    keys: &KeyCache,
) -> i64 {
    let mut completions: Vec<Completion> = Vec::with_capacity(batch.len());
    let mut tx = match begin(db, clock) {
        Ok(tx) => tx,
        Err(e) => {
            tracing::error!(error = %e, "cannot begin a write transaction");
            for job in batch {
                // The job never runs; dropping it drops its reply channel, which the
                // waiting request reads as an internal error.
                drop(job);
            }
            return clock;
        }
    };
    let mut poisoned = false;
    for job in batch {
        if poisoned {
            drop(job);
            continue;
        }
        match catch_unwind(AssertUnwindSafe(|| job(&mut tx))) {
            Ok((completion, fatal)) => {
                completions.push(completion);
                poisoned |= fatal;
            }
            Err(_) => {
                tracing::error!("a write job panicked; aborting its batch");
                poisoned = true;
            }
        }
    }
    let next_clock = tx.clock().max(clock);
    let outbox_added = tx.outbox_added;
    let keys_changed = tx.keys_changed;
    let outcome = if poisoned {
        Err(Error::Internal("write batch aborted".into()))
    } else {
        tx.finish()
            .and_then(|txn| txn.commit().map_err(Error::from))
    };
    if let Err(e) = &outcome {
        tracing::error!(error = %e, "write batch not committed");
    }
    if outcome.is_ok() && keys_changed {
        keys.invalidate();
    }
    if outcome.is_ok() && outbox_added {
        // The dispatcher may only see the new rows once they are committed.
        outbox_wake.notify_one();
    }
    let failure = outcome.err();
    for completion in completions {
        completion(failure.as_ref());
    }
    next_clock
}

fn begin(db: &Database, clock: i64) -> Result<WriteTx> {
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    Ok(WriteTx::new(txn, clock))
}

/// Wraps `f` as a job whose answer travels back on `reply` once the batch commits.
pub(crate) fn job<T, F>(f: F, reply: tokio::sync::oneshot::Sender<Result<T>>) -> Job
where
    T: Send + 'static,
    F: FnOnce(&mut WriteTx) -> Result<T> + Send + 'static,
{
    Box::new(move |tx: &mut WriteTx| {
        let result = f(tx);
        // Only a storage-level failure poisons the transaction; a refusal does not.
        let fatal = matches!(result, Err(Error::Internal(_)));
        let completion: Completion = Box::new(move |commit_failure: Option<&Error>| {
            let answer = match commit_failure {
                None => result,
                Some(e) => Err(e.clone()),
            };
            // The requester may have gone away; its answer is then nobody's business.
            let _ = reply.send(answer);
        });
        (completion, fatal)
    })
}
