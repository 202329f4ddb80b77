//! The database file's syncs, deferred for a checkpoint, so that the writer does not
//! wait for them.
//!
//! A checkpoint's durable commit writes every page changed since the last one and
//! then syncs the file; the sync is most of its time (the pages travel to the disk).
//! redb allows one write transaction at a time, so a writer that waited for it would
//! hold every request that arrives meanwhile. Instead the database file is opened
//! through [`GatedFile`], a `redb::StorageBackend` over redb's own `FileBackend`: while
//! a checkpoint commits ([`SyncGate::deferring`]) a sync redb asks for is only noted
//! as pending, and the checkpoint's thread ([`SyncGate::settle`], run by
//! `Wal::checkpoint` on a thread of its own) makes it.
//!
//! The gate keeps redb's order of writes: any write or resize of the file while a sync
//! is pending makes the sync first, so nothing written after a commit reaches the file
//! before the commit is on disk (a page the commit freed is only reused by a later
//! write). A crash before the sync is the crash of a commit whose sync was slow: redb
//! opens at the last commit its checksums hold. What the log still holds covers the
//! rest: `Wal` keeps every record of the checkpoint's interval until the sync is done.
//!
//! A sync that fails fails every later write of the file, so the writer re-opens the
//! database and applies the log (nothing answered is lost).

use std::fs::File;
use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, Mutex};

use redb::backends::FileBackend;
use redb::{BackendError, Database, DatabaseError, StorageBackend};

/// Whether a sync of the database file is pending, and who may defer one.
#[derive(Debug)]
pub(crate) struct SyncGate {
    /// The database file (its own descriptor) for the deferred sync.
    file: File,
    state: Mutex<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    /// Set while a checkpoint commits: its syncs are deferred.
    deferring: bool,
    /// A sync redb asked for that has not been made yet.
    pending: bool,
    /// A sync failed: the file's state on disk is unknown until it is re-opened.
    failed: bool,
}

impl SyncGate {
    fn state(&self) -> std::io::Result<std::sync::MutexGuard<'_, GateState>> {
        self.state
            .lock()
            .map_err(|_| std::io::Error::other("the database file's sync gate is poisoned"))
    }

    /// From now on (`true`) the syncs redb asks for are pending until [`settle`]; or
    /// (`false`) made at once again.
    ///
    /// [`settle`]: SyncGate::settle
    pub(super) fn deferring(&self, on: bool) -> std::io::Result<()> {
        self.state()?.deferring = on;
        Ok(())
    }

    /// Whether a deferred sync waits to be made.
    pub(super) fn is_pending(&self) -> bool {
        self.state().is_ok_and(|s| s.pending)
    }

    /// Makes the pending sync, if any; once one failed, fails.
    pub(super) fn settle(&self) -> std::io::Result<()> {
        let mut state = self.state()?;
        if state.failed {
            return Err(std::io::Error::other(
                "an earlier sync of the database file failed",
            ));
        }
        if state.pending {
            if let Err(e) = self.file.sync_data() {
                state.failed = true;
                return Err(e);
            }
            state.pending = false;
        }
        Ok(())
    }

    /// A sync redb asks for: deferred (`true`) while a checkpoint commits.
    fn defer(&self) -> std::io::Result<bool> {
        let mut state = self.state()?;
        if state.failed {
            return Err(std::io::Error::other(
                "an earlier sync of the database file failed",
            ));
        }
        if state.deferring {
            state.pending = true;
        }
        Ok(state.deferring)
    }
}

/// redb's file backend, whose syncs a checkpoint may defer (see the module's comment).
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
    let gate = Arc::new(SyncGate {
        file: file.try_clone()?,
        state: Mutex::new(GateState::default()),
    });
    let backend = GatedFile {
        inner: FileBackend::new(file)?,
        gate: gate.clone(),
    };
    let db = Database::builder()
        .set_cache_size(cache_bytes)
        .create_with_backend(backend)?;
    Ok((db, gate))
}

impl StorageBackend for GatedFile {
    fn len(&self) -> std::result::Result<u64, std::io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::result::Result<(), std::io::Error> {
        self.inner.read(offset, out)
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
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::result::Result<(), std::io::Error> {
        self.gate.settle()?;
        self.inner.write(offset, data)
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
    use redb::{ReadableDatabase, TableDefinition};

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
