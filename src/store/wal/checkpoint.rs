//! What the database file records about its log (META `db_id`, `wal_seq`,
//! `wal_clean`) and the checkpoint protocol that keeps the two in step: a checkpoint
//! marks the last sequence number it holds in its own transaction, commits durably,
//! and only then empties the log; the last checkpoint of a stop also marks the clean
//! stop.

use redb::{Database, Durability, ReadableTable};

use super::format::DbId;
use super::Wal;
use crate::error::{Error, Result};
use crate::store::tables::META;

/// META keys: the database's id, its clean stop, the last sequence number it holds.
pub(super) const META_ID: &str = "db_id";
const META_CLEAN: &str = "wal_clean";
const META_SEQ: &str = "wal_seq";

/// The META keys a backup leaves out: a restored copy is a new database, whose first
/// open makes its own id and log.
pub(crate) const NOT_COPIED: [&str; 3] = [META_ID, META_CLEAN, META_SEQ];

/// What the database records about its log.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    /// `None` until the first open of this build (a new file, a restored backup).
    pub(super) id: Option<DbId>,
    /// The last sequence number the durable file holds.
    pub(super) held: u64,
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
        let clean = meta.get(META_CLEAN)?.is_none_or(|v| v.value() == [1]);
        Ok(Meta { id, held, clean })
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
                clean: true,
            }),
            Err(e) => Err(e.into()),
        }
    }
}

fn read_seq(bytes: &[u8]) -> Result<u64> {
    let raw: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Internal("META wal_seq is not 8 bytes".into()))?;
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
    /// so far, commits it durably, then empties the log. The only way the log empties
    /// while it is open: a record is written over only once a durable commit holds it.
    /// When the commit fails the log keeps its records (the next open applies them).
    pub(in crate::store) fn checkpoint(&mut self, txn: redb::WriteTransaction) -> Result<()> {
        mark_checkpoint(&txn, self.last_seq)?;
        commit_durably(txn)?;
        // The records left in the file are all at or below the recorded sequence: a
        // replay skips them, and the next ones are written over them.
        self.reset();
        Ok(())
    }

    /// The last checkpoint, at a stop: [`Wal::checkpoint`] that also records the clean
    /// stop, then the log's records dropped (its header stays). If the commit fails,
    /// the log stays for the next start to apply, and the database says it needs it.
    pub(in crate::store) fn stop(mut self, txn: redb::WriteTransaction) -> Result<()> {
        mark_clean_stop(&txn, self.last_seq)?;
        commit_durably(txn)?;
        self.reset();
        self.close()
    }
}

/// Records `seq` as held by the durable file, in the checkpoint's transaction.
pub(super) fn mark_checkpoint(txn: &redb::WriteTransaction, seq: u64) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    meta.insert(META_SEQ, &seq.to_le_bytes()[..])?;
    Ok(())
}

/// [`mark_checkpoint`] at a stop: the log is not needed at the next open.
fn mark_clean_stop(txn: &redb::WriteTransaction, seq: u64) -> Result<()> {
    mark_checkpoint(txn, seq)?;
    mark_clean(txn)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::store::wal::inspect_files;

    #[test]
    fn after_a_checkpoint_records_are_written_over_the_old_ones() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 3);
        // A checkpoint: redb holds records 1-3 durably, the log starts over.
        let txn = db.begin_write().unwrap();
        apply_for_test(&txn, &db_path);
        wal.checkpoint(txn).unwrap();
        append_orgs(&mut wal, 1);
        assert_eq!(wal.last_seq(), 4);
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(
            inspection.pending(),
            Some((4, 4)),
            "records 2 and 3 are behind record 4: not read"
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
