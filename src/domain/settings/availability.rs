//! Open times: where a calendar's free slots are computed, one pure function
//! ([`open_times`]) shared by `GET /v1/calendars/{name}/times`, the booking's re-check
//! inside its write transaction (`records::meetings`) and, later, the assistant's
//! `find_times`.
//!
//! A slot is `meetingMinutes` long and starts on the hour or half hour of the calendar's
//! zone, inside one interval of that weekday's hours, on a day that is not one of the
//! organization's holidays, no sooner than `minNoticeMinutes` from now and before
//! `daysAhead` days from now, and overlaps no busy interval widened by `bufferMinutes`
//! on each side. The busy intervals are the calendar's booked meetings and whatever
//! the calendar's CalDAV collection says is busy (empty without `caldav`): the caller
//! passes both. DST is exact: a local start that does not exist (a spring-forward gap)
//! is never offered, and an ambiguous one (the repeated hour of a fall-back) is offered
//! once, at its first occurrence.

use chrono::{Datelike, LocalResult, NaiveDate, NaiveTime, TimeZone, Timelike};
use chrono_tz::Tz;

use crate::time::Micros;

const MINUTE: Micros = 60_000_000;
const DAY: Micros = 24 * 60 * MINUTE;

/// The rules of a calendar that open times follow (from its `CalendarRecord`).
#[derive(Debug, Clone)]
pub struct Rules<'a> {
    pub zone: Tz,
    /// Monday first: intervals as minutes after local midnight (start, end).
    pub hours: &'a [Vec<(u16, u16)>; 7],
    pub meeting_minutes: u32,
    pub buffer_minutes: u32,
    pub min_notice_minutes: u32,
    pub days_ahead: u32,
    /// The organization's holidays, as dates of the calendar's zone.
    pub holidays: &'a [NaiveDate],
}

/// The window asked for, and how many slots at most.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub now: Micros,
    /// Slots starting at or after `from` (and never before now + notice).
    pub from: Micros,
    /// Slots starting before `to` (and never past `daysAhead`).
    pub to: Micros,
    pub max: usize,
}

impl Rules<'_> {
    /// The earliest start and the end (exclusive) of starts this calendar may offer.
    pub fn bounds(&self, now: Micros) -> (Micros, Micros) {
        let earliest = now.saturating_add(i64::from(self.min_notice_minutes) * MINUTE);
        let latest = now.saturating_add(i64::from(self.days_ahead) * DAY);
        (earliest, latest)
    }

    /// The busy range a booked meeting [`start`, `end`) makes, widened by the buffer.
    pub fn widen(&self, (start, end): (Micros, Micros)) -> (Micros, Micros) {
        let buffer = i64::from(self.buffer_minutes) * MINUTE;
        (start.saturating_sub(buffer), end.saturating_add(buffer))
    }
}

/// The open slots' starts (UTC microseconds, ascending) in `window`, at most
/// `window.max` of them. `busy` holds (start, end) intervals in any order; each is
/// widened by the buffer here.
pub fn open_times(rules: &Rules<'_>, window: Window, busy: &[(Micros, Micros)]) -> Vec<Micros> {
    let length = i64::from(rules.meeting_minutes) * MINUTE;
    let (earliest, latest) = rules.bounds(window.now);
    let from = window.from.max(earliest);
    let to = window.to.min(latest);
    let mut out = Vec::new();
    if from >= to || window.max == 0 || length <= 0 {
        return out;
    }
    let busy = merged(rules, busy);

    // Local dates from the day `from` falls on to the day `to` falls on (one more on
    // each side for zones far from UTC).
    let Some(first) = local_date(rules.zone, from) else {
        return out;
    };
    let Some(last) = local_date(rules.zone, to) else {
        return out;
    };
    let mut day = first.pred_opt().unwrap_or(first);
    let last = last.succ_opt().unwrap_or(last);
    while day <= last && out.len() < window.max {
        if !rules.holidays.contains(&day) {
            let weekday = day.weekday().num_days_from_monday() as usize;
            for &(open, close) in &rules.hours[weekday] {
                // The first start on the hour or half hour at or after `open`.
                let mut minute = u32::from(open).div_ceil(30) * 30;
                while minute + rules.meeting_minutes <= u32::from(close) {
                    if let Some(start) = local_start(rules.zone, day, minute) {
                        let end = start + length;
                        if start >= from && start < to && is_free(&busy, start, end) {
                            out.push(start);
                            if out.len() == window.max {
                                return out;
                            }
                        }
                    }
                    minute += 30;
                }
            }
        }
        match day.succ_opt() {
            Some(next) => day = next,
            None => break,
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `start` is one of the open slots (the booking's re-check).
pub fn is_open(rules: &Rules<'_>, now: Micros, start: Micros, busy: &[(Micros, Micros)]) -> bool {
    let window = Window {
        now,
        from: start,
        to: start + 1,
        max: 1,
    };
    open_times(rules, window, busy).first() == Some(&start)
}

/// The busy intervals widened and merged, sorted by start, none overlapping.
fn merged(rules: &Rules<'_>, busy: &[(Micros, Micros)]) -> Vec<(Micros, Micros)> {
    let mut widened: Vec<(Micros, Micros)> = busy
        .iter()
        .filter(|(start, end)| start < end)
        .map(|&interval| rules.widen(interval))
        .collect();
    widened.sort_unstable();
    let mut out: Vec<(Micros, Micros)> = Vec::with_capacity(widened.len());
    for (start, end) in widened {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// Whether [`start`, `end`) overlaps none of the merged busy intervals.
fn is_free(busy: &[(Micros, Micros)], start: Micros, end: Micros) -> bool {
    // The intervals starting before `end`; the last of them is the only one that can
    // reach past `start`, since they are merged.
    let before_end = busy.partition_point(|&(s, _)| s < end);
    before_end == 0 || busy[before_end - 1].1 <= start
}

/// The local date of `t` in `zone`.
fn local_date(zone: Tz, t: Micros) -> Option<NaiveDate> {
    let utc = chrono::DateTime::from_timestamp_micros(t)?;
    Some(utc.with_timezone(&zone).date_naive())
}

/// The UTC instant of `minute` after local midnight of `day`: none when that local time
/// does not exist, the first of two when it is ambiguous.
fn local_start(zone: Tz, day: NaiveDate, minute: u32) -> Option<Micros> {
    let time = NaiveTime::from_hms_opt(minute / 60, minute % 60, 0)?;
    let local = day.and_time(time);
    let instant = match zone.from_local_datetime(&local) {
        LocalResult::Single(t) => t,
        LocalResult::Ambiguous(first, _) => first,
        LocalResult::None => return None,
    };
    Some(instant.timestamp_micros())
}

/// The local time of day of `t` in `zone`, as minutes after midnight (for tests and
/// the views).
pub fn local_minutes(zone: Tz, t: Micros) -> Option<u32> {
    let utc = chrono::DateTime::from_timestamp_micros(t)?;
    let local = utc.with_timezone(&zone);
    Some(local.hour() * 60 + local.minute())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn at(zone: Tz, y: i32, m: u32, d: u32, h: u32, min: u32) -> Micros {
        zone.with_ymd_and_hms(y, m, d, h, min, 0)
            .earliest()
            .unwrap()
            .with_timezone(&Utc)
            .timestamp_micros()
    }

    fn every_day(intervals: Vec<(u16, u16)>) -> [Vec<(u16, u16)>; 7] {
        std::array::from_fn(|_| intervals.clone())
    }

    fn rules<'a>(
        zone: Tz,
        hours: &'a [Vec<(u16, u16)>; 7],
        holidays: &'a [NaiveDate],
    ) -> Rules<'a> {
        Rules {
            zone,
            hours,
            meeting_minutes: 30,
            buffer_minutes: 0,
            min_notice_minutes: 0,
            days_ahead: 30,
            holidays,
        }
    }

    fn all(rules: &Rules<'_>, now: Micros, busy: &[(Micros, Micros)]) -> Vec<Micros> {
        let window = Window {
            now,
            from: now,
            to: i64::MAX,
            max: 10_000,
        };
        open_times(rules, window, busy)
    }

    #[test]
    fn slots_start_on_the_hour_or_half_hour_inside_the_hours() {
        let zone: Tz = "America/Chicago".parse().unwrap();
        let mut hours: [Vec<(u16, u16)>; 7] = Default::default();
        hours[0] = vec![(9 * 60 + 10, 11 * 60), (13 * 60, 14 * 60)]; // Monday
        let r = Rules {
            days_ahead: 7,
            ..rules(zone, &hours, &[])
        };
        // Sunday Dec 6 2026, noon.
        let now = at(zone, 2026, 12, 6, 12, 0);
        let slots = all(&r, now, &[]);
        let local: Vec<u32> = slots
            .iter()
            .map(|&t| local_minutes(zone, t).unwrap())
            .collect();
        assert_eq!(local, vec![570, 600, 630, 780, 810]); // 9:30 to 10:30, 13:00, 13:30
        assert_eq!(slots[0], at(zone, 2026, 12, 7, 9, 30));
    }

    #[test]
    fn notice_days_ahead_holidays_and_busy_times_close_slots() {
        let zone: Tz = "Europe/Berlin".parse().unwrap();
        let hours = every_day(vec![(9 * 60, 12 * 60)]);
        let holidays = [NaiveDate::from_ymd_opt(2026, 12, 8).unwrap()];
        let r = Rules {
            min_notice_minutes: 60,
            days_ahead: 3,
            buffer_minutes: 10,
            ..rules(zone, &hours, &holidays)
        };
        let now = at(zone, 2026, 12, 7, 9, 15);
        // A meeting 10:30–11:00 on the 9th, widened to 10:20–11:10.
        let busy = [(at(zone, 2026, 12, 9, 10, 30), at(zone, 2026, 12, 9, 11, 0))];
        let slots = all(&r, now, &busy);
        let day7: Vec<_> = slots
            .iter()
            .filter(|&&t| t < at(zone, 2026, 12, 8, 0, 0))
            .collect();
        // Notice: nothing before 10:15 on the 7th.
        assert_eq!(day7.len(), 3, "10:30, 11:00, 11:30");
        assert!(!slots
            .iter()
            .any(|&t| t >= at(zone, 2026, 12, 8, 0, 0) && t < at(zone, 2026, 12, 9, 0, 0)));
        for closed in [(10, 0), (10, 30), (11, 0)] {
            assert!(
                !slots.contains(&at(zone, 2026, 12, 9, closed.0, closed.1)),
                "{closed:?}"
            );
        }
        assert!(slots.contains(&at(zone, 2026, 12, 9, 9, 30)));
        assert!(slots.contains(&at(zone, 2026, 12, 9, 11, 30)));
        // Three days ahead: the 10th 9:00 is open (before 9:15 on the 10th), 9:30 is not.
        assert!(slots.contains(&at(zone, 2026, 12, 10, 9, 0)));
        assert!(!slots.contains(&at(zone, 2026, 12, 10, 9, 30)));
        assert!(is_open(&r, now, at(zone, 2026, 12, 9, 9, 30), &busy));
        assert!(!is_open(&r, now, at(zone, 2026, 12, 9, 10, 0), &busy));
        assert!(!is_open(&r, now, at(zone, 2026, 12, 9, 9, 45), &busy));
    }

    #[test]
    fn new_york_spring_forward_offers_no_nonexistent_start() {
        let zone: Tz = "America/New_York".parse().unwrap();
        let hours = every_day(vec![(0, 24 * 60)]);
        let r = Rules {
            days_ahead: 3,
            meeting_minutes: 30,
            ..rules(zone, &hours, &[])
        };
        // Saturday March 7 2026; clocks jump 02:00 → 03:00 on Sunday March 8.
        let now = at(zone, 2026, 3, 7, 0, 0);
        let slots = all(&r, now, &[]);
        let march8: Vec<u32> = slots
            .iter()
            .filter(|&&t| local_date(zone, t) == NaiveDate::from_ymd_opt(2026, 3, 8))
            .map(|&t| local_minutes(zone, t).unwrap())
            .collect();
        assert!(
            !march8.contains(&120) && !march8.contains(&150),
            "02:00 and 02:30 do not exist"
        );
        assert_eq!(march8.len(), 46, "48 half hours less the two missing");
        let mut sorted = slots.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), slots.len(), "no doubled slot");
        assert!(slots.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn new_york_fall_back_offers_the_repeated_hour_once() {
        let zone: Tz = "America/New_York".parse().unwrap();
        let hours = every_day(vec![(0, 24 * 60)]);
        let r = Rules {
            days_ahead: 3,
            ..rules(zone, &hours, &[])
        };
        // Saturday Oct 31 2026; clocks go back 02:00 → 01:00 on Sunday Nov 1.
        let now = at(zone, 2026, 10, 31, 0, 0);
        let slots = all(&r, now, &[]);
        let nov1: Vec<u32> = slots
            .iter()
            .filter(|&&t| local_date(zone, t) == NaiveDate::from_ymd_opt(2026, 11, 1))
            .map(|&t| local_minutes(zone, t).unwrap())
            .collect();
        assert_eq!(nov1.len(), 48, "each local half hour once");
        assert_eq!(nov1.iter().filter(|&&m| m == 60).count(), 1);
        assert_eq!(nov1.iter().filter(|&&m| m == 90).count(), 1);
        // 01:00 is offered at its first occurrence (EDT, UTC-4).
        let one_am = at(zone, 2026, 11, 1, 1, 0);
        assert!(slots.contains(&one_am));
        // Its second occurrence (EST) is not offered again.
        assert!(!slots.contains(&(one_am + 60 * MINUTE)));
        let mut sorted = slots.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), slots.len(), "no doubled slot");
    }

    #[test]
    fn busy_intervals_in_any_order_are_merged() {
        let busy = [(50, 60), (10, 20), (15, 30)];
        let zone: Tz = "UTC".parse().unwrap();
        let hours = every_day(vec![]);
        let r = rules(zone, &hours, &[]);
        assert_eq!(merged(&r, &busy), vec![(10, 30), (50, 60)]);
        let m = merged(&r, &busy);
        assert!(is_free(&m, 30, 50));
        assert!(!is_free(&m, 29, 31));
        assert!(!is_free(&m, 0, 11));
        assert!(is_free(&m, 60, 70));
    }
}
