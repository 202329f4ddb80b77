//! The write-ahead log: how a batch of writes becomes durable with one sequential
//! write, instead of redb writing every B-tree page the batch changed.
//!
//! Every change a write job makes goes through `WriteTx::open_write`, whose
//! [`Logged`](super::write::Logged) table records it as a row operation: the table's
//! name, the key's bytes and the new value's bytes (none for a removal). The writer
//! then writes the batch's operations here as one record and syncs the file
//! (`fdatasync`) *before* it commits the batch to redb non-durably
//! (`Durability::None`: visible to readers at once, its pages kept in memory) and
//! answers. Every [`CHECKPOINT_EVERY`], or when a batch's log is large, a checkpoint
//! commits durably (`Durability::Immediate`: redb writes each page changed since the
//! last one once, and syncs), records the last sequence number it holds (META
//! `wal_seq`) and empties the log.
//!
//! Invariant: the durable redb file plus the log's records after its `wal_seq`, applied
//! in order, are the store after the last batch whose answer went out. [`recover`]
//! applies them on open, before anything else reads or writes the file.
//!
//! A record: `len: u32 LE` (of what follows the checksum), `crc32: u32 LE` (of the
//! same), `seq: u64 LE`, then operations, each `name_len: u8, name, op: u8 (0 insert,
//! 1 remove), key_len: u32 LE, key` and, for an insert, `value_len: u32 LE, value`. A
//! torn or damaged record ends the log: it was never synced, so never answered.
//!
//! Records are written in place into a file already that long, not appended: the
//! file grows only in zeroed steps (doubling, up to what the longest log needs), and a
//! checkpoint starts the next records at its beginning again without shortening it.
//! So a sync writes the record's pages and never the file's size (measured here: 91 µs
//! a sync against 175 µs appending). What lies after the last record (zeros, or an
//! older cycle's records, whose sequence numbers are at or below the checkpoint's)
//! ends the log as a damaged record does. A stop (and a recovery) empties the file.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::{Database, Durability, ReadableTable, TableHandle};

use super::tables::*;
use crate::error::{Error, Result};

/// The longest the store runs on the log alone: past it, the next batch checkpoints.
/// Two seconds measured 4 % more `POST` events over HTTPS than one (fewer pages
/// written twice); a restart replays at most that much.
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_millis(2000);

/// A batch whose operations exceed this many bytes commits as a checkpoint instead of
/// being logged (a recording's chunks, an import's part): written once, not twice.
pub(super) const MAX_LOGGED_BATCH: usize = 4 << 20;

/// The log grows to at most about this many bytes before a checkpoint empties it.
const MAX_LOG_BYTES: u64 = 64 << 20;

/// The file's first zeroed step; each next one doubles it.
const FIRST_STEP: u64 = 64 << 10;

/// The longest the file gets: the longest log plus the largest record.
const MAX_FILE_BYTES: u64 = MAX_LOG_BYTES + MAX_LOGGED_BATCH as u64 + 64;

const INSERT: u8 = 0;
const REMOVE: u8 = 1;

/// The operations of one write transaction, encoded as they happen.
#[derive(Default)]
pub(crate) struct OpLog {
    bytes: Vec<u8>,
    /// Set when the operations outgrew [`MAX_LOGGED_BATCH`]: they are no longer
    /// recorded and the batch must commit as a checkpoint.
    overflowed: bool,
}

impl OpLog {
    /// Records that `table` got `value` at `key` (`None`: the key was removed).
    pub(super) fn record(&mut self, table: &str, key: &[u8], value: Option<&[u8]>) {
        if self.overflowed {
            return;
        }
        let added = 10 + table.len() + key.len() + value.map_or(0, |v| v.len());
        if self.bytes.len() + added > MAX_LOGGED_BATCH || table.len() > usize::from(u8::MAX) {
            self.overflowed = true;
            self.bytes = Vec::new();
            return;
        }
        self.bytes.push(table.len() as u8);
        self.bytes.extend_from_slice(table.as_bytes());
        self.bytes
            .push(if value.is_some() { INSERT } else { REMOVE });
        self.bytes
            .extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(key);
        if let Some(value) = value {
            self.bytes
                .extend_from_slice(&(value.len() as u32).to_le_bytes());
            self.bytes.extend_from_slice(value);
        }
    }

    /// Whether the batch must be written as a checkpoint rather than logged.
    pub(super) fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub(super) fn is_empty(&self) -> bool {
        self.bytes.is_empty() && !self.overflowed
    }
}

/// The log file, with the sequence numbers it has handed out.
pub(crate) struct Wal {
    file: File,
    /// Bytes of records in the log (where the next record goes).
    len: u64,
    /// The file's length: zeros or stale records after `len`, written over in place.
    allocated: u64,
    /// The last sequence number written, to the log or by a checkpoint.
    last_seq: u64,
}

/// Where the log of the database file at `db_path` lives: beside it, `engaged.wal`.
pub(crate) fn path_of(db_path: &Path) -> PathBuf {
    db_path.with_extension("wal")
}

impl Wal {
    /// Writes the batch's operations as the next record and syncs the file; answers
    /// the record's sequence number. On failure the record's start is zeroed, so no
    /// replay reads it.
    pub(super) fn append(&mut self, ops: &OpLog) -> Result<u64> {
        let seq = self.last_seq + 1;
        let mut record = Vec::with_capacity(16 + ops.bytes.len());
        record.extend_from_slice(&[0; 8]);
        record.extend_from_slice(&seq.to_le_bytes());
        record.extend_from_slice(&ops.bytes);
        let body_len = (record.len() - 8) as u32;
        let crc = crc32fast::hash(&record[8..]);
        record[..4].copy_from_slice(&body_len.to_le_bytes());
        record[4..8].copy_from_slice(&crc.to_le_bytes());
        let end = self.len + record.len() as u64;
        let written = self
            .allocate(end)
            .and_then(|()| self.file.write_all_at(&record, self.len))
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Nothing of this record may be replayed: its batch is not committed.
            let _ = self.invalidate(self.len);
            return Err(Error::Internal(format!(
                "cannot write the write-ahead log: {e}"
            )));
        }
        self.len = end;
        self.last_seq = seq;
        Ok(seq)
    }

    /// Grows the file with zeros to hold `end` bytes: to the first doubling of its
    /// length that does, at most [`MAX_FILE_BYTES`]. The caller's sync makes the new
    /// length durable.
    fn allocate(&mut self, end: u64) -> std::io::Result<()> {
        if end <= self.allocated {
            return Ok(());
        }
        let mut step = (self.allocated * 2).max(FIRST_STEP);
        while step < end {
            step *= 2;
        }
        let target = step.min(MAX_FILE_BYTES).max(end);
        let zeros = vec![0u8; 64 << 10];
        let mut at = self.allocated;
        while at < target {
            let n = (target - at).min(zeros.len() as u64);
            self.file.write_all_at(&zeros[..n as usize], at)?;
            at += n;
        }
        self.allocated = target;
        Ok(())
    }

    /// Zeroes a record's header at `start` and syncs, so that the log ends before it.
    fn invalidate(&self, start: u64) -> std::io::Result<()> {
        if start < self.allocated {
            self.file.write_all_at(&[0; 8], start)?;
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// Takes back the last record written: its batch did not commit after all.
    pub(super) fn take_back(&mut self, seq: u64, record_start: u64) -> Result<()> {
        if seq == self.last_seq {
            self.invalidate(record_start)?;
            self.len = record_start;
        }
        Ok(())
    }

    /// Bytes in the log now.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Whether the log holds more than a checkpoint should leave to replay.
    pub(super) fn is_long(&self) -> bool {
        self.len >= MAX_LOG_BYTES
    }

    /// The sequence number a checkpoint records as held by the durable file.
    pub(super) fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Empties the log after a checkpoint made all of it durable in the database: the
    /// next record is written at the file's start, over records the checkpoint holds.
    pub(super) fn reset(&mut self) {
        self.len = 0;
    }

    /// Empties the file, at a stop after the last checkpoint: a data directory whose
    /// server stopped holds no log.
    pub(super) fn close(self) -> Result<()> {
        if self.allocated > 0 {
            self.file.set_len(0)?;
            self.file.sync_data()?;
        }
        Ok(())
    }
}

/// Opens the log of the database at `db_path` and brings `db` up to date with it:
/// the records after the durable file's `wal_seq` are applied in order and committed
/// durably, then the log is emptied. Answers the open log and how many records were
/// applied.
pub(crate) fn recover(db: &Database, db_path: &Path) -> Result<(Wal, usize)> {
    let path = path_of(db_path);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| Error::Internal(format!("cannot open {}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let records = parse(&bytes);

    let txn = db.begin_write()?;
    let held = {
        let meta = txn.open_table(META)?;
        let found = meta.get("wal_seq")?;
        found.map(|v| read_seq(v.value())).transpose()?.unwrap_or(0)
    };
    let mut last_seq = held;
    let mut applied = 0;
    for (seq, ops) in records {
        if seq <= held {
            continue;
        }
        apply(&txn, ops)?;
        last_seq = seq;
        applied += 1;
    }
    mark_checkpoint(&txn, last_seq)?;
    let mut txn = txn;
    txn.set_durability(Durability::Immediate)?;
    txn.commit()?;
    file.set_len(0)?;
    file.sync_data()?;
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))?;
    Ok((
        Wal {
            file,
            len: 0,
            allocated: 0,
            last_seq,
        },
        applied,
    ))
}

/// [`recover`] for a file opened outside the server (`engaged check`, a backup being
/// restored): applies its log if it has one, and creates none.
pub(crate) fn replay_existing(db: &Database, db_path: &Path) -> Result<usize> {
    if !path_of(db_path).exists() {
        return Ok(0);
    }
    recover(db, db_path).map(|(_, applied)| applied)
}

/// Records `seq` as held by the durable file, in the checkpoint's transaction.
pub(super) fn mark_checkpoint(txn: &redb::WriteTransaction, seq: u64) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    meta.insert("wal_seq", &seq.to_le_bytes()[..])?;
    Ok(())
}

fn read_seq(bytes: &[u8]) -> Result<u64> {
    let raw: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Internal("META wal_seq is not 8 bytes".into()))?;
    Ok(u64::from_le_bytes(raw))
}

/// The whole records of a log, in order; a torn or damaged one ends it, and so does a
/// sequence number not above the one before (what a longer, older log left behind).
fn parse(mut bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut last = 0u64;
    while bytes.len() >= 16 {
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        let crc = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let Some(body) = bytes.get(8..8 + len) else {
            break;
        };
        if len < 8 || crc32fast::hash(body) != crc {
            break;
        }
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&body[..8]);
        let seq = u64::from_le_bytes(seq);
        if seq <= last {
            break;
        }
        last = seq;
        out.push((seq, &body[8..]));
        bytes = &bytes[8 + len..];
    }
    out
}

/// One operation of a record.
#[derive(Debug, PartialEq, Eq)]
struct Op<'a> {
    table: &'a str,
    key: &'a [u8],
    value: Option<&'a [u8]>,
}

fn ops(mut bytes: &[u8]) -> Result<Vec<Op<'_>>> {
    fn damaged() -> Error {
        Error::Internal("a write-ahead log record is damaged".into())
    }
    fn take<'a>(n: usize, bytes: &mut &'a [u8]) -> Result<&'a [u8]> {
        let (head, rest) = bytes.split_at_checked(n).ok_or_else(damaged)?;
        *bytes = rest;
        Ok(head)
    }
    fn length(bytes: &mut &[u8]) -> Result<usize> {
        let raw: [u8; 4] = take(4, bytes)?.try_into().map_err(|_| damaged())?;
        Ok(u32::from_le_bytes(raw) as usize)
    }
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let name_len = take(1, &mut bytes)?[0] as usize;
        let table = std::str::from_utf8(take(name_len, &mut bytes)?).map_err(|_| damaged())?;
        let op = take(1, &mut bytes)?[0];
        let key_len = length(&mut bytes)?;
        let key = take(key_len, &mut bytes)?;
        let value = match op {
            INSERT => {
                let len = length(&mut bytes)?;
                Some(take(len, &mut bytes)?)
            }
            REMOVE => None,
            _ => return Err(damaged()),
        };
        out.push(Op { table, key, value });
    }
    Ok(out)
}

/// Applies a record's operations to `txn`, each to its table by name.
fn apply(txn: &redb::WriteTransaction, record: &[u8]) -> Result<()> {
    for op in ops(record)? {
        apply_op(txn, &op)?;
    }
    Ok(())
}

fn apply_op(txn: &redb::WriteTransaction, op: &Op<'_>) -> Result<()> {
    macro_rules! to_table {
        ($table:ident) => {
            if op.table == $table.name() {
                return apply_typed(txn, $table, op);
            }
        };
    }
    all_tables!(to_table);
    Err(Error::Internal(format!(
        "the write-ahead log names an unknown table {}",
        op.table
    )))
}

fn apply_typed<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::WriteTransaction,
    table: redb::TableDefinition<K, V>,
    op: &Op<'_>,
) -> Result<()> {
    let mut table = txn.open_table(table)?;
    let key = K::from_bytes(op.key);
    match op.value {
        Some(value) => {
            table.insert(key, V::from_bytes(value))?;
        }
        None => {
            table.remove(key)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::ReadableDatabase;

    /// A new database in a temporary directory, with its (empty) log open.
    fn fresh_log() -> (tempfile::TempDir, PathBuf, Database, Wal) {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("t.redb");
        let db = Database::create(&db_path).unwrap();
        let (wal, _) = recover(&db, &db_path).unwrap();
        (dir, db_path, db, wal)
    }

    #[test]
    fn operations_read_back_as_written() {
        let mut log = OpLog::default();
        log.record("leads", b"k1", Some(b"v1"));
        log.record("events", b"k2", None);
        let read = ops(&log.bytes).unwrap();
        assert_eq!(
            read,
            vec![
                Op {
                    table: "leads",
                    key: b"k1",
                    value: Some(b"v1")
                },
                Op {
                    table: "events",
                    key: b"k2",
                    value: None
                },
            ]
        );
    }

    #[test]
    fn a_batch_too_large_to_log_overflows_and_keeps_nothing() {
        let mut log = OpLog::default();
        log.record("chunks", b"k", Some(&vec![0; MAX_LOGGED_BATCH]));
        assert!(log.overflowed());
        assert!(log.bytes.is_empty());
        log.record("chunks", b"k", Some(b"small"));
        assert!(log.bytes.is_empty());
    }

    #[test]
    fn a_torn_or_damaged_record_ends_the_log() {
        let (_dir, db_path, _db, mut wal) = fresh_log();
        for i in 0..3u8 {
            let mut log = OpLog::default();
            log.record("meta", &[i], Some(&[i]));
            assert_eq!(wal.append(&log).unwrap(), u64::from(i) + 1);
        }
        let file = std::fs::read(path_of(&db_path)).unwrap();
        assert_eq!(file.len() as u64, FIRST_STEP, "grown in a zeroed step");
        assert_eq!(
            parse(&file).len(),
            3,
            "the zeros after the records end the log"
        );
        let bytes = file[..wal.len() as usize].to_vec();
        // Cut in the middle of the last record: two remain.
        assert_eq!(parse(&bytes[..bytes.len() - 3]).len(), 2);
        // A flipped byte in the second: one remains.
        let mut damaged = bytes.clone();
        let second = bytes.len() / 3 + 20;
        damaged[second] ^= 0xff;
        assert_eq!(parse(&damaged).len(), 1);
        // An older, longer log's leftovers after a newer record are not read.
        let mut stale = bytes[bytes.len() / 3 * 2..].to_vec();
        stale.extend_from_slice(&bytes[..bytes.len() / 3]);
        assert_eq!(parse(&stale).len(), 1);
    }

    #[test]
    fn after_a_checkpoint_records_are_written_over_the_old_ones() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        let name = |i: u8| format!("org-{i}");
        let append = |wal: &mut Wal, i: u8| {
            let mut log = OpLog::default();
            log.record(ORG_NAMES.name(), name(i).as_bytes(), Some(b"x"));
            wal.append(&log).unwrap()
        };
        for i in 1..=3 {
            append(&mut wal, i);
        }
        // A checkpoint: redb holds records 1-3 durably, the log starts over.
        let txn = db.begin_write().unwrap();
        mark_checkpoint(&txn, wal.last_seq()).unwrap();
        txn.commit().unwrap();
        wal.reset();
        assert_eq!(append(&mut wal, 4), 4);
        let file = std::fs::read(path_of(&db_path)).unwrap();
        let read: Vec<u64> = parse(&file).iter().map(|(seq, _)| *seq).collect();
        assert_eq!(
            read,
            vec![4],
            "records 2 and 3 are behind record 4: not read"
        );
        // The process dies here; record 4 alone is applied.
        drop(wal);
        let (wal, applied) = recover(&db, &db_path).unwrap();
        assert_eq!((applied, wal.last_seq()), (1, 4));
        // A stop empties the file.
        wal.close().unwrap();
        assert_eq!(std::fs::metadata(path_of(&db_path)).unwrap().len(), 0);
    }

    #[test]
    fn the_file_grows_in_doubling_zeroed_steps_up_to_its_bound() {
        let (_dir, _, _db, mut wal) = fresh_log();
        let mut log = OpLog::default();
        log.record("meta", b"k", Some(&vec![7; 100 << 10]));
        wal.append(&log).unwrap();
        assert_eq!(
            wal.allocated,
            128 << 10,
            "the first step, doubled to hold it"
        );
        wal.append(&log).unwrap();
        assert_eq!(wal.allocated, 256 << 10);
        wal.allocated = MAX_FILE_BYTES - 1;
        wal.len = MAX_FILE_BYTES - 1;
        assert_eq!(
            wal.allocate(MAX_FILE_BYTES)
                .map(|()| wal.allocated)
                .unwrap(),
            MAX_FILE_BYTES
        );
    }

    #[test]
    fn recovery_applies_the_records_after_the_checkpoint_once() {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("t.redb");
        {
            let db = Database::create(&db_path).unwrap();
            let (mut wal, applied) = recover(&db, &db_path).unwrap();
            assert_eq!(applied, 0);
            let mut first = OpLog::default();
            first.record(ORG_NAMES.name(), b"acme", Some(b"org-1"));
            first.record(ORG_NAMES.name(), b"gone", Some(b"org-2"));
            wal.append(&first).unwrap();
            let mut second = OpLog::default();
            second.record(ORG_NAMES.name(), b"gone", None);
            wal.append(&second).unwrap();
            // The process dies here: nothing of it reached redb.
        }
        let db = Database::create(&db_path).unwrap();
        let (wal, applied) = recover(&db, &db_path).unwrap();
        assert_eq!((applied, wal.last_seq(), wal.len()), (2, 2, 0));
        let read = db.begin_read().unwrap();
        let names = read.open_table(ORG_NAMES).unwrap();
        assert_eq!(names.get("acme").unwrap().unwrap().value(), "org-1");
        assert!(names.get("gone").unwrap().is_none());
        drop((names, read, wal));
        // Opened again: the emptied log applies nothing twice.
        let (_, applied) = recover(&db, &db_path).unwrap();
        assert_eq!(applied, 0);
    }
}
