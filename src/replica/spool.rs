//! The spool: where the writer leaves each committed batch for the uploader, without
//! waiting. [`Spool`] is the store's [`ReplicaTap`]: the writer thread calls it right
//! after a commit, and it only numbers the batch and appends it under a short lock (no
//! network, no disk). Its bound is `spool_max` bytes: past it the batches are dropped,
//! the spool says it overflowed, and the uploader starts a new generation with a
//! snapshot once the object store answers again. Nothing is lost: the snapshot holds
//! what was dropped.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::format::Batch;
use crate::metrics::ReplicaStatus;
use crate::store::ReplicaTap;

/// What waits for the uploader, in commit order.
#[derive(Debug)]
pub enum Entry {
    Batch(Batch),
    /// A batch too large to record committed here: the chain cannot go on.
    Break,
}

#[derive(Default)]
struct Inner {
    entries: VecDeque<Entry>,
    bytes: u64,
    /// Batches were dropped since the last take: a snapshot must follow.
    overflowed: bool,
    next_seq: u64,
}

/// The bounded spool between the writer and the uploader.
pub struct Spool {
    inner: Mutex<Inner>,
    /// The last sequence number handed out (`committed_seq`), published after the
    /// batch is in the spool: a snapshot read after loading it holds at least that
    /// batch.
    status: Arc<ReplicaStatus>,
    max: u64,
    /// Wakes the uploader early when the spool fills past half its bound.
    pub wake: tokio::sync::Notify,
}

/// What the uploader takes at once.
pub struct Taken {
    pub entries: Vec<Entry>,
    pub overflowed: bool,
}

impl Spool {
    pub fn new(max: u64, status: Arc<ReplicaStatus>) -> Spool {
        Spool {
            inner: Mutex::new(Inner {
                next_seq: 1,
                ..Inner::default()
            }),
            status,
            max,
            wake: tokio::sync::Notify::new(),
        }
    }

    /// The last batch handed to the spool: read before a snapshot's read transaction.
    pub fn last_seq(&self) -> u64 {
        self.status.committed_seq.load(Ordering::SeqCst)
    }

    /// Everything waiting, and whether batches were dropped since the last take.
    pub fn take(&self) -> Taken {
        let Ok(mut inner) = self.inner.lock() else {
            return Taken {
                entries: Vec::new(),
                overflowed: true,
            };
        };
        inner.bytes = 0;
        let overflowed = std::mem::take(&mut inner.overflowed);
        Taken {
            entries: inner.entries.drain(..).collect(),
            overflowed,
        }
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> u64 {
        self.inner.lock().map(|i| i.bytes).unwrap_or(0)
    }

    /// Whether the spool's bound was reached since the last take.
    #[cfg(test)]
    pub fn overflowed(&self) -> bool {
        self.inner.lock().map(|i| i.overflowed).unwrap_or(true)
    }
}

impl ReplicaTap for Spool {
    fn committed(&self, ops: &[u8]) {
        let at_ms = crate::time::now_micros() / 1000;
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let size = ops.len() as u64 + 20;
        if inner.overflowed || inner.bytes + size > self.max {
            if !inner.overflowed {
                inner.overflowed = true;
                inner.entries.clear();
                inner.bytes = 0;
            }
        } else {
            inner.bytes += size;
            inner.entries.push_back(Entry::Batch(Batch {
                seq,
                at_ms,
                ops: ops.to_vec(),
            }));
        }
        self.status.committed_seq.store(seq, Ordering::SeqCst);
        let wake = inner.bytes > self.max / 2;
        drop(inner);
        if wake {
            self.wake.notify_one();
        }
    }

    fn bypassed(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.entries.push_back(Entry::Break);
        }
        self.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_numbered_in_order_and_the_bound_drops_them_all() {
        let spool = Spool::new(100, Arc::default());
        spool.committed(b"a");
        spool.bypassed();
        spool.committed(b"b");
        let taken = spool.take();
        assert!(!taken.overflowed);
        let seqs: Vec<Option<u64>> = taken
            .entries
            .iter()
            .map(|e| match e {
                Entry::Batch(b) => Some(b.seq),
                Entry::Break => None,
            })
            .collect();
        assert_eq!(seqs, [Some(1), None, Some(2)]);
        assert_eq!(spool.last_seq(), 2);
        spool.committed(&[0; 70]);
        spool.committed(&[0; 70]);
        assert!(spool.overflowed());
        let taken = spool.take();
        assert!(taken.overflowed && taken.entries.is_empty());
        assert_eq!(spool.last_seq(), 4, "dropped batches are numbered too");
        spool.committed(b"c");
        assert_eq!(spool.take().entries.len(), 1);
    }
}
