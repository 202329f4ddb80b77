//! The log's file: where it lives, how a new one is written (beside the old, then
//! renamed over it), how it grows (in zeroed steps, so a record is written in place
//! and a sync never writes the file's length), how a record is written and synced or
//! taken back, and a full disk to inject in unit tests (`faults`).

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::format::{header, DbId, HEADER_LEN};
use super::{Wal, MAX_LOGGED_BATCH, MAX_LOG_BYTES};
use crate::error::{Error, Result};

/// The file's first zeroed step; each next one doubles it, up to [`MAX_STEP`].
pub(super) const FIRST_STEP: u64 = 64 << 10;

/// The most one step adds. A step's zeros reach the disk with the log's next sync, which
/// the writer waits for: on this project's disk a doubling from 16 to 32 MiB held that
/// sync 45-95 ms, and 1 MiB holds it some 5 ms (docs/performance.md).
pub(super) const MAX_STEP: u64 = 1 << 20;

/// The longest the file gets in its zeroed steps: two cycles of the longest log
/// (one still held while its checkpoint syncs) plus the largest record.
pub(super) const MAX_FILE_BYTES: u64 = 2 * (MAX_LOG_BYTES + MAX_LOGGED_BATCH as u64 + 64);

/// Where the log of the database file at `db_path` lives: beside it, `engaged.wal`.
pub(crate) fn path_of(db_path: &Path) -> PathBuf {
    db_path.with_extension("wal")
}

impl Wal {
    /// Writes `record` at `at`, growing the file first if it must, and syncs.
    pub(super) fn write_synced(&mut self, record: &[u8], at: u64) -> std::io::Result<()> {
        self.allocate(at + record.len() as u64)?;
        faults::check(&self.path)?;
        self.file.write_all_at(record, at)?;
        self.file.sync_data()
    }

    /// Grows the file with zeros to hold `end` bytes, in steps that double its length
    /// (at least [`FIRST_STEP`], at most [`MAX_STEP`] each), to at most
    /// [`MAX_FILE_BYTES`]. The caller's sync makes the new length durable.
    pub(super) fn allocate(&mut self, end: u64) -> std::io::Result<()> {
        if end <= self.allocated {
            return Ok(());
        }
        let mut step = self.allocated.max(FIRST_STEP);
        while step < end {
            step += step.clamp(FIRST_STEP, MAX_STEP);
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
    pub(super) fn invalidate(&self, start: u64) -> std::io::Result<()> {
        if start < self.allocated {
            self.file.write_all_at(&[0; 8], start)?;
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// Drops the records, leaving the header alone, and syncs.
    pub(super) fn truncate_to_header(self) -> Result<()> {
        self.file.set_len(HEADER_LEN)?;
        self.file.sync_data()?;
        Ok(())
    }
}

/// Writes a new log for database `id` beside the old one (its header, a first zeroed
/// step), syncs it, renames it over the old one and syncs the directory.
pub(super) fn new_log(db_path: &Path, id: DbId, last_seq: u64) -> Result<Wal> {
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
        start: HEADER_LEN,
        len: HEADER_LEN,
        allocated: HEADER_LEN,
        last_seq,
        last_start: None,
        gate: None,
        syncing: None,
        pace: super::CHECKPOINT_EVERY / 4,
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
pub(super) fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::Internal(format!("cannot sync {}: {e}", dir.display())))
}

/// Reads the whole log file; `None` when there is none.
pub(super) fn read_log(path: &Path) -> Result<Option<Vec<u8>>> {
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

    pub(in crate::store::wal) fn check(wal: &Path) -> std::io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn the_file_grows_in_zeroed_steps_doubling_up_to_a_mib_and_up_to_its_bound() {
        let (_dir, _, _db, mut wal) = fresh_log();
        let mut log = super::super::OpLog::default();
        log.record("meta", b"k", Some(&vec![7; 100 << 10]));
        wal.append(&mut log).unwrap();
        assert_eq!(
            wal.allocated,
            128 << 10,
            "the first step, doubled to hold it"
        );
        wal.append(&mut log).unwrap();
        assert_eq!(wal.allocated, 256 << 10);
        wal.allocated = 4 << 20;
        wal.len = 4 << 20;
        wal.allocate((4 << 20) + 1).unwrap();
        assert_eq!(wal.allocated, 5 << 20, "past 1 MiB, a step adds 1 MiB");
        wal.allocate(8 << 20).unwrap();
        assert_eq!(wal.allocated, 8 << 20, "as many steps as it takes");
        wal.allocated = MAX_FILE_BYTES - 1;
        wal.len = MAX_FILE_BYTES - 1;
        assert_eq!(
            wal.allocate(MAX_FILE_BYTES)
                .map(|()| wal.allocated)
                .unwrap(),
            MAX_FILE_BYTES
        );
    }
}
