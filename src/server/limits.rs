//! Connection limits: the listening socket's backlog, and how many connections one client
//! address may hold.
//!
//! `max_connections` bounds the connections served at once; without a cap per address,
//! one client that keeps reopening idle connections could hold every one of them while
//! everybody else waits in the backlog. [`PerAddress`] counts the connections of each
//! address (an IPv4 address, or an IPv6 /64, which one host usually has whole) and
//! closes a new connection at once when its address already holds
//! `max_connections_per_ip`. The backlog, where clients wait while all connections are
//! taken, is as long as `max_connections` (the kernel may shorten it to its
//! `net.core.somaxconn`).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::{TcpListener, TcpSocket};

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

/// What connections are counted under: the IPv4 address (also when it comes
/// IPv4-mapped), or the IPv6 /64.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
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
}
