//! A recording upload as a stream: bytes in, chunks written, the call's recording
//! swapped in at the end.
//!
//! The HTTP upload (`PUT /v1/calls/{id}/recording`) and, with voice, a recording
//! fetched from a provider both feed one of these. Bytes are hashed and counted as they
//! come, cut into `CHUNK_BYTES` chunks, and each chunk is its own write job with a few
//! in flight (never the whole file in memory, never a transaction held across network
//! reads). [`RecordingUpload::finish`] makes the upload the call's recording; dropping
//! an unfinished upload (an error, a dropped connection) discards what it stored.

use std::collections::VecDeque;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::domain::records::recordings::{self, Uploaded, CHUNK_BYTES};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::RecordingRecord;
use crate::store::QueuedWrite;
use crate::store::Store;

/// Chunk writes an upload keeps queued before it waits for the oldest.
const WRITES_IN_FLIGHT: usize = 4;

pub struct RecordingUpload {
    store: Arc<Store>,
    caller: Caller,
    call_id: String,
    /// `None` once finished: nothing left to discard.
    upload_id: Option<String>,
    max_bytes: u64,
    hasher: Sha256,
    size: u64,
    buffer: Vec<u8>,
    next_index: u64,
    in_flight: VecDeque<QueuedWrite<()>>,
}

impl RecordingUpload {
    /// Registers a new upload against an existing call (404 otherwise).
    pub async fn begin(
        store: Arc<Store>,
        caller: Caller,
        call_id: &str,
        max_bytes: u64,
    ) -> Result<RecordingUpload> {
        let upload_id = crate::ids::generate("upl");
        {
            let (caller, call_id, upload_id) =
                (caller.clone(), call_id.to_string(), upload_id.clone());
            store
                .write(move |tx| recordings::begin(tx, &caller, &call_id, &upload_id))
                .await?;
        }
        Ok(RecordingUpload {
            store,
            caller,
            call_id: call_id.to_string(),
            upload_id: Some(upload_id),
            max_bytes,
            hasher: Sha256::new(),
            size: 0,
            buffer: Vec::with_capacity(CHUNK_BYTES),
            next_index: 0,
            in_flight: VecDeque::with_capacity(WRITES_IN_FLIGHT),
        })
    }

    /// Takes the next bytes of the audio; 413 beyond `max_bytes`.
    pub async fn write(&mut self, data: &[u8]) -> Result<()> {
        self.size += data.len() as u64;
        if self.size > self.max_bytes {
            return Err(Error::PayloadTooLarge);
        }
        self.hasher.update(data);
        let mut rest = data;
        while !rest.is_empty() {
            let take = (CHUNK_BYTES - self.buffer.len()).min(rest.len());
            self.buffer.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.buffer.len() == CHUNK_BYTES {
                let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK_BYTES));
                self.queue_chunk(chunk).await?;
            }
        }
        Ok(())
    }

    /// Stores the last chunk and makes the upload the call's recording; answers the
    /// recording and whether it replaced one. 400 for an empty upload.
    pub async fn finish(mut self, content_type: String) -> Result<(RecordingRecord, bool)> {
        if self.size == 0 {
            return Err(Error::BadRequest("Request body is empty".into()));
        }
        if !self.buffer.is_empty() {
            let chunk = std::mem::take(&mut self.buffer);
            self.queue_chunk(chunk).await?;
        }
        while let Some(write) = self.in_flight.pop_front() {
            write.await?;
        }
        let upload_id = self
            .upload_id
            .clone()
            .ok_or_else(|| Error::Internal("a finished upload finished again".into()))?;
        let uploaded = Uploaded {
            upload_id,
            content_type,
            size: self.size,
            sha256: hex::encode(std::mem::take(&mut self.hasher).finalize()),
        };
        let (caller, call) = (self.caller.clone(), self.call_id.clone());
        let answer = self
            .store
            .write(move |tx| recordings::finish(tx, &caller, &call, uploaded.clone()))
            .await?;
        self.upload_id = None;
        Ok(answer)
    }

    /// Queues the write of one chunk, first waiting for the oldest queued one if the
    /// window is full.
    async fn queue_chunk(&mut self, chunk: Vec<u8>) -> Result<()> {
        while self.in_flight.len() >= WRITES_IN_FLIGHT {
            if let Some(oldest) = self.in_flight.pop_front() {
                oldest.await?;
            }
        }
        let upload_id = self
            .upload_id
            .clone()
            .ok_or_else(|| Error::Internal("a finished upload took more bytes".into()))?;
        let index = self.next_index;
        self.next_index += 1;
        self.in_flight.push_back(
            self.store
                .write_queued(move |tx| recordings::put_chunk(tx, &upload_id, index, &chunk))?,
        );
        Ok(())
    }
}

/// An unfinished upload discards its chunks. The discard is queued behind the upload's
/// own chunk writes, and leaves a finished upload alone.
impl Drop for RecordingUpload {
    fn drop(&mut self) {
        let Some(upload_id) = self.upload_id.take() else {
            return;
        };
        let id = upload_id.clone();
        match self
            .store
            .write_queued(move |tx| recordings::discard(tx, &id))
        {
            Ok(answer) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        if let Err(e) = answer.await {
                            not_discarded(&upload_id, &e);
                        }
                    });
                }
            }
            Err(e) => not_discarded(&upload_id, &e),
        }
    }
}

fn not_discarded(upload_id: &str, e: &Error) {
    tracing::warn!(upload = %upload_id, error = %e.to_string_for_logs(), "could not discard an unfinished recording upload; the next start will");
}
