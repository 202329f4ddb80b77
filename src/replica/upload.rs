//! The uploader: a tokio task that, every `sync_interval` (sooner when the spool
//! fills), takes what the spool holds and uploads it as the current generation's next
//! segment; makes a snapshot and starts a new generation at its start, every
//! `snapshot_interval` and whenever the chain breaks; and deletes what `retention`
//! no longer keeps. A failed upload is counted and logged once until one succeeds;
//! its batches wait (bounded by `spool_max`, past which they are dropped and a
//! snapshot follows); a failed snapshot is tried again after a wait that doubles up
//! to a minute. It never blocks the writer: only the spool joins the two.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use object_store::{ObjectStoreExt, PutPayload};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::format::{self, Batch, Generation, Header, Kind};
use super::spool::{Entry, Spool};
use super::{segment_name, Bucket, SNAPSHOT};
use crate::config::ReplicaConfig;
use crate::metrics::ReplicaStatus;
use crate::store::Store;

/// How long the last upload may take once the server stops.
const LAST_UPLOAD: Duration = Duration::from_secs(20);

/// A running uploader: its status, and how to stop it after the store stopped.
pub struct Running {
    pub status: Arc<ReplicaStatus>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Uploads what the spool still holds (bounded in time), then ends the task. Call
    /// after the store's writer stopped: no batch comes after.
    pub async fn finish(self) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout(LAST_UPLOAD, &mut task).await.is_err() {
            tracing::warn!("the replica's last upload did not finish in time");
            task.abort();
        }
    }
}

pub(super) fn spawn(
    store: Arc<Store>,
    bucket: Bucket,
    spool: Arc<Spool>,
    status: Arc<ReplicaStatus>,
    settings: ReplicaConfig,
    scratch: PathBuf,
) -> Running {
    let (stop, stopped) = watch::channel(false);
    let uploader = Uploader {
        store,
        bucket,
        spool,
        status: status.clone(),
        settings,
        scratch,
        generation: None,
        next_seq: 0,
        pending: Vec::new(),
        need_snapshot: true,
        // Until the first snapshot, every batch waits for it: the lag counts from now.
        broken_since_ms: Some(now_ms()),
        last_snapshot: Instant::now(),
        failing: false,
        snapshot_retry: None,
    };
    let task = tokio::spawn(uploader.run(stopped));
    Running { status, stop, task }
}

struct Uploader {
    store: Arc<Store>,
    bucket: Bucket,
    spool: Arc<Spool>,
    status: Arc<ReplicaStatus>,
    settings: ReplicaConfig,
    /// Where a snapshot's copy is made before upload (the data directory).
    scratch: PathBuf,
    generation: Option<Generation>,
    /// The sequence number the next segment must start with.
    next_seq: u64,
    /// Batches of the current generation not yet uploaded, in order.
    pending: Vec<Batch>,
    need_snapshot: bool,
    /// When the chain broke (ms since the epoch), until a snapshot mends it.
    broken_since_ms: Option<i64>,
    last_snapshot: Instant,
    /// Whether the last attempt failed (failures are logged once until one succeeds).
    failing: bool,
    /// After a failed snapshot: when the next may be tried, and the wait after that
    /// (doubling to [`SNAPSHOT_RETRY_MAX`]): a copy of the whole store is not made
    /// every second while the object store does not answer.
    snapshot_retry: Option<(Instant, Duration)>,
}

/// The longest wait between two tries of a snapshot that failed.
const SNAPSHOT_RETRY_MAX: Duration = Duration::from_secs(60);

fn now_ms() -> i64 {
    crate::time::now_micros() / 1000
}

/// An object to upload from its sealed header and stored body, not joined.
fn payload(head: [u8; format::HEADER_LEN], stored: Vec<u8>) -> PutPayload {
    [
        bytes::Bytes::copy_from_slice(&head),
        bytes::Bytes::from(stored),
    ]
    .into_iter()
    .collect()
}

impl Uploader {
    async fn run(mut self, mut stopped: watch::Receiver<bool>) {
        // Rounds start every `sync_interval` however long one took (a slow upload
        // does not stretch the interval), and sooner when the spool fills.
        let mut rounds = tokio::time::interval(self.settings.sync_interval);
        rounds.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        rounds.tick().await;
        loop {
            let stop = *stopped.borrow();
            if !stop {
                tokio::select! {
                    _ = rounds.tick() => {}
                    _ = self.spool.wake.notified() => {}
                    changed = stopped.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                }
            }
            self.round().await;
            if stop {
                return;
            }
        }
    }

    /// One round: take the spool, upload a segment, snapshot when due.
    async fn round(&mut self) {
        let taken = self.spool.take();
        if taken.overflowed {
            self.broke("the spool is full (the object store does not take uploads): replication pauses until a new snapshot");
        }
        for entry in taken.entries {
            match entry {
                // Below `next_seq`: the last snapshot holds it already.
                Entry::Batch(batch) if !self.need_snapshot && batch.seq >= self.next_seq => {
                    self.pending.push(batch)
                }
                // The next snapshot holds it.
                Entry::Batch(_) => {}
                Entry::Break => {
                    self.broke("a batch too large to record committed: a new snapshot follows")
                }
            }
        }
        if !self.pending.is_empty() && self.generation.is_some() {
            match self.upload_segment().await {
                Ok(()) => self.succeeded(),
                Err(e) => {
                    self.failed("upload a segment", &e);
                    let bytes: u64 = self.pending.iter().map(|b| b.ops.len() as u64 + 20).sum();
                    if self.need_snapshot || bytes > self.settings.spool_max {
                        // The next snapshot holds them.
                        self.pending.clear();
                        if !self.need_snapshot {
                            self.broke("the batches waiting outgrew spool_max: replication pauses until a new snapshot");
                        }
                    }
                }
            }
        }
        let due =
            self.need_snapshot || self.last_snapshot.elapsed() >= self.settings.snapshot_interval;
        let waiting = self
            .snapshot_retry
            .is_some_and(|(at, _)| Instant::now() < at);
        if due && !waiting {
            match self.snapshot().await {
                Ok(()) => {
                    self.snapshot_retry = None;
                    self.succeeded();
                    if let Err(e) = self.retain().await {
                        self.failed("apply retention", &e);
                    }
                }
                Err(e) => {
                    let wait = self
                        .snapshot_retry
                        .map_or(self.settings.sync_interval, |(_, wait)| {
                            (wait * 2).min(SNAPSHOT_RETRY_MAX)
                        });
                    self.snapshot_retry = Some((Instant::now() + wait, wait));
                    self.failed("make a snapshot", &e);
                }
            }
        }
        let oldest = self
            .pending
            .first()
            .map(|b| b.at_ms)
            .into_iter()
            .chain(self.broken_since_ms)
            .min();
        self.status
            .oldest_pending_ms
            .store(oldest.map_or(0, |ms| ms.max(1) as u64), Ordering::Relaxed);
        let pending: u64 = self.pending.iter().map(|b| b.ops.len() as u64 + 20).sum();
        self.status
            .spooled_bytes
            .store(pending + self.spool.bytes(), Ordering::Relaxed);
    }

    /// The chain cannot go on: a snapshot must start a new generation.
    fn broke(&mut self, why: &str) {
        if !self.need_snapshot {
            tracing::warn!(reason = why, "replica chain broken");
        }
        if why.contains("spool") {
            self.status.errors_total.fetch_add(1, Ordering::Relaxed);
            self.status.update(|t| t.paused = Some(why.to_string()));
        }
        self.need_snapshot = true;
        self.broken_since_ms.get_or_insert_with(now_ms);
    }

    fn succeeded(&mut self) {
        if self.failing {
            tracing::info!("the replica's uploads succeed again");
        }
        self.failing = false;
        self.status
            .synced_ms
            .store(now_ms() as u64, Ordering::Relaxed);
        self.status.update(|t| t.last_error = None);
    }

    fn failed(&mut self, what: &str, error: &str) {
        self.status.errors_total.fetch_add(1, Ordering::Relaxed);
        let message = format!("cannot {what}: {error}");
        if !self.failing {
            tracing::error!(error = %message, "replica upload failed; serving goes on, the batches wait");
        }
        self.failing = true;
        self.status.update(|t| t.last_error = Some(message));
    }

    async fn put(&self, rest: &str, object: PutPayload) -> Result<(), String> {
        let len = object.content_length() as u64;
        self.bucket
            .store
            .put(&self.bucket.path(rest), object)
            .await
            .map_err(|e| e.to_string())?;
        self.status.bytes_total.fetch_add(len, Ordering::Relaxed);
        Ok(())
    }

    async fn upload_segment(&mut self) -> Result<(), String> {
        let Some(generation) = self.generation else {
            return Ok(());
        };
        let (Some(first), Some(last)) = (self.pending.first(), self.pending.last()) else {
            return Ok(());
        };
        if first.seq != self.next_seq {
            let why = format!(
                "the batches go on at {} where {} was next",
                first.seq, self.next_seq
            );
            self.pending.clear();
            self.broke(&why);
            return Ok(());
        }
        let header = Header {
            kind: Kind::Segment,
            encrypted: self.bucket.key.is_some(),
            db_id: self.store.db_id().map_err(|e| e.to_string_for_logs())?,
            generation,
            first: first.seq,
            last: last.seq,
            written_ms: last.at_ms,
        };
        let last_seq = last.seq;
        // Compressing, hashing and sealing a second's batches takes milliseconds: off
        // the runtime's workers, which serve requests.
        let batches = std::mem::take(&mut self.pending);
        let key = self.bucket.key.clone();
        let sealing = tokio::task::spawn_blocking(move || {
            let sealed = format::seal(&header, format::segment_body(&batches), key.as_ref());
            (sealed, batches)
        })
        .await;
        let (sealed, batches) = match sealing {
            Ok(done) => done,
            Err(e) => {
                // Its batches went with it: the next snapshot holds them.
                self.broke("a segment's sealing failed: a new snapshot follows");
                return Err(format!("the segment's sealing failed: {e}"));
            }
        };
        self.pending = batches;
        let (head, stored) = sealed?;
        let name = format!("{}/{}", generation.name(), segment_name(header.first));
        self.put(&name, payload(head, stored)).await?;
        self.pending.clear();
        self.next_seq = last_seq + 1;
        self.status.uploaded_seq.store(last_seq, Ordering::Relaxed);
        Ok(())
    }

    /// A consistent copy of the store as a new generation's snapshot. The spool's
    /// last sequence number is read before the copy's read transaction begins, so the
    /// copy holds at least every batch up to it: the generation's segments go on
    /// after it (a batch the copy holds already and a segment repeats is applied
    /// twice to the same effect: it writes whole rows).
    async fn snapshot(&mut self) -> Result<(), String> {
        let generation = Generation::new(now_ms().max(0) as u64);
        let base = self.spool.last_seq();
        let copy = self
            .scratch
            .join(format!(".replica-snapshot-{}.redb", generation.name()));
        let _ = std::fs::remove_file(&copy);
        let store = self.store.clone();
        let path = copy.clone();
        let made = tokio::task::spawn_blocking(move || -> Result<[u8; 16], String> {
            let id = store.db_id().map_err(|e| e.to_string_for_logs())?;
            store.backup_to(&path).map_err(|e| e.to_string_for_logs())?;
            Ok(id)
        })
        .await
        .map_err(|e| format!("the snapshot's copy failed: {e}"));
        let uploaded = match made {
            Ok(Ok(db_id)) => self.upload_parts(&copy, generation, base, db_id).await,
            Ok(Err(e)) | Err(e) => Err(e),
        };
        let _ = std::fs::remove_file(&copy);
        let copied = uploaded?;
        tracing::info!(generation = %generation.name(), seq = base, bytes = copied, "replica snapshot uploaded");
        self.generation = Some(generation);
        self.next_seq = base + 1;
        // Batches taken before `base` was read: the snapshot holds them.
        self.pending.retain(|b| b.seq > base);
        self.need_snapshot = false;
        self.broken_since_ms = None;
        self.last_snapshot = Instant::now();
        self.status
            .snapshot_ms
            .store(now_ms() as u64, Ordering::Relaxed);
        self.status.uploaded_seq.store(base, Ordering::Relaxed);
        self.status.update(|t| {
            t.generation = Some(generation.name());
            t.paused = None;
        });
        Ok(())
    }

    /// Uploads the database copy at `copy` as `generation`'s snapshot: its parts of at
    /// most `snapshot_part_bytes` each (read, sealed and sent one at a time, so memory
    /// holds one part), then the snapshot object naming them. Answers the file's length.
    async fn upload_parts(
        &self,
        copy: &std::path::Path,
        generation: Generation,
        base: u64,
        db_id: [u8; 16],
    ) -> Result<u64, String> {
        use sha2::Digest;
        let part_bytes = self.settings.snapshot_part_bytes.max(1);
        let file_len = std::fs::metadata(copy)
            .map_err(|e| format!("cannot read {}: {e}", copy.display()))?
            .len();
        let count = file_len.div_ceil(part_bytes).max(1);
        let header = |kind, first, last| Header {
            kind,
            encrypted: self.bucket.key.is_some(),
            db_id,
            generation,
            first,
            last,
            written_ms: now_ms(),
        };
        let file = std::fs::File::open(copy)
            .map_err(|e| format!("cannot read {}: {e}", copy.display()))?;
        let mut state = (file, sha2::Sha256::new());
        for index in 0..count {
            let key = self.bucket.key.clone();
            let part = header(Kind::Part, index, count - 1);
            let at = copy.display().to_string();
            // The read, hash and seal of a part are blocking work: off the runtime.
            let (sealed, back) = tokio::task::spawn_blocking(move || {
                use std::io::Read;
                let (mut file, mut hash) = state;
                let mut body = Vec::new();
                (&mut file)
                    .take(part_bytes)
                    .read_to_end(&mut body)
                    .map_err(|e| format!("cannot read {at}: {e}"))?;
                hash.update(&body);
                let sealed = format::seal(&part, body, key.as_ref())?;
                Ok::<_, String>((sealed, (file, hash)))
            })
            .await
            .map_err(|e| format!("the snapshot's part failed: {e}"))??;
            state = back;
            let (head, stored) = sealed;
            self.put(
                &format!("{}/{}", generation.name(), format::part_name(index)),
                payload(head, stored),
            )
            .await?;
        }
        let parts = format::Parts {
            count,
            file_len,
            sha256: state.1.finalize().into(),
        };
        let object = format::encode(
            &header(Kind::Snapshot, base, base),
            parts.encode(),
            self.bucket.key.as_ref(),
        )?;
        self.put(
            &format!("{}/{SNAPSHOT}", generation.name()),
            PutPayload::from(object),
        )
        .await?;
        Ok(file_len)
    }

    /// Deletes every generation whose successor's snapshot is older than
    /// `retention`: no point in time the retention keeps needs it.
    async fn retain(&self) -> Result<(), String> {
        let listed = list(&self.bucket).await?;
        let generations: Vec<Generation> = listed.iter().map(|(g, _)| *g).collect();
        let cutoff = now_ms() - self.settings.retention.as_millis() as i64;
        let mut doomed = std::collections::BTreeSet::new();
        for pair in generations.windows(2) {
            if (pair[1].started_ms as i64) < cutoff && Some(pair[0]) != self.generation {
                doomed.insert(pair[0]);
            }
        }
        for (generation, names) in listed {
            if !doomed.contains(&generation) {
                continue;
            }
            // The snapshot first: a generation being deleted is no longer one a
            // restore would choose, before its parts and segments go.
            let (snapshot, rest): (Vec<String>, Vec<String>) =
                names.into_iter().partition(|n| n == SNAPSHOT);
            for name in snapshot.into_iter().chain(rest) {
                self.bucket
                    .store
                    .delete(&self.bucket.path(&format!("{}/{name}", generation.name())))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            tracing::info!(generation = %generation.name(), "replica generation deleted by retention");
        }
        Ok(())
    }
}

/// The replica's generations, oldest first, each with its objects' names (the
/// snapshot's and the segments', sorted). Objects that are not the replica's are
/// left out.
pub(super) async fn list(bucket: &Bucket) -> Result<Vec<(Generation, Vec<String>)>, String> {
    let mut found: std::collections::BTreeMap<Generation, Vec<String>> = Default::default();
    let root = bucket.root();
    let mut objects = bucket.store.list(root.as_ref());
    while let Some(object) = objects.next().await {
        let object = object.map_err(|e| e.to_string())?;
        let location = object.location.to_string();
        let rest = bucket.relative(&location);
        let Some((generation, name)) = rest.split_once('/') else {
            continue;
        };
        let Some(generation) = Generation::parse(generation) else {
            continue;
        };
        if name == SNAPSHOT || name.ends_with(".seg") || name.ends_with(".part") {
            found.entry(generation).or_default().push(name.to_string());
        }
    }
    Ok(found
        .into_iter()
        .map(|(g, mut names)| {
            names.sort();
            (g, names)
        })
        .collect())
}
