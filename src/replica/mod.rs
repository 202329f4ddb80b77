//! Continuous replication to S3-compatible object storage (`[replica]`), and the
//! restore from it.
//!
//! The writer hands every committed batch's row operations (what a write-ahead log
//! record holds) to a bounded `spool` without waiting; an `upload` task
//! (tokio) takes them every `sync_interval` and uploads them as one numbered
//! segment. The replica is a list of *generations*, each a consistent snapshot (the
//! copy `engaged backup` makes) followed by the segments of the batches after it:
//!
//! ```text
//! <prefix>/<generation>/snapshot
//! <prefix>/<generation>/<first seq, 20 digits>.seg
//! ```
//!
//! A new generation starts at every start, every `snapshot_interval`, and whenever
//! the chain of batches cannot go on: a batch too large to record (a recording's
//! chunks), or batches dropped from a full spool. Every object carries a header
//! ([`format`](mod@format)) naming the database, the generation and its batches under checksums,
//! and is encrypted when `encryption_key_file` is set. `retention` deletes
//! generations whose successor's snapshot is older than it. [`restore`] reads it back:
//! the latest snapshot at or before a time, then its segments in order; [`follow`]
//! keeps doing so, a warm standby.
//!
//! The talking to S3 is `object_store`'s (SigV4, retries, multipart): nothing here
//! signs a request.

pub mod follow;
pub mod format;
pub mod restore;
mod spool;
mod upload;

use std::path::Path;
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore};

use crate::config::ReplicaConfig;
use crate::metrics::ReplicaStatus;
use crate::store::Store;

pub use upload::Running;

/// The bucket, under the replica's prefix.
pub struct Bucket {
    pub store: Arc<dyn ObjectStore>,
    /// The prefix (no slashes at its ends; may be empty).
    pub prefix: String,
    pub key: Option<format::Key>,
}

impl Bucket {
    /// The object store the settings name, and the key when one is set.
    pub fn open(settings: &ReplicaConfig) -> Result<Bucket, String> {
        let (bucket, prefix) = settings.bucket_and_prefix();
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(&settings.region)
            .with_client_options(
                ClientOptions::new()
                    .with_connect_timeout(std::time::Duration::from_secs(5))
                    .with_timeout(std::time::Duration::from_secs(60)),
            )
            .with_retry(object_store::RetryConfig {
                max_retries: 3,
                retry_timeout: std::time::Duration::from_secs(30),
                ..Default::default()
            });
        if let Some(endpoint) = &settings.endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"));
        }
        if let Some(id) = &settings.access_key_id {
            builder = builder.with_access_key_id(id);
        }
        if let Some(secret) = &settings.secret_access_key {
            builder = builder.with_secret_access_key(&secret.0);
        }
        let store = builder
            .build()
            .map_err(|e| format!("replica {}: {e}", settings.url))?;
        let key = match &settings.encryption_key_file {
            Some(path) => Some(read_key(path)?),
            None => None,
        };
        Ok(Bucket {
            store: Arc::new(store),
            prefix: prefix.to_string(),
            key,
        })
    }

    /// The object at `rest` under the prefix.
    pub fn path(&self, rest: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(rest)
        } else {
            ObjectPath::from(format!("{}/{rest}", self.prefix))
        }
    }

    /// The prefix itself, for listing.
    pub fn root(&self) -> Option<ObjectPath> {
        (!self.prefix.is_empty()).then(|| ObjectPath::from(self.prefix.as_str()))
    }

    /// An object's path relative to the prefix.
    pub fn relative<'a>(&self, path: &'a str) -> &'a str {
        if self.prefix.is_empty() {
            path
        } else {
            path.strip_prefix(self.prefix.as_str())
                .map_or(path, |rest| rest.trim_start_matches('/'))
        }
    }
}

/// The name of a generation's snapshot object.
pub const SNAPSHOT: &str = "snapshot";

/// A segment's object name: its first batch's sequence number.
pub fn segment_name(first: u64) -> String {
    format!("{first:020}.seg")
}

/// The key in a key file.
fn read_key(path: &Path) -> Result<format::Key, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("replica encryption_key_file {}: {e}", path.display()))?;
    format::Key::from_hex(&text)
        .map_err(|e| format!("replica encryption_key_file {}: {e}", path.display()))
}

/// Starts replicating `store` as `settings` say: the spool handed to the writer, the
/// uploader spawned (it makes the first snapshot at once). Nothing here waits for the
/// network.
pub fn start(
    store: Arc<Store>,
    settings: &ReplicaConfig,
    scratch: &Path,
) -> Result<Running, String> {
    let bucket = Bucket::open(settings)?;
    let status = Arc::new(ReplicaStatus::default());
    let spool = Arc::new(spool::Spool::new(settings.spool_max, status.clone()));
    if !store.set_replica_tap(spool.clone()) {
        return Err("replication is already running for this store".into());
    }
    status.update(|t| t.url = settings.url.clone());
    Ok(upload::spawn(
        store,
        bucket,
        spool,
        status,
        settings.clone(),
        scratch.to_path_buf(),
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::testkit::poll;
    use crate::testkit::seaweed::SeaweedFs;

    /// Waits (bounded) until the replica's generation is not `before`; returns it.
    async fn generation_after(status: &ReplicaStatus, before: Option<String>) -> String {
        poll("a new generation", Duration::from_secs(60), || {
            let now = status.text().generation;
            let before = before.clone();
            async move {
                match now {
                    Some(now) if Some(&now) != before.as_ref() => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            }
        })
        .await;
        status.text().generation.unwrap_or_default()
    }

    /// A batch too large to record (a recording's 5 MiB chunk) breaks the chain of
    /// segments: a new generation's snapshot holds it, the batches after it follow as
    /// segments, and a restore holds them all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_too_large_to_record_reaches_the_replica_by_a_new_snapshot() {
        use std::sync::atomic::Ordering::Relaxed;
        let weed = SeaweedFs::start().await;
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("engaged.redb")).unwrap());
        let settings = weed.config("bypass");
        let running = start(store.clone(), &settings, dir.path()).unwrap();
        let first = generation_after(&running.status, None).await;
        let chunk = vec![7u8; 5 << 20];
        let big = chunk.clone();
        store
            .write(move |tx| tx.put_recording_chunk("upload-1", 0, &big))
            .await
            .unwrap();
        let second = generation_after(&running.status, Some(first.clone())).await;
        assert!(second > first);
        store
            .write(|tx| tx.put_recording_chunk("upload-1", 1, b"tail"))
            .await
            .unwrap();
        let status = running.status.clone();
        poll("the last batch uploaded", Duration::from_secs(60), || {
            let (committed, uploaded) = (
                status.committed_seq.load(Relaxed),
                status.uploaded_seq.load(Relaxed),
            );
            async move {
                if uploaded >= committed {
                    Ok(())
                } else {
                    Err(format!("{uploaded} of {committed}"))
                }
            }
        })
        .await;
        store.shutdown();
        running.finish().await;

        let target = dir.path().join("restored");
        let restored = restore::restore(&settings, &target, None).await.unwrap();
        assert_eq!(restored.generation, second);
        assert!(restored.batches >= 1, "{restored:?}");
        let copy = Store::open(&crate::config::database_path(&target)).unwrap();
        let read = copy.read().unwrap();
        assert_eq!(read.recording_chunk("upload-1", 0).unwrap(), Some(chunk));
        assert_eq!(
            read.recording_chunk("upload-1", 1).unwrap(),
            Some(b"tail".to_vec())
        );
    }
}
