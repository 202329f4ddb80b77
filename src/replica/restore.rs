//! `engaged restore --from s3://bucket/prefix [--at TIME]`: the latest generation
//! whose snapshot was taken at or before `--at` (or the latest), its snapshot written
//! as the data directory's database, then its segments applied in order, each batch
//! committed at or before `--at`. Every object's checksums, format, kind, database and
//! generation are verified, and the segments must follow one another without a gap:
//! anything else refuses the restore, in words, and leaves the directory as it was.

use std::path::Path;

use object_store::ObjectStoreExt;

use super::format::{self, Generation, Kind};
use super::{upload, Bucket, SNAPSHOT};
use crate::config::{database_path, ReplicaConfig};

/// What a restore put in the data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub generation: String,
    /// The last batch applied (the snapshot's own when none followed it).
    pub last_seq: u64,
    /// Batches applied after the snapshot.
    pub batches: u64,
    /// When the last write restored was committed (ms since the epoch).
    pub last_write_ms: i64,
    pub leads: u64,
    /// The database the replica names (its segments must name it too).
    pub db_id: [u8; 16],
}

/// Restores into `data_dir`, which must be empty or missing, and prints what it did.
pub fn run(settings: &ReplicaConfig, data_dir: &Path, at_ms: Option<i64>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let restored = runtime.block_on(restore(settings, data_dir, at_ms))?;
    let last = chrono::DateTime::from_timestamp_millis(restored.last_write_ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| restored.last_write_ms.to_string());
    println!("generation {}", restored.generation);
    println!("last write {last}");
    println!("leads {}", restored.leads);
    eprintln!(
        "restored {} into {}: the snapshot and {} batch(es) after it, up to batch {}",
        settings.url,
        data_dir.display(),
        restored.batches,
        restored.last_seq
    );
    Ok(())
}

/// Whether `dir` is missing or holds nothing.
fn is_empty(dir: &Path) -> Result<bool, String> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(format!("cannot read {}: {e}", dir.display())),
    }
}

pub(super) async fn fetch(
    bucket: &Bucket,
    generation: Generation,
    name: &str,
) -> Result<Vec<u8>, String> {
    let path = bucket.path(&format!("{}/{name}", generation.name()));
    let got = bucket
        .store
        .get(&path)
        .await
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    let bytes = got
        .bytes()
        .await
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    Ok(bytes.to_vec())
}

/// Restores the replica into `data_dir` (empty or missing).
pub async fn restore(
    settings: &ReplicaConfig,
    data_dir: &Path,
    at_ms: Option<i64>,
) -> Result<Restored, String> {
    if !is_empty(data_dir)? {
        return Err(format!(
            "{} is not empty: restore only into an empty or new data directory",
            data_dir.display()
        ));
    }
    let bucket = Bucket::open(settings)?;
    let generations = upload::list(&bucket)
        .await
        .map_err(|e| format!("cannot list {}: {e}", settings.url))?;
    let at = at_ms.unwrap_or(i64::MAX);
    // The newest generation with a snapshot taken at or before `at`.
    let mut chosen = None;
    for (generation, names) in generations.iter().rev() {
        if generation.started_ms as i64 > at || !names.iter().any(|n| n == SNAPSHOT) {
            continue;
        }
        let object = fetch(&bucket, *generation, SNAPSHOT).await?;
        let (header, body) = format::decode(&object, bucket.key.as_ref())
            .map_err(|e| format!("the snapshot of generation {} {e}", generation.name()))?;
        if header.kind != Kind::Snapshot || header.generation != *generation {
            return Err(format!(
                "the snapshot of generation {} is not that generation's snapshot",
                generation.name()
            ));
        }
        if header.written_ms <= at {
            chosen = Some((*generation, names.clone(), header, body));
            break;
        }
    }
    let Some((generation, names, snapshot, body)) = chosen else {
        return Err(match at_ms {
            Some(_) => format!("{} holds no snapshot taken at or before --at", settings.url),
            None => format!("{} holds no snapshot", settings.url),
        });
    };
    crate::config::create_data_dir(data_dir)?;
    let db_path = database_path(data_dir);
    let partial = db_path.with_extension("redb.restoring");
    let done = apply(&bucket, &partial, generation, &names, &snapshot, &body, at).await;
    let restored = match done {
        Ok(restored) => restored,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, &db_path)
        .map_err(|e| format!("cannot rename to {}: {e}", db_path.display()))?;
    // Opening checks the schema version (and migrates an older copy), makes the new
    // database's id and log, and records a clean stop.
    let store = crate::store::Store::open(&db_path)
        .map_err(|e| format!("restored, but the database does not open: {e}"))?;
    store.shutdown();
    Ok(restored)
}

/// Writes a snapshot's database file to `partial`: its body itself (as the first builds
/// uploaded it), or its parts fetched one at a time, each verified as the generation's
/// part of this database in order, the whole checked against the length and SHA-256
/// the snapshot names: memory holds one part.
async fn write_snapshot(
    bucket: &Bucket,
    partial: &Path,
    generation: Generation,
    snapshot: &format::Header,
    body: &[u8],
) -> Result<(), String> {
    let Some(parts) = format::Parts::read(body) else {
        return write_private(partial, body);
    };
    use sha2::Digest;
    use std::io::Write;
    let mut file = create_private(partial)?;
    let (mut hash, mut len) = (sha2::Sha256::new(), 0u64);
    for index in 0..parts.count {
        let name = format::part_name(index);
        let what = format!("snapshot part {}/{name}", generation.name());
        let object = fetch(bucket, generation, &name).await?;
        let (header, plain) =
            format::decode(&object, bucket.key.as_ref()).map_err(|e| format!("{what} {e}"))?;
        if header.kind != Kind::Part || header.generation != generation || header.first != index {
            return Err(format!(
                "{what} is not that part of the generation's snapshot"
            ));
        }
        if header.db_id != snapshot.db_id {
            return Err(format!("{what} is another database's"));
        }
        hash.update(&plain);
        len += plain.len() as u64;
        file.write_all(&plain)
            .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    }
    if len != parts.file_len || hash.finalize().as_slice() != parts.sha256 {
        return Err(format!(
            "the snapshot of generation {} does not join into the file it names (a part is altered or missing)",
            generation.name()
        ));
    }
    file.sync_all()
        .map_err(|e| format!("cannot sync {}: {e}", partial.display()))
}

/// Writes the snapshot to `partial` and applies the segments up to `at`.
async fn apply(
    bucket: &Bucket,
    partial: &Path,
    generation: Generation,
    names: &[String],
    snapshot: &format::Header,
    body: &[u8],
    at: i64,
) -> Result<Restored, String> {
    write_snapshot(bucket, partial, generation, snapshot, body).await?;
    let db = redb::Database::open(partial)
        .map_err(|e| format!("the snapshot is not a database: {e}"))?;
    let applied = apply_segments(
        bucket,
        &db,
        generation,
        names,
        snapshot.db_id,
        snapshot.last + 1,
        at,
    )
    .await?;
    let (batches, last_write_ms) = (
        applied.batches,
        applied.last_write_ms.unwrap_or(snapshot.written_ms),
    );
    let leads = crate::store::lead_count(&db).map_err(|e| e.to_string_for_logs())?;
    drop(db);
    std::fs::File::open(partial)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("cannot sync {}: {e}", partial.display()))?;
    Ok(Restored {
        generation: generation.name(),
        last_seq: snapshot.last + batches,
        batches,
        last_write_ms,
        leads,
        db_id: snapshot.db_id,
    })
}

/// What [`apply_segments`] applied.
pub(super) struct Applied {
    pub batches: u64,
    /// The next batch the generation's segments must start with.
    pub next: u64,
    /// When the last batch applied was committed.
    pub last_write_ms: Option<i64>,
}

/// The most batch bytes one transaction applies: segments are applied together (one
/// commit, one sync of the database for all of them) until they reach it.
const APPLY_BYTES: usize = 64 << 20;

/// Applies `generation`'s segments (of `names`) from batch `next` on, each verified,
/// up to the batches committed at `at`: each segment is fetched and verified in turn,
/// and their batches are committed together, a transaction per [`APPLY_BYTES`] (a
/// standby catching up or a restore syncs the database once per transaction, not once
/// per segment). An error commits nothing of the transaction it falls in.
pub(super) async fn apply_segments(
    bucket: &Bucket,
    db: &redb::Database,
    generation: Generation,
    names: &[String],
    db_id: [u8; 16],
    mut next: u64,
    at: i64,
) -> Result<Applied, String> {
    let mut last_write_ms = None;
    let mut batches = 0u64;
    // Verified batches not yet committed, and their bytes.
    let mut pending: Vec<Vec<u8>> = Vec::new();
    let mut pending_bytes = 0usize;
    let commit = |pending: &mut Vec<Vec<u8>>, bytes: &mut usize| -> Result<(), String> {
        if !pending.is_empty() {
            crate::store::apply_batches(db, pending.iter().map(Vec::as_slice))
                .map_err(|e| format!("applying segments of {}: {e}", generation.name()))?;
        }
        pending.clear();
        *bytes = 0;
        Ok(())
    };
    for name in names.iter().filter(|n| n.ends_with(".seg")) {
        // A segment wholly before `next` is applied already.
        let first: Option<u64> = name.trim_end_matches(".seg").parse().ok();
        if first.is_some_and(|first| first < next) {
            continue;
        }
        let object = fetch(bucket, generation, name).await?;
        let what = format!("segment {}/{name}", generation.name());
        let (header, plain) =
            format::decode(&object, bucket.key.as_ref()).map_err(|e| format!("{what} {e}"))?;
        if header.kind != Kind::Segment || header.generation != generation {
            return Err(format!("{what} is not a segment of that generation"));
        }
        if header.db_id != db_id {
            return Err(format!("{what} is another database's"));
        }
        if header.first != next {
            return Err(format!(
                "{what} starts at batch {} where batch {next} comes next: a segment is missing",
                header.first
            ));
        }
        let found = format::batches(&plain).map_err(|e| format!("{what} {e}"))?;
        let mut past = false;
        let mut seq = next;
        for batch in &found {
            if batch.seq != seq {
                return Err(format!("{what} holds batch {} out of order", batch.seq));
            }
            if batch.at_ms > at {
                past = true;
                break;
            }
            seq += 1;
            last_write_ms = Some(batch.at_ms);
            pending_bytes += batch.ops.len();
            pending.push(batch.ops.to_vec());
        }
        if !past && seq != header.last + 1 {
            return Err(format!("{what} does not hold the batches its header names"));
        }
        batches += seq - next;
        next = seq;
        if past {
            break;
        }
        if pending_bytes >= APPLY_BYTES {
            commit(&mut pending, &mut pending_bytes)?;
        }
    }
    commit(&mut pending, &mut pending_bytes)?;
    Ok(Applied {
        batches,
        next,
        last_write_ms,
    })
}

/// A new file readable by its owner only.
fn create_private(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes `bytes` to a new file readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let mut file = create_private(path)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
