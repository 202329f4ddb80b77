//! Typed access to call recordings: their metadata, their audio in fixed-size chunks,
//! the uploads still streaming in, and the secret that signs download links.
//!
//! An upload never holds a write transaction across network reads. It gets a fresh
//! upload id, registered in `recording_uploads`; each [`CHUNK_BYTES`](super::rows::CHUNK_BYTES) of audio is its
//! own small write job into `recording_chunks` under (upload id, index); a last job
//! ([`WriteTx::put_recording`]) points the call's `recordings` row at the upload,
//! removes the previous upload's chunks and forgets the in-progress row, all in one
//! transaction, so a re-upload replaces the old audio atomically. An upload that fails
//! is discarded ([`WriteTx::discard_recording_upload`]); one cut short by a crash is
//! swept at the next start ([`WriteTx::discard_all_recording_uploads`]), since every
//! row left in `recording_uploads` then belongs to an upload nobody finishes.

use redb::{ReadableTable, ReadableTableMetadata};

use super::codec::{decode, encode};
use super::read::ReadTx;
use super::reader::Reader;
use super::rows::{RecordingRecord, UploadRecord};
use super::tables::{META, RECORDINGS, RECORDING_CHUNKS, RECORDING_UPLOADS};
use super::write::WriteTx;
use crate::error::{Error, Result};

/// The name of the link-signing secret in `meta`.
const SECRET_NAME: &str = "recording_secret";

impl WriteTx<'_> {
    /// Registers an upload as in progress, so that its chunks can be found and removed
    /// if it never finishes.
    pub fn begin_recording_upload(&mut self, upload_id: &str, upload: &UploadRecord) -> Result<()> {
        let bytes = encode(upload)?;
        self.open_write(RECORDING_UPLOADS)?
            .insert(upload_id, bytes.as_slice())?;
        Ok(())
    }

    pub fn put_recording_chunk(&mut self, upload_id: &str, index: u64, bytes: &[u8]) -> Result<()> {
        self.open_write(RECORDING_CHUNKS)?
            .insert((upload_id, index), bytes)?;
        Ok(())
    }

    /// Makes `record` the recording of its call in `org`: removes the chunks of the
    /// recording it replaces and the upload's in-progress row. Returns the replaced one.
    pub fn put_recording(
        &mut self,
        org: &str,
        record: &RecordingRecord,
    ) -> Result<Option<RecordingRecord>> {
        let previous = self.recording(org, &record.call_id)?;
        let bytes = encode(record)?;
        self.open_write(RECORDINGS)?
            .insert((org, record.call_id.as_str()), bytes.as_slice())?;
        self.open_write(RECORDING_UPLOADS)?
            .remove(record.upload_id.as_str())?;
        if let Some(old) = &previous {
            if old.upload_id != record.upload_id {
                remove_chunks(self, &old.upload_id)?;
            }
        }
        Ok(previous)
    }

    /// Removes a call's recording and its chunks; returns it if there was one. Without
    /// one it changes nothing (so that a job refusing on it is no half-write).
    pub fn delete_recording(
        &mut self,
        org: &str,
        call_id: &str,
    ) -> Result<Option<RecordingRecord>> {
        if self.open_read(RECORDINGS)?.get((org, call_id))?.is_none() {
            return Ok(None);
        }
        let removed: Option<RecordingRecord> = {
            let mut table = self.open_write(RECORDINGS)?;
            let removed = table.remove((org, call_id))?;
            removed.map(|v| decode(v.value())).transpose()?
        };
        if let Some(old) = &removed {
            remove_chunks(self, &old.upload_id)?;
        }
        Ok(removed)
    }

    /// Removes an unfinished upload's chunks and in-progress row. Does nothing (and
    /// answers false) for an upload that finished, whose chunks now hold a recording.
    pub fn discard_recording_upload(&mut self, upload_id: &str) -> Result<bool> {
        let removed = self
            .open_write(RECORDING_UPLOADS)?
            .remove(upload_id)?
            .is_some();
        if removed {
            remove_chunks(self, upload_id)?;
        }
        Ok(removed)
    }

    /// Discards every upload still registered as in progress. Only sound when no upload
    /// runs, that is at start-up. Returns how many there were.
    pub fn discard_all_recording_uploads(&mut self) -> Result<usize> {
        let mut ids = Vec::new();
        for row in self.open_write(RECORDING_UPLOADS)?.iter()? {
            let (key, _) = row?;
            ids.push(key.value().to_string());
        }
        for id in &ids {
            self.discard_recording_upload(id)?;
        }
        Ok(ids.len())
    }

    /// The secret that signs recording links, created on first use and kept in `meta`
    /// so links survive restarts.
    pub fn recording_secret(&mut self) -> Result<[u8; 32]> {
        let mut meta = self.open_write(META)?;
        let existing = meta.get(SECRET_NAME)?.map(|v| v.value().to_vec());
        match existing {
            Some(bytes) => bytes
                .try_into()
                .map_err(|_| Error::Internal("recording secret has the wrong length".into())),
            None => {
                let fresh = crate::ids::random_bytes::<32>();
                meta.insert(SECRET_NAME, &fresh[..])?;
                Ok(fresh)
            }
        }
    }
}

/// Removes every chunk of `upload_id`.
fn remove_chunks(tx: &mut WriteTx, upload_id: &str) -> Result<()> {
    let mut chunks = tx.open_write(RECORDING_CHUNKS)?;
    chunks.remove_range((upload_id, 0u64)..=(upload_id, u64::MAX))?;
    Ok(())
}

impl ReadTx {
    /// One chunk of an upload's audio, if it exists.
    pub fn recording_chunk(&self, upload_id: &str, index: u64) -> Result<Option<Vec<u8>>> {
        let table = self.open_read(RECORDING_CHUNKS)?;
        let found = table.get((upload_id, index))?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    /// How many chunk rows exist in all (for tests and diagnostics).
    pub fn recording_chunk_rows(&self) -> Result<u64> {
        let table = self.open_read(RECORDING_CHUNKS)?;
        Ok(table.len()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        (dir, store)
    }

    fn record(call: &str, upload: &str, size: u64) -> RecordingRecord {
        RecordingRecord {
            call_id: call.into(),
            upload_id: upload.into(),
            content_type: "audio/mpeg".into(),
            size,
            sha256: String::new(),
            uploaded_at: 1,
        }
    }

    fn upload(store: &Store, id: &str, chunks: u64) {
        let id = id.to_string();
        store
            .write_blocking(move |tx| {
                let up = UploadRecord {
                    org_id: "o".into(),
                    call_id: "c".into(),
                    started_at: 0,
                };
                tx.begin_recording_upload(&id, &up)?;
                for i in 0..chunks {
                    tx.put_recording_chunk(&id, i, &[i as u8; 3])?;
                }
                Ok(())
            })
            .unwrap();
    }

    fn rows(store: &Store) -> u64 {
        store.read().unwrap().recording_chunk_rows().unwrap()
    }

    #[test]
    fn replacing_removes_the_old_chunks_and_discard_spares_finished_uploads() {
        let (_dir, store) = open();
        upload(&store, "u1", 3);
        store
            .write_blocking(|tx| tx.put_recording("o", &record("c", "u1", 3)))
            .unwrap();
        // A finished upload is not discarded.
        assert!(!store
            .write_blocking(|tx| tx.discard_recording_upload("u1"))
            .unwrap());
        assert_eq!(rows(&store), 3);
        upload(&store, "u2", 2);
        let previous = store
            .write_blocking(|tx| tx.put_recording("o", &record("c", "u2", 2)))
            .unwrap();
        assert_eq!(previous.unwrap().upload_id, "u1");
        assert_eq!(rows(&store), 2);
        let read = store.read().unwrap();
        assert_eq!(
            read.recording_chunk("u2", 1).unwrap().unwrap(),
            vec![1u8; 3]
        );
        assert!(read.recording_chunk("u1", 0).unwrap().is_none());
        drop(read);
        store
            .write_blocking(|tx| tx.delete_recording("o", "c"))
            .unwrap();
        assert_eq!(rows(&store), 0);
    }

    #[test]
    fn unfinished_uploads_are_discarded_and_swept() {
        let (_dir, store) = open();
        upload(&store, "a", 2);
        upload(&store, "b", 4);
        assert!(store
            .write_blocking(|tx| tx.discard_recording_upload("a"))
            .unwrap());
        assert_eq!(rows(&store), 4);
        let swept = store
            .write_blocking(|tx| tx.discard_all_recording_uploads())
            .unwrap();
        assert_eq!((swept, rows(&store)), (1, 0));
    }

    #[test]
    fn the_secret_is_stable() {
        let (_dir, store) = open();
        let a = store.write_blocking(|tx| tx.recording_secret()).unwrap();
        let b = store.write_blocking(|tx| tx.recording_secret()).unwrap();
        assert_eq!(a, b);
    }
}
