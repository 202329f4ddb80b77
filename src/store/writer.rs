//! The single writer: group commit of every write request.
//!
//! redb allows one write transaction at a time, and a durable commit (an fsync) costs far
//! more than the work inside it. So every write goes, as a job, to one thread that takes
//! whatever jobs are waiting, runs them in one transaction, makes it durable once, and
//! only then answers each job. Under load one fsync covers every request that came
//! while the last batch ran; alone, a request pays for one and never waits: the writer
//! does not wait for more jobs before a batch.
//!
//! Durable is [`Durable::commit`]: the batch's row changes written to the write-ahead
//! log and synced (one sequential write), then the transaction committed without
//! writing the file; or, every [`CHECKPOINT_EVERY`] (and for a batch too large to
//! log, when idle, when stopping), committed with `Durability::Immediate` as a
//! checkpoint that writes every page changed since the last one once (`super::wal`).
//! A bulk part is logged like any other batch: as its own checkpoint it made the
//! writer wait for the last checkpoint's sync at every part, and every other
//! organization's write with it.
//!
//! A job that fails (validation, not found) must leave no trace: write operations check
//! everything before they change anything, the job's error is simply its answer, and
//! its neighbours commit. The writer does not trust that convention: it counts the
//! tables a job opened to change ([`WriteTx::writes`]), and a job that refused after
//! changing something is a bug whose half-write must not be committed. The batch is
//! then aborted and run again from the start without that job, which answers its
//! refusal, and the bug is logged. So jobs may run more than once: they are `FnMut`,
//! and only their last run counts. A storage error or a panic inside a job poisons the
//! transaction: the whole batch is aborted and every job in it answers 500, and nothing
//! of it is on disk.
//!
//! **No organization's bulk work slows another's writes.** A job is either single (a
//! request's write: small) or a part of a bulk job of one organization (an import's
//! rows, a campaign's pause: [`Lane::Bulk`], each part small enough to hold the writer
//! some 20 ms). The writer takes every waiting single job first, in one batch; only
//! when none waits does it run one bulk part, alone in its transaction, taking the
//! organizations with bulk work in turn. So a single write waits at most for the one
//! part running, never in a batch with it, and two organizations' imports share the
//! writer part for part.
//!
//! **A storage error does not outlast its cause.** When the log cannot be written or
//! redb cannot begin or commit (a full disk: redb then answers every later write
//! "Previous I/O error occurred. Please close and re-open the database"), the batch
//! answers 500 and the writer closes the database: every answered batch is in the
//! synced log, so nothing is lost by it. Until it re-opens the file (redb's repair, then
//! the log applied, as at a start: [`wal::open`]), reads and writes answer 503 and
//! `/readyz` says 503 ([`Shared::writes_failing`]); it tries again after 100 ms,
//! doubling to 2 s, and at once for a write that arrives when a try is due.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use redb::{Database, Durability};
use tokio::sync::Notify;

use super::key_cache::KeyCache;
use super::wal::{self, OpLog, Wal, CHECKPOINT_EVERY};
use super::write::WriteTx;
use crate::error::{Error, Result};
use crate::histogram::{Histogram, BATCH_SIZES, LATENCY_SECONDS};

/// A write request as the writer sees it: run inside a transaction (perhaps more than
/// once, see the module's comment), then answered once its batch's fate is known.
pub(crate) trait Job: Send {
    fn run(&mut self, tx: &mut WriteTx) -> Ran;
    /// Answers with the last run's result, or `failure` when the batch did not commit
    /// (or the job never ran).
    fn answer(self: Box<Self>, failure: Option<&Error>);
    /// A trial runs alone in its own transaction, which is then thrown away: what it
    /// would write, computed exactly, and nothing written (`Store::trial`).
    fn is_trial(&self) -> bool {
        false
    }
    /// Which of the writer's lanes the job waits in.
    fn lane(&self) -> &Lane {
        &Lane::Single
    }
}

/// Where a job waits for the writer (see the module's comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lane {
    /// A request's own write: batched with the others waiting, ahead of bulk work.
    Single,
    /// One part of an organization's bulk job: run alone, organizations in turn.
    Bulk(Box<str>),
}

/// Where jobs queue for the writer.
pub(crate) type Jobs = mpsc::Sender<Box<dyn Job>>;

/// What one run of a job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    Done,
    /// The job refused (validation, not found): its answer is an error.
    Refused,
    /// A storage-level failure: the transaction cannot be committed.
    Fatal,
}

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

/// Whom the writer wakes after a commit that gave them work.
pub(crate) struct Wakes {
    /// The webhook dispatcher: new outbox rows.
    pub outbox: Arc<Notify>,
    /// The engine's scheduler: new agenda rows.
    pub agenda: Arc<Notify>,
    /// The CalDAV sync worker: new `calendar_sync` rows.
    pub calendar_sync: Arc<Notify>,
    /// The console's live streams: the leads a commit changed, the sessions it ended.
    pub changes: Arc<super::changes::Changes>,
}

/// Who hears of every committed batch, for continuous replication (`crate::replica`).
/// Called on the writer thread right after a commit: it must not block (no network,
/// no disk), only hand the bytes on.
pub trait Tap: Send + Sync {
    /// A batch committed: its row operations, as a write-ahead log record holds them.
    fn committed(&self, ops: &[u8]);
    /// A batch committed whose operations were too large to record (a recording's
    /// chunks): the follower's chain of batches cannot continue without a new copy.
    fn bypassed(&self);
}

/// The database as the store's readers and the writer share it: closed by the writer
/// after a storage error, and replaced once it re-opens.
#[derive(Default)]
pub(crate) struct Shared {
    db: RwLock<Option<Arc<Database>>>,
    /// Set from a storage error until the database is open again.
    failing: AtomicBool,
    /// Set once when replication starts.
    tap: std::sync::OnceLock<Arc<dyn Tap>>,
}

impl Shared {
    pub(crate) fn new(db: Arc<Database>) -> Shared {
        Shared {
            db: RwLock::new(Some(db)),
            failing: AtomicBool::new(false),
            tap: std::sync::OnceLock::new(),
        }
    }

    /// Hands every batch committed from now on to `tap`; `false` when one was set
    /// already.
    pub(crate) fn set_tap(&self, tap: Arc<dyn Tap>) -> bool {
        self.tap.set(tap).is_ok()
    }

    /// The open database; `Unavailable` (503) while the writer re-opens it.
    pub(crate) fn db(&self) -> Result<Arc<Database>> {
        self.db
            .read()
            .ok()
            .and_then(|db| db.clone())
            .ok_or(Error::Unavailable)
    }

    /// Whether writes fail for a storage error (until the writer re-opens the file).
    pub(crate) fn writes_failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    fn set(&self, db: Option<Arc<Database>>) {
        self.failing.store(db.is_none(), Ordering::Relaxed);
        if let Ok(mut slot) = self.db.write() {
            *slot = db;
        }
    }
}

/// How the writer opens the database again after a storage error.
pub(crate) struct Reopen {
    pub path: PathBuf,
    pub cache_bytes: usize,
}

impl Reopen {
    /// Opens the file (redb repairs what the failed process left), applies the log and
    /// starts a new one, as a start does.
    fn open(&self) -> Result<(Arc<Database>, Durable)> {
        let (db, gate) = wal::open_database(&self.path, self.cache_bytes)?;
        let (wal, replayed) = wal::open(&db, &self.path).map_err(|e| match e {
            wal::OpenFailure::Refused(why) => Error::Internal(why),
            wal::OpenFailure::Failed(e) => e,
        })?;
        tracing::info!(replayed, "re-opened the database after a storage error");
        Ok((Arc::new(db), Durable::new(wal.with_gate(gate))))
    }
}

/// When the writer next tries to re-open the database: after 100 ms, doubling to 2 s.
struct Backoff {
    at: Instant,
    wait: Duration,
}

const FIRST_RETRY: Duration = Duration::from_millis(100);
const LAST_RETRY: Duration = Duration::from_secs(2);

impl Backoff {
    fn now() -> Backoff {
        Backoff {
            at: Instant::now(),
            wait: FIRST_RETRY,
        }
    }

    fn due(&self) -> bool {
        Instant::now() >= self.at
    }

    fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    fn failed(&mut self) {
        self.at = Instant::now() + self.wait;
        self.wait = (self.wait * 2).min(LAST_RETRY);
    }
}

pub(crate) fn spawn(
    shared: Arc<Shared>,
    reopen: Reopen,
    wal: Wal,
    clock: i64,
    stats: Arc<WriterStats>,
    wakes: Wakes,
    keys: Arc<KeyCache>,
) -> Result<(Jobs, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
    // The writer logs where the thread that opened the store logs: the process's
    // subscriber, or a test's own (which then sees the writer's errors too).
    let logs = tracing::dispatcher::get_default(|d| d.clone());
    let handle = std::thread::Builder::new()
        .name("engaged-writer".into())
        .spawn(move || {
            let work = move || {
                let Ok(db) = shared.db() else {
                    return;
                };
                let open = (db, Durable::new(wal));
                let context = Context {
                    shared: &shared,
                    reopen: &reopen,
                    stats: &stats,
                    wakes: &wakes,
                    keys: &keys,
                };
                run(&context, clock, &rx, open)
            };
            if logs.is::<tracing::subscriber::NoSubscriber>() {
                work()
            } else {
                tracing::dispatcher::with_default(&logs, work)
            }
        })?;
    Ok((tx, handle))
}

/// What the writer's loop works with besides its jobs.
struct Context<'a> {
    shared: &'a Shared,
    reopen: &'a Reopen,
    stats: &'a WriterStats,
    wakes: &'a Wakes,
    keys: &'a KeyCache,
}

fn run(
    cx: &Context<'_>,
    mut clock: i64,
    rx: &mpsc::Receiver<Box<dyn Job>>,
    open: (Arc<Database>, Durable),
) {
    let mut queues = Queues::default();
    let mut state = Some(open);
    let mut retry = Backoff::now();
    loop {
        let Some((db, durable)) = state.as_mut() else {
            // Closed after a storage error: re-open when a try is due; meanwhile every
            // job answers 503.
            if retry.due() {
                match cx.reopen.open() {
                    Ok(open) => {
                        cx.keys.invalidate();
                        cx.shared.set(Some(open.0.clone()));
                        state = Some(open);
                        retry = Backoff::now();
                        continue;
                    }
                    Err(e) => {
                        retry.failed();
                        tracing::warn!(error = %e.to_string_for_logs(), "cannot re-open the database yet");
                    }
                }
            }
            for job in queues.drain() {
                job.answer(Some(&Error::Unavailable));
            }
            match rx.recv_timeout(retry.left()) {
                Ok(job) => queues.push(job),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            continue;
        };
        let db: &Database = db;
        // Everything waiting joins its lane; with nothing queued, wait for a job. Ends
        // when every sender is gone (the store was dropped) and nothing is queued.
        if queues.is_empty() {
            // Idle with batches only in the log: checkpoint once the time comes, so
            // that a restart has little to replay.
            let job = match durable.checkpoint_due_in() {
                Some(left) => match rx.recv_timeout(left) {
                    Ok(job) => job,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if durable.checkpoint_idle(db).is_err() {
                            close(cx, &mut state, &mut retry);
                        }
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                },
                None => match rx.recv() {
                    Ok(job) => job,
                    Err(_) => break,
                },
            };
            queues.push(job);
        }
        while let Ok(job) = rx.try_recv() {
            queues.push(job);
        }
        let Some(work) = queues.next() else {
            continue;
        };
        let batch = match work {
            Work::Trial(job) => {
                clock = run_trial(db, clock, job);
                continue;
            }
            Work::Batch(batch) => batch,
        };
        let size = batch.len() as u64;
        let started = std::time::Instant::now();
        let (next_clock, stored) = commit_batch(db, clock, batch, cx, durable);
        clock = next_clock;
        let stats = cx.stats;
        stats
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        stats.batch_sizes.observe(size as f64);
        stats.commits.fetch_add(1, Ordering::Relaxed);
        stats.jobs.fetch_add(size, Ordering::Relaxed);
        stats.largest_batch.fetch_max(size, Ordering::Relaxed);
        if stored.is_err() {
            close(cx, &mut state, &mut retry);
        }
    }
    // Stopping: everything answered goes into the database file itself.
    if let Some((db, durable)) = state {
        durable.stop(&db);
    }
}

/// After a storage error: the database is closed (readers answer 503 until it is open
/// again), and the next try to re-open it is due at once.
fn close(cx: &Context<'_>, state: &mut Option<(Arc<Database>, Durable)>, retry: &mut Backoff) {
    tracing::error!(
        "a storage error: closing the database to re-open it (every answered batch is in the log)"
    );
    cx.shared.set(None);
    *state = None;
    *retry = Backoff::now();
}

/// The jobs waiting for the writer, by lane: single jobs in arrival order, and each
/// organization's bulk parts in arrival order, the organizations taking turns.
#[derive(Default)]
struct Queues {
    singles: VecDeque<Box<dyn Job>>,
    /// Organizations with bulk parts waiting, the next to run first.
    bulk: VecDeque<OrgParts>,
}

/// One organization's bulk parts, in arrival order.
type OrgParts = (Box<str>, VecDeque<Box<dyn Job>>);

/// What the writer runs next.
enum Work {
    /// Jobs sharing one transaction and one commit.
    Batch(Vec<Box<dyn Job>>),
    /// A job alone in a transaction that is thrown away.
    Trial(Box<dyn Job>),
}

impl Queues {
    fn is_empty(&self) -> bool {
        self.singles.is_empty() && self.bulk.is_empty()
    }

    /// Every job waiting, in no particular order.
    fn drain(&mut self) -> Vec<Box<dyn Job>> {
        let mut jobs: Vec<Box<dyn Job>> = self.singles.drain(..).collect();
        for (_, parts) in self.bulk.drain(..) {
            jobs.extend(parts);
        }
        jobs
    }

    fn push(&mut self, job: Box<dyn Job>) {
        let org = match job.lane() {
            Lane::Single => {
                self.singles.push_back(job);
                return;
            }
            Lane::Bulk(org) => org.clone(),
        };
        match self.bulk.iter_mut().find(|(o, _)| *o == org) {
            Some((_, parts)) => parts.push_back(job),
            None => self.bulk.push_back((org, VecDeque::from([job]))),
        }
    }

    /// The waiting single jobs (up to a trial, which runs alone in its turn, and at most
    /// [`MAX_BATCH`]); with none waiting, the next organization's next bulk part.
    fn next(&mut self) -> Option<Work> {
        if let Some(first) = self.singles.pop_front() {
            if first.is_trial() {
                return Some(Work::Trial(first));
            }
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH && self.singles.front().is_some_and(|j| !j.is_trial()) {
                batch.extend(self.singles.pop_front());
            }
            return Some(Work::Batch(batch));
        }
        let (org, mut parts) = self.bulk.pop_front()?;
        let part = parts.pop_front()?;
        if !parts.is_empty() {
            self.bulk.push_back((org, parts));
        }
        Some(if part.is_trial() {
            Work::Trial(part)
        } else {
            Work::Batch(vec![part])
        })
    }
}

/// Runs a trial job alone and aborts its transaction: it answers what it computed, and
/// nothing of it is ever committed. Returns the clock to go on from.
fn run_trial(db: &Database, clock: i64, mut job: Box<dyn Job>) -> i64 {
    let txn = match begin(db) {
        Ok(txn) => txn,
        Err(e) => {
            job.answer(Some(&e));
            return clock;
        }
    };
    let mut tx = WriteTx::new(&txn, clock, OpLog::default());
    let failure = match catch_unwind(AssertUnwindSafe(|| job.run(&mut tx))) {
        Ok(Ran::Done | Ran::Refused) => None,
        Ok(Ran::Fatal) => Some(Error::Internal("a trial write failed".into())),
        Err(_) => {
            tracing::error!("a trial write job panicked");
            Some(Error::Internal("a trial write job panicked".into()))
        }
    };
    // Timestamps stay unique even across a trial's ticks; the transaction is dropped,
    // which aborts it.
    let clock = tx.clock().max(clock);
    drop(tx);
    job.answer(failure.as_ref());
    clock
}

/// Runs `batch` in one transaction and answers every job; returns the clock to go on
/// from (never lower than before, committed or not), and `Err` after a storage error
/// (the log or redb could not begin or commit: the database must be re-opened).
fn commit_batch(
    db: &Database,
    mut clock: i64,
    mut batch: Vec<Box<dyn Job>>,
    cx: &Context<'_>,
    durable: &mut Durable,
) -> (i64, std::result::Result<(), ()>) {
    let (wakes, keys) = (cx.wakes, cx.keys);
    let mut stored = Ok(());
    // Jobs that refused after writing: left out of every later run.
    let mut left_out = vec![false; batch.len()];
    let outcome = loop {
        let txn = match begin(db) {
            Ok(txn) => txn,
            Err(e) => {
                tracing::error!(error = %e.to_string_for_logs(), "cannot begin a write transaction");
                stored = Err(());
                break Err(e);
            }
        };
        let spare = OpLog::recycled(std::mem::take(&mut durable.spare));
        let mut tx = WriteTx::new(&txn, clock, spare);
        let mut poisoned = false;
        let mut half_write = None;
        for (i, job) in batch.iter_mut().enumerate() {
            if left_out[i] {
                continue;
            }
            let before = tx.writes();
            match catch_unwind(AssertUnwindSafe(|| job.run(&mut tx))) {
                Ok(Ran::Done) => {}
                Ok(Ran::Refused) if tx.writes() != before => {
                    half_write = Some(i);
                    break;
                }
                Ok(Ran::Refused) => {}
                Ok(Ran::Fatal) => poisoned = true,
                Err(_) => {
                    tracing::error!("a write job panicked; aborting its batch");
                    poisoned = true;
                }
            }
            if poisoned {
                break;
            }
        }
        clock = tx.clock().max(clock);
        if let Some(i) = half_write {
            // A bug in the job: what it wrote before refusing must not be committed.
            tracing::error!(
                "a write job refused after changing the store; its batch runs again without it"
            );
            left_out[i] = true;
            drop(tx);
            continue;
        }
        if poisoned {
            break Err(Error::Internal("write batch aborted".into()));
        }
        let (outbox_added, agenda_added, keys_changed) =
            (tx.outbox_added, tx.agenda_added, tx.keys_changed);
        let calendar_sync_added = tx.calendar_sync_added;
        let changed_leads = tx.changed_leads();
        let changed_webchats: Vec<(String, String)> = std::mem::take(&mut tx.marked_webchats)
            .into_iter()
            .collect();
        let sessions_ended = tx.sessions_ended;
        let committed = tx.finish().and_then(|mut ops| {
            let committed = durable.commit(txn, &mut ops);
            if committed.is_err() {
                stored = Err(());
            } else if let Some(tap) = cx.shared.tap.get() {
                // Logged or not (a checkpoint), the batch's operations go on to the
                // replica; only a batch too large to record breaks its chain.
                if ops.overflowed() {
                    tap.bypassed();
                } else if !ops.is_empty() {
                    tap.committed(ops.bytes());
                }
            }
            durable.spare = ops.into_buffer();
            committed
        });
        if committed.is_ok() {
            if keys_changed {
                keys.invalidate();
            }
            // The dispatcher and the scheduler may only see new rows once committed.
            if outbox_added {
                wakes.outbox.notify_one();
            }
            if agenda_added {
                wakes.agenda.notify_one();
            }
            if calendar_sync_added {
                wakes.calendar_sync.notify_one();
            }
            wakes
                .changes
                .publish(changed_leads, changed_webchats, sessions_ended);
        }
        break committed;
    };
    if let Err(e) = &outcome {
        tracing::error!(error = %e.to_string_for_logs(), "write batch not committed");
    }
    let failure = outcome.err();
    if stored.is_err() {
        // Said before any answer goes out: whoever saw the 500 finds `/readyz` 503.
        cx.shared.failing.store(true, Ordering::Relaxed);
    }
    for (job, left_out) in batch.into_iter().zip(left_out) {
        // A job left out answers its own refusal: nothing of it was committed.
        job.answer(if left_out { None } else { failure.as_ref() });
    }
    (clock, stored)
}

fn begin(db: &Database) -> Result<redb::WriteTransaction> {
    let mut txn = db.begin_write()?;
    // Durable by the write-ahead log, or as a checkpoint: `Durable::commit` decides.
    txn.set_durability(Durability::None)?;
    Ok(txn)
}

/// How the writer makes a batch durable: by the write-ahead log (`wal`), or by a
/// checkpoint that writes the database file itself.
pub(crate) struct Durable {
    wal: Wal,
    /// When the database file last held everything (the last checkpoint).
    checkpointed: std::time::Instant,
    /// How often a checkpoint comes ([`checkpoint_every`]).
    every: Duration,
    /// The last batch's log buffer, for the next batch's ([`OpLog::recycled`]).
    spare: Vec<u8>,
}

/// A batch's commit slower than this is logged (at debug level).
const SLOW_COMMIT: Duration = Duration::from_millis(5);

/// How often a checkpoint comes: [`CHECKPOINT_EVERY`], or `ENGAGED_CHECKPOINT_MS`
/// (10 to 60000 ms) for the benches that measure the choice.
fn checkpoint_every() -> Duration {
    static EVERY: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *EVERY.get_or_init(|| {
        std::env::var("ENGAGED_CHECKPOINT_MS")
            .ok()
            .and_then(|ms| ms.parse::<u64>().ok())
            .map_or(CHECKPOINT_EVERY, |ms| {
                Duration::from_millis(ms.clamp(10, 60_000))
            })
    })
}

impl Durable {
    fn new(mut wal: Wal) -> Self {
        let every = checkpoint_every();
        wal.pace_for(every);
        Durable {
            wal,
            checkpointed: std::time::Instant::now(),
            every,
            spare: Vec::new(),
        }
    }

    /// With batches in the log only: how long until a checkpoint is due.
    fn checkpoint_due_in(&self) -> Option<std::time::Duration> {
        self.wal
            .has_records()
            .then(|| self.every.saturating_sub(self.checkpointed.elapsed()))
    }

    /// Commits a batch's transaction so that it survives a crash before any of its
    /// jobs is answered: its operations written to the log and synced, then the
    /// transaction committed without writing the file; or, when a checkpoint is due,
    /// logged and committed durably as a checkpoint whose sync the writer does not
    /// wait for (the log holds the batch); a batch too large to log commits as a
    /// checkpoint that waits for its sync.
    fn commit(&mut self, mut txn: redb::WriteTransaction, ops: &mut OpLog) -> Result<()> {
        if ops.overflowed() {
            // In no record: durable only once the file is.
            return self.checkpoint(txn, true);
        }
        if ops.is_empty() {
            // Nothing changed: nothing to make durable.
            txn.set_durability(Durability::None)?;
            return Ok(txn.commit()?);
        }
        let due = self.checkpointed.elapsed() >= self.every || self.wal.is_long();
        let started = std::time::Instant::now();
        self.wal.append(ops)?;
        let logged = started.elapsed();
        let committed = if due {
            self.checkpoint(txn, false)
        } else {
            txn.commit().map_err(Error::from)
        };
        // What holds the writer longest: the log's sync, or a checkpoint's commit.
        if started.elapsed() > SLOW_COMMIT {
            tracing::debug!(
                log_ms = logged.as_secs_f64() * 1e3,
                total_ms = started.elapsed().as_secs_f64() * 1e3,
                checkpoint = due,
                "a batch's commit was slow"
            );
        }
        if let Err(e) = committed {
            // Not committed: the log must not replay it.
            if let Err(back) = self.wal.take_back_last() {
                tracing::error!(error = %back, "cannot take back a write-ahead log record");
            }
            return Err(e);
        }
        Ok(())
    }

    /// Commits `txn` durably as a checkpoint ([`Wal::checkpoint`]: the file holds every
    /// logged batch once its sync is done; `wait` for it).
    fn checkpoint(&mut self, txn: redb::WriteTransaction, wait: bool) -> Result<()> {
        self.wal.checkpoint(txn, wait)?;
        self.checkpointed = std::time::Instant::now();
        Ok(())
    }

    /// A checkpoint with no batch of its own (idle, or stopping).
    fn checkpoint_alone(&mut self, db: &Database) -> Result<()> {
        if !self.wal.has_records() {
            return Ok(());
        }
        db.begin_write()
            .map_err(Error::from)
            .and_then(|txn| self.checkpoint(txn, false))
    }

    /// A checkpoint while idle; one that fails is a storage error (the database is
    /// re-opened).
    fn checkpoint_idle(&mut self, db: &Database) -> Result<()> {
        let done = self.checkpoint_alone(db);
        if let Err(e) = &done {
            self.checkpointed = std::time::Instant::now();
            tracing::error!(error = %e.to_string_for_logs(), "checkpoint failed");
        }
        done
    }

    /// At a stop: a last checkpoint that records the clean stop, then the log's records
    /// dropped (its header stays). If the checkpoint fails, the log stays for the next
    /// start to apply, and the database says it needs it.
    fn stop(self, db: &Database) {
        let done = db
            .begin_write()
            .map_err(Error::from)
            .and_then(|txn| self.wal.stop(txn));
        if let Err(e) = done {
            tracing::error!(error = %e.to_string_for_logs(), "the last checkpoint failed");
        }
    }
}

/// A request of `Store::write` (or `Store::trial`): the closure, its last result, and
/// where the answer goes.
struct Request<T, F> {
    f: F,
    result: Option<Result<T>>,
    reply: tokio::sync::oneshot::Sender<Result<T>>,
    trial: bool,
    lane: Lane,
}

impl<T, F> Job for Request<T, F>
where
    T: Send + 'static,
    F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
{
    fn run(&mut self, tx: &mut WriteTx) -> Ran {
        let result = (self.f)(tx);
        let ran = match &result {
            Ok(_) => Ran::Done,
            // Only a storage-level failure poisons the transaction; a refusal does not.
            Err(Error::Internal(_)) => Ran::Fatal,
            Err(_) => Ran::Refused,
        };
        self.result = Some(result);
        ran
    }

    fn answer(self: Box<Self>, failure: Option<&Error>) {
        let answer = match (failure, self.result) {
            (None, Some(result)) => result,
            (Some(e), _) => Err(e.clone()),
            (None, None) => Err(Error::Internal("a write job never ran".into())),
        };
        // The requester may have gone away; its answer is then nobody's business.
        let _ = self.reply.send(answer);
    }

    fn is_trial(&self) -> bool {
        self.trial
    }

    fn lane(&self) -> &Lane {
        &self.lane
    }
}

/// Wraps `f` as a job of `lane` whose answer travels back on `reply` once the batch
/// commits (a `trial`: once its transaction is thrown away).
pub(crate) fn job<T, F>(
    f: F,
    reply: tokio::sync::oneshot::Sender<Result<T>>,
    trial: bool,
    lane: Lane,
) -> Box<dyn Job>
where
    T: Send + 'static,
    F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
{
    Box::new(Request {
        f,
        result: None,
        reply,
        trial,
        lane,
    })
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::store::rows::{OrgRecord, OrgSettings};
    use crate::store::{Reader, Store};

    fn org(id: &str) -> OrgRecord {
        OrgRecord {
            id: id.into(),
            name: id.into(),
            created_at: 0,
            settings: OrgSettings::default(),
        }
    }

    #[tokio::test]
    async fn an_answered_write_survives_a_crash_through_the_log() {
        use crate::store::tables::ORGS;
        use crate::store::wal;
        use redb::ReadableDatabase;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.redb");
        let store = Store::open(&path).unwrap();
        // A checkpoint between the write and the copy would leave nothing to replay:
        // then the next attempt writes again.
        for attempt in 0..5 {
            let name = format!("org-{attempt}");
            let id = name.clone();
            store.write(move |tx| tx.put_org(&org(&id))).await.unwrap();
            // A crash now: the two files as the running server left them.
            let crash = dir.path().join(format!("crash-{attempt}"));
            std::fs::create_dir(&crash).unwrap();
            let copy = crash.join("t.redb");
            std::fs::copy(&path, &copy).unwrap();
            std::fs::copy(wal::path_of(&path), wal::path_of(&copy)).unwrap();
            let db = redb::Database::create(&copy).unwrap();
            let Ok((_, applied)) = wal::open(&db, &copy) else {
                panic!("the running store's files are refused");
            };
            if applied == 0 {
                continue;
            }
            let read = db.begin_read().unwrap();
            let orgs = read.open_table(ORGS).unwrap();
            assert!(
                orgs.get(name.as_str()).unwrap().is_some(),
                "the answered write is back"
            );
            return;
        }
        panic!("a checkpoint came before every copy");
    }

    #[tokio::test]
    async fn a_trial_answers_what_it_computed_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let seen = store
            .trial(|tx| {
                tx.put_org(&org("tried"))?;
                Ok(tx.org("tried")?.is_some())
            })
            .await
            .unwrap();
        assert!(seen, "the trial sees its own writes");
        assert!(store.read().unwrap().org("tried").unwrap().is_none());
        store.write(|tx| tx.put_org(&org("kept"))).await.unwrap();
        assert!(store.read().unwrap().org("kept").unwrap().is_some());
        let refused: Result<(), Error> = store.trial(|_| Err(Error::BadRequest("no".into()))).await;
        assert!(matches!(refused, Err(Error::BadRequest(_))));
    }

    #[tokio::test]
    async fn single_writes_go_before_bulk_parts_and_organizations_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(Store::open(&dir.path().join("t.redb")).unwrap());
        // Holds the writer so that everything below is queued when it looks again.
        let slow = store
            .write_queued(|_| {
                std::thread::sleep(std::time::Duration::from_millis(300));
                Ok(())
            })
            .unwrap();
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waits = Vec::new();
        let bulk = |org: &'static str, name: &'static str| {
            let (store, order) = (store.clone(), order.clone());
            tokio::spawn(async move {
                store
                    .write_bulk(org, move |_| {
                        order.lock().unwrap().push(name);
                        Ok(())
                    })
                    .await
            })
        };
        // Organization a queues three parts, then b two, then a single write comes.
        for (org, name) in [
            ("a", "a1"),
            ("a", "a2"),
            ("a", "a3"),
            ("b", "b1"),
            ("b", "b2"),
        ] {
            waits.push(bulk(org, name));
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let seen = order.clone();
        let single = store
            .write_queued(move |_| {
                seen.lock().unwrap().push("single");
                Ok(())
            })
            .unwrap();
        slow.await.unwrap();
        single.await.unwrap();
        for wait in waits {
            wait.await.unwrap().unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["single", "a1", "b1", "a2", "b2", "a3"],
            "the single write first, then the organizations' parts in turn"
        );
    }

    #[tokio::test]
    async fn a_job_that_refuses_after_writing_leaves_no_trace_and_its_batch_commits() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        // Holds the writer so that the next three jobs queue up and share one batch.
        let slow = store
            .write_queued(|_| {
                std::thread::sleep(std::time::Duration::from_millis(300));
                Ok(())
            })
            .unwrap();
        let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = runs.clone();
        let first = store
            .write_queued(move |tx| {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tx.put_org(&org("first"))
            })
            .unwrap();
        let buggy = store
            .write_queued(|tx| {
                tx.put_org(&org("half"))?;
                Err::<(), _>(Error::BadRequest("refused after writing".into()))
            })
            .unwrap();
        let last = store.write_queued(|tx| tx.put_org(&org("last"))).unwrap();
        slow.await.unwrap();
        first.await.unwrap();
        assert_eq!(
            buggy.await.unwrap_err().to_string(),
            "refused after writing"
        );
        last.await.unwrap();
        assert_eq!(
            runs.load(std::sync::atomic::Ordering::Relaxed),
            2,
            "the batch ran, was aborted, and ran again without the buggy job"
        );
        let read = store.read().unwrap();
        assert!(read.org("first").unwrap().is_some());
        assert!(read.org("last").unwrap().is_some());
        assert!(
            read.org("half").unwrap().is_none(),
            "the half-write is gone"
        );
    }

    #[tokio::test]
    async fn a_full_disk_fails_writes_until_space_returns_then_the_writer_reopens() {
        use crate::store::wal;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.redb");
        let store = Store::open(&path).unwrap();
        store.write(|tx| tx.put_org(&org("before"))).await.unwrap();
        // The disk fills: the log cannot take the next batch, nor can a new log be
        // written when the writer tries to re-open.
        wal::faults::set_full(&wal::path_of(&path), true);
        let failed = store.write(|tx| tx.put_org(&org("lost"))).await;
        assert!(
            failed.is_err(),
            "a write that cannot be logged is not answered ok"
        );
        assert!(store.writes_failing());
        let refused = store.write(|tx| tx.put_org(&org("refused"))).await;
        assert!(matches!(refused, Err(Error::Unavailable)), "{refused:?}");
        assert!(
            store.writes_failing(),
            "still failing while the disk is full"
        );
        // Space returns: the writer re-opens by itself, and the next write succeeds.
        wal::faults::set_full(&wal::path_of(&path), false);
        let mut waited = 0;
        while store.writes_failing() {
            assert!(
                waited < 500,
                "the writer re-opens the database once there is space"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            waited += 1;
        }
        store.write(|tx| tx.put_org(&org("after"))).await.unwrap();
        let read = store.read().unwrap();
        assert!(
            read.org("before").unwrap().is_some(),
            "answered before: kept"
        );
        assert!(read.org("after").unwrap().is_some());
        assert!(read.org("lost").unwrap().is_none());
        assert!(read.org("refused").unwrap().is_none());
    }
}
