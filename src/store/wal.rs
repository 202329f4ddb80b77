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
//! `wal_seq`) and starts the log over.
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
//! records after a checkpoint are numbered on from its `wal_seq`, one by one. At open:
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
//! check` reads the same verdict ([`inspect`]) without writing either file.
//!
//! Records are written in place into a file already that long, not appended: the
//! file grows only in zeroed steps (doubling, up to what the longest log needs), and a
//! checkpoint starts the next records right after the header again without shortening
//! it. So a sync writes the record's pages and never the file's size. What lies
//! after the last record (zeros, or an
//! older cycle's records, numbered at or below the checkpoint's) ends the log. An open
//! writes a new file with a new salt (beside, then renamed over the old one); a stop
//! leaves the header alone.

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
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

/// The header's length; the first record starts after it.
pub(crate) const HEADER_LEN: u64 = 64;

/// The header's first bytes.
const MAGIC: [u8; 8] = *b"engdWAL\n";

/// The format of the header and records this build writes and reads.
const FORMAT: u32 = 1;

/// A record's fixed part: `len`, `crc32`, `seq`.
const RECORD_HEAD: usize = 16;

/// META keys: the database's id, its clean stop, the last sequence number it holds.
const META_ID: &str = "db_id";
const META_CLEAN: &str = "wal_clean";
const META_SEQ: &str = "wal_seq";

const INSERT: u8 = 0;
const REMOVE: u8 = 1;

/// A database's identity: 128 random bits made at its first open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DbId([u8; 16]);

impl std::fmt::Display for DbId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

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
    path: PathBuf,
    /// This file's salt: part of every record's checksum, so a record of another
    /// file (an earlier open's, another database's) never reads as one of this file.
    salt: u64,
    /// Where the next record goes: the end of the records, [`HEADER_LEN`] when none.
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

/// The checksum of a record's body under `salt`.
fn record_crc(salt: u64, body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&salt.to_le_bytes());
    hasher.update(body);
    hasher.finalize()
}

impl Wal {
    /// Writes the batch's operations as the next record and syncs the file; answers
    /// the record's sequence number. On failure the record's start is zeroed, so no
    /// replay reads it.
    pub(super) fn append(&mut self, ops: &OpLog) -> Result<u64> {
        let seq = self.last_seq + 1;
        let mut record = Vec::with_capacity(RECORD_HEAD + ops.bytes.len());
        record.extend_from_slice(&[0; 8]);
        record.extend_from_slice(&seq.to_le_bytes());
        record.extend_from_slice(&ops.bytes);
        let body_len = (record.len() - 8) as u32;
        let crc = record_crc(self.salt, &record[8..]);
        record[..4].copy_from_slice(&body_len.to_le_bytes());
        record[4..8].copy_from_slice(&crc.to_le_bytes());
        let end = self.len + record.len() as u64;
        let written = self
            .allocate(end)
            .and_then(|()| faults::check(&self.path))
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

    /// Takes back the last record written: its batch did not commit after all. The
    /// next record takes its sequence number, so the log's numbers stay consecutive.
    pub(super) fn take_back(&mut self, seq: u64, record_start: u64) -> Result<()> {
        if seq == self.last_seq {
            self.invalidate(record_start)?;
            self.len = record_start;
            self.last_seq = seq - 1;
        }
        Ok(())
    }

    /// Where the next record goes (the position a record is taken back to).
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Whether the log holds records the database file does not (until a checkpoint).
    pub(super) fn has_records(&self) -> bool {
        self.len > HEADER_LEN
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
    /// next record is written right after the header, over records the checkpoint
    /// holds.
    pub(super) fn reset(&mut self) {
        self.len = HEADER_LEN;
    }

    /// Leaves the header alone, at a stop after the last checkpoint (which recorded the
    /// clean stop): a data directory whose server stopped holds no records.
    pub(super) fn close(self) -> Result<()> {
        self.file.set_len(HEADER_LEN)?;
        self.file.sync_data()?;
        Ok(())
    }
}

/// A full disk to inject into the writes of one database's log (unit tests only).
#[cfg(test)]
pub(crate) mod faults {
    use std::collections::HashSet;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    static FULL: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

    /// From now on (`true`) every record written to the log at `wal` fails as on a
    /// full disk, until set back.
    pub(crate) fn set_full(wal: &Path, full: bool) {
        let mut set = FULL.lock().unwrap();
        let set = set.get_or_insert_with(HashSet::new);
        if full {
            set.insert(wal.to_path_buf());
        } else {
            set.remove(wal);
        }
    }

    pub(super) fn check(wal: &Path) -> std::io::Result<()> {
        let full = FULL
            .lock()
            .ok()
            .is_some_and(|set| set.as_ref().is_some_and(|s| s.contains(wal)));
        if full {
            return Err(std::io::Error::from_raw_os_error(28));
        }
        Ok(())
    }
}

#[cfg(not(test))]
mod faults {
    #[inline(always)]
    pub(super) fn check(_wal: &std::path::Path) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the database records about its log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    /// `None` until the first open of this build (a new file, a restored backup).
    pub(crate) id: Option<DbId>,
    /// The last sequence number the durable file holds.
    pub(crate) held: u64,
    /// Whether the last stop was clean (a file without the flag counts as clean: it was
    /// never opened by a server that keeps one).
    pub(crate) clean: bool,
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
    pub(crate) fn of(db: &Database) -> Result<Meta> {
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

/// The log's header, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Head {
    /// No file.
    Missing,
    /// A file shorter than a header (emptied).
    Empty,
    /// A header that is not one: the reason.
    Unreadable(String),
    /// A header of a newer format than this build reads.
    Newer(u32),
    /// A sound header: the database it names and the file's salt.
    Names(DbId, u64),
}

fn header(id: DbId, salt: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    h[16..32].copy_from_slice(&id.0);
    h[32..40].copy_from_slice(&salt.to_le_bytes());
    let crc = crc32fast::hash(&h[..60]);
    h[60..].copy_from_slice(&crc.to_le_bytes());
    h
}

fn read_head(file: Option<&[u8]>) -> Head {
    let Some(bytes) = file else {
        return Head::Missing;
    };
    let Some(h) = bytes.get(..HEADER_LEN as usize) else {
        return Head::Empty;
    };
    if h[..8] != MAGIC {
        return Head::Unreadable("it does not start as an engaged write-ahead log".into());
    }
    let crc = u32::from_le_bytes([h[60], h[61], h[62], h[63]]);
    if crc32fast::hash(&h[..60]) != crc {
        return Head::Unreadable("its header's checksum does not match".into());
    }
    let format = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    if format != FORMAT {
        return Head::Newer(format);
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(&h[16..32]);
    let mut salt = [0u8; 8];
    salt.copy_from_slice(&h[32..40]);
    Head::Names(DbId(id), u64::from_le_bytes(salt))
}

/// Damage in the middle of the log: answered batches after it cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Damage {
    /// The byte where the first unreadable record starts.
    pub(crate) at: u64,
    /// The first batch that cannot be applied.
    pub(crate) first: u64,
    /// The last batch found after the damage.
    pub(crate) last: u64,
}

impl Damage {
    /// The answered batches lost if the log is cut at the damage.
    pub(crate) fn dropped(&self) -> u64 {
        self.last + 1 - self.first
    }
}

/// A log held against its database: the verdict of an open, read without writing.
#[derive(Debug)]
pub(crate) struct Inspection {
    pub(crate) meta: Meta,
    pub(crate) head: Head,
    /// The records to apply: their sequence numbers and their operations' bytes.
    records: Vec<(u64, Range<usize>)>,
    /// Whether an unfinished last record (never answered) is dropped.
    pub(crate) torn: bool,
    pub(crate) damage: Option<Damage>,
}

/// Why a database and its log may not be opened as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The header names another database (`None`: the database has no id yet).
    Foreign { log: DbId, ours: Option<DbId> },
    /// The header is unreadable, or of a newer format.
    Unreadable(String),
    /// The database did not stop cleanly and the log is missing or empty.
    Missing { emptied: bool },
    /// Damage in the middle of the log.
    Damaged(Damage),
}

/// What a refusal loses if accepted: answered batches, counted when the log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loss {
    Batches(u64),
    /// The log that held them is gone: how many, nothing says.
    Unknown,
}

impl Inspection {
    /// The batches the next open applies.
    pub(crate) fn pending(&self) -> Option<(u64, u64)> {
        Some((self.records.first()?.0, self.records.last()?.0))
    }

    pub(crate) fn refusal(&self) -> Option<Refusal> {
        match &self.head {
            Head::Names(id, _) if self.meta.id != Some(*id) => {
                return Some(Refusal::Foreign {
                    log: *id,
                    ours: self.meta.id,
                })
            }
            Head::Unreadable(why) => return Some(Refusal::Unreadable(why.clone())),
            Head::Newer(format) => {
                return Some(Refusal::Unreadable(format!(
                    "its format {format} is newer than this release reads ({FORMAT})"
                )))
            }
            Head::Missing | Head::Empty if !self.meta.clean => {
                return Some(Refusal::Missing {
                    emptied: self.head == Head::Empty,
                })
            }
            _ => {}
        }
        self.damage.map(Refusal::Damaged)
    }

    /// What accepting the refusal loses.
    pub(crate) fn loss(&self) -> Loss {
        match self.refusal() {
            Some(Refusal::Damaged(d)) => Loss::Batches(d.dropped()),
            Some(_) if !self.meta.clean => Loss::Unknown,
            _ => Loss::Batches(0),
        }
    }

    /// What `engaged check` says of the database and its log, one line each.
    pub(crate) fn describe(&self, db_path: &Path) -> Vec<String> {
        let wal = path_of(db_path);
        let mut lines = vec![format!(
            "{}: id {}, {}, holds batches up to {}",
            db_path.display(),
            self.meta.id.map_or_else(
                || "none yet (made at its first open)".into(),
                |id| id.to_string()
            ),
            if self.meta.clean {
                "stopped cleanly"
            } else {
                "not stopped cleanly (a crash)"
            },
            self.meta.held
        )];
        let head = match &self.head {
            Head::Missing if self.meta.clean => "missing (not needed: stopped cleanly)".into(),
            Head::Missing => "missing".to_string(),
            Head::Empty if self.meta.clean => "empty (not needed: stopped cleanly)".into(),
            Head::Empty => "empty (no header)".to_string(),
            Head::Unreadable(why) => format!("unreadable: {why}"),
            Head::Newer(format) => format!("of format {format}, newer than this release"),
            Head::Names(id, _) if self.meta.id == Some(*id) => {
                format!("names this database (format {FORMAT})")
            }
            Head::Names(id, _) => format!("names another database, id {id}"),
        };
        lines.push(format!("{}: {head}", wal.display()));
        if let Some((first, last)) = self.pending() {
            lines.push(format!(
                "{}: {} answered batch(es) to apply at the next start ({first}-{last})",
                wal.display(),
                last + 1 - first
            ));
        }
        if self.torn {
            lines.push(format!(
                "{}: an unfinished last record (a batch never answered) is dropped",
                wal.display()
            ));
        }
        lines
    }
}

impl Refusal {
    /// The refusal in words naming both files, with the way out.
    pub(crate) fn explain(&self, db_path: &Path) -> String {
        let wal_path = path_of(db_path);
        let (db, wal) = (db_path.display(), wal_path.display());
        format!(
            "{}. Put the right {wal} back beside {db} if there is one; otherwise `engaged recover --accept-loss` starts {db} from what it holds{}",
            self.what(db_path),
            match self {
                Refusal::Damaged(_) => " and the log's good batches before the damage",
                _ => "",
            }
        )
    }

    /// The refusal in words naming both files.
    pub(crate) fn what(&self, db_path: &Path) -> String {
        let wal_path = path_of(db_path);
        let (db, wal) = (db_path.display(), wal_path.display());
        match self {
            Refusal::Foreign { log, ours: Some(ours) } => format!(
                "the write-ahead log {wal} belongs to another database (id {log}), not to {db} (id {ours}): its batches are not this database's"
            ),
            Refusal::Foreign { log, ours: None } => format!(
                "the write-ahead log {wal} belongs to a database (id {log}) that is not {db}: its batches are not this database's"
            ),
            Refusal::Unreadable(why) => format!(
                "the write-ahead log {wal} of {db} cannot be read: {why}"
            ),
            Refusal::Missing { emptied } => format!(
                "{db} did not stop cleanly and its write-ahead log {wal} is {}: the batches answered since its last checkpoint are not there",
                if *emptied { "empty" } else { "missing" }
            ),
            Refusal::Damaged(d) => format!(
                "the write-ahead log {wal} of {db} is damaged at byte {}: batch {} cannot be read and {} answered batch(es) after it would be lost",
                d.at,
                d.first,
                d.dropped() - 1
            ),
        }
    }
}

/// Reads a log's records against its database's META: which to apply, whether a torn
/// record ends it, whether damage does. Writes nothing.
pub(crate) fn inspect(meta: Meta, file: Option<&[u8]>) -> Inspection {
    let head = read_head(file);
    let mut inspection = Inspection {
        meta,
        head,
        records: Vec::new(),
        torn: false,
        damage: None,
    };
    let (Head::Names(id, salt), Some(bytes)) = (&inspection.head, file) else {
        return inspection;
    };
    if meta.id != Some(*id) {
        return inspection;
    }
    let salt = *salt;
    let mut at = HEADER_LEN as usize;
    let mut last = meta.held;
    // The chain of records numbered on from the checkpoint, one by one.
    let mut numbered_past = None;
    while let Some((seq, ops, next)) = record_at(bytes, at, salt) {
        if seq != last + 1 {
            if seq > last + 1 {
                numbered_past = Some(seq);
            }
            break;
        }
        inspection.records.push((seq, ops));
        last = seq;
        at = next;
    }
    // What follows: zeros and older records end the log; a valid record numbered
    // after the last good one means the log was cut by damage, not by a crash.
    let later = later_records(bytes, at + 1, salt, last);
    let found = match (numbered_past, later) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    match found {
        Some(max) => {
            inspection.damage = Some(Damage {
                at: at as u64,
                first: last + 1,
                last: max,
            })
        }
        None => {
            let rest = bytes.get(at..(at + 8).min(bytes.len())).unwrap_or(&[]);
            let older = record_at(bytes, at, salt).is_some();
            inspection.torn = !older && rest.iter().any(|b| *b != 0);
        }
    }
    inspection
}

/// The record at `at` if it is whole and its checksum holds: its sequence number,
/// its operations' range and where the next record starts.
fn record_at(bytes: &[u8], at: usize, salt: u64) -> Option<(u64, Range<usize>, usize)> {
    let head = bytes.get(at..at.checked_add(RECORD_HEAD)?)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len < 8 {
        return None;
    }
    let end = at.checked_add(8)?.checked_add(len)?;
    let body = bytes.get(at + 8..end)?;
    if record_crc(salt, body) != crc {
        return None;
    }
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&body[..8]);
    Some((u64::from_le_bytes(seq), at + RECORD_HEAD..end, end))
}

/// The highest sequence number above `last` of a valid record anywhere from `from`
/// on. Looks for a plausible number first, so a byte-by-byte walk stays cheap.
fn later_records(bytes: &[u8], from: usize, salt: u64, last: u64) -> Option<u64> {
    let mut found = None;
    let mut at = from;
    while at + RECORD_HEAD <= bytes.len() {
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&bytes[at + 8..at + 16]);
        let seq = u64::from_le_bytes(seq);
        if seq > last && seq - last < 1 << 32 {
            if let Some((seq, _, next)) = record_at(bytes, at, salt) {
                found = Some(found.map_or(seq, |f: u64| f.max(seq)));
                at = next;
                continue;
            }
        }
        at += 1;
    }
    found
}

/// Reads the whole log file; `None` when there is none.
fn read_log(path: &Path) -> Result<Option<Vec<u8>>> {
    match File::open(path) {
        Ok(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)
                .map_err(|e| Error::Internal(format!("cannot read {}: {e}", path.display())))?;
            Ok(Some(bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Internal(format!(
            "cannot open {}: {e}",
            path.display()
        ))),
    }
}

/// The log of the database at `db_path` held against it, as an open would find it.
pub(crate) fn inspect_files(
    db: &Database,
    db_path: &Path,
) -> Result<(Inspection, Option<Vec<u8>>)> {
    let meta = Meta::of(db)?;
    let bytes = read_log(&path_of(db_path))?;
    Ok((inspect(meta, bytes.as_deref()), bytes))
}

/// Why [`open`] did not open the log.
#[derive(Debug)]
pub(crate) enum OpenFailure {
    /// The log does not go with the database, or is damaged: the words say which.
    Refused(String),
    Failed(Error),
}

impl From<Error> for OpenFailure {
    fn from(e: Error) -> Self {
        OpenFailure::Failed(e)
    }
}

/// Opens the log of the database at `db_path` and brings `db` up to date with it:
/// the records after the durable file's `wal_seq` are applied in order and committed
/// durably, then a new log (a new salt) replaces the old one, and the database records
/// that it is running (not stopped cleanly). Refuses a log that is not this database's,
/// a missing one after an unclean stop, and damage. Answers the open log and how many
/// records were applied.
pub(crate) fn open(
    db: &Database,
    db_path: &Path,
) -> std::result::Result<(Wal, usize), OpenFailure> {
    let (inspection, bytes) = inspect_files(db, db_path)?;
    if let Some(refusal) = inspection.refusal() {
        return Err(OpenFailure::Refused(refusal.explain(db_path)));
    }
    let (id, last_seq) = apply_records(db, &inspection, bytes.as_deref(), false)?;
    // Only once the file holds the records may their log be replaced; only once the new
    // log is in place may the database say it needs one.
    let wal = new_log(db_path, id, last_seq)?;
    mark_running(db)?;
    Ok((wal, inspection.records.len()))
}

/// Records that the database is open: until its clean stop, it needs its log.
fn mark_running(db: &Database) -> Result<()> {
    let txn = db.begin_write()?;
    txn.open_table(META)?.insert(META_CLEAN, &[0u8][..])?;
    commit_durably(txn)
}

/// Applies the inspected records (all of them, or the good ones before damage) and
/// commits durably with their sequence number and the database's id (made if it had
/// none); `clean` records a clean stop too. Answers the id and the last sequence number.
fn apply_records(
    db: &Database,
    inspection: &Inspection,
    bytes: Option<&[u8]>,
    clean: bool,
) -> Result<(DbId, u64)> {
    let txn = db.begin_write()?;
    let mut last_seq = inspection.meta.held;
    if let Some(bytes) = bytes {
        for (seq, ops) in &inspection.records {
            apply(&txn, &bytes[ops.clone()])?;
            last_seq = *seq;
        }
    }
    let id = match inspection.meta.id {
        Some(id) => id,
        None => DbId(crate::ids::random_bytes::<16>()),
    };
    {
        let mut meta = txn.open_table(META)?;
        if inspection.meta.id.is_none() {
            meta.insert(META_ID, &id.0[..])?;
        }
        if clean {
            meta.insert(META_CLEAN, &[1u8][..])?;
        }
    }
    mark_checkpoint(&txn, last_seq)?;
    commit_durably(txn)?;
    Ok((id, last_seq))
}

fn commit_durably(mut txn: redb::WriteTransaction) -> Result<()> {
    txn.set_durability(Durability::Immediate)?;
    txn.commit()?;
    Ok(())
}

/// Writes a new log for database `id` beside the old one (its header, a first zeroed
/// step), syncs it, renames it over the old one and syncs the directory.
fn new_log(db_path: &Path, id: DbId, last_seq: u64) -> Result<Wal> {
    let path = path_of(db_path);
    let fresh = path.with_extension("wal.new");
    let failed =
        |e: std::io::Error| Error::Internal(format!("cannot write {}: {e}", fresh.display()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&fresh)
        .map_err(failed)?;
    let salt = u64::from_le_bytes(crate::ids::random_bytes::<8>());
    faults::check(&path).map_err(failed)?;
    file.write_all(&header(id, salt)).map_err(failed)?;
    let mut wal = Wal {
        file,
        path: path.clone(),
        salt,
        len: HEADER_LEN,
        allocated: HEADER_LEN,
        last_seq,
    };
    wal.allocate(FIRST_STEP).map_err(failed)?;
    wal.file.sync_all().map_err(failed)?;
    std::fs::rename(&fresh, &path).map_err(|e| {
        Error::Internal(format!(
            "cannot rename {} to {}: {e}",
            fresh.display(),
            path.display()
        ))
    })?;
    sync_dir(&path)?;
    Ok(wal)
}

/// Syncs the directory holding `path`, so a rename or a new file survives a crash.
fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::Internal(format!("cannot sync {}: {e}", dir.display())))
}

/// What `engaged recover --accept-loss` did.
#[derive(Debug)]
pub(crate) enum Recovered {
    /// The database and its log were sound: nothing changed.
    Sound,
    Accepted {
        /// The refusal, in words.
        refusal: String,
        /// The log's good batches applied.
        applied: usize,
        /// The answered batches dropped.
        lost: Loss,
        /// Where the log was moved.
        moved_to: Option<PathBuf>,
    },
}

/// Accepts what [`open`] refuses: applies the good records before any damage, records
/// a clean stop and moves the log aside (`engaged.wal.rejected-<unix seconds>`), so the
/// next open starts a new log. A sound database and log are left alone.
pub(crate) fn accept_loss(db: &Database, db_path: &Path) -> Result<Recovered> {
    let (inspection, bytes) = inspect_files(db, db_path)?;
    let Some(refusal) = inspection.refusal() else {
        return Ok(Recovered::Sound);
    };
    apply_records(db, &inspection, bytes.as_deref(), true)?;
    let path = path_of(db_path);
    let moved_to = match bytes {
        Some(_) => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let aside = path.with_extension(format!("wal.rejected-{secs}"));
            std::fs::rename(&path, &aside).map_err(|e| {
                Error::Internal(format!(
                    "cannot move {} to {}: {e}",
                    path.display(),
                    aside.display()
                ))
            })?;
            sync_dir(&path)?;
            Some(aside)
        }
        None => None,
    };
    Ok(Recovered::Accepted {
        refusal: refusal.what(db_path),
        applied: inspection.records.len(),
        lost: inspection.loss(),
        moved_to,
    })
}

/// Records `seq` as held by the durable file, in the checkpoint's transaction.
pub(super) fn mark_checkpoint(txn: &redb::WriteTransaction, seq: u64) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    meta.insert(META_SEQ, &seq.to_le_bytes()[..])?;
    Ok(())
}

/// [`mark_checkpoint`] at a stop: the log is not needed at the next open.
pub(super) fn mark_clean_stop(txn: &redb::WriteTransaction, seq: u64) -> Result<()> {
    mark_checkpoint(txn, seq)?;
    txn.open_table(META)?.insert(META_CLEAN, &[1u8][..])?;
    Ok(())
}

/// The META keys a backup leaves out: a restored copy is a new database, whose first
/// open makes its own id and log.
pub(crate) const NOT_COPIED: [&str; 3] = [META_ID, META_CLEAN, META_SEQ];

fn read_seq(bytes: &[u8]) -> Result<u64> {
    let raw: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Internal("META wal_seq is not 8 bytes".into()))?;
    Ok(u64::from_le_bytes(raw))
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
        let (wal, _) = opened(&db, &db_path);
        (dir, db_path, db, wal)
    }

    fn opened(db: &Database, db_path: &Path) -> (Wal, usize) {
        match open(db, db_path) {
            Ok(done) => done,
            Err(OpenFailure::Refused(why)) => panic!("refused: {why}"),
            Err(OpenFailure::Failed(e)) => panic!("failed: {e}"),
        }
    }

    fn refused(db: &Database, db_path: &Path) -> String {
        match open(db, db_path) {
            Err(OpenFailure::Refused(why)) => why,
            Err(OpenFailure::Failed(e)) => panic!("failed instead of refusing: {e}"),
            Ok(_) => panic!("opened"),
        }
    }

    /// Appends `n` batches, each naming organization `org-<seq>`.
    fn append_orgs(wal: &mut Wal, n: u64) -> Vec<Range<u64>> {
        (0..n)
            .map(|_| {
                let start = wal.len();
                let mut log = OpLog::default();
                let name = format!("org-{}", wal.last_seq() + 1);
                log.record(ORG_NAMES.name(), name.as_bytes(), Some(b"x"));
                wal.append(&log).unwrap();
                start..wal.len()
            })
            .collect()
    }

    fn orgs(db: &Database) -> Vec<String> {
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

    fn flip(path: &Path, at: u64) {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[at as usize] ^= 0xff;
        std::fs::write(path, bytes).unwrap();
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
    fn a_torn_last_record_is_dropped_and_the_others_applied() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        let records = append_orgs(&mut wal, 3);
        let file = std::fs::read(path_of(&db_path)).unwrap();
        assert_eq!(file.len() as u64, FIRST_STEP, "grown in a zeroed step");
        // The process dies while the third record is written: its end never arrived.
        drop(wal);
        flip(&path_of(&db_path), records[2].end - 2);
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert!(inspection.torn && inspection.damage.is_none());
        assert_eq!(inspection.pending(), Some((1, 2)));
        let (_, applied) = opened(&db, &db_path);
        assert_eq!(applied, 2);
        assert_eq!(orgs(&db), ["org-1", "org-2"]);
    }

    #[test]
    fn a_flipped_byte_in_the_middle_refuses_and_recover_accepts_the_loss() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        let records = append_orgs(&mut wal, 5);
        drop(wal);
        flip(&path_of(&db_path), records[1].start + 20);
        let why = refused(&db, &db_path);
        for words in [
            db_path.display().to_string(),
            path_of(&db_path).display().to_string(),
            "damaged".into(),
            "engaged recover --accept-loss".into(),
        ] {
            assert!(why.contains(&words), "{words:?} in {why}");
        }
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(
            inspection.damage,
            Some(Damage {
                at: records[1].start,
                first: 2,
                last: 5
            })
        );
        assert_eq!(inspection.loss(), Loss::Batches(4));
        assert!(orgs(&db).is_empty(), "a refused open changes nothing");

        let Recovered::Accepted {
            applied,
            lost,
            moved_to,
            ..
        } = accept_loss(&db, &db_path).unwrap()
        else {
            panic!("nothing recovered");
        };
        assert_eq!((applied, lost), (1, Loss::Batches(4)));
        assert!(moved_to.unwrap().exists() && !path_of(&db_path).exists());
        assert_eq!(orgs(&db), ["org-1"], "the good batch before the damage");
        let meta = Meta::of(&db).unwrap();
        assert!(meta.clean && meta.held == 1);
        // Consistent and clean: it opens, and a second recover has nothing to do.
        assert!(matches!(
            accept_loss(&db, &db_path).unwrap(),
            Recovered::Sound
        ));
        let (mut wal, applied) = opened(&db, &db_path);
        assert_eq!((applied, wal.last_seq()), (0, 1));
        append_orgs(&mut wal, 1);
        assert_eq!(wal.last_seq(), 2);
    }

    #[test]
    fn a_record_numbered_past_the_next_is_damage() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 1);
        wal.last_seq += 1; // batch 2 never reaches the log
        append_orgs(&mut wal, 1);
        drop(wal);
        assert!(refused(&db, &db_path).contains("damaged"));
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(inspection.loss(), Loss::Batches(2));
    }

    #[test]
    fn another_databases_log_is_refused() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 2);
        drop(wal);
        let (_other_dir, other_path, other, mut other_wal) = fresh_log();
        append_orgs(&mut other_wal, 3);
        drop(other_wal);
        std::fs::copy(path_of(&other_path), path_of(&db_path)).unwrap();
        let why = refused(&db, &db_path);
        assert!(why.contains("belongs to another database"), "{why}");
        assert!(why.contains(&db_path.display().to_string()), "{why}");
        drop(other);
        assert!(orgs(&db).is_empty());
        // Accepting the loss applies nothing of the foreign log.
        let Recovered::Accepted { applied, lost, .. } = accept_loss(&db, &db_path).unwrap() else {
            panic!("nothing recovered");
        };
        assert_eq!((applied, lost), (0, Loss::Unknown));
        assert!(orgs(&db).is_empty());
        opened(&db, &db_path);
    }

    #[test]
    fn a_missing_or_emptied_log_refuses_after_a_crash_not_after_a_clean_stop() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 2);
        drop(wal); // a crash
        std::fs::write(path_of(&db_path), b"").unwrap();
        let why = refused(&db, &db_path);
        assert!(
            why.contains("did not stop cleanly") && why.contains("empty"),
            "{why}"
        );
        std::fs::remove_file(path_of(&db_path)).unwrap();
        assert!(refused(&db, &db_path).contains("missing"));
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(inspection.loss(), Loss::Unknown);

        // A clean stop: the last checkpoint records it, and the log is not needed.
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 2);
        let txn = db.begin_write().unwrap();
        apply_for_test(&txn, &db_path);
        mark_clean_stop(&txn, wal.last_seq()).unwrap();
        txn.commit().unwrap();
        wal.close().unwrap();
        assert_eq!(
            std::fs::metadata(path_of(&db_path)).unwrap().len(),
            HEADER_LEN
        );
        std::fs::remove_file(path_of(&db_path)).unwrap();
        let (wal, applied) = opened(&db, &db_path);
        assert_eq!((applied, wal.last_seq()), (0, 2));
        assert!(!Meta::of(&db).unwrap().clean, "running: not clean");
    }

    /// What the writer's commits would have put in the file: the log's records.
    fn apply_for_test(txn: &redb::WriteTransaction, db_path: &Path) {
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

    #[test]
    fn after_a_checkpoint_records_are_written_over_the_old_ones() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 3);
        // A checkpoint: redb holds records 1-3 durably, the log starts over.
        let txn = db.begin_write().unwrap();
        apply_for_test(&txn, &db_path);
        mark_checkpoint(&txn, wal.last_seq()).unwrap();
        txn.commit().unwrap();
        wal.reset();
        append_orgs(&mut wal, 1);
        assert_eq!(wal.last_seq(), 4);
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(
            inspection.pending(),
            Some((4, 4)),
            "records 2 and 3 are behind record 4: not read"
        );
        assert!(inspection.damage.is_none() && !inspection.torn);
        // The process dies here; record 4 alone is applied.
        drop(wal);
        let (wal, applied) = opened(&db, &db_path);
        assert_eq!((applied, wal.last_seq()), (1, 4));
        assert_eq!(orgs(&db), ["org-1", "org-2", "org-3", "org-4"]);
    }

    #[test]
    fn a_record_taken_back_gives_its_number_to_the_next() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        append_orgs(&mut wal, 1);
        let start = wal.len();
        append_orgs(&mut wal, 1);
        wal.take_back(2, start).unwrap();
        append_orgs(&mut wal, 1);
        assert_eq!(wal.last_seq(), 2);
        drop(wal);
        let (_, applied) = opened(&db, &db_path);
        assert_eq!(applied, 2);
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
            let (mut wal, applied) = opened(&db, &db_path);
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
        let (wal, applied) = opened(&db, &db_path);
        assert_eq!((applied, wal.last_seq(), wal.len()), (2, 2, HEADER_LEN));
        let read = db.begin_read().unwrap();
        let names = read.open_table(ORG_NAMES).unwrap();
        assert_eq!(names.get("acme").unwrap().unwrap().value(), "org-1");
        assert!(names.get("gone").unwrap().is_none());
        drop((names, read, wal));
        // Opened again: the new log applies nothing twice.
        let (_, applied) = opened(&db, &db_path);
        assert_eq!(applied, 0);
    }
}
