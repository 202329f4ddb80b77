//! `engaged init`, `backup`, `restore`, `check` and `recover`: the operator's side of
//! the store's maintenance functions, with or without a running server.

use std::path::{Path, PathBuf};

use crate::admin::{self, administer, AdminRequest, BackupDone, CheckDone};
use crate::config::database_path;
use crate::store::{check_file, check_stopped, recover_accepting_loss, OpenError, Store};

/// Creates the data directory (mode 0700) and an empty database (0600) where there is
/// none; a directory that has one is left alone.
pub fn init(data_dir: &Path) -> Result<(), String> {
    let db = database_path(data_dir);
    if db.exists() {
        eprintln!("{} already exists: nothing to do", db.display());
        return Ok(());
    }
    crate::config::create_data_dir(data_dir)?;
    Store::open(&db).map_err(|e| format!("cannot create {}: {e}", db.display()))?;
    eprintln!("created {}", db.display());
    Ok(())
}

/// Backs up through the running server (it holds the lock), or from the file.
pub fn backup(data_dir: &Path, target: &Path) -> Result<(), String> {
    let target = absolute(target)?;
    let done: BackupDone = administer(
        data_dir,
        AdminRequest::Backup {
            path: target.clone(),
        },
    )?;
    eprintln!("backed up {} rows to {}", done.rows, target.display());
    Ok(())
}

/// Copies a checked backup into a data directory that has no database yet.
pub fn restore(data_dir: &Path, source: &Path) -> Result<(), String> {
    let db = database_path(data_dir);
    if db.exists() {
        return Err(format!(
            "{} already exists: restore only into an empty data directory (stop the server, move the old files engaged.redb and engaged.wal away)",
            db.display()
        ));
    }
    // A write-ahead log left without its database holds another database's batches:
    // opened with the backup, it would apply them to it.
    let wal = crate::store::wal_path(&db);
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        return Err(format!(
            "{} is left from a database that is no longer there: move it away with that database before restoring",
            wal.display()
        ));
    }
    // The error names the file already.
    let problems = check_file(source).map_err(|e| e.to_string_for_logs())?;
    if !problems.is_empty() {
        return Err(format!(
            "{} is not a sound backup:\n  {}",
            source.display(),
            problems.join("\n  ")
        ));
    }
    crate::config::create_data_dir(data_dir)?;
    // Copy beside the target and rename, so a crash never leaves half a database.
    let partial = db.with_extension("redb.restoring");
    std::fs::copy(source, &partial)
        .map_err(|e| format!("cannot copy to {}: {e}", partial.display()))?;
    std::fs::set_permissions(
        &partial,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .map_err(|e| format!("cannot restrict {}: {e}", partial.display()))?;
    std::fs::File::open(&partial)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("cannot sync {}: {e}", partial.display()))?;
    std::fs::rename(&partial, &db)
        .map_err(|e| format!("cannot rename to {}: {e}", db.display()))?;
    // Opening checks the schema version (and migrates an older backup).
    Store::open(&db).map_err(|e| format!("restored, but the database does not open: {e}"))?;
    eprintln!("restored {} into {}", source.display(), db.display());
    Ok(())
}

/// Checks the stopped server's file fully, or a running server's invariants.
pub fn check(data_dir: &Path) -> Result<(), String> {
    let running = admin::call_socket(data_dir, &AdminRequest::Check)
        .map_err(|e| format!("admin socket: {e}"))?;
    let (problems, shared, notices): (Vec<String>, Vec<String>, Vec<String>) = match running {
        Some(response) => {
            eprintln!("the server is running: checking the store's invariants (stop it to run redb's integrity check too)");
            match (response.ok, response.error) {
                (Some(v), _) => {
                    let done = serde_json::from_value::<CheckDone>(v)
                        .map_err(|e| format!("unexpected answer: {e}"))?;
                    (done.problems, done.shared, done.notices)
                }
                (None, e) => return Err(e.unwrap_or_else(|| "empty answer".into())),
            }
        }
        None => {
            // The database and its log, as the next start would find them; neither is
            // written.
            let found =
                check_stopped(&database_path(data_dir)).map_err(|e| e.to_string_for_logs())?;
            for line in &found.log {
                println!("{line}");
            }
            (found.problems, found.shared, found.notices)
        }
    };
    if !shared.is_empty() {
        // Not damage: leads stored before duplicates were refused. Listed for merging.
        println!(
            "{} value(s) shared by live leads (stored before duplicates were refused):",
            shared.len()
        );
        for line in &shared {
            println!("  {line}");
        }
    }
    for line in &notices {
        // Not damage: an organization from before the consent policy keeps none.
        println!("{line}");
    }
    if problems.is_empty() {
        println!("ok");
        Ok(())
    } else {
        Err(format!(
            "{} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

/// Starts a database whose write-ahead log the server refuses from what it holds (server
/// stopped): the log's good batches applied, the answered batches it drops counted.
pub fn recover(data_dir: &Path, accept_loss: bool) -> Result<(), String> {
    if !accept_loss {
        return Err("recover drops the answered batches the write-ahead log cannot give back: run `engaged recover --accept-loss` to agree (`engaged check` says what would be lost)".into());
    }
    let db = database_path(data_dir);
    let lines = recover_accepting_loss(&db).map_err(|e| match e {
        OpenError::InUse => format!(
            "{} is in use: stop the server before recovering",
            db.display()
        ),
        OpenError::Other(msg) | OpenError::Refused(msg) => msg,
    })?;
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// The server resolves paths from its own working directory: send it an absolute one.
fn absolute(path: &Path) -> Result<PathBuf, String> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))
}
