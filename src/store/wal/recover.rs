//! Reading a log against its database and bringing the database up to date: the
//! verdict (`inspect`: records to apply, a torn last record, damage, a refusal), what
//! `engaged check` says of it, the open that applies the records and writes a new
//! log, and `engaged recover --accept-loss`.

use std::ops::Range;
use std::path::{Path, PathBuf};

use redb::{Database, TableHandle};

use super::checkpoint::{commit_durably, mark_checkpoint, mark_clean, mark_running, Meta, META_ID};
use super::file::{new_log, path_of, read_log, sync_dir};
use super::format::{
    chain, later_records, ops, read_head, record_at, stray_bytes, DbId, Head, Op, FORMAT,
};
use super::Wal;
use crate::error::{Error, Result};
use crate::store::tables::*;

/// Damage in the middle of the log: answered batches after it cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Damage {
    /// The byte where the first unreadable record starts.
    pub(super) at: u64,
    /// The first batch that cannot be applied.
    pub(super) first: u64,
    /// The last batch found after the damage.
    pub(super) last: u64,
}

impl Damage {
    /// The answered batches lost if the log is cut at the damage.
    pub(super) fn dropped(&self) -> u64 {
        self.last + 1 - self.first
    }
}

/// A log held against its database: the verdict of an open, read without writing.
#[derive(Debug)]
pub(crate) struct Inspection {
    pub(super) meta: Meta,
    pub(super) head: Head,
    /// The records to apply: their sequence numbers and their operations' bytes.
    pub(super) records: Vec<(u64, Range<usize>)>,
    /// Whether an unfinished last record (never answered) is dropped.
    pub(super) torn: bool,
    pub(super) damage: Option<Damage>,
    /// Bytes after the last record that are neither zeros nor older records.
    pub(super) ignored: Option<Ignored>,
}

/// Bytes after a log's last record that are neither zeros nor older records (numbered
/// at or below the checkpoint's): a torn record, or the tail of an older record that a
/// shorter one was written over. Read past, never applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ignored {
    pub(super) bytes: u64,
    /// The last record before them (`None`: they follow the header).
    pub(super) after: Option<u64>,
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.after {
            Some(seq) => write!(f, "ignored {} bytes after record {seq}", self.bytes),
            None => write!(f, "ignored {} bytes after the header", self.bytes),
        }
    }
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
    pub(super) fn pending(&self) -> Option<(u64, u64)> {
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
    pub(super) fn loss(&self) -> Loss {
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
        if let Some(ignored) = self.ignored {
            lines.push(format!(
                "{}: {ignored} (neither zeros nor older records)",
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
pub(super) fn inspect(meta: Meta, file: Option<&[u8]>) -> Inspection {
    let head = read_head(file);
    let mut inspection = Inspection {
        meta,
        head,
        records: Vec::new(),
        torn: false,
        damage: None,
        ignored: None,
    };
    let (Head::Names(id, salt), Some(bytes)) = (&inspection.head, file) else {
        return inspection;
    };
    if meta.id != Some(*id) {
        return inspection;
    }
    let salt = *salt;
    // The chain of records numbered on from the checkpoint, one by one.
    let chain = chain(bytes, salt, meta.held, meta.start);
    let at = chain.end;
    let last = chain.records.last().map_or(meta.held, |(seq, _)| *seq);
    inspection.records = chain.records;
    // What follows: zeros and older records end the log; a valid record numbered
    // after the last good one means the log was cut by damage, not by a crash.
    let later = later_records(bytes, salt, last);
    let found = match (chain.numbered_past, later) {
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
            let bytes = stray_bytes(bytes, at, salt, last);
            inspection.ignored = (bytes > 0).then(|| Ignored {
                bytes,
                after: inspection.records.last().map(|(seq, _)| *seq),
            });
        }
    }
    inspection
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
    if let Some(ignored) = inspection.ignored {
        tracing::info!(
            "{}: {ignored} (neither zeros nor older records)",
            path_of(db_path).display()
        );
    }
    let (id, last_seq) = apply_records(db, &inspection, bytes.as_deref(), false)?;
    // Only once the file holds the records may their log be replaced; only once the new
    // log is in place may the database say it needs one.
    let wal = new_log(db_path, id, last_seq)?;
    mark_running(db)?;
    Ok((wal, inspection.records.len()))
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
    if inspection.meta.id.is_none() {
        txn.open_table(META)?.insert(META_ID, &id.0[..])?;
    }
    if clean {
        mark_clean(&txn)?;
    }
    // The new log (written next) starts its records after its header.
    mark_checkpoint(&txn, last_seq, super::format::HEADER_LEN)?;
    commit_durably(txn)?;
    Ok((id, last_seq))
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

/// Applies a record's operations to `txn`, each to its table by name.
pub(crate) fn apply(txn: &redb::WriteTransaction, record: &[u8]) -> Result<()> {
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
    use redb::ReadableDatabase;

    use super::super::testing::*;
    use super::*;
    use crate::store::wal::file::FIRST_STEP;
    use crate::store::wal::format::HEADER_LEN;
    use crate::store::wal::OpLog;

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
        assert_eq!(
            inspection.ignored.map(|i| i.after),
            Some(Some(2)),
            "the torn record's bytes"
        );
        let (_, applied) = opened(&db, &db_path);
        assert_eq!(applied, 2);
        assert_eq!(orgs(&db), ["org-1", "org-2"]);
    }

    #[test]
    fn bytes_after_the_last_record_that_are_no_record_are_reported_and_read_past() {
        let (_dir, db_path, db, mut wal) = fresh_log();
        let records = append_orgs(&mut wal, 2);
        drop(wal);
        // Four stray bytes, away from the last record's end: not a torn record's head.
        let mut bytes = std::fs::read(path_of(&db_path)).unwrap();
        let at = records[1].end as usize + 100;
        bytes[at..at + 4].copy_from_slice(b"junk");
        std::fs::write(path_of(&db_path), bytes).unwrap();
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(
            inspection.ignored,
            Some(Ignored {
                bytes: 4,
                after: Some(2)
            })
        );
        assert!(inspection.damage.is_none() && !inspection.torn);
        assert_eq!(inspection.pending(), Some((1, 2)));
        let described = inspection.describe(&db_path).join("\n");
        assert!(
            described.contains("ignored 4 bytes after record 2"),
            "{described}"
        );
        let (_, applied) = opened(&db, &db_path);
        assert_eq!(applied, 2);
        assert_eq!(orgs(&db), ["org-1", "org-2"]);
        // The new log holds nothing stray.
        let (inspection, _) = inspect_files(&db, &db_path).unwrap();
        assert_eq!(inspection.ignored, None);
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
        wal.stop(txn).unwrap();
        assert_eq!(
            std::fs::metadata(path_of(&db_path)).unwrap().len(),
            HEADER_LEN
        );
        std::fs::remove_file(path_of(&db_path)).unwrap();
        let (wal, applied) = opened(&db, &db_path);
        assert_eq!((applied, wal.last_seq()), (0, 2));
        assert!(!Meta::of(&db).unwrap().clean, "running: not clean");
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
            wal.append(&mut first).unwrap();
            let mut second = OpLog::default();
            second.record(ORG_NAMES.name(), b"gone", None);
            wal.append(&mut second).unwrap();
            // The process dies here: nothing of it reached redb.
        }
        let db = Database::create(&db_path).unwrap();
        let (wal, applied) = opened(&db, &db_path);
        assert_eq!((applied, wal.last_seq(), wal.len), (2, 2, HEADER_LEN));
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
