//! What per-client limits count a client under: an IPv4 address whole (also when it
//! arrives IPv4-mapped), an IPv6 address by its /64, which one host usually has whole.
//! The connection table (`server::limits`) and the bodies still arriving
//! (`api::body_phase`) both count by it.

use std::net::{IpAddr, Ipv6Addr};

/// The address `ip` is counted under.
pub fn key(ip: IpAddr) -> IpAddr {
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
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2::99".parse().unwrap();
        assert_eq!(key(a), key(b));
        assert_ne!(key(a), key("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(
            key("::ffff:192.0.2.7".parse().unwrap()),
            key("192.0.2.7".parse().unwrap())
        );
    }
}
