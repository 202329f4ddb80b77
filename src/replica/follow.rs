//! `engaged follow --from s3://bucket/prefix --data-dir DIR`: a warm standby. It
//! restores the replica into the empty `DIR` as `restore` does, then polls it (twice
//! per `sync_interval`, at least 500 ms apart, polls starting on that schedule however
//! long one took) and applies each new segment, verified as a restore verifies it. A
//! poll is one listing of the generation's objects after the last segment applied
//! and, only when that found no new segment, one of the prefix's generations (with a
//! delimiter): its cost does not grow with the replica's history, and a standby makes
//! two requests a second at the default `sync_interval` while the primary writes, four
//! while it is idle (its own `[replica]` `sync_interval` sets its pace); when the primary starts a new generation
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
use super::Bucket;
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

/// How often a standby polls: twice per `sync_interval` (the primary uploads once in
/// each), at most twice a second, so a batch waits at most half an interval for the
/// poll after its upload.
fn poll_every(sync_interval: Duration) -> Duration {
    (sync_interval / 2).max(MIN_POLL)
}

/// The shortest time between two polls (the request rate's bound).
const MIN_POLL: Duration = Duration::from_millis(500);

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
    let every = poll_every(settings.sync_interval);
    let mut polls = tokio::time::interval(every);
    polls.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
            _ = polls.tick() => {}
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

/// One poll: the new segments of the generation followed; when there are none, the
/// newest generation restored in place if the primary started one.
async fn catch_up(
    bucket: &Bucket,
    settings: &ReplicaConfig,
    data_dir: &Path,
    db: &mut Option<redb::Database>,
    position: &mut Position,
) -> Result<(), String> {
    let current = Generation::parse(&position.generation).ok_or_else(|| {
        format!(
            "replica-follow.json names no generation: {}",
            position.generation
        )
    })?;
    let names = names_after(bucket, current, position.next).await?;
    // Only a poll that found no new segment looks for a newer generation: the primary
    // starts one when it restarts (and every snapshot_interval), after which the
    // followed generation gets no more segments. A poll under load is one request.
    if !names.iter().any(|n| n.ends_with(".seg")) {
        if let Some(newest) = newer_snapshot(bucket, current).await? {
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
        if names.is_empty() && !has_snapshot(bucket, current).await? {
            return Err(format!(
                "generation {} is gone from the replica",
                position.generation
            ));
        }
    }
    let Some(db) = db.as_ref() else {
        return Ok(());
    };
    let db_id: [u8; 16] = hex::decode(&position.db_id)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("replica-follow.json names no database")?;
    let applied =
        apply_segments(bucket, db, current, &names, db_id, position.next, i64::MAX).await?;
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

/// The newest generation after `current` that holds its snapshot, if any: one listing
/// of the prefix's generations (with a delimiter, so segments are not listed), and a
/// `HEAD` of each newer one's snapshot, newest first.
async fn newer_snapshot(
    bucket: &Bucket,
    current: Generation,
) -> Result<Option<Generation>, String> {
    let root = bucket.root();
    let listed = bucket
        .store
        .list_with_delimiter(root.as_ref())
        .await
        .map_err(|e| e.to_string())?;
    let mut newer: Vec<Generation> = listed
        .common_prefixes
        .iter()
        .filter_map(|p| Generation::parse(bucket.relative(p.as_ref()).trim_end_matches('/')))
        .filter(|g| *g > current)
        .collect();
    newer.sort();
    for generation in newer.into_iter().rev() {
        if has_snapshot(bucket, generation).await? {
            return Ok(Some(generation));
        }
    }
    Ok(None)
}

/// Whether `generation`'s snapshot is in the replica.
async fn has_snapshot(bucket: &Bucket, generation: Generation) -> Result<bool, String> {
    let path = bucket.path(&format!("{}/{}", generation.name(), super::SNAPSHOT));
    use object_store::ObjectStoreExt;
    match bucket.store.head(&path).await {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// The names of `generation`'s objects after the segment that ends before batch
/// `next` (sorted): one listing that starts after the segments already applied, so a
/// poll costs the same on the first day as on the thirtieth.
async fn names_after(
    bucket: &Bucket,
    generation: Generation,
    next: u64,
) -> Result<Vec<String>, String> {
    use futures_util::StreamExt;
    let directory = bucket.path(&generation.name());
    // Every segment applied is named below `next`; start after the name of batch `next - 1`.
    let offset = bucket.path(&format!(
        "{}/{}",
        generation.name(),
        super::segment_name(next.saturating_sub(1))
    ));
    let mut names = Vec::new();
    let mut objects = bucket.store.list_with_offset(Some(&directory), &offset);
    while let Some(object) = objects.next().await {
        let object = object.map_err(|e| e.to_string())?;
        let location = object.location.to_string();
        if let Some((_, name)) = bucket.relative(&location).split_once('/') {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}
