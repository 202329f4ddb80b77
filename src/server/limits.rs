//! Connection limits: the listening socket's backlog, how many connections one client
//! address may hold, and how many may sit without having sent a request head.
//!
//! `max_connections` bounds the connections served at once; without a cap per address,
//! one client that keeps reopening idle connections could hold every one of them while
//! everybody else waits in the backlog. [`PerAddress`] counts the connections of each
//! address (an IPv4 address, or an IPv6 /64, which one host usually has whole) and
//! closes a new connection at once when its address already holds
//! `max_connections_per_ip`. A few addresses, each under that cap, could still fill the
//! table with connections that never send a request: [`Unheaded`] lets connections that
//! have not sent a complete request head hold at most a quarter of `max_connections`
//! (a new one beyond that closes the oldest of them), and when the table is full the
//! accept loop closes the oldest of them to make room. The backlog, where clients wait
//! while all connections are taken by requests, is as long as `max_connections` (the
//! kernel may shorten it to its `net.core.somaxconn`).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;

use crate::client_address::key as address_key;

/// Binds `addr` with a listen backlog of `backlog` connections.
pub fn listen(addr: SocketAddr, backlog: usize) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As std's and tokio's own `bind` do: a restart can bind while old connections of
    // the previous process linger in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(u32::try_from(backlog).unwrap_or(u32::MAX))
}

/// Connections held per client address.
#[derive(Debug)]
pub struct PerAddress {
    /// 0: no cap.
    cap: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's place in its address's count, given back when dropped.
#[derive(Debug)]
pub struct AddressSlot {
    table: Arc<PerAddress>,
    key: IpAddr,
}

impl PerAddress {
    pub fn new(cap: usize) -> Arc<PerAddress> {
        Arc::new(PerAddress {
            cap,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for a new connection from `ip`, or `None` when its address holds the cap.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<AddressSlot> {
        let key = address_key(ip);
        if self.cap == 0 {
            // Not counted (and not uncounted when dropped).
            return Some(AddressSlot {
                table: self.clone(),
                key,
            });
        }
        let mut held = self.lock();
        let count = held.entry(key).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            table: self.clone(),
            key,
        })
    }

    /// Connections `ip`'s address holds now.
    pub fn held(&self, ip: IpAddr) -> usize {
        self.lock().get(&address_key(ip)).copied().unwrap_or(0)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, usize>> {
        // The map is only ever left consistent: a panic elsewhere cannot poison it in a
        // way that matters, so carry on with it.
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        if self.table.cap == 0 {
            return;
        }
        let mut held = self.table.lock();
        if let Some(count) = held.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// The connections that have not sent a complete request head yet, oldest first: at
/// most a quarter of `max_connections` (at least one).
#[derive(Debug)]
pub struct Unheaded {
    cap: usize,
    waiting: Mutex<Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    next: u64,
    /// By admission order: each connection's way to be told it is closed.
    by_age: BTreeMap<u64, oneshot::Sender<()>>,
}

/// A connection's place among the unheaded, left at its first request head or when
/// dropped.
#[derive(Debug)]
pub struct UnheadedSlot {
    table: Arc<Unheaded>,
    id: u64,
    headed: AtomicBool,
}

/// Resolves when the connection is closed to make room; never once it has sent a head.
pub type Evicted = oneshot::Receiver<()>;

impl Unheaded {
    pub fn new(max_connections: usize) -> Arc<Unheaded> {
        Arc::new(Unheaded {
            cap: (max_connections / 4).max(1),
            waiting: Mutex::new(Waiting::default()),
        })
    }

    /// Counts a new connection, closing the oldest unheaded one if they hold the cap.
    pub fn admit(self: &Arc<Self>) -> (UnheadedSlot, Evicted) {
        let (tell, evicted) = oneshot::channel();
        let mut waiting = self.lock();
        if waiting.by_age.len() >= self.cap {
            evict_oldest(&mut waiting);
        }
        let id = waiting.next;
        waiting.next += 1;
        waiting.by_age.insert(id, tell);
        let slot = UnheadedSlot {
            table: self.clone(),
            id,
            headed: AtomicBool::new(false),
        };
        (slot, evicted)
    }

    /// Closes the oldest unheaded connection; false when there is none.
    pub fn evict_oldest(&self) -> bool {
        evict_oldest(&mut self.lock())
    }

    /// How many connections have not sent a head.
    pub fn held(&self) -> usize {
        self.lock().by_age.len()
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // Every change leaves the map whole: carry on after a panic elsewhere.
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn evict_oldest(waiting: &mut Waiting) -> bool {
    match waiting.by_age.pop_first() {
        Some((_, tell)) => {
            // Its connection may be ending on its own: nobody to tell is fine.
            let _ = tell.send(());
            true
        }
        None => false,
    }
}

impl UnheadedSlot {
    /// The connection sent a complete request head: it is no longer evictable.
    pub fn headed(&self) {
        if !self.headed.swap(true, Ordering::Relaxed) {
            self.table.lock().by_age.remove(&self.id);
        }
    }
}

impl Drop for UnheadedSlot {
    fn drop(&mut self) {
        self.headed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_holds_at_most_the_cap() {
        let table = PerAddress::new(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = table.admit(a).unwrap();
        let _second = table.admit(a).unwrap();
        assert!(table.admit(a).is_none());
        let _other = table.admit(b).unwrap();
        drop(first);
        assert_eq!(table.held(a), 1);
        assert!(table.admit(a).is_some());
    }

    #[test]
    fn ipv6_counts_by_64_and_mapped_ipv4_as_ipv4() {
        let table = PerAddress::new(1);
        let _one = table.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert!(table.admit("2001:db8:1:2::99".parse().unwrap()).is_none());
        assert!(table.admit("2001:db8:1:3::1".parse().unwrap()).is_some());
        let _v4 = table.admit("192.0.2.7".parse().unwrap()).unwrap();
        assert!(table.admit("::ffff:192.0.2.7".parse().unwrap()).is_none());
    }

    #[test]
    fn zero_means_no_cap() {
        let table = PerAddress::new(0);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let slots: Vec<_> = (0..100).map(|_| table.admit(ip).unwrap()).collect();
        assert_eq!(slots.len(), 100);
        assert_eq!(table.held(ip), 0);
    }

    #[test]
    fn unheaded_connections_hold_a_quarter_and_the_oldest_makes_room() {
        let table = Unheaded::new(16);
        let mut slots: Vec<_> = (0..4).map(|_| table.admit()).collect();
        assert_eq!(table.held(), 4);
        for (_, evicted) in &mut slots {
            assert!(evicted.try_recv().is_err(), "none closed under the cap");
        }
        // A fifth closes the oldest.
        let _fifth = table.admit();
        assert_eq!(table.held(), 4);
        assert_eq!(slots[0].1.try_recv(), Ok(()));
        assert!(slots[1].1.try_recv().is_err());
        // A connection that sent its head is never closed to make room.
        slots[1].0.headed();
        assert_eq!(table.held(), 3);
        assert!(table.evict_oldest());
        assert!(slots[1].1.try_recv().is_err());
        assert_eq!(slots[2].1.try_recv(), Ok(()));
        // A connection that ends leaves.
        let (third, _) = slots.remove(3);
        drop(third);
        assert_eq!(table.held(), 1);
        assert!(table.evict_oldest());
        assert!(!table.evict_oldest());
    }

    #[test]
    fn a_small_table_still_admits_one_unheaded_connection() {
        let table = Unheaded::new(2);
        let (_first, mut first_evicted) = table.admit();
        let (_second, _) = table.admit();
        assert_eq!(first_evicted.try_recv(), Ok(()));
        assert_eq!(table.held(), 1);
    }
}
