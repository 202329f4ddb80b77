//! Pacing: each provider's sending rate (`providers.sms.ratePerSecond`, and voice's),
//! kept across every send the scheduler runs, so that a burst of due work (a campaign
//! start of 10,000 enrolments, an import) leaves at the provider's rate instead of all
//! at once.
//!
//! One slot per send: slots of one (organization, channel) are `1 / rate` seconds apart,
//! handed out in the order they are asked for. A job takes its slot and waits for it
//! **before** its claim, so a message waiting its turn is still an agenda row (not
//! `sending`): a restart meanwhile runs it again rather than marking it `unknown`. A
//! slot a claim then does not use (the step was stale, deferred or blocked) is lost,
//! which only ever slows sending down. The slots live in memory: after a restart the
//! first send goes at once.
//!
//! A job whose slot is near ([`PARK_AFTER`] or less) waits for it in its lane; one whose
//! slot is further off gives its lane back and is **parked** by the scheduler until its
//! slot (the row stays in the agenda; when it runs again it already holds its slot), so
//! a burst of one organization never fills the scheduler's lanes that other
//! organizations, replies and post-call work need.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::channel::Channel;

/// The longest gap between two slots (a rate this low is refused by the settings; the
/// bound keeps the arithmetic finite whatever the rate).
const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// The longest wait for a slot a job spends in its scheduler lane; a longer one parks it.
pub const PARK_AFTER: Duration = Duration::from_secs(1);

/// What a job that asked for a slot does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Send after this wait (none, or at most [`PARK_AFTER`]).
    Wait(Duration),
    /// Give the lane back: the slot is this far off.
    Park(Duration),
}

impl Turn {
    /// What a job does about a slot `wait` away.
    pub fn of(wait: Duration) -> Turn {
        if wait <= PARK_AFTER {
            Turn::Wait(wait)
        } else {
            Turn::Park(wait)
        }
    }
}

/// The next free slot of each (organization, channel).
#[derive(Default)]
pub struct Pacer {
    next_free: Mutex<HashMap<(String, Channel), Instant>>,
}

impl Pacer {
    /// Takes the next slot of `org`'s `channel` at `rate` sends per second, at or after
    /// `now`; answers how long to wait for it.
    pub fn reserve(&self, org: &str, channel: Channel, rate: f64, now: Instant) -> Duration {
        let interval = Duration::try_from_secs_f64(1.0 / rate)
            .unwrap_or(MAX_INTERVAL)
            .min(MAX_INTERVAL);
        let mut next_free = self
            .next_free
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Slots in the past are gone: a quiet provider does not build up a burst.
        next_free.retain(|_, at| *at > now);
        let slot = next_free
            .get(&(org.to_string(), channel))
            .copied()
            .filter(|at| *at > now)
            .unwrap_or(now);
        next_free.insert((org.to_string(), channel), slot + interval);
        slot - now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_burst_is_spread_at_the_rate() {
        let pacer = Pacer::default();
        let t0 = Instant::now();
        let waits: Vec<Duration> = (0..5)
            .map(|_| pacer.reserve("org_1", Channel::Sms, 10.0, t0))
            .collect();
        assert_eq!(waits, [ms(0), ms(100), ms(200), ms(300), ms(400)]);
        // Later asks queue behind the burst, counted from when they ask.
        assert_eq!(
            pacer.reserve("org_1", Channel::Sms, 10.0, t0 + ms(250)),
            ms(250)
        );
    }

    #[test]
    fn a_near_slot_is_waited_for_and_a_far_one_parks() {
        assert_eq!(Turn::of(ms(0)), Turn::Wait(ms(0)));
        assert_eq!(Turn::of(PARK_AFTER), Turn::Wait(PARK_AFTER));
        assert_eq!(Turn::of(ms(1001)), Turn::Park(ms(1001)));
    }

    #[test]
    fn organizations_and_channels_are_paced_apart() {
        let pacer = Pacer::default();
        let t0 = Instant::now();
        assert_eq!(pacer.reserve("org_1", Channel::Sms, 1.0, t0), ms(0));
        assert_eq!(pacer.reserve("org_1", Channel::Voice, 1.0, t0), ms(0));
        assert_eq!(pacer.reserve("org_2", Channel::Sms, 1.0, t0), ms(0));
        assert_eq!(pacer.reserve("org_1", Channel::Sms, 1.0, t0), ms(1000));
    }

    #[test]
    fn a_quiet_spell_builds_no_burst_and_slow_rates_stay_finite() {
        let pacer = Pacer::default();
        let t0 = Instant::now();
        assert_eq!(pacer.reserve("o", Channel::Sms, 2.0, t0), ms(0));
        // Long after the last slot: at once, then the rate again.
        let later = t0 + Duration::from_secs(60);
        assert_eq!(pacer.reserve("o", Channel::Sms, 2.0, later), ms(0));
        assert_eq!(pacer.reserve("o", Channel::Sms, 2.0, later), ms(500));
        assert_eq!(pacer.reserve("o", Channel::Voice, 1e-300, t0), ms(0));
        assert_eq!(pacer.reserve("o", Channel::Voice, 1e-300, t0), MAX_INTERVAL);
    }
}
