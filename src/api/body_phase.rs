//! Requests whose body is still arriving, bounded like connections without a head.
//!
//! A client that sends a complete request head and then its body a byte at a time
//! holds a connection past the head check (`server::limits::Unheaded`) for as long as
//! the body's pace allows. Many such clients would hold every connection the server
//! has. So the requests in their body phase hold at most a quarter of
//! `max_connections` in all and a quarter of `max_connections_per_ip` per client
//! address (at least one each); a new body beyond either cap ends the oldest body of
//! that scope, which answers 408 and closes its connection. Bodies that an
//! authenticated handler took as an upload (`RequestBody::stream`) are ended only when
//! nothing else is left to end: an attacker's flood of slow bodies, which never get
//! that far, cannot push out a real upload. Every body is also held to a minimum rate
//! (`request::BodyPace`), so a slow one ends by itself within seconds.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::client_address;

/// The table of bodies still arriving.
#[derive(Debug)]
pub struct BodyPhase {
    total_cap: usize,
    per_address_cap: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    /// By arrival: each body's address, whether it is an upload, and how to end it.
    by_age: BTreeMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    address: IpAddr,
    upload: Arc<AtomicBool>,
    end: oneshot::Sender<()>,
}

/// One body's place in the table, left when the body ends or is dropped.
#[derive(Debug)]
pub struct BodySlot {
    table: Arc<BodyPhase>,
    id: u64,
    upload: Arc<AtomicBool>,
    /// Resolves when the body is ended to make room.
    pub ended: oneshot::Receiver<()>,
}

impl BodyPhase {
    /// The table for a server of `max_connections` and `max_connections_per_ip` (0: no
    /// cap per address beyond the total).
    pub fn new(max_connections: usize, max_connections_per_ip: usize) -> Arc<BodyPhase> {
        let total_cap = (max_connections / 4).max(1);
        let per_address_cap = if max_connections_per_ip == 0 {
            total_cap
        } else {
            (max_connections_per_ip / 4).max(1)
        };
        Arc::new(BodyPhase {
            total_cap,
            per_address_cap,
            inner: Mutex::new(Inner::default()),
        })
    }

    /// Counts a body from `peer` that has begun to arrive, ending the oldest of its
    /// address, or of all, when either holds its cap.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> BodySlot {
        let address = client_address::key(peer);
        let (end, ended) = oneshot::channel();
        let upload = Arc::new(AtomicBool::new(false));
        let mut inner = self.lock();
        let of_address = inner
            .by_age
            .values()
            .filter(|e| e.address == address)
            .count();
        if of_address >= self.per_address_cap {
            end_oldest(&mut inner, Some(address));
        }
        if inner.by_age.len() >= self.total_cap {
            end_oldest(&mut inner, None);
        }
        let id = inner.next;
        inner.next += 1;
        inner.by_age.insert(
            id,
            Entry {
                address,
                upload: upload.clone(),
                end,
            },
        );
        BodySlot {
            table: self.clone(),
            id,
            upload,
            ended,
        }
    }

    /// Bodies arriving now.
    pub fn held(&self) -> usize {
        self.lock().by_age.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every change leaves the map whole: carry on after a panic elsewhere.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Ends the oldest body (of `address` when given) that is not an upload, or else the
/// oldest upload.
fn end_oldest(inner: &mut Inner, address: Option<IpAddr>) {
    let in_scope = |e: &Entry| address.is_none_or(|a| e.address == a);
    let victim = inner
        .by_age
        .iter()
        .find(|(_, e)| in_scope(e) && !e.upload.load(Ordering::Relaxed))
        .or_else(|| inner.by_age.iter().find(|(_, e)| in_scope(e)))
        .map(|(id, _)| *id);
    if let Some(entry) = victim.and_then(|id| inner.by_age.remove(&id)) {
        // Its body may be ending on its own: nobody to tell is fine.
        let _ = entry.end.send(());
    }
}

impl BodySlot {
    /// The body is an upload an authenticated handler accepted: ended last.
    pub fn mark_upload(&self) {
        self.upload.store(true, Ordering::Relaxed);
    }
}

impl Drop for BodySlot {
    fn drop(&mut self) {
        self.table.lock().by_age.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn one_address_holds_a_quarter_of_its_cap_and_its_oldest_makes_room() {
        let table = BodyPhase::new(1024, 8);
        let mut slots: Vec<_> = (0..2).map(|_| table.admit(ip("10.0.0.1"))).collect();
        let other = table.admit(ip("10.0.0.2"));
        assert_eq!(table.held(), 3);
        let _third = table.admit(ip("10.0.0.1"));
        assert_eq!(
            slots[0].ended.try_recv(),
            Ok(()),
            "the address's oldest ended"
        );
        assert!(slots[1].ended.try_recv().is_err());
        let mut other = other;
        assert!(other.ended.try_recv().is_err(), "another address untouched");
        assert_eq!(table.held(), 3);
    }

    #[test]
    fn the_total_cap_ends_the_oldest_of_all_but_uploads_last() {
        let table = BodyPhase::new(12, 0);
        let mut upload = table.admit(ip("10.0.0.1"));
        upload.mark_upload();
        let mut slow = table.admit(ip("10.0.0.2"));
        let _third = table.admit(ip("10.0.0.3"));
        let _fourth = table.admit(ip("10.0.0.4"));
        assert_eq!(
            slow.ended.try_recv(),
            Ok(()),
            "the oldest that is not an upload"
        );
        assert!(upload.ended.try_recv().is_err(), "the upload stays");
        assert_eq!(table.held(), 3);
    }

    #[test]
    fn a_body_that_ends_leaves_the_table() {
        let table = BodyPhase::new(8, 0);
        let slot = table.admit(ip("::1"));
        assert_eq!(table.held(), 1);
        drop(slot);
        assert_eq!(table.held(), 0);
    }
}
