//! The database file's writes and syncs, held back for a checkpoint, so that the
//! writer does not wait for them.
//!
//! A checkpoint's durable commit writes every page changed since the last one and
//! then syncs the file. redb allows one write transaction at a time, so a writer that
//! waited for those writes and that sync would hold every request that arrives
//! meanwhile. Instead the database file is opened through [`GatedFile`], a
//! `redb::StorageBackend` over redb's own `FileBackend`: while a checkpoint commits
//! ([`SyncGate::deferring`]) the pages redb writes are only copied into memory (held)
//! and a sync it asks for is only noted as pending; the checkpoint's thread
//! ([`SyncGate::settle`], run by `Wal::checkpoint` on a thread of its own) writes the
//! held pages to the file and makes the sync. Reads see the held pages until they are
//! in the file.
//!
//! **The disk takes a checkpoint a step at a time.** The sync writes every page changed
//! since the last checkpoint: the held ones and those redb's non-durable commits wrote
//! meanwhile ([`GateState::dirty`]), tens of MiB under load. Given to the disk at once,
//! they queue ahead of the log's own syncs, whose batches then wait for them. So the
//! checkpoint's thread ([`SyncGate::settle_paced`]) starts their writeback 256 KiB at a
//! time (`POSIX_FADV_DONTNEED`: writeback without a cache flush), spread over a quarter
//! of the interval between checkpoints, and syncs at the end. Meanwhile redb's writes
//! wait in memory too ([`GateState::after`], at most half its cache; past that, or
//! for a write over part of a kept page and past it, the writer waits for the rest
//! at once), to follow the sync.
//!
//! The gate keeps redb's order of writes: writes between two syncs reach the disk in
//! any order anyway, so holding them back changes nothing a crash can see; any other
//! write or resize of the file while pages are held or a sync is pending first writes
//! them and makes the sync, so nothing written after a commit reaches the file before
//! the commit is on disk (a page the commit freed is only reused by a later write). A
//! crash before the sync is the crash of a commit whose sync was slow: redb opens at
//! the last commit its checksums hold. What the log still holds covers the rest: `Wal`
//! keeps every record of the checkpoint's interval until the sync is done.
//!
//! A write or sync that fails fails every later write of the file, so the writer
//! re-opens the database and applies the log (nothing answered is lost).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::ops::Bound;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redb::backends::FileBackend;
use redb::{BackendError, Database, DatabaseError, StorageBackend};

/// Pages written while a checkpoint committed, by their offset in the file. They never
/// overlap one another (see [`fit`]).
type Pages = BTreeMap<u64, Box<[u8]>>;

/// Whether a sync of the database file is pending, the pages held back for it, and
/// who may defer them.
#[derive(Debug)]
pub(crate) struct SyncGate {
    /// The database file (its own descriptor) for the held pages and the deferred sync.
    file: File,
    state: Mutex<GateState>,
    /// Held while the held pages are written and the sync is made: a write of the file
    /// waits for them.
    io: Mutex<()>,
    /// How many wait for `io` (a write of the file, the next checkpoint): while any
    /// does, a paced settle writes the rest of its pages without pausing.
    waiting: AtomicUsize,
    /// The most bytes of spare page buffers kept: what redb's write buffer holds at
    /// most (half its cache), so a checkpoint's pages fit.
    spare_max: usize,
}

#[derive(Debug, Default)]
struct GateState {
    /// Set while a checkpoint commits: its writes are held and its syncs deferred.
    deferring: bool,
    /// A sync redb asked for that has not been made yet.
    pending: bool,
    /// A write or sync failed: the file's state on disk is unknown until it is
    /// re-opened.
    failed: bool,
    /// Pages redb wrote while a checkpoint committed, not yet handed to the file.
    held: Pages,
    /// Pages the same commit wrote before a sync it asked for (oldest first): each
    /// goes to the file, then that sync is made, before those after it. (`held` is
    /// followed by a sync when `pending`.)
    before: Vec<Pages>,
    /// Pages redb wrote after a checkpoint's commit while its pages or its sync were
    /// not yet in the file: they go to the file only after that sync (one of them may
    /// reuse a page the commit freed), and the writer does not wait for it.
    after: Pages,
    /// The bytes in `after`.
    after_bytes: usize,
    /// Set while [`SyncGate::settle`] writes pages: a write then joins `after`.
    settling: bool,
    /// What was written to the file (not held) since the last checkpoint's settle.
    dirty: Ranges,
    /// The held pages being written to the file by [`SyncGate::settle`]: reads take
    /// them from here until they are there.
    writing: Option<Arc<Pages>>,
    /// Buffers of pages written to the file, by length, for the next checkpoint's
    /// pages: a checkpoint copies into memory already mapped rather than fault in
    /// fresh pages (which cost most of its time).
    spare: HashMap<usize, Vec<Box<[u8]>>>,
    /// The bytes in `spare`, at most [`SyncGate::spare_max`].
    spare_bytes: usize,
}

/// The pages of `pages` that overlap `offset..end`, from the last.
fn overlapping(pages: &Pages, offset: u64, end: u64) -> impl Iterator<Item = (&u64, &Box<[u8]>)> {
    pages
        .range(..end)
        .rev()
        .take_while(move |(at, page)| **at + page.len() as u64 > offset)
}

/// Copies the part of `page` (at `at` in the file) that `out` (at `offset`) covers.
fn overlay(out: &mut [u8], offset: u64, at: u64, page: &[u8]) {
    let from = at.max(offset);
    let to = (at + page.len() as u64).min(offset + out.len() as u64);
    if from < to {
        out[(from - offset) as usize..(to - offset) as usize]
            .copy_from_slice(&page[(from - at) as usize..(to - at) as usize]);
    }
}

/// A paced settle's step: its pages' writeback starts together, then it pauses. About
/// 3 ms of the bench machine's disk.
const STEP_BYTES: u64 = 256 << 10;

/// Ranges of the file written since the last checkpoint: start to end.
type Ranges = BTreeMap<u64, u64>;

/// `ranges` (any order, overlapping or not) as sorted runs that neither overlap nor
/// touch.
fn runs(ranges: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = ranges.filter(|(start, end)| start < end).collect();
    all.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(all.len());
    for (start, end) in all {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// The longest pause between two steps.
const MAX_PAUSE: Duration = Duration::from_millis(20);

/// How a write at `offset..end` goes into kept pages.
#[derive(Debug, PartialEq)]
enum Fit {
    /// Within the page kept at this offset: copied into it.
    Within(u64),
    /// Over every kept page it overlaps (those at these offsets, maybe none): they go,
    /// it is kept instead.
    Covers(Vec<u64>),
    /// Over part of a kept page and past it: not kept (the caller writes them first).
    Straddles,
}

fn fit(pages: &Pages, offset: u64, end: u64) -> Fit {
    let hits: Vec<(u64, u64)> = overlapping(pages, offset, end)
        .map(|(at, page)| (*at, at + page.len() as u64))
        .collect();
    if hits.iter().all(|&(at, last)| offset <= at && last <= end) {
        return Fit::Covers(hits.into_iter().map(|(at, _)| at).collect());
    }
    match hits[..] {
        [(at, last)] if at <= offset && end <= last => Fit::Within(at),
        _ => Fit::Straddles,
    }
}

fn poisoned() -> std::io::Error {
    std::io::Error::other("the database file's sync gate is poisoned")
}

/// While held, a paced settle of its gate does not pause ([`SyncGate::hurry`]).
pub(super) struct Hurry(Arc<SyncGate>);

impl Drop for Hurry {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

fn failed_before() -> std::io::Error {
    std::io::Error::other("an earlier write or sync of the database file failed")
}

impl SyncGate {
    fn state(&self) -> std::io::Result<std::sync::MutexGuard<'_, GateState>> {
        self.state
            .lock()
            .map_err(|_| std::io::Error::other("the database file's sync gate is poisoned"))
    }

    /// From now on (`true`) the pages redb writes are held and the syncs it asks for
    /// pending until [`settle`]; or (`false`) written and made at once again.
    ///
    /// [`settle`]: SyncGate::settle
    pub(super) fn deferring(&self, on: bool) -> std::io::Result<()> {
        self.state()?.deferring = on;
        Ok(())
    }

    /// Whether held pages or a deferred sync wait to be written and made.
    pub(super) fn is_pending(&self) -> bool {
        self.state()
            .is_ok_and(|s| s.pending || !s.held.is_empty() || !s.before.is_empty())
    }

    /// How many pages the last checkpoint's commit left held, and their bytes (for its
    /// debug line: what a checkpoint costs grows with them).
    pub(super) fn held_size(&self) -> (usize, usize) {
        self.state().map_or((0, 0), |s| {
            std::iter::once(&s.held)
                .chain(&s.before)
                .flat_map(|pages| pages.values())
                .fold((0, 0), |(n, bytes), page| (n + 1, bytes + page.len()))
        })
    }

    /// Writes the held pages to the file and makes the pending sync, if any, at once
    /// (a settle that paces its writes meanwhile goes on without pausing); once one
    /// failed, fails.
    pub(super) fn settle(&self) -> std::io::Result<()> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let io = self.io.lock();
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        let _io = io.map_err(|_| poisoned())?;
        self.settle_locked(None)
    }

    /// [`SyncGate::settle`], the checkpoint's way: the held pages go out in steps of
    /// [`STEP_BYTES`] spread over about `spread`, each step's writeback started at once
    /// (so the disk takes them a few at a time and a sync of the log between them
    /// waits behind one step, not behind all of them); then the sync. Anyone waiting
    /// to write the file, or for this checkpoint, ends the pauses.
    pub(super) fn settle_paced(&self, spread: Duration) -> std::io::Result<()> {
        let _io = self.io.lock().map_err(|_| poisoned())?;
        self.settle_locked(Some(spread))
    }

    /// Makes anyone that waits for this gate's settle count as waiting: a paced settle
    /// stops pausing until the answer is dropped.
    pub(super) fn hurry(self: &Arc<Self>) -> Hurry {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        Hurry(self.clone())
    }

    /// With `io` held: the held pages and the sync, then the pages written after them
    /// (see [`GateState::after`]), until none is left.
    fn settle_locked(&self, spread: Option<Duration>) -> std::io::Result<()> {
        let mut spread = spread;
        loop {
            let (pages, dirty, sync, last) = {
                let mut state = self.state()?;
                if state.failed {
                    return Err(failed_before());
                }
                let (pages, dirty, sync, last) = if !state.before.is_empty() {
                    // A commit's pages before a sync it asked for, then that sync.
                    let dirty = std::mem::take(&mut state.dirty);
                    (state.before.remove(0), dirty, true, false)
                } else if !state.held.is_empty() || state.pending {
                    // The sync writes what was written before it too.
                    let dirty = if state.pending {
                        std::mem::take(&mut state.dirty)
                    } else {
                        Ranges::new()
                    };
                    (std::mem::take(&mut state.held), dirty, state.pending, true)
                } else if !state.after.is_empty() {
                    // After the sync: written like any other, not synced.
                    state.after_bytes = 0;
                    spread = None;
                    let after = std::mem::take(&mut state.after);
                    for (at, page) in &after {
                        let was = state.dirty.entry(*at).or_insert(0);
                        *was = (*was).max(at + page.len() as u64);
                    }
                    (after, Ranges::new(), false, false)
                } else {
                    state.settling = false;
                    return Ok(());
                };
                state.settling = true;
                let pages = Arc::new(pages);
                state.writing = Some(pages.clone());
                (pages, dirty, sync, last)
            };
            let written = self.write_out(&pages, dirty, sync, spread.take());
            let mut state = self.state()?;
            if let Err(e) = written {
                // The pages stay readable; every later write fails until the re-open.
                state.failed = true;
                return Err(e);
            }
            state.writing = None;
            if last {
                state.pending = false;
            }
            // Unless a read still lays them over what it read.
            if let Ok(pages) = Arc::try_unwrap(pages) {
                for page in pages.into_values() {
                    if state.spare_bytes + page.len() > self.spare_max {
                        break;
                    }
                    state.spare_bytes += page.len();
                    state.spare.entry(page.len()).or_default().push(page);
                }
            }
        }
    }

    /// Writes `pages` to the file and, when `sync`, makes them durable. Paced over
    /// `spread` when one is given (see [`SyncGate::settle_paced`]): once the pages are
    /// written, the writeback of theirs and of `dirty` (what the non-durable commits
    /// since the last checkpoint wrote, which the sync flushes too) is started a step
    /// at a time. (Syncing in steps of a few MiB instead, a sync after each, made one
    /// connection's p99 six times worse on the bench machine: each sync also flushes
    /// the disk's cache.)
    fn write_out(
        &self,
        pages: &Pages,
        dirty: Ranges,
        sync: bool,
        spread: Option<Duration>,
    ) -> std::io::Result<()> {
        for (at, page) in pages {
            self.file.write_all_at(page, *at)?;
        }
        if let Some(spread) = spread {
            let runs = runs(
                pages
                    .iter()
                    .map(|(at, page)| (*at, at + page.len() as u64))
                    .chain(dirty),
            );
            let total: u64 = runs.iter().map(|(start, end)| end - start).sum();
            let steps = u32::try_from(total.div_ceil(STEP_BYTES).max(1)).unwrap_or(u32::MAX);
            let pause = (spread / steps).min(MAX_PAUSE);
            let mut step = 0;
            for (start, end) in runs {
                let mut at = start;
                while at < end {
                    let to = end.min(at + STEP_BYTES - step);
                    self.start_writeback((at, to));
                    step += to - at;
                    at = to;
                    if step >= STEP_BYTES {
                        step = 0;
                        if self.waiting.load(Ordering::SeqCst) == 0 {
                            std::thread::sleep(pause);
                        }
                    }
                }
            }
        }
        if sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// Notes that `offset..end` of the file was written (not held): the next
    /// checkpoint's sync writes it, and starts that a step at a time.
    fn written(&self, offset: u64, end: u64) -> std::io::Result<()> {
        let mut state = self.state()?;
        let was = state.dirty.entry(offset).or_insert(end);
        *was = (*was).max(end);
        Ok(())
    }

    /// Asks the kernel to start writing `start..end` of the file to the disk now,
    /// without waiting and without flushing the disk's cache (`POSIX_FADV_DONTNEED`
    /// starts the writeback of dirty pages; the pages being written stay cached).
    /// Advice only: the sync after writes whatever it did not.
    fn start_writeback(&self, (start, end): (u64, u64)) {
        if let Some(len) = std::num::NonZeroU64::new(end - start) {
            if let Err(e) =
                rustix::fs::fadvise(&self.file, start, Some(len), rustix::fs::Advice::DontNeed)
            {
                tracing::debug!(error = %e, "could not start the database file's writeback");
            }
        }
    }

    /// A sync redb asks for: deferred (`true`) while a checkpoint commits.
    fn defer(&self) -> std::io::Result<bool> {
        let mut state = self.state()?;
        if state.failed {
            return Err(failed_before());
        }
        if state.deferring {
            state.pending = true;
        }
        Ok(state.deferring)
    }

    /// A write redb makes: held (`true`) while a checkpoint commits (after a sync the
    /// commit asked for, in a generation of its own: [`GateState::before`]); or, while
    /// the checkpoint's pages and sync are not yet in the file, kept to follow them (see
    /// [`GateState::after`]) unless those would grow past [`SyncGate::spare_max`]. Either way it is laid into the kept page it falls
    /// within, or replaces those it covers ([`fit`]); over part of one, it is not kept.
    /// On `false` the caller settles first and writes it to the file.
    fn hold(&self, offset: u64, data: &[u8]) -> std::io::Result<bool> {
        let mut guard = self.state()?;
        let state = &mut *guard;
        if state.failed {
            return Err(failed_before());
        }
        let after = if state.deferring {
            if state.pending {
                // After a sync the commit asked for: a generation of its own.
                let before = std::mem::take(&mut state.held);
                state.before.push(before);
                state.pending = false;
            }
            false
        } else if state.settling
            || state.pending
            || !state.held.is_empty()
            || !state.before.is_empty()
        {
            true
        } else {
            return Ok(false);
        };
        let end = offset + data.len() as u64;
        let pages = if after {
            &mut state.after
        } else {
            &mut state.held
        };
        let covered = match fit(pages, offset, end) {
            Fit::Within(at) => match pages.get_mut(&at) {
                Some(page) => {
                    page[(offset - at) as usize..(end - at) as usize].copy_from_slice(data);
                    return Ok(true);
                }
                None => None,
            },
            Fit::Covers(ats) => Some(ats),
            Fit::Straddles => None,
        };
        let Some(covered) =
            covered.filter(|_| !after || state.after_bytes + data.len() <= self.spare_max)
        else {
            tracing::debug!(
                offset,
                len = data.len(),
                after,
                after_bytes = state.after_bytes,
                "a write during or after a checkpoint's commit could not be kept"
            );
            return Ok(false);
        };
        let mut freed = 0;
        for at in covered {
            if let Some(old) = pages.remove(&at) {
                freed += old.len();
            }
        }
        let page = match state.spare.get_mut(&data.len()).and_then(Vec::pop) {
            Some(mut page) => {
                state.spare_bytes -= page.len();
                page.copy_from_slice(data);
                page
            }
            None => data.into(),
        };
        let len = page.len();
        pages.insert(offset, page);
        if after {
            state.after_bytes = state.after_bytes + len - freed;
        }
        Ok(true)
    }

    /// The pages not yet in the file that overlap `offset..end`, taken before the file
    /// is read there: those being written (all of them, shared), then copies of the
    /// held ones. Laid over what the file reads in that order, they give the pages as
    /// redb wrote them last (a page written to the file meanwhile is the same).
    fn not_in_file(&self, offset: u64, end: u64) -> std::io::Result<NotInFile> {
        let state = self.state()?;
        Ok(NotInFile {
            writing: state.writing.clone(),
            held: state
                .before
                .iter()
                .flat_map(|pages| overlapping(pages, offset, end))
                .chain(overlapping(&state.held, offset, end))
                .chain(overlapping(&state.after, offset, end))
                .map(|(at, page)| (*at, page.clone()))
                .collect(),
        })
    }
}

/// What [`SyncGate::not_in_file`] answers.
struct NotInFile {
    writing: Option<Arc<Pages>>,
    held: Vec<(u64, Box<[u8]>)>,
}

/// redb's file backend, whose writes and syncs a checkpoint may hold back (see the
/// module's comment).
#[derive(Debug)]
pub(crate) struct GatedFile {
    inner: FileBackend,
    gate: Arc<SyncGate>,
}

/// Opens (or creates) the database file at `path` through a [`GatedFile`], with redb's
/// page cache bounded to `cache_bytes`; answers the database and its gate.
pub(crate) fn open_database(
    path: &Path,
    cache_bytes: usize,
) -> std::result::Result<(Database, Arc<SyncGate>), DatabaseError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let (backend, gate) = gated(file, cache_bytes / 2)?;
    let db = Database::builder()
        .set_cache_size(cache_bytes)
        .create_with_backend(backend)?;
    Ok((db, gate))
}

/// `file` as redb's backend through a gate that keeps at most `spare_max` bytes of
/// pages in memory for later use, and as many written after a checkpoint.
fn gated(file: File, spare_max: usize) -> std::io::Result<(GatedFile, Arc<SyncGate>)> {
    let gate = Arc::new(SyncGate {
        file: file.try_clone()?,
        state: Mutex::new(GateState::default()),
        io: Mutex::new(()),
        waiting: AtomicUsize::new(0),
        spare_max,
    });
    let backend = GatedFile {
        inner: FileBackend::new(file).map_err(|e| match e {
            DatabaseError::Storage(redb::StorageError::Io(e)) => e,
            other => std::io::Error::other(other.to_string()),
        })?,
        gate: gate.clone(),
    };
    Ok((backend, gate))
}

impl StorageBackend for GatedFile {
    fn len(&self) -> std::result::Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::result::Result<(), std::io::Error> {
        let end = offset + out.len() as u64;
        let pages = self.gate.not_in_file(offset, end)?;
        self.inner.read(offset, out)?;
        if let Some(writing) = &pages.writing {
            for (at, page) in overlapping(writing, offset, end) {
                overlay(out, offset, *at, page);
            }
        }
        for (at, page) in &pages.held {
            overlay(out, offset, *at, page);
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> std::result::Result<(), std::io::Error> {
        self.gate.settle()?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> std::result::Result<(), std::io::Error> {
        if self.gate.defer()? {
            return Ok(());
        }
        self.gate.settle()?;
        // What was written before is on the disk now: no checkpoint need start it.
        let dirty = std::mem::take(&mut self.gate.state()?.dirty);
        self.inner.sync_data()?;
        drop(dirty);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::result::Result<(), std::io::Error> {
        if self.gate.hold(offset, data)? {
            return Ok(());
        }
        let started = std::time::Instant::now();
        self.gate.settle()?;
        let waited = started.elapsed();
        if waited > std::time::Duration::from_millis(1) {
            tracing::debug!(
                millis = waited.as_secs_f64() * 1e3,
                "a write waited for the checkpoint's sync"
            );
        }
        self.inner.write(offset, data)?;
        self.gate.written(offset, offset + data.len() as u64)
    }

    fn close(&self) -> std::result::Result<(), std::io::Error> {
        let settled = self.gate.settle();
        self.inner.close()?;
        settled
    }

    fn try_lock_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> std::result::Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> std::result::Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> std::result::Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> std::result::Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> std::result::Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> std::result::Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};

    use super::*;

    const T: TableDefinition<u64, u64> = TableDefinition::new("t");

    #[test]
    fn a_deferred_sync_is_made_before_the_next_write_and_the_file_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.redb");
        let (db, gate) = open_database(&path, 1 << 20).unwrap();
        gate.deferring(true).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(T).unwrap().insert(1, 10).unwrap();
        txn.commit().unwrap();
        gate.deferring(false).unwrap();
        assert!(gate.is_pending(), "the checkpoint's sync waits");
        // The next durable commit writes the file: the pending sync goes first.
        let txn = db.begin_write().unwrap();
        txn.open_table(T).unwrap().insert(2, 20).unwrap();
        txn.commit().unwrap();
        assert!(!gate.is_pending());
        gate.settle().unwrap();
        drop(db);
        let (db, _) = open_database(&path, 1 << 20).unwrap();
        let read = db.begin_read().unwrap();
        let t = read.open_table(T).unwrap();
        assert_eq!(t.get(1).unwrap().unwrap().value(), 10);
        assert_eq!(t.get(2).unwrap().unwrap().value(), 20);
    }

    #[test]
    fn held_pages_are_read_back_before_they_are_written_and_a_crash_then_opens_the_last_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.redb");
        // A cache too small for the rows: reads go to the file (and the held pages).
        let (db, gate) = open_database(&path, 16 << 10).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(T).unwrap().insert(0, 1).unwrap();
        txn.commit().unwrap();
        gate.deferring(true).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(T).unwrap();
            for k in 1..2000u64 {
                t.insert(k, k * 10).unwrap();
            }
        }
        txn.commit().unwrap();
        gate.deferring(false).unwrap();
        assert!(gate.is_pending(), "the checkpoint's pages wait");
        // The process dies here: the file holds the commit before.
        let crashed = dir.path().join("crashed.redb");
        std::fs::copy(&path, &crashed).unwrap();
        {
            let read = db.begin_read().unwrap();
            let t = read.open_table(T).unwrap();
            for k in [1u64, 999, 1999] {
                assert_eq!(t.get(k).unwrap().unwrap().value(), k * 10, "row {k}");
            }
        }
        gate.settle().unwrap();
        assert!(!gate.is_pending());
        drop(db);
        let (db, _) = open_database(&crashed, 1 << 20).unwrap();
        {
            let read = db.begin_read().unwrap();
            let t = read.open_table(T).unwrap();
            assert_eq!(t.get(0).unwrap().unwrap().value(), 1);
            assert!(
                t.get(1).unwrap().is_none(),
                "the unsynced commit is not there"
            );
        }
        drop(db);
        let (db, _) = open_database(&path, 1 << 20).unwrap();
        let read = db.begin_read().unwrap();
        let t = read.open_table(T).unwrap();
        assert_eq!(t.len().unwrap(), 2000);
        assert_eq!(t.get(1999).unwrap().unwrap().value(), 19990);
    }

    #[test]
    fn writes_after_a_checkpoints_commit_wait_in_memory_for_its_sync_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.bin");
        std::fs::write(&path, vec![0u8; 4 * 4096]).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let (backend, gate) = gated(file, 1 << 20).unwrap();
        // A checkpoint's commit: its page is held, its sync deferred.
        gate.deferring(true).unwrap();
        backend.write(0, &[1; 4096]).unwrap();
        backend.sync_data().unwrap();
        gate.deferring(false).unwrap();
        assert!(gate.is_pending());
        // Non-durable commits after it, before its sync: kept in memory, the writer
        // does not wait; a page written twice keeps the last.
        backend.write(4096, &[2; 4096]).unwrap();
        backend.write(8192, &[3; 4096]).unwrap();
        backend.write(4096, &[4; 4096]).unwrap();
        assert!(
            std::fs::read(&path).unwrap().iter().all(|b| *b == 0),
            "nothing reaches the file before the checkpoint's sync"
        );
        let mut out = vec![0u8; 3 * 4096];
        backend.read(0, &mut out).unwrap();
        assert!(out[..4096].iter().all(|b| *b == 1));
        assert!(out[4096..8192].iter().all(|b| *b == 4));
        assert!(out[8192..].iter().all(|b| *b == 3));
        // A write within a kept page is laid into it; one over part of a kept page and
        // past it writes them first.
        backend.write(8192 + 1024, &[3; 1024]).unwrap();
        assert!(gate.is_pending());
        backend.write(8192 + 2048, &[5; 4096]).unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        assert!(on_disk[..4096].iter().all(|b| *b == 1));
        assert!(on_disk[4096..8192].iter().all(|b| *b == 4));
        assert!(on_disk[8192..10240].iter().all(|b| *b == 3));
        assert!(on_disk[10240..14336].iter().all(|b| *b == 5));
        assert!(!gate.is_pending());

        // The checkpoint's thread: its pages, the sync, those it wrote after that sync
        // and the second sync, then the pages kept after it.
        gate.deferring(true).unwrap();
        backend.write(0, &[8; 4096]).unwrap();
        backend.write(4096, &[6; 4096]).unwrap();
        backend.sync_data().unwrap();
        backend.write(0, &[6; 4096]).unwrap();
        backend.sync_data().unwrap();
        gate.deferring(false).unwrap();
        {
            let state = gate.state().unwrap();
            assert_eq!((state.before.len(), state.pending), (1, true));
        }
        let mut out = vec![0u8; 4096];
        backend.read(0, &mut out).unwrap();
        assert!(out.iter().all(|b| *b == 6), "the later generation reads");
        backend.write(12288, &[7; 4096]).unwrap();
        gate.settle_paced(Duration::from_millis(5)).unwrap();
        assert!(!gate.is_pending());
        assert!(gate.state().unwrap().after.is_empty());
        let on_disk = std::fs::read(&path).unwrap();
        assert!(on_disk[..8192].iter().all(|b| *b == 6));
        assert!(on_disk[12288..].iter().all(|b| *b == 7));
        assert!(
            gate.state().unwrap().dirty.contains_key(&12288),
            "for the next checkpoint to start"
        );
    }

    #[test]
    fn a_write_is_kept_within_a_page_or_over_whole_pages_only() {
        let mut pages = Pages::new();
        pages.insert(0, vec![0u8; 8].into());
        pages.insert(8, vec![0u8; 4].into());
        assert_eq!(fit(&pages, 0, 8), Fit::Covers(vec![0]));
        assert_eq!(fit(&pages, 2, 6), Fit::Within(0));
        assert_eq!(fit(&pages, 0, 12), Fit::Covers(vec![8, 0]));
        assert_eq!(fit(&pages, 12, 20), Fit::Covers(vec![]));
        assert_eq!(fit(&pages, 6, 10), Fit::Straddles);
        assert_eq!(fit(&pages, 4, 16), Fit::Straddles);
    }

    #[test]
    fn ranges_become_sorted_runs_that_neither_overlap_nor_touch() {
        assert_eq!(
            runs([(8, 12), (0, 4), (4, 6), (10, 20), (30, 30), (25, 26)].into_iter()),
            [(0, 6), (8, 20), (25, 26)]
        );
        assert!(runs(std::iter::empty()).is_empty());
    }

    #[test]
    fn a_page_is_laid_over_only_where_it_overlaps() {
        let page: Box<[u8]> = Box::from(&[9u8; 4][..]);
        let mut out = [0u8; 6];
        overlay(&mut out, 10, 12, &page);
        assert_eq!(out, [0, 0, 9, 9, 9, 9]);
        let mut out = [0u8; 4];
        overlay(&mut out, 14, 12, &page);
        assert_eq!(out, [9, 9, 0, 0]);
        let mut pages = Pages::new();
        pages.insert(0, page.clone());
        pages.insert(8, page);
        let hit: Vec<u64> = overlapping(&pages, 2, 9).map(|(at, _)| *at).collect();
        assert_eq!(hit, [8, 0]);
        assert_eq!(overlapping(&pages, 4, 8).count(), 0);
    }

    #[test]
    fn a_second_open_of_the_same_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.redb");
        let (_db, _) = open_database(&path, 1 << 20).unwrap();
        assert!(matches!(
            open_database(&path, 1 << 20),
            Err(DatabaseError::DatabaseAlreadyOpen)
        ));
    }
}
