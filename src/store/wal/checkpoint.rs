//! What the database file records about its log (META `db_id`, `wal_seq`, `wal_at`,
//! `wal_clean`) and the checkpoint protocol that keeps the two in step: a checkpoint
//! marks the last sequence number it holds and where the next records start in its
//! own transaction, commits durably, and only once its sync is done are the records
//! it holds written over; the last checkpoint of a stop also marks the clean stop.

use redb::{Database, Durability, ReadableTable};

use super::format::{DbId, HEADER_LEN};
use super::{Syncing, Wal};
use crate::error::{Error, Result};
use crate::store::tables::META;

/// META keys: the database's id, its clean stop, the last sequence number it holds.
pub(super) const META_ID: &str = "db_id";
const META_CLEAN: &str = "wal_clean";
const META_SEQ: &str = "wal_seq";
/// Where in the log the record after `wal_seq` starts (absent: after the header).
const META_AT: &str = "wal_at";

/// The META keys a backup leaves out: a restored copy is a new database, whose first
/// open makes its own id and log.
pub(crate) const NOT_COPIED: [&str; 4] = [META_ID, META_CLEAN, META_SEQ, META_AT];

/// What the database records about its log.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    /// `None` until the first open of this build (a new file, a restored backup).
    pub(super) id: Option<DbId>,
    /// The last sequence number the durable file holds.
    pub(super) held: u64,
    /// Where the log's record after `held` starts.
    pub(super) start: u64,
    /// Whether the last stop was clean (a file without the flag counts as clean: it was
    /// never opened by a server that keeps one).
    pub(super) clean: bool,
}

impl Meta {
    fn read(meta: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Meta> {
        let id = match meta.get(META_ID)? {
            Some(v) => {
                Some(DbId(v.value().try_into().map_err(|_| {
                    Error::Internal("META db_id is not 16 bytes".into())
                })?))
            }
            None => None,
        };
        let held = match meta.get(META_SEQ)? {
            Some(v) => read_seq(v.value())?,
            None => 0,
        };
        let start = match meta.get(META_AT)? {
            Some(v) => read_seq(v.value())?,
            None => HEADER_LEN,
        };
        let clean = meta.get(META_CLEAN)?.is_none_or(|v| v.value() == [1]);
        Ok(Meta {
            id,
            held,
            start,
            clean,
        })
    }

    /// The database's META as the durable file holds it, read without writing.
    pub(super) fn of(db: &Database) -> Result<Meta> {
        use redb::ReadableDatabase;
        let read = db.begin_read()?;
        match read.open_table(META) {
            Ok(meta) => Meta::read(&meta),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(Meta {
                id: None,
                held: 0,
                start: HEADER_LEN,
                clean: true,
            }),
            Err(e) => Err(e.into()),
        }
    }
}

fn read_seq(bytes: &[u8]) -> Result<u64> {
    let raw: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Internal("META wal_seq or wal_at is not 8 bytes".into()))?;
    Ok(u64::from_le_bytes(raw))
}

/// Records that the database is open: until its clean stop, it needs its log.
pub(super) fn mark_running(db: &Database) -> Result<()> {
    let txn = db.begin_write()?;
    txn.open_table(META)?.insert(META_CLEAN, &[0u8][..])?;
    commit_durably(txn)
}

/// Records that the last stop was clean, in the transaction that also marks its
/// checkpoint.
pub(super) fn mark_clean(txn: &redb::WriteTransaction) -> Result<()> {
    txn.open_table(META)?.insert(META_CLEAN, &[1u8][..])?;
    Ok(())
}

pub(super) fn commit_durably(mut txn: redb::WriteTransaction) -> Result<()> {
    txn.set_durability(Durability::Immediate)?;
    txn.commit()?;
    Ok(())
}

impl Wal {
    /// A checkpoint: records in `txn` that the database file holds every batch logged
    /// so far and where the next records start, and commits it durably. With a
    /// [`SyncGate`](super::SyncGate), the commit writes the pages and its sync is made
    /// on a thread of its own while the writer goes on (`wait`: the caller waits for it,
    /// as for a batch that is in no record); the records it holds are written over only
    /// once it is done ([`Wal::append`]). The last checkpoint's sync is done before
    /// this one commits. When the commit fails the log keeps its records (the next open
    /// applies them).
    pub(in crate::store) fn checkpoint(
        &mut self,
        txn: redb::WriteTransaction,
        wait: bool,
    ) -> Result<()> {
        self.synced()?;
        let next = self.next_start();
        mark_checkpoint(&txn, self.last_seq, next)?;
        let gate = self.gate.clone().filter(|_| !wait);
        let started = std::time::Instant::now();
        let committed = match &gate {
            Some(gate) => {
                gate.deferring(true)?;
                let committed = commit_durably(txn);
                gate.deferring(false)?;
                committed
            }
            None => commit_durably(txn),
        };
        committed?;
        if tracing::enabled!(tracing::Level::DEBUG) {
            // Counting the held pages walks them: only for the debug line.
            let millis = started.elapsed().as_secs_f64() * 1e3;
            let (pages, bytes) = gate.as_ref().map_or((0, 0), |g| g.held_size());
            tracing::debug!(
                held = self.last_seq,
                millis,
                pages,
                kib = bytes / 1024,
                "checkpoint committed"
            );
        }
        let region = self.start..self.len;
        let syncing = match gate.filter(|g| g.is_pending()) {
            Some(gate) => {
                let sync = gate.clone();
                let pace = self.pace;
                match std::thread::Builder::new()
                    .name("engaged-checkpoint".into())
                    .spawn(move || {
                        let started = std::time::Instant::now();
                        let synced = sync.settle_paced(pace);
                        tracing::debug!(
                            millis = started.elapsed().as_secs_f64() * 1e3,
                            "checkpoint synced"
                        );
                        synced
                    }) {
                    Ok(done) => Some(Syncing { region, done }),
                    Err(_) => {
                        gate.settle().map_err(|e| {
                            Error::Internal(format!("cannot sync the database file: {e}"))
                        })?;
                        None
                    }
                }
            }
            None => None,
        };
        self.next_cycle(next, syncing);
        Ok(())
    }

    /// The last checkpoint, at a stop: [`Wal::checkpoint`] that also records the clean
    /// stop and waits for its sync, then the log's records dropped (its header stays).
    /// If the commit fails, the log stays for the next start to apply, and the database
    /// says it needs it.
    pub(in crate::store) fn stop(mut self, txn: redb::WriteTransaction) -> Result<()> {
        self.synced()?;
        mark_clean(&txn)?;
        mark_checkpoint(&txn, self.last_seq, HEADER_LEN)?;
        commit_durably(txn)?;
        self.next_cycle(HEADER_LEN, None);
        self.close()
    }
}

/// Records `seq` as held by the durable file, and `at` as where the log's next record
/// starts, in the checkpoint's transaction.
pub(super) fn mark_checkpoint(txn: &redb::WriteTransaction, seq: u64, at: u64) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    meta.insert(META_SEQ, &seq.to_le_bytes()[..])?;
    meta.insert(META_AT, &at.to_le_bytes()[..])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::store::wal::inspect_files;

    #[test]
    fn after_a_checkpoint_the_next_cycle_is_read_from_where_it_starts() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 3);
        // A checkpoint: redb holds records 1-3 durably, the next cycle starts after them.
        let txn = db.begin_write().unwrap();
        apply_for_test(&txn, &db_path);
        wal.checkpoint(txn, false).unwrap();
        append_orgs(&mut wal, 1);
        assert_eq!(wal.last_seq(), 4);
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(
            inspection.pending(),
            Some((4, 4)),
            "records 1-3 are held by the file: not read"
        );
        assert!(inspection.damage.is_none() && !inspection.torn);
        assert_eq!(
            inspection.ignored, None,
            "older records are not stray bytes"
        );
        // The process dies here; record 4 alone is applied.
        drop(wal);
        let (wal, applied) = opened(&db, &db_path);
        assert_eq!((applied, wal.last_seq()), (1, 4));
        assert_eq!(orgs(&db), ["org-1", "org-2", "org-3", "org-4"]);
    }
}

#[cfg(test)]
mod cycles {
    use proptest::prelude::*;
    use redb::TableHandle;

    use super::super::recover::inspect;
    use super::super::testing::*;
    use super::super::{path_of, OpLog};
    use super::Meta;
    use crate::store::tables::ORG_NAMES;

    /// The log read against `meta` gives exactly the records after it, up to `last`.
    fn reads_after(db_path: &std::path::Path, meta: Meta, last: u64) -> Result<(), TestCaseError> {
        let bytes = std::fs::read(path_of(db_path)).unwrap();
        let inspection = inspect(meta, Some(&bytes));
        prop_assert!(
            inspection.damage.is_none(),
            "damage: {:?}",
            inspection.damage
        );
        let seqs: Vec<u64> = inspection.records.iter().map(|(seq, _)| *seq).collect();
        prop_assert_eq!(seqs, (meta.held + 1..=last).collect::<Vec<_>>());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]

        /// Cycles of records between checkpoints, of sizes drawn so that a cycle starts
        /// after the header or right after the cycle before: at every checkpoint's end
        /// and after each cycle, the log read against the checkpoint the file may hold
        /// (the last one, or the one before it while the last one's sync is not done,
        /// until a record is written over the records it holds) gives exactly the
        /// records after it.
        #[test]
        fn the_log_reads_right_against_every_checkpoint_the_file_may_hold(
            cycles in proptest::collection::vec(
                proptest::collection::vec(0usize..60_000, 0..10),
                1..8,
            ),
        ) {
            let (_dir, db_path, db, mut wal) = fresh_log();
            let mut metas = vec![Meta::of(&db).unwrap()];
            let mut last_region = None;
            for cycle in cycles {
                let mut overlapped = false;
                for size in cycle {
                    let at = wal.len;
                    let mut log = OpLog::default();
                    let name = format!("org-{}", wal.last_seq() + 1);
                    log.record(ORG_NAMES.name(), name.as_bytes(), Some(&vec![1u8; size]));
                    wal.append(&mut log).unwrap();
                    if let Some(region) = &last_region {
                        let region: &std::ops::Range<u64> = region;
                        overlapped |= region.start < wal.len && at < region.end;
                    }
                }
                let last = wal.last_seq();
                reads_after(&db_path, metas[metas.len() - 1], last)?;
                if metas.len() > 1 && !overlapped {
                    reads_after(&db_path, metas[metas.len() - 2], last)?;
                }
                last_region = Some(wal.start..wal.len);
                wal.checkpoint(db.begin_write().unwrap(), false).unwrap();
                metas.push(Meta::of(&db).unwrap());
                reads_after(&db_path, metas[metas.len() - 1], last)?;
                reads_after(&db_path, metas[metas.len() - 2], last)?;
            }
        }
    }
}
