//! `engaged follow --from s3://bucket/prefix --data-dir DIR`: a warm standby. It
//! restores the replica into the empty `DIR` as `restore` does, then polls it (one
//! listing every `sync_interval`, at least a second apart) and applies each new
//! segment, verified as a restore verifies it; when the primary starts a new generation
//! it restores that generation's snapshot in place. While it runs it holds the
//! database open, so no `engaged serve` can start on `DIR`; stopping it (SIGTERM,
//! SIGINT) and starting `engaged serve` there makes the standby the primary. Where it
//! is (the generation, the next batch) is kept beside the database in
//! `replica-follow.json`, so a restarted `follow` goes on from there.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::format::Generation;
use super::restore::{apply_segments, restore};
use super::{upload, Bucket};
use crate::config::{database_path, ReplicaConfig};

/// Where a standby is in the replica.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Position {
    generation: String,
    next: u64,
    db_id: String,
}

fn position_path(data_dir: &Path) -> PathBuf {
    data_dir.join("replica-follow.json")
}

fn save(data_dir: &Path, position: &Position) -> Result<(), String> {
    let path = position_path(data_dir);
    let partial = path.with_extension("json.partial");
    let text = serde_json::to_vec(position).map_err(|e| e.to_string())?;
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn load(data_dir: &Path) -> Result<Option<Position>, String> {
    let path = position_path(data_dir);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Follows the replica into `data_dir` until SIGTERM or SIGINT.
pub fn run(settings: &ReplicaConfig, data_dir: &Path) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(follow(settings, data_dir))
}

async fn follow(settings: &ReplicaConfig, data_dir: &Path) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|e| format!("cannot watch SIGINT: {e}"))?;
    let bucket = Bucket::open(settings)?;
    let mut position = match load(data_dir)? {
        Some(position) => position,
        None => first_restore(settings, data_dir).await?,
    };
    let db_path = database_path(data_dir);
    let mut db = Some(open(&db_path)?);
    let every = settings.sync_interval.max(Duration::from_secs(1));
    eprintln!(
        "following {} into {} (generation {}, next batch {})",
        settings.url,
        data_dir.display(),
        position.generation,
        position.next
    );
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            _ = tokio::time::sleep(every) => {}
        }
        match catch_up(&bucket, settings, data_dir, &mut db, &mut position).await {
            Ok(()) => {}
            Err(e) => eprintln!("follow: {e}; trying again"),
        }
        if db.is_none() {
            db = Some(open(&db_path)?);
        }
    }
    drop(db);
    eprintln!(
        "stopped following at generation {}, batch {}: `engaged serve` on {} makes it the primary",
        position.generation,
        position.next.saturating_sub(1),
        data_dir.display()
    );
    Ok(())
}

fn open(db_path: &Path) -> Result<redb::Database, String> {
    redb::Database::open(db_path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => format!(
            "{} is in use (is `engaged serve` running on it?)",
            db_path.display()
        ),
        e => format!("{}: {e}", db_path.display()),
    })
}

async fn first_restore(settings: &ReplicaConfig, data_dir: &Path) -> Result<Position, String> {
    let restored = restore(settings, data_dir, None).await.map_err(|e| {
        format!("{e} (follow starts in an empty directory, or one it followed into)")
    })?;
    let position = Position {
        generation: restored.generation,
        next: restored.last_seq + 1,
        db_id: hex::encode(restored.db_id),
    };
    save(data_dir, &position)?;
    Ok(position)
}

/// One poll: the new segments of the generation followed, or the newest generation
/// restored in place when the primary started one.
async fn catch_up(
    bucket: &Bucket,
    settings: &ReplicaConfig,
    data_dir: &Path,
    db: &mut Option<redb::Database>,
    position: &mut Position,
) -> Result<(), String> {
    let generations = upload::list(bucket).await?;
    let current = Generation::parse(&position.generation).ok_or_else(|| {
        format!(
            "replica-follow.json names no generation: {}",
            position.generation
        )
    })?;
    let newest = generations
        .iter()
        .rev()
        .find(|(_, names)| names.iter().any(|n| n == super::SNAPSHOT));
    if let Some((newest, _)) = newest.filter(|(g, _)| *g > current) {
        // The primary started again (or took a snapshot): restore that one in place.
        let fresh = data_dir.with_extension("follow-next");
        let _ = std::fs::remove_dir_all(&fresh);
        let restored = restore(settings, &fresh, None).await?;
        db.take();
        for name in ["engaged.redb", "engaged.wal"] {
            let from = fresh.join(name);
            if from.exists() {
                std::fs::rename(&from, data_dir.join(name))
                    .map_err(|e| format!("cannot move {}: {e}", from.display()))?;
            }
        }
        let _ = std::fs::remove_dir_all(&fresh);
        *position = Position {
            generation: restored.generation,
            next: restored.last_seq + 1,
            db_id: hex::encode(restored.db_id),
        };
        save(data_dir, position)?;
        eprintln!(
            "generation {}: up to batch {}, restored from its snapshot (newest {})",
            position.generation,
            position.next - 1,
            newest.name()
        );
        return Ok(());
    }
    let Some((_, names)) = generations.iter().find(|(g, _)| *g == current) else {
        return Err(format!(
            "generation {} is gone from the replica",
            position.generation
        ));
    };
    let Some(db) = db.as_ref() else {
        return Ok(());
    };
    let db_id: [u8; 16] = hex::decode(&position.db_id)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("replica-follow.json names no database")?;
    let applied =
        apply_segments(bucket, db, current, names, db_id, position.next, i64::MAX).await?;
    if applied.batches > 0 {
        position.next = applied.next;
        save(data_dir, position)?;
        eprintln!(
            "generation {}: up to batch {}, {} new",
            position.generation,
            position.next - 1,
            applied.batches
        );
    }
    Ok(())
}
