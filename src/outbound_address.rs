//! Which addresses the server's outbound clients may reach: the operator's
//! `outbound_allow_private` ([`OutboundPolicy`]).
//!
//! One team's model server, CalDAV server and CRM often live on its own network, so by
//! default every address is allowed. A machine hosting several teams sets
//! `outbound_allow_private = false`: then no organization's settings may point a
//! calendar, a webhook, a provider, the compliance service or the model at this machine
//! or its network. The rule is checked twice:
//!
//! - when settings are saved ([`OutboundPolicy::check_url`], [`OutboundPolicy::check_host`]):
//!   a `localhost` name or an address literal in a refused range is a 400 naming the
//!   field (legacy IPv4 spellings such as `2130706433` or `0x7f.1` are read as the
//!   addresses they are);
//! - when connecting: every name is resolved here and only allowed addresses are dialed
//!   ([`Resolver`] for the HTTP client, [`OutboundPolicy::resolve`] for SMTP), so a
//!   public name that resolves to a private address (DNS rebinding) is refused too.
//!
//! Refused ranges ([`is_private`]): loopback, unspecified, "this network" (0.0.0.0/8),
//! link-local, private (RFC 1918, fc00::/7, the old fec0::/10), CGNAT (100.64.0.0/10),
//! broadcast and multicast, and the IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96)
//! and 6to4 (2002::/16) forms of those IPv4 addresses.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;

use crate::error::Error;

/// Whether outbound clients may reach loopback, link-local and private addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboundPolicy {
    allow_private: bool,
}

impl Default for OutboundPolicy {
    /// Every address allowed (`outbound_allow_private = true`).
    fn default() -> OutboundPolicy {
        OutboundPolicy {
            allow_private: true,
        }
    }
}

/// The words of a refused address at connect time (the log's detail; an API answer
/// says only that the server could not be reached).
const REFUSED_AT_CONNECT: &str =
    "refused address: private, loopback or link-local (outbound_allow_private = false)";

impl OutboundPolicy {
    /// `outbound_allow_private`.
    pub fn new(allow_private: bool) -> OutboundPolicy {
        OutboundPolicy { allow_private }
    }

    pub fn allows_private(self) -> bool {
        self.allow_private
    }

    /// Whether a connection to `ip` is refused.
    pub fn refuses_ip(self, ip: IpAddr) -> bool {
        !self.allow_private && is_private(ip)
    }

    /// Whether `host` (a name, an IPv4 literal in any spelling, an IPv6 literal with or
    /// without brackets) is refused as it is written; a name is checked again, resolved,
    /// when connecting.
    pub fn refuses_host(self, host: &str) -> bool {
        !self.allow_private && is_private_host(host)
    }

    /// Whether the host of `url` is refused as it is written (a URL without a host is
    /// left to the caller's own check).
    pub fn refuses_url(self, url: &str) -> bool {
        match url.trim().parse::<hyper::Uri>() {
            Ok(uri) => uri.host().is_some_and(|host| self.refuses_host(host)),
            Err(_) => false,
        }
    }

    /// 400 naming `field` when the host of `url` is refused.
    pub fn check_url(self, field: &str, url: &str) -> Result<(), Error> {
        if self.refuses_url(url) {
            return Err(refusal(field));
        }
        Ok(())
    }

    /// 400 naming `field` when `host` is refused.
    pub fn check_host(self, field: &str, host: &str) -> Result<(), Error> {
        if self.refuses_host(host) {
            return Err(refusal(field));
        }
        Ok(())
    }

    /// The addresses of `host`:`port` this policy lets a client dial (SMTP's): the
    /// literal itself, or the name resolved, refused ones left out; an error when none
    /// is left.
    pub async fn resolve(self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        let bare = bare_host(host);
        let found: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((bare, port)).await?.collect(),
        };
        self.allowed(found)
    }

    /// `found` without the refused addresses; an error when none is left.
    fn allowed(self, found: Vec<SocketAddr>) -> io::Result<Vec<SocketAddr>> {
        if found.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no address"));
        }
        let allowed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| !self.refuses_ip(a.ip()))
            .collect();
        if allowed.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                REFUSED_AT_CONNECT,
            ));
        }
        Ok(allowed)
    }

    /// The error of a request to a refused address literal, as the HTTP client words a
    /// failed connection.
    pub fn refused_literal() -> String {
        format!("client error (Connect): {REFUSED_AT_CONNECT}")
    }
}

/// The 400 of a refused outbound address at `field`.
fn refusal(field: &str) -> Error {
    Error::field(
        field,
        format!(
            "{field} may not point at a loopback, link-local or private address on this server"
        ),
    )
}

/// `host` without IPv6 brackets, a trailing dot, in lower case.
fn bare_host(host: &str) -> &str {
    let host = host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host)
}

/// Whether `host` as written names a refused address: `localhost` (or a name under
/// it), or an address literal in a refused range.
pub fn is_private_host(host: &str) -> bool {
    let host = bare_host(host).to_ascii_lowercase();
    if host.is_empty() || host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return is_private(ip);
    }
    legacy_ipv4(&host).is_some_and(|ip| is_private(IpAddr::V4(ip)))
}

/// An IPv4 address as `inet_aton` reads it (what the system resolver accepts): one to
/// four parts, each decimal, `0x` hex or `0`-led octal, the last filling the remaining
/// bytes (`127.1`, `2130706433`, `0x7f.0.0.1`). `None` for anything else.
fn legacy_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        let (digits, radix) =
            if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
                (hex, 16)
            } else if part.len() > 1 && part.starts_with('0') {
                (&part[1..], 8)
            } else {
                (*part, 10)
            };
        if digits.is_empty() && radix != 16 {
            return None;
        }
        let value = if digits.is_empty() {
            0
        } else {
            u32::from_str_radix(digits, radix).ok()?
        };
        numbers.push(value);
    }
    let (last, head) = numbers.split_last()?;
    let mut value: u32 = 0;
    for (i, byte) in head.iter().enumerate() {
        if *byte > 255 {
            return None;
        }
        value |= byte << (24 - 8 * i);
    }
    let room = 32 - 8 * head.len() as u32;
    if room < 32 && *last >= (1u32 << room) {
        return None;
    }
    Some(Ipv4Addr::from(value | last))
}

/// Whether `ip` lies in a refused range (see the module's list).
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    ip.is_unspecified()
        || a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || (a == 100 && (64..128).contains(&b))
        || ip.is_broadcast()
        || ip.is_multicast()
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let embedded = |high: u16, low: u16| {
        let [h1, h2] = high.to_be_bytes();
        let [l1, l2] = low.to_be_bytes();
        Ipv4Addr::new(h1, h2, l1, l2)
    };
    if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() {
        return true;
    }
    match segments {
        // fc00::/7 unique local; fe80::/10 link-local; fec0::/10 site-local (old).
        [s, ..] if (s & 0xfe00) == 0xfc00 || (s & 0xffc0) == 0xfe80 || (s & 0xffc0) == 0xfec0 => {
            true
        }
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible).
        [0, 0, 0, 0, 0, 0xffff | 0, h, l] => is_private_v4(embedded(h, l)),
        // 64:ff9b::a.b.c.d (NAT64).
        [0x64, 0xff9b, 0, 0, 0, 0, h, l] => is_private_v4(embedded(h, l)),
        // 2002:a.b.c.d::/48 (6to4).
        [0x2002, h, l, ..] => is_private_v4(embedded(h, l)),
        _ => false,
    }
}

/// The HTTP client's name resolver: the system's (`getaddrinfo`, off the runtime's
/// threads), its answer filtered by the policy before any connection is made. Address
/// literals never reach a resolver: `http_client` checks those itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Resolver {
    pub policy: OutboundPolicy,
}

type Resolving = Pin<Box<dyn Future<Output = io::Result<std::vec::IntoIter<SocketAddr>>> + Send>>;

impl tower_service::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Resolving {
        let policy = self.policy;
        Box::pin(async move {
            // The port is set by the connector afterwards.
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            policy.allowed(found).map(Vec::into_iter)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_ranges() {
        for private in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "fec0::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "ff02::1",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(is_private(ip), "{private}");
        }
        for public in [
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "192.169.0.1",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(!is_private(ip), "{public}");
        }
    }

    #[test]
    fn hosts_are_read_as_the_resolver_would() {
        for private in [
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "[::1]",
            "[::ffff:7f00:1]",
            "127.1",
            "2130706433",
            "0x7f.0.0.1",
            "0177.0.0.1",
            "0x7f000001",
            "10.1",
            "",
        ] {
            assert!(is_private_host(private), "{private}");
        }
        for public in [
            "api.twilio.com",
            "8.8.8.8",
            "134744072",
            "1.example",
            "localhost.example.com",
            "[2001:db8::1]",
        ] {
            assert!(!is_private_host(public), "{public}");
        }
        assert_eq!(legacy_ipv4("1.2.3.4"), Some(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(
            legacy_ipv4("1.2.65535"),
            Some(Ipv4Addr::new(1, 2, 255, 255))
        );
        assert_eq!(legacy_ipv4("1.2.65536"), None);
        assert_eq!(legacy_ipv4("256.1.1.1"), None);
        assert_eq!(legacy_ipv4("a.b"), None);
    }

    #[test]
    fn the_policy_refuses_only_when_private_is_off() {
        let open = OutboundPolicy::default();
        let closed = OutboundPolicy::new(false);
        assert!(!open.refuses_url("http://127.0.0.1:9/x"));
        assert!(closed.refuses_url("http://127.0.0.1:9/x"));
        assert!(closed.refuses_url("https://[::1]/x"));
        assert!(closed.refuses_url("https://localhost:8443/"));
        assert!(!closed.refuses_url("https://api.openai.com/v1"));
        assert!(closed.refuses_host("192.168.0.10"));
        let e = closed
            .check_url("caldav.url", "http://10.0.0.1/")
            .unwrap_err();
        assert_eq!(e.refused_field(), Some("caldav.url"));
        assert_eq!(
            e.to_string(),
            "caldav.url may not point at a loopback, link-local or private address on this server"
        );
        assert!(closed
            .check_host("providers.email.host", "smtp.example.com")
            .is_ok());
    }

    #[tokio::test]
    async fn resolving_leaves_refused_addresses_out() {
        let closed = OutboundPolicy::new(false);
        let e = closed.resolve("localhost", 25).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        let e = closed.resolve("127.0.0.1", 25).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        let open = OutboundPolicy::default();
        let found = open.resolve("127.0.0.1", 25).await.unwrap();
        assert_eq!(found, vec![SocketAddr::from(([127, 0, 0, 1], 25))]);
        let mixed = vec![
            SocketAddr::from(([10, 0, 0, 1], 443)),
            SocketAddr::from(([8, 8, 8, 8], 443)),
        ];
        assert_eq!(
            closed.allowed(mixed).unwrap(),
            vec![SocketAddr::from(([8, 8, 8, 8], 443))]
        );
    }
}
