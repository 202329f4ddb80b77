//! The sign-in throttle: after 5 failures for one email or 20 from one address within
//! 15 minutes, sign-in is refused for that email or address until the oldest counted
//! failure is 15 minutes old. An IPv6 address counts by its /64 (one host's share).
//!
//! An attempt is counted when it is allowed, before its password is checked, in the same
//! lock as the check ([`Throttle::attempt`]): a concurrent burst of guesses for one email
//! gets 5 checks, not one per guess. A sign-in that succeeds, or that was never checked
//! (busy), is forgotten again ([`Throttle::forget`]).
//!
//! Kept in memory: a restart forgets it (an attacker gains one window per restart,
//! which the argon2 cost of each guess keeps small). Bounded: old failures are
//! dropped, and at most `MAX_KEYS` emails and addresses are remembered.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;

use crate::time::Micros;

/// Failures for one email before it is refused.
pub const PER_EMAIL: usize = 5;
/// Failures from one address before it is refused.
pub const PER_ADDRESS: usize = 20;
/// How long a failure counts.
pub const WINDOW_MICROS: Micros = 15 * 60 * 1_000_000;
/// The most emails and addresses remembered at once.
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Default)]
pub struct Throttle {
    failures: Mutex<HashMap<String, VecDeque<Micros>>>,
}

/// The key of an address: IPv4 whole, IPv6 by its /64.
fn address_key(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(v4) => format!("ip:{v4}"),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("ip:{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

fn email_key(email: &str) -> String {
    format!("email:{}", email.trim().to_lowercase())
}

impl Throttle {
    /// Counts an attempt for the email and the address if both may try now;
    /// `Err(minutes)` when one must wait (at least 1 minute), counting nothing.
    pub fn attempt(&self, email: &str, addr: IpAddr, now: Micros) -> Result<(), u64> {
        let Ok(mut map) = self.failures.lock() else {
            return Ok(());
        };
        let keys = [
            (email_key(email), PER_EMAIL),
            (address_key(addr), PER_ADDRESS),
        ];
        let mut wait: Micros = 0;
        for (key, limit) in &keys {
            if let Some(times) = map.get_mut(key) {
                while times.front().is_some_and(|t| now - t >= WINDOW_MICROS) {
                    times.pop_front();
                }
                if times.len() >= *limit {
                    // Free again once enough failures have left the window.
                    let freeing = times[times.len() - limit];
                    wait = wait.max(freeing + WINDOW_MICROS - now);
                }
            }
        }
        if wait > 0 {
            let minutes = (wait as u64).div_ceil(60_000_000).max(1);
            return Err(minutes);
        }
        if map.len() >= MAX_KEYS {
            map.retain(|_, times| times.back().is_some_and(|t| now - t < WINDOW_MICROS));
        }
        if map.len() >= MAX_KEYS {
            return Ok(());
        }
        for (key, _) in keys {
            let times = map.entry(key).or_default();
            times.push_back(now);
            while times.len() > PER_ADDRESS {
                times.pop_front();
            }
        }
        Ok(())
    }

    /// Takes back the attempt counted at `now`: it succeeded, or was never checked.
    pub fn forget(&self, email: &str, addr: IpAddr, now: Micros) {
        let Ok(mut map) = self.failures.lock() else {
            return;
        };
        for key in [email_key(email), address_key(addr)] {
            if let Some(times) = map.get_mut(&key) {
                if let Some(at) = times.iter().rposition(|t| *t == now) {
                    times.remove(at);
                }
                if times.is_empty() {
                    map.remove(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Micros = 60_000_000;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn five_failures_for_one_email_refuse_it_for_the_rest_of_the_window() {
        let t = Throttle::default();
        for i in 0..5 {
            assert!(t
                .attempt("Ana@x.example", ip(&format!("10.0.0.{i}")), i)
                .is_ok());
        }
        assert_eq!(t.attempt("ANA@x.example", ip("10.9.9.9"), 5), Err(15));
        assert!(t.attempt("bob@x.example", ip("10.9.9.9"), 5).is_ok());
        assert_eq!(t.attempt("ana@x.example", ip("10.9.9.9"), 10 * MIN), Err(5));
        assert!(t
            .attempt("ana@x.example", ip("10.9.9.9"), 15 * MIN + 1)
            .is_ok());
    }

    #[test]
    fn a_forgotten_attempt_does_not_count() {
        let t = Throttle::default();
        for i in 0..5 {
            assert!(t.attempt("ana@x.example", ip("10.0.0.1"), i).is_ok());
            t.forget("ana@x.example", ip("10.0.0.1"), i);
        }
        assert!(t.attempt("ana@x.example", ip("10.0.0.1"), 6).is_ok());
    }

    #[test]
    fn twenty_failures_from_one_address_refuse_it() {
        let t = Throttle::default();
        for i in 0..20 {
            assert!(t
                .attempt(&format!("u{i}@x.example"), ip("10.0.0.1"), i)
                .is_ok());
        }
        assert!(t.attempt("new@x.example", ip("10.0.0.1"), 30).is_err());
        assert!(t.attempt("new@x.example", ip("10.0.0.2"), 30).is_ok());
    }

    #[test]
    fn an_ipv6_address_counts_by_its_64() {
        let t = Throttle::default();
        for i in 0..20 {
            let _ = t.attempt(
                &format!("u{i}@x.example"),
                ip(&format!("2001:db8:1:2::{i:x}")),
                i,
            );
        }
        assert!(t
            .attempt("new@x.example", ip("2001:db8:1:2:ffff::1"), 30)
            .is_err());
        assert!(t
            .attempt("new@x.example", ip("2001:db8:1:3::1"), 30)
            .is_ok());
    }
}
