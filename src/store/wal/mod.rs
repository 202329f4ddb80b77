//! The write-ahead log: how a batch of writes becomes durable with one sequential
//! write, instead of redb writing every B-tree page the batch changed.
//!
//! Every change a write job makes goes through `WriteTx::open_write`, whose
//! [`Logged`](super::write::Logged) table records it as a row operation: the table's
//! name, the key's bytes and the new value's bytes (none for a removal). The writer
//! then writes the batch's operations here as one record and syncs the file
//! (`fdatasync`) *before* it commits the batch to redb non-durably
//! (`Durability::None`: visible to readers at once, its pages kept in memory) and
//! answers. Every [`CHECKPOINT_EVERY`], or when a batch's log is large, the batch is
//! logged and a checkpoint commits it durably (`Durability::Immediate`: redb writes
//! each page changed since the last one once, and syncs), recording the last sequence
//! number it holds (META `wal_seq`) and where the next record starts (META `wal_at`).
//!
//! **The writer does not wait for a checkpoint's sync.** The database file is opened
//! through a [`gate`](mod@gate): while a checkpoint commits, the sync redb asks for is
//! deferred to a thread of its own, which writes the pages a step at a time; later
//! writes of the file wait in memory until it is done (or, past a bound, make it
//! first). The
//! records since the last checkpoint form a *cycle*; the checkpoint starts the next
//! cycle after the header when the records it holds start at least [`MIN_CYCLE_GAP`]
//! past it, else right after them, and a record that would be written over them waits
//! for the sync ([`Wal::append`]). So until the sync is done the log still holds every
//! record after the checkpoint before, and a crash then finds either checkpoint in the
//! file with all the records after it.
//!
//! **The log owns that protocol.** [`Wal::checkpoint`] marks the last sequence number
//! and the next cycle's start in the checkpoint's own transaction, waits for the last
//! checkpoint's sync, commits it durably and only then starts the next cycle: no
//! record is written over before a durable (synced) commit holds it. [`Wal::stop`]
//! waits for its sync, records the clean stop and drops the records. A record whose
//! batch then fails to commit is taken back ([`Wal::take_back_last`]): the log
//! remembers where it started.
//!
//! Invariant: the durable redb file plus the log's records after its `wal_seq`, applied
//! in order, are the store after the last batch whose answer went out. [`open`]
//! applies them on open, before anything else reads or writes the file.
//!
//! **The log names its database and refuses damage.** The database holds a random
//! 128-bit id (META `db_id`, made at its first open) and whether its last stop was
//! clean (META `wal_clean`: set by the last checkpoint of a stop, cleared at open).
//! The file starts with a [`HEADER_LEN`]-byte header: a magic, the format version,
//! the database's id, a salt drawn at each open, and the header's checksum. A record:
//! `len: u32 LE` (of what follows the checksum), `crc32: u32 LE` (of the salt, then the
//! same), `seq: u64 LE`, then operations, each `name_len: u8, name, op: u8 (0 insert, 1
//! remove), key_len: u32 LE, key` and, for an insert, `value_len: u32 LE, value`. The
//! records after a checkpoint are numbered on from its `wal_seq`, one by one, the first
//! at its `wal_at`; each next one follows the one before, or (a new cycle) the header.
//! At open:
//!
//! - a log whose header names another database (or none readable) is refused;
//! - a database that did not stop cleanly refuses to start without its log (the file
//!   missing or shorter than its header): the batches answered since its last
//!   checkpoint would be lost without a word;
//! - a record that is not whole is a *torn* last record (a crash while it was written:
//!   never synced, so never answered) when no valid record numbered after the last
//!   good one follows it anywhere in the file, and is dropped; when one does, it is
//!   *damage* (so is a record numbered past the next), and the start is refused.
//!
//! A refusal names both files and offers `engaged recover --accept-loss`
//! ([`accept_loss`]): it applies the good records before the damage, says how many
//! answered batches it drops, records a clean stop and moves the log aside. `engaged
//! check` reads the same verdict ([`recover::inspect`]) without writing either file.
//!
//! Records are written in place into a file already that long, not appended: the
//! file grows only in zeroed steps (doubling, up to what two of the longest cycles
//! need), and a checkpoint starts the next records after the header or the last cycle
//! without shortening it. So a sync writes the record's pages and never the file's size. What lies
//! after the last record (zeros, or an older cycle's records, numbered at or below the
//! checkpoint's) ends the log; any other bytes there (a torn record, the tail of an
//! older record a shorter one was written over) are read past and reported: `engaged
//! check` and the open say "ignored N bytes after record k". An open writes a new file
//! with a new salt (beside, then renamed over the old one); a stop leaves the header
//! alone.
//!
//! The module's parts: [`format`](mod@format) (the bytes of a header, a record, an operation),
//! [`file`](mod@file) (the file and how it grows and syncs), [`recover`] (reading a log against
//! its database, the open, `accept_loss`) and [`checkpoint`] (META and the checkpoint
//! protocol), [`gate`](mod@gate) (the database file's deferred sync).

mod checkpoint;
mod file;
mod format;
mod gate;
mod recover;

use std::fs::File;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};

pub(crate) use checkpoint::NOT_COPIED;
#[cfg(test)]
pub(crate) use file::faults;
pub(crate) use file::path_of;
use format::HEADER_LEN;
pub(crate) use format::{DbId, OpLog};
pub(crate) use gate::{open_database, SyncGate};
pub(crate) use recover::apply as apply_record;
pub(crate) use recover::{accept_loss, inspect_files, open, Loss, OpenFailure, Recovered};

/// The database's id (META `db_id`), `None` before the first open that makes one.
pub(crate) fn db_id(db: &redb::Database) -> Result<Option<DbId>> {
    Ok(checkpoint::Meta::of(db)?.id)
}

/// The longest the store runs on the log alone: past it, the next batch checkpoints.
/// Two seconds measured 4 % more `POST` events over HTTPS than one (fewer pages
/// written twice); a restart replays at most that much.
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_millis(2000);

/// A batch whose operations exceed this many bytes commits as a checkpoint instead of
/// being logged (a recording's chunks, an import's part): written once, not twice.
pub(super) const MAX_LOGGED_BATCH: usize = 4 << 20;

/// The log grows to at most about this many bytes before a checkpoint empties it.
const MAX_LOG_BYTES: u64 = 64 << 20;

/// The room a cycle needs before the last one's records to start after the header:
/// more than its records reach while the last checkpoint's sync is made (past them
/// it waits for the sync).
const MIN_CYCLE_GAP: u64 = 1 << 20;

/// A checkpoint whose sync of the database file is still being made: until it is
/// done, the records it holds (`region`) stay in the log.
struct Syncing {
    region: Range<u64>,
    done: std::thread::JoinHandle<std::io::Result<()>>,
}

/// The log file, with the sequence numbers it has handed out.
pub(crate) struct Wal {
    file: File,
    path: PathBuf,
    /// This file's salt: part of every record's checksum, so a record of another
    /// file (an earlier open's, another database's) never reads as one of this file.
    salt: u64,
    /// Where this cycle's records start (the first after the last checkpoint):
    /// [`HEADER_LEN`], or right after the cycle before (META `wal_at`).
    start: u64,
    /// Where the next record goes: the end of the records, `start` when none.
    len: u64,
    /// The file's length: zeros or stale records after `len`, written over in place.
    allocated: u64,
    /// The last sequence number written, to the log or by a checkpoint.
    last_seq: u64,
    /// Where the last record written starts, while it may still be taken back (until
    /// the next record, a checkpoint or a failed write).
    last_start: Option<u64>,
    /// The database file's sync gate: a checkpoint's sync is made on a thread of its
    /// own. `None`: checkpoints sync as they commit (a database opened without one).
    gate: Option<Arc<SyncGate>>,
    /// The last checkpoint, while its sync is made.
    syncing: Option<Syncing>,
    /// Over about how long a checkpoint's thread spreads its writes of the database
    /// file ([`SyncGate::settle_paced`]): a quarter of the interval between checkpoints.
    pace: Duration,
}

impl Wal {
    /// Writes the batch's operations as the next record and syncs the file. On
    /// failure the record's start is zeroed, so no replay reads it.
    pub(super) fn append(&mut self, ops: &mut OpLog) -> Result<()> {
        let seq = self.last_seq + 1;
        let record = ops.sealed(self.salt, seq);
        // The last checkpoint's records are written over only once its sync is done.
        let end = self.len + record.len() as u64;
        let overlaps = self
            .syncing
            .as_ref()
            .is_some_and(|s| s.region.start < end && self.len < s.region.end);
        if overlaps {
            self.synced()?;
        } else {
            self.poll_synced()?;
        }
        if let Err(e) = self.write_synced(record, self.len) {
            // Nothing of this record may be replayed: its batch is not committed.
            let _ = self.invalidate(self.len);
            self.last_start = None;
            return Err(Error::Internal(format!(
                "cannot write the write-ahead log: {e}"
            )));
        }
        self.last_start = Some(self.len);
        self.len += record.len() as u64;
        self.last_seq = seq;
        Ok(())
    }

    /// Takes back the last record written: its batch did not commit after all. The
    /// next record takes its sequence number, so the log's numbers stay consecutive.
    /// Nothing when there is no such record (none since the last checkpoint, or it was
    /// taken back already).
    pub(super) fn take_back_last(&mut self) -> Result<()> {
        if let Some(start) = self.last_start {
            self.invalidate(start)?;
            self.len = start;
            self.last_seq -= 1;
            self.last_start = None;
        }
        Ok(())
    }

    /// Whether the log holds records the database file does not (until a checkpoint).
    pub(super) fn has_records(&self) -> bool {
        self.len > self.start
    }

    /// Whether the log holds more than a checkpoint should leave to replay.
    pub(super) fn is_long(&self) -> bool {
        self.len - self.start >= MAX_LOG_BYTES
    }

    /// Makes the database file's syncs through `gate`: a checkpoint's sync is then
    /// made on a thread of its own while the writer goes on logging.
    pub(crate) fn with_gate(mut self, gate: Arc<SyncGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Spreads a checkpoint's writes of the database file over about a quarter of `every`,
    /// the interval between checkpoints.
    pub(super) fn pace_for(&mut self, every: Duration) {
        self.pace = every / 4;
    }

    /// Waits until the last checkpoint's sync is done; its failure is a storage error
    /// (the log keeps its records, the database is re-opened).
    pub(super) fn synced(&mut self) -> Result<()> {
        let Some(syncing) = self.syncing.take() else {
            return Ok(());
        };
        let _hurry = self.gate.as_ref().map(|gate| gate.hurry());
        match syncing.done.join() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::Internal(format!(
                "cannot sync the database file at a checkpoint: {e}"
            ))),
            Err(_) => Err(Error::Internal(
                "the checkpoint's sync thread panicked".into(),
            )),
        }
    }

    /// [`Wal::synced`] when the sync is done already; nothing while it runs.
    fn poll_synced(&mut self) -> Result<()> {
        if self.syncing.as_ref().is_some_and(|s| s.done.is_finished()) {
            self.synced()?;
        }
        Ok(())
    }

    /// The sequence number a checkpoint records as held by the durable file.
    #[cfg(test)]
    fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Where the cycle after a checkpoint starts: after the header when the records
    /// the checkpoint holds leave room enough there, else right after them, so that
    /// the next records are not written over them before the checkpoint's sync.
    fn next_start(&self) -> u64 {
        if self.start >= HEADER_LEN + MIN_CYCLE_GAP {
            HEADER_LEN
        } else {
            self.len
        }
    }

    /// Starts the next cycle at `start` after a checkpoint committed: the records
    /// before are held by the database file (once `syncing`, if any, is done).
    fn next_cycle(&mut self, start: u64, syncing: Option<Syncing>) {
        self.syncing = syncing;
        self.start = start;
        self.len = start;
        self.last_start = None;
    }

    /// Leaves the header alone, at a stop after the last checkpoint (which recorded the
    /// clean stop): a data directory whose server stopped holds no records.
    fn close(self) -> Result<()> {
        self.truncate_to_header()
    }
}

/// What the unit tests of the log's parts share: a fresh database with its log, and
/// batches to write into it.
#[cfg(test)]
mod testing {
    use std::ops::Range;
    use std::path::{Path, PathBuf};

    use redb::{Database, ReadableDatabase, ReadableTable, TableHandle};

    use super::format::{read_head, record_at, Head, HEADER_LEN};
    use super::recover::apply;
    use super::{open, path_of, OpLog, OpenFailure, Wal};
    use crate::store::tables::ORG_NAMES;

    /// A new database in a temporary directory, with its (empty) log open.
    pub(super) fn fresh_log() -> (tempfile::TempDir, PathBuf, Database, Wal) {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("t.redb");
        let db = Database::create(&db_path).unwrap();
        let (wal, _) = opened(&db, &db_path);
        (dir, db_path, db, wal)
    }

    pub(super) fn opened(db: &Database, db_path: &Path) -> (Wal, usize) {
        match open(db, db_path) {
            Ok(done) => done,
            Err(OpenFailure::Refused(why)) => panic!("refused: {why}"),
            Err(OpenFailure::Failed(e)) => panic!("failed: {e}"),
        }
    }

    pub(super) fn refused(db: &Database, db_path: &Path) -> String {
        match open(db, db_path) {
            Err(OpenFailure::Refused(why)) => why,
            Err(OpenFailure::Failed(e)) => panic!("failed instead of refusing: {e}"),
            Ok(_) => panic!("opened"),
        }
    }

    /// Appends `n` batches, each naming organization `org-<seq>`.
    pub(super) fn append_orgs(wal: &mut Wal, n: u64) -> Vec<Range<u64>> {
        (0..n)
            .map(|_| {
                let start = wal.len;
                let mut log = OpLog::default();
                let name = format!("org-{}", wal.last_seq() + 1);
                log.record(ORG_NAMES.name(), name.as_bytes(), Some(b"x"));
                wal.append(&mut log).unwrap();
                start..wal.len
            })
            .collect()
    }

    pub(super) fn orgs(db: &Database) -> Vec<String> {
        let read = db.begin_read().unwrap();
        let Ok(names) = read.open_table(ORG_NAMES) else {
            return Vec::new(); // no batch ever reached the file
        };
        let mut out: Vec<String> = names
            .iter()
            .unwrap()
            .map(|row| row.unwrap().0.value().to_string())
            .collect();
        out.sort_by_key(|n| n[4..].parse::<u64>().unwrap_or(0));
        out
    }

    pub(super) fn flip(path: &Path, at: u64) {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[at as usize] ^= 0xff;
        std::fs::write(path, bytes).unwrap();
    }

    /// What the writer's commits would have put in the file: the log's records.
    pub(super) fn apply_for_test(txn: &redb::WriteTransaction, db_path: &Path) {
        let bytes = std::fs::read(path_of(db_path)).unwrap();
        let Head::Names(_, salt) = read_head(Some(&bytes)) else {
            panic!("no header");
        };
        let mut at = HEADER_LEN as usize;
        while let Some((_, ops, next)) = record_at(&bytes, at, salt) {
            apply(txn, &bytes[ops]).unwrap();
            at = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;

    #[test]
    fn a_record_taken_back_gives_its_number_to_the_next() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 1);
        append_orgs(&mut wal, 1);
        wal.take_back_last().unwrap();
        wal.take_back_last().unwrap();
        assert_eq!(wal.last_seq(), 1, "only the last record is taken back");
        append_orgs(&mut wal, 1);
        assert_eq!(wal.last_seq(), 2);
        drop(wal);
        let (_, applied) = opened(&db, &db_path);
        assert_eq!(applied, 2);
    }
}
