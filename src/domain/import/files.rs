//! The files an import keeps in the data directory, under `imports/<org>/`: the
//! console's uploads waiting for their import (`<token>.upload`) and the refused rows of
//! an import (`<token>.refused.csv`), each readable by the service's user only (mode
//! 0600). An organization has at most [`MAX_WAITING_UPLOADS`] uploads waiting and a
//! disk quota for all its files (`import_quota_bytes`); every file goes an hour after it
//! was last written ([`KEEP`]), removed by the server's sweeper ([`sweep`]).

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long an upload and refused rows are kept.
pub const KEEP: Duration = Duration::from_secs(3600);
/// How often the server sweeps.
pub const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// Uploads an organization may have waiting for their import.
pub const MAX_WAITING_UPLOADS: usize = 2;

/// `<data dir>/imports`.
pub fn root(data_dir: &Path) -> PathBuf {
    data_dir.join("imports")
}

/// `<data dir>/imports/<org>`.
pub fn org_dir(data_dir: &Path, org: &str) -> PathBuf {
    root(data_dir).join(org)
}

/// A new token naming an import's files: 32 hex digits.
pub fn new_token() -> String {
    hex::encode(crate::ids::random_bytes::<16>())
}

/// A token names files: 32 hex digits, nothing else reaches the file system.
pub fn valid_token(token: &str) -> bool {
    token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The file of an upload waiting for its import.
pub fn upload_path(data_dir: &Path, org: &str, token: &str) -> PathBuf {
    org_dir(data_dir, org).join(format!("{token}.upload"))
}

/// The refused rows of an import.
pub fn refused_path(data_dir: &Path, org: &str, token: &str) -> PathBuf {
    org_dir(data_dir, org).join(format!("{token}.refused.csv"))
}

/// The name the person's file had, kept beside its upload (`<token>.name`) so that the
/// waiting uploads can be listed by it.
pub fn name_path(data_dir: &Path, org: &str, token: &str) -> PathBuf {
    org_dir(data_dir, org).join(format!("{token}.name"))
}

/// The longest file name kept for the list of waiting uploads.
const NAME_CHARS: usize = 200;

/// Keeps `name` as the file name of upload `token` (cut to 200 characters); a failure
/// only loses the name from the list.
pub fn keep_name(data_dir: &Path, org: &str, token: &str, name: &str) {
    let name: String = name.chars().take(NAME_CHARS).collect();
    let path = name_path(data_dir, org, token);
    let written =
        create_private(&path).and_then(|mut f| io::Write::write_all(&mut f, name.as_bytes()));
    if let Err(e) = written {
        tracing::warn!(error = %e, "an upload's file name was not kept");
    }
}

/// The file name kept for upload `token` ("" when none was kept).
pub fn kept_name(data_dir: &Path, org: &str, token: &str) -> String {
    std::fs::read_to_string(name_path(data_dir, org, token)).unwrap_or_default()
}

/// An upload waiting for its import: a preview nobody imported (yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub token: String,
    /// The person's file name ("" when it was not kept).
    pub name: String,
    pub bytes: u64,
    /// When it was uploaded (last written).
    pub at: SystemTime,
}

/// The uploads waiting in `dir` (an organization's folder), oldest first.
pub fn waiting(dir: &Path) -> Vec<Waiting> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "upload") {
            continue;
        }
        let Some(token) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|t| valid_token(t))
        else {
            continue;
        };
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let name = std::fs::read_to_string(dir.join(format!("{token}.name"))).unwrap_or_default();
        out.push(Waiting {
            token: token.to_string(),
            name,
            bytes: meta.len(),
            at: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        });
    }
    out.sort_by(|a, b| (a.at, &a.token).cmp(&(b.at, &b.token)));
    out
}

/// Removes upload `token` of `org` and its kept name: answers whether it was waiting.
pub fn discard(data_dir: &Path, org: &str, token: &str) -> bool {
    if !valid_token(token) {
        return false;
    }
    let _ = std::fs::remove_file(name_path(data_dir, org, token));
    std::fs::remove_file(upload_path(data_dir, org, token)).is_ok()
}

/// The right to upload into an organization's folder: one upload at a time each, so
/// that the count of waiting uploads and the quota are checked against what is on disk
/// (two uploads at once would both pass). Held for the upload's duration.
pub struct UploadTurn {
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

/// The turn to upload into `dir`, or `None` when another upload into it is under way.
pub fn upload_turn(dir: &Path) -> Option<UploadTurn> {
    type Turns = std::sync::Mutex<
        std::collections::HashMap<PathBuf, std::sync::Arc<tokio::sync::Mutex<()>>>,
    >;
    static TURNS: std::sync::OnceLock<Turns> = std::sync::OnceLock::new();
    let turns = TURNS.get_or_init(Default::default);
    let lock = {
        let mut turns = turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        turns.entry(dir.to_path_buf()).or_default().clone()
    };
    lock.try_lock_owned()
        .ok()
        .map(|guard| UploadTurn { _guard: guard })
}

/// Creates `path` (new, mode 0600), and its folders (mode 0700) when missing.
pub fn create_private(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// What an organization's folder holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uploads waiting for their import.
    pub uploads: usize,
    /// Bytes of all its files.
    pub bytes: u64,
}

/// The usage of `dir` (an organization's folder; none yet: nothing used).
pub fn usage(dir: &Path) -> Usage {
    let mut usage = Usage::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return usage;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        usage.bytes += meta.len();
        if entry.path().extension().is_some_and(|e| e == "upload") {
            usage.uploads += 1;
        }
    }
    usage
}

/// Removes every import file last written more than [`KEEP`] ago, in every
/// organization's folder under `root`; answers how many.
pub fn sweep(root: &Path) -> usize {
    let mut removed = 0;
    let Ok(orgs) = std::fs::read_dir(root) else {
        return 0;
    };
    for org in orgs.flatten() {
        let Ok(files) = std::fs::read_dir(org.path()) else {
            continue;
        };
        for file in files.flatten() {
            let old = file
                .metadata()
                .ok()
                .filter(std::fs::Metadata::is_file)
                .and_then(|m| m.modified().ok())
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > KEEP);
            if old && std::fs::remove_file(file.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_private_counted_and_swept_when_old() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let token = new_token();
        assert!(valid_token(&token) && !valid_token("../x"));
        let upload = upload_path(dir.path(), "org1", &token);
        std::io::Write::write_all(&mut create_private(&upload).unwrap(), b"abc").unwrap();
        keep_name(dir.path(), "org1", &token, "leads.csv");
        let listed = waiting(&org_dir(dir.path(), "org1"));
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].name.as_str(), listed[0].bytes), ("leads.csv", 3));
        let refused = refused_path(dir.path(), "org1", &token);
        std::io::Write::write_all(&mut create_private(&refused).unwrap(), b"de").unwrap();
        let mode = std::fs::metadata(&upload).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let org = org_dir(dir.path(), "org1");
        assert_eq!(
            usage(&org),
            Usage {
                uploads: 1,
                bytes: 14
            }
        );
        assert_eq!(sweep(&root(dir.path())), 0, "young files stay");
        let old = SystemTime::now() - KEEP - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&upload)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(sweep(&root(dir.path())), 1);
        assert!(!upload.exists() && refused.exists());
        let other = new_token();
        let path = upload_path(dir.path(), "org1", &other);
        std::io::Write::write_all(&mut create_private(&path).unwrap(), b"x").unwrap();
        assert!(discard(dir.path(), "org1", &other));
        assert!(!path.exists() && waiting(&org).is_empty());
        assert!(!discard(dir.path(), "org1", &other), "once");
        assert!(!discard(dir.path(), "org1", "../x"));
    }

    #[test]
    fn one_upload_at_a_time_per_organization() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (org_dir(dir.path(), "a"), org_dir(dir.path(), "b"));
        let turn = upload_turn(&a).expect("the first upload");
        assert!(upload_turn(&a).is_none(), "a second waits its turn");
        assert!(upload_turn(&b).is_some(), "another organization does not");
        drop(turn);
        assert!(upload_turn(&a).is_some());
    }
}
