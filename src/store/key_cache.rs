//! API keys kept in memory, so checking a key costs a hash and a map lookup instead of a
//! read transaction and a decode.
//!
//! Keys change only through the writer (`WriteTx::put_key`); after a commit that
//! changed one, the writer bumps the generation and empties the cache. A reader that
//! looked a key up in the file caches it only if no such commit happened meanwhile, so
//! a snapshot taken before a revocation can never put the revoked key back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use super::rows::KeyRecord;

#[derive(Default)]
pub struct KeyCache {
    generation: AtomicU64,
    keys: RwLock<HashMap<[u8; 32], KeyRecord>>,
}

impl KeyCache {
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn get(&self, hash: &[u8; 32]) -> Option<KeyRecord> {
        self.keys.read().ok()?.get(hash).cloned()
    }

    /// Caches `record`, read from the file when the generation was `seen`.
    pub fn insert(&self, hash: [u8; 32], record: KeyRecord, seen: u64) {
        if let Ok(mut keys) = self.keys.write() {
            if self.generation() == seen {
                keys.insert(hash, record);
            }
        }
    }

    /// Called by the writer after a commit that changed keys.
    pub fn invalidate(&self) {
        if let Ok(mut keys) = self.keys.write() {
            self.generation.fetch_add(1, Ordering::AcqRel);
            keys.clear();
        }
    }
}
