//! `BusyCache`: the busy times last read from each calendar's CalDAV collection, so that
//! the availability reads them without a network call. A task outside the writer fills
//! it (`put`); an entry older than its bound (60 s by default) or not covering the range
//! asked for is no answer, and the cache holds at most a bounded number of calendars
//! (the stalest leave first).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::busy::Busy;

/// How long an entry answers: the spec's "cached at most 60 s".
pub const MAX_AGE: Duration = Duration::from_secs(60);

/// What one calendar's collection was busy with over `[from, to)`, sorted by start.
#[derive(Debug, Clone)]
pub struct Cached {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub busy: Arc<[Busy]>,
    pub fetched_at: Instant,
}

/// Busy times per calendar key (`K`: whatever names a calendar, such as its
/// organization and name), bounded in count and age.
#[derive(Debug)]
pub struct BusyCache<K> {
    entries: Mutex<HashMap<K, Cached>>,
    capacity: usize,
    max_age: Duration,
}

impl<K: Eq + Hash + Clone> BusyCache<K> {
    /// A cache of at most `capacity` calendars, entries answering for [`MAX_AGE`].
    pub fn new(capacity: usize) -> BusyCache<K> {
        BusyCache::with_max_age(capacity, MAX_AGE)
    }

    /// A cache whose entries answer for `max_age` (at most [`MAX_AGE`]).
    pub fn with_max_age(capacity: usize, max_age: Duration) -> BusyCache<K> {
        BusyCache {
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            max_age: max_age.min(MAX_AGE),
        }
    }

    /// Keeps what `key`'s collection was busy with over `[from, to)`, read now.
    pub fn put(&self, key: K, from: DateTime<Utc>, to: DateTime<Utc>, busy: Vec<Busy>) {
        self.put_at(key, from, to, busy, Instant::now());
    }

    /// As [`BusyCache::put`], read at `fetched_at`.
    pub fn put_at(
        &self,
        key: K,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        mut busy: Vec<Busy>,
        fetched_at: Instant,
    ) {
        busy.sort();
        let entry = Cached {
            from,
            to,
            busy: busy.into(),
            fetched_at,
        };
        let mut entries = self.lock();
        if !entries.contains_key(&key) && entries.len() >= self.capacity {
            let max_age = self.max_age;
            entries.retain(|_, e| fetched_at.saturating_duration_since(e.fetched_at) <= max_age);
            if entries.len() >= self.capacity {
                let stalest = entries
                    .iter()
                    .min_by_key(|(_, e)| e.fetched_at)
                    .map(|(k, _)| k.clone());
                if let Some(stalest) = stalest {
                    entries.remove(&stalest);
                }
            }
        }
        entries.insert(key, entry);
    }

    /// `key`'s busy times if they were read within the age bound and cover `[from, to)`.
    pub fn get(&self, key: &K, from: DateTime<Utc>, to: DateTime<Utc>) -> Option<Cached> {
        self.get_at(key, from, to, Instant::now())
    }

    /// As [`BusyCache::get`], at `now`.
    pub fn get_at(
        &self,
        key: &K,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        now: Instant,
    ) -> Option<Cached> {
        let entries = self.lock();
        let entry = entries.get(key)?;
        let fresh = now.saturating_duration_since(entry.fetched_at) <= self.max_age;
        (fresh && entry.from <= from && to <= entry.to).then(|| entry.clone())
    }

    /// Forgets `key` (its calendar changed or was deleted).
    pub fn remove(&self, key: &K) {
        self.lock().remove(key);
    }

    /// How many calendars it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Cached>> {
        // A panic while holding the lock left a map that is still whole.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(hour: u32) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(&format!("2026-01-05T{hour:02}:00:00Z"))
            .unwrap()
            .with_timezone(&Utc)
    }

    fn busy(from: u32, to: u32) -> Busy {
        Busy {
            start: at(from),
            end: at(to),
        }
    }

    #[test]
    fn an_entry_answers_sorted_within_its_range_and_age_only() {
        let cache = BusyCache::new(10);
        let t0 = Instant::now();
        cache.put_at("ana", at(0), at(23), vec![busy(15, 16), busy(9, 10)], t0);
        let got = cache
            .get_at(&"ana", at(8), at(18), t0 + Duration::from_secs(59))
            .unwrap();
        assert_eq!(&*got.busy, &[busy(9, 10), busy(15, 16)]);
        assert!(cache
            .get_at(&"ana", at(8), at(18), t0 + Duration::from_secs(61))
            .is_none());
        assert!(cache
            .get_at(&"ana", at(8), at(23) + chrono::Duration::hours(1), t0)
            .is_none());
        assert!(cache.get_at(&"bob", at(8), at(18), t0).is_none());
        cache.remove(&"ana");
        assert!(cache.is_empty());
    }

    #[test]
    fn the_age_bound_never_exceeds_sixty_seconds() {
        let cache = BusyCache::with_max_age(1, Duration::from_secs(3600));
        let t0 = Instant::now();
        cache.put_at(1, at(0), at(23), vec![], t0);
        assert!(cache
            .get_at(&1, at(0), at(23), t0 + Duration::from_secs(61))
            .is_none());
    }

    #[test]
    fn a_full_cache_lets_the_stale_then_the_stalest_go() {
        let cache = BusyCache::new(2);
        let t0 = Instant::now();
        cache.put_at("a", at(0), at(23), vec![], t0);
        cache.put_at("b", at(0), at(23), vec![], t0 + Duration::from_secs(10));
        cache.put_at("c", at(0), at(23), vec![], t0 + Duration::from_secs(20));
        assert_eq!(cache.len(), 2);
        let now = t0 + Duration::from_secs(20);
        assert!(cache.get_at(&"a", at(0), at(23), now).is_none());
        assert!(cache.get_at(&"b", at(0), at(23), now).is_some());
        // Replacing a key never evicts another.
        cache.put_at("c", at(0), at(23), vec![busy(1, 2)], now);
        assert_eq!(cache.len(), 2);
        // Past the age bound, both stale entries leave for a new one.
        cache.put_at("d", at(0), at(23), vec![], t0 + Duration::from_secs(200));
        assert_eq!(cache.len(), 1);
    }
}
