//! The store: the only code that touches redb.
//!
//! One redb file holds every table (`tables` lists them), and its write-ahead log beside
//! it, `engaged.wal` (`wal`), every batch committed since the last checkpoint. Reads open their own
//! snapshot with [`Store::read`] and never wait for writes. Writes are closures handed to
//! [`Store::write`]; the single writer thread (`writer`) runs them in batches, one
//! durable commit per batch, and answers each after its batch is on disk.

pub mod browser_calls;
pub mod calendar_sync;
pub mod calendars;
pub mod changes;
pub mod codec;
mod contact;
mod engagement;
pub mod enrolments;
pub mod facet;
mod key_cache;
pub mod lead_index;
pub mod lead_view;
mod maintenance;
mod migrations;
pub mod notices;
mod people;
mod read;
mod reader;
pub mod recordings;
pub mod replays;
pub mod rows;
pub mod tables;
mod voice;
mod wal;
/// A full disk under the log of a database (unit tests only): `(log path, full)`.
#[cfg(test)]
pub(crate) use wal::faults::set_full as fill_log_disk;
pub(crate) use wal::path_of as wal_path;
pub mod webchat;
mod webhooks;
mod write;
mod writer;

use std::path::Path;
use std::sync::{Arc, Mutex};

use redb::{Database, ReadableDatabase, ReadableTable};

pub use maintenance::{
    apply_batches, check_file, check_stopped, lead_count, recover_accepting_loss, StoppedCheck,
};
pub use read::{EventRow, Flow, LeadRow, ReadTx, Start};
pub use reader::Reader;
pub use write::{EventKey, WriteTx};
use writer::Lane;
pub use writer::{Tap as ReplicaTap, WriterStats};

use crate::cursor::CursorKey;
use crate::error::{Error, Result};
use tables::*;

pub use migrations::SCHEMA_VERSION;

use crate::config::DEFAULT_CACHE_BYTES;

/// Why a database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("the database is in use by another process")]
    InUse,
    /// Its write-ahead log does not go with it, or is damaged: the words name both
    /// files and the way out (`engaged recover --accept-loss`).
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Other(String),
}

impl From<Error> for OpenError {
    fn from(e: Error) -> Self {
        OpenError::Other(e.to_string_for_logs())
    }
}

pub struct Store {
    /// The database, shared with the writer, which re-opens it after a storage error.
    shared: Arc<writer::Shared>,
    jobs: Mutex<Option<writer::Jobs>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    stats: Arc<WriterStats>,
    cursor_key: CursorKey,
    outbox_wake: Arc<tokio::sync::Notify>,
    agenda_wake: Arc<tokio::sync::Notify>,
    calendar_sync_wake: Arc<tokio::sync::Notify>,
    path: std::path::PathBuf,
    keys: Arc<key_cache::KeyCache>,
    changes: Arc<changes::Changes>,
    /// When the last single write was queued, in microseconds after `started`: a bulk
    /// job makes its parts short while other writes come.
    last_single: std::sync::atomic::AtomicU64,
    started: std::time::Instant,
}

impl Store {
    /// Opens (or creates) the database file at `path` and starts its writer.
    pub fn open(path: &Path) -> std::result::Result<Store, OpenError> {
        Store::open_with_cache(path, DEFAULT_CACHE_BYTES)
    }

    /// [`Store::open`] with redb's page cache bounded to `cache_bytes`. Pages beyond
    /// it are read again from the file (usually from the kernel's page cache), so the
    /// process's own memory stays bounded however large the database grows.
    pub fn open_with_cache(
        path: &Path,
        cache_bytes: usize,
    ) -> std::result::Result<Store, OpenError> {
        create_private_file(path)?;
        let (db, gate) = match wal::open_database(path, cache_bytes) {
            Ok(opened) => opened,
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => return Err(OpenError::InUse),
            Err(e) => return Err(OpenError::Other(format!("{}: {e}", path.display()))),
        };
        // Batches answered after the last checkpoint are in the write-ahead log only; a
        // log that is not this database's, or damaged, is refused.
        let (wal, replayed) = wal::open(&db, path).map_err(|e| match e {
            wal::OpenFailure::Refused(why) => OpenError::Refused(why),
            wal::OpenFailure::Failed(e) => e.into(),
        })?;
        let wal = wal.with_gate(gate);
        if replayed > 0 {
            tracing::info!(
                replayed,
                "applied the write-ahead log's batches after a crash"
            );
        }
        let (clock, secret) = initialize(&db)?;
        let db = Arc::new(db);
        let stats = Arc::new(WriterStats::default());
        let outbox_wake = Arc::new(tokio::sync::Notify::new());
        let agenda_wake = Arc::new(tokio::sync::Notify::new());
        let calendar_sync_wake = Arc::new(tokio::sync::Notify::new());
        let keys = Arc::new(key_cache::KeyCache::default());
        let changes = Arc::new(changes::Changes::default());
        let wakes = writer::Wakes {
            outbox: outbox_wake.clone(),
            agenda: agenda_wake.clone(),
            calendar_sync: calendar_sync_wake.clone(),
            changes: changes.clone(),
        };
        let shared = Arc::new(writer::Shared::new(db));
        let reopen = writer::Reopen {
            path: path.to_path_buf(),
            cache_bytes,
        };
        let (jobs, handle) = writer::spawn(
            shared.clone(),
            reopen,
            wal,
            clock,
            stats.clone(),
            wakes,
            keys.clone(),
        )?;
        Ok(Store {
            shared,
            jobs: Mutex::new(Some(jobs)),
            writer: Mutex::new(Some(handle)),
            stats,
            cursor_key: CursorKey::new(secret),
            outbox_wake,
            agenda_wake,
            calendar_sync_wake,
            keys,
            changes,
            path: path.to_path_buf(),
            last_single: std::sync::atomic::AtomicU64::new(0),
            started: std::time::Instant::now(),
        })
    }

    /// The directory the database file is in (the data directory).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or_else(|| Path::new("."))
    }

    /// What the commits changed, published after them in windows (the console's live
    /// streams, the notifier); the server runs its [`changes::Changes::run`].
    pub fn changes(&self) -> &Arc<changes::Changes> {
        &self.changes
    }

    /// The API key with this SHA-256, from memory when it can.
    pub fn api_key(&self, hash: &[u8; 32]) -> Result<Option<rows::KeyRecord>> {
        if let Some(record) = self.keys.get(hash) {
            return Ok(Some(record));
        }
        let seen = self.keys.generation();
        let record = self.read()?.key(hash)?;
        if let Some(record) = &record {
            self.keys.insert(*hash, record.clone(), seen);
        }
        Ok(record)
    }

    /// A consistent snapshot for reading.
    pub fn read(&self) -> Result<ReadTx> {
        Ok(ReadTx::new(self.shared.db()?.begin_read()?))
    }

    /// Runs `f` in the writer's next transaction and answers once it is durably
    /// committed. An `Err` from `f` is answered as is and leaves no trace, provided `f`
    /// checked before it wrote (see `writer`).
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
    {
        self.write_queued(f)?.await
    }

    /// [`Store::write`] for callers outside an async runtime (the command line).
    pub fn write_blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
    {
        let QueuedWrite(answer) = self.write_queued(f)?;
        answer.blocking_recv().map_err(|_| writer_dropped())?
    }

    /// Queues `f` for the writer at once, like [`Store::write`], but hands back its
    /// answer as a future to await later. An upload keeps a few chunk writes in flight
    /// this way, so the writer can commit them together while the next chunk arrives.
    /// Dropping the future does not cancel the job.
    pub fn write_queued<T, F>(&self, f: F) -> Result<QueuedWrite<T>>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(writer::job(f, reply, false, Lane::Single))?;
        Ok(QueuedWrite(answer))
    }

    /// Runs `f`, one part of organization `org`'s bulk job (an import's rows, a
    /// campaign's pause), like [`Store::write`] but in the writer's bulk lane: alone in
    /// its transaction, after every single write waiting, organizations in turn (see
    /// `writer`). A part should hold the writer no more than a few milliseconds
    /// ([`Store::bulk_part`] says how long it did).
    pub async fn write_bulk<T, F>(&self, org: &str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(writer::job(f, reply, false, Lane::Bulk(org.into())))?;
        answer.await.map_err(|_| writer_dropped())?
    }

    /// [`Store::trial`] of one part of organization `org`'s bulk job (a dry run's rows),
    /// in the writer's bulk lane like [`Store::write_bulk`].
    pub async fn trial_bulk<T, F>(&self, org: &str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(writer::job(f, reply, true, Lane::Bulk(org.into())))?;
        answer.await.map_err(|_| writer_dropped())?
    }

    /// [`Store::write_bulk`] (or with `trial`, [`Store::trial_bulk`]) that also answers
    /// how long its job worked: the rows and their index rows, its commit not. A bulk
    /// job sizes its next part by it.
    pub async fn bulk_part<T, F>(
        &self,
        org: &str,
        trial: bool,
        mut f: F,
    ) -> Result<(T, std::time::Duration)>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
    {
        // When the job first started and last ended (a batch runs again without a job
        // that refused after writing: every run held the writer).
        let times = Arc::new(Mutex::new(None::<(std::time::Instant, std::time::Instant)>));
        let timed = times.clone();
        let job = move |tx: &mut WriteTx| {
            let start = std::time::Instant::now();
            // The rows' index rows are part of their work: derived here rather than at
            // the commit (a bulk part is alone in its transaction, so its end is the
            // batch's), so that they are timed with it.
            let done = f(tx).and_then(|done| tx.refresh_marked_leads().map(|()| done));
            let end = std::time::Instant::now();
            if let Ok(mut times) = timed.lock() {
                let first = times.map_or(start, |(first, _)| first);
                *times = Some((first, end));
            }
            done
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(writer::job(job, reply, trial, Lane::Bulk(org.into())))?;
        let done = answer.await.map_err(|_| writer_dropped())??;
        let times = *times.lock().unwrap_or_else(|e| e.into_inner());
        let work = times.map_or(std::time::Duration::ZERO, |(start, end)| end - start);
        Ok((done, work))
    }

    /// Runs `f` like [`Store::write`], alone in its own transaction, which is then
    /// thrown away: its answer is what the write would have done, and nothing of it is
    /// written (a dry run). It waits for the writes queued before it.
    pub async fn trial<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(writer::job(f, reply, true, Lane::Single))?;
        answer.await.map_err(|_| writer_dropped())?
    }

    /// Whether a single write (a request's, the engine's) was queued within `within`:
    /// a bulk job then sizes its parts for another write's wait, not for its own speed.
    pub fn others_writing(&self, within: std::time::Duration) -> bool {
        let last = self.last_single.load(std::sync::atomic::Ordering::Relaxed);
        let now = self.started.elapsed().as_micros() as u64;
        last > 0 && now.saturating_sub(last) <= within.as_micros() as u64
    }

    fn submit(&self, job: Box<dyn writer::Job>) -> Result<()> {
        if matches!(job.lane(), Lane::Single) {
            let now = (self.started.elapsed().as_micros() as u64).max(1);
            self.last_single
                .store(now, std::sync::atomic::Ordering::Relaxed);
        }
        let jobs = self
            .jobs
            .lock()
            .map_err(|_| Error::Internal("writer lock poisoned".into()))?;
        match jobs.as_ref() {
            Some(sender) => sender.send(job).map_err(|_| Error::Unavailable),
            None => Err(Error::Unavailable),
        }
    }

    /// Hands every batch committed from now on to `tap` (continuous replication,
    /// `crate::replica`); `false` when one was set already.
    pub fn set_replica_tap(&self, tap: Arc<dyn ReplicaTap>) -> bool {
        self.shared.set_tap(tap)
    }

    /// The database's identity (META `db_id`, made at its first open): 16 bytes.
    pub fn db_id(&self) -> Result<[u8; 16]> {
        let db = self.shared.db()?;
        wal::db_id(&db)?
            .map(|id| id.bytes())
            .ok_or_else(|| Error::Internal("the database has no id yet".into()))
    }

    /// Stops taking writes, lets the writer finish what is queued, and waits for it.
    pub fn shutdown(&self) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        let handle = self.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            if handle.join().is_err() {
                tracing::error!("the writer thread panicked");
            }
        }
    }

    /// Whether writes fail for a storage error (a full disk): until the writer has
    /// re-opened the database, reads and writes answer 503.
    pub fn writes_failing(&self) -> bool {
        self.shared.writes_failing()
    }

    /// Whether the writer thread is alive and taking jobs.
    pub fn writer_running(&self) -> bool {
        let taking = self.jobs.lock().map(|j| j.is_some()).unwrap_or(false);
        let alive = self
            .writer
            .lock()
            .map(|h| h.as_ref().is_some_and(|h| !h.is_finished()))
            .unwrap_or(false);
        taking && alive
    }

    /// Size of the database file in bytes (0 if it cannot be read).
    pub fn file_size(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    pub fn writer_stats(&self) -> &WriterStats {
        &self.stats
    }

    pub fn cursor_key(&self) -> &CursorKey {
        &self.cursor_key
    }

    /// Notified after every commit that queued a webhook delivery.
    pub fn outbox_wake(&self) -> Arc<tokio::sync::Notify> {
        self.outbox_wake.clone()
    }

    /// Notified after every commit that queued a CalDAV write (`calendar_sync`).
    pub fn calendar_sync_wake(&self) -> Arc<tokio::sync::Notify> {
        self.calendar_sync_wake.clone()
    }

    /// Notified after every commit that added a row to the agenda.
    pub fn agenda_wake(&self) -> Arc<tokio::sync::Notify> {
        self.agenda_wake.clone()
    }
}

/// The answer of a job queued with [`Store::write_queued`]: ready once its batch
/// committed (or failed).
pub struct QueuedWrite<T>(tokio::sync::oneshot::Receiver<Result<T>>);

impl<T> std::future::Future for QueuedWrite<T> {
    type Output = Result<T>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<T>> {
        std::pin::Pin::new(&mut self.0)
            .poll(cx)
            .map(|answer| answer.map_err(|_| writer_dropped())?)
    }
}

fn writer_dropped() -> Error {
    Error::Internal("the writer dropped a job".into())
}

impl Drop for Store {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Creates every table, checks the schema version, and returns the clock's high-water
/// mark and the cursor secret.
fn initialize(db: &Database) -> Result<(i64, [u8; 32])> {
    let txn = db.begin_write()?;
    // Migrate first, with no table held open, so a step may open any table.
    let version = {
        let meta = txn.open_table(META)?;
        let found = meta.get("schema_version")?;
        found.map(|v| read_u32(v.value())).transpose()?
    };
    if let Some(v) = version {
        migrations::migrate(&txn, v)?;
    }
    let result = {
        let mut meta = txn.open_table(META)?;
        if version != Some(SCHEMA_VERSION) {
            meta.insert("schema_version", &SCHEMA_VERSION.to_le_bytes()[..])?;
        }
        let clock = match meta.get("clock")? {
            Some(v) => read_i64(v.value())?,
            None => 0,
        };
        let existing_secret = meta.get("cursor_secret")?.map(|v| v.value().to_vec());
        let secret: [u8; 32] = match existing_secret {
            Some(bytes) => bytes
                .try_into()
                .map_err(|_| Error::Internal("cursor secret has the wrong length".into()))?,
            None => {
                let fresh = crate::ids::random_bytes::<32>();
                meta.insert("cursor_secret", &fresh[..])?;
                fresh
            }
        };
        (clock, secret)
    };
    create_tables(&txn)?;
    txn.commit()?;
    Ok(result)
}

/// Creates an empty database file readable by its owner only; redb then initialises it.
fn create_private_file(path: &Path) -> std::result::Result<(), OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    if path.exists() {
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|e| OpenError::Other(format!("cannot create {}: {e}", path.display())))
}

/// Creates every table of `tables::all_tables!` (new tables go there, not here).
fn create_tables(txn: &redb::WriteTransaction) -> Result<()> {
    macro_rules! create {
        ($table:ident) => {
            txn.open_table($table)?;
        };
    }
    all_tables!(create);
    Ok(())
}

fn read_u32(bytes: &[u8]) -> Result<u32> {
    let arr: [u8; 4] = bytes
        .try_into()
        .map_err(|_| Error::Internal("bad u32 in meta".into()))?;
    Ok(u32::from_le_bytes(arr))
}

fn read_i64(bytes: &[u8]) -> Result<i64> {
    let arr: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Internal("bad i64 in meta".into()))?;
    Ok(i64::from_le_bytes(arr))
}

#[cfg(test)]
mod schema_tests {
    use super::*;

    fn write_version(path: &Path, version: u32) {
        let db = Database::create(path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("schema_version", &version.to_le_bytes()[..])
            .unwrap();
        txn.commit().unwrap();
    }

    #[test]
    fn a_file_from_a_newer_release_is_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("newer.redb");
        write_version(&path, SCHEMA_VERSION + 1);
        match Store::open(&path) {
            Err(OpenError::Other(message)) => {
                assert!(message.contains("newer release"), "{message}")
            }
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => panic!("a newer file was opened"),
        }
    }

    #[test]
    fn a_new_file_records_the_current_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.redb");
        drop(Store::open(&path).unwrap());
        let db = Database::open(&path).unwrap();
        let read = db.begin_read().unwrap();
        let meta = read.open_table(META).unwrap();
        let version = meta
            .get("schema_version")
            .unwrap()
            .map(|v| read_u32(v.value()).unwrap());
        assert_eq!(version, Some(SCHEMA_VERSION));
    }
}
