//! Quiet hours: the organization's window (`quietHours`, `HH:MM` to `HH:MM`, possibly
//! across midnight) in the lead's time zone, else the organization's. Automated work
//! due inside the window waits for its end; the compliance gate blocks a send inside it.

use chrono::{DateTime, Timelike, Utc};

use crate::domain::settings::clock::{parse_hhmm, WEEKDAYS};
use crate::error::Result;
use crate::store::rows::{LeadRecord, OrgRecord};
use crate::store::Reader;

/// The time zone quiet hours use for `lead`: its own, else the organization's
/// (`timeZone` in the engine settings), else none.
pub fn zone_of<'a>(lead: &'a LeadRecord, org_zone: &'a str) -> &'a str {
    if lead.time_zone.is_empty() {
        org_zone
    } else {
        &lead.time_zone
    }
}

/// The quiet window's (start, end) in minutes of the day, and the zone, when both are set.
fn quiet_window(org: &OrgRecord, zone: &str) -> Option<(u32, u32, chrono_tz::Tz)> {
    let (start, end) = org.settings.quiet_hours.as_ref()?;
    let zone = zone.parse::<chrono_tz::Tz>().ok()?;
    Some((parse_hhmm(start)?, parse_hhmm(end)?, zone))
}

/// Whether `now` falls in the organization's quiet window in `zone`. Without a zone (or
/// a window) nothing is ever in quiet hours.
pub fn in_quiet_hours(org: &OrgRecord, zone: &str, now: DateTime<Utc>) -> bool {
    quiet_window_end(org, zone, now).is_some()
}

/// When `now` falls in the quiet window in `zone`: the window's end (the first instant
/// automated work may run). `None` outside the window.
pub fn quiet_window_end(org: &OrgRecord, zone: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    use chrono::{Days, TimeZone};
    let (start, end, zone) = quiet_window(org, zone)?;
    let local = now.with_timezone(&zone);
    let minute = local.hour() * 60 + local.minute();
    let (inside, end_tomorrow) = if start <= end {
        ((start..end).contains(&minute), false)
    } else if minute >= start {
        (true, true)
    } else {
        (minute < end, false)
    };
    if !inside {
        return None;
    }
    let mut day = local.date_naive();
    if end_tomorrow {
        day = day.checked_add_days(Days::new(1))?;
    }
    let naive = day.and_hms_opt(end / 60, end % 60, 0)?;
    // A window end inside a daylight-saving gap runs an hour later.
    let at = zone.from_local_datetime(&naive).earliest().or_else(|| {
        zone.from_local_datetime(&(naive + chrono::Duration::hours(1)))
            .earliest()
    })?;
    Some(at.with_timezone(&Utc))
}

/// When automated work due at `at` may run for `lead`: `at` itself, or the end of the
/// organization's quiet window in the lead's time zone (the organization's when the
/// lead has none).
pub fn outside_quiet_hours(
    tx: &impl Reader,
    org: &str,
    lead: &LeadRecord,
    at: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>> {
    let Some(org_record) = tx.org(org)? else {
        return Ok(None);
    };
    let zone = if lead.time_zone.is_empty() {
        tx.engine_settings(org)?.time_zone
    } else {
        lead.time_zone.clone()
    };
    Ok(quiet_window_end(&org_record, &zone, at))
}

/// When a cadence step due at `at` may run for `lead`: after the quiet window, and on a
/// day the organization's `followUpDays` allow that is not one of its `holidays` (from
/// that day's start), both in the lead's time zone (the organization's when the lead has
/// none; UTC for the days without either). `None`: at `at`. Replies to a lead's own
/// message wait for quiet hours only (`outside_quiet_hours`).
pub fn step_may_run(
    tx: &impl Reader,
    org: &str,
    lead: &LeadRecord,
    at: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>> {
    let Some(org_record) = tx.org(org)? else {
        return Ok(None);
    };
    let engine = tx.engine_settings(org)?;
    let zone_name = zone_of(lead, &engine.time_zone).to_string();
    let zone = zone_name.parse::<chrono_tz::Tz>().unwrap_or(chrono_tz::UTC);
    let mut t = at;
    // A window's end may fall on a holiday, and a day's start in the window: at most a
    // few rounds settle it.
    for _ in 0..4 {
        let mut moved = false;
        if let Some(end) = quiet_window_end(&org_record, &zone_name, t) {
            t = end;
            moved = true;
        }
        if let Some(start) = next_follow_up_day(&engine.follow_up_days, &engine.holidays, zone, t) {
            t = start;
            moved = true;
        }
        if !moved {
            break;
        }
    }
    Ok((t != at).then_some(t))
}

/// The end of the `n`th business day of the organization after `at`'s day, in its time
/// zone (UTC without one): its `followUpDays` (Monday to Friday when it sets none), less
/// its `holidays`. A possible opt-out undecided by then becomes one (`conversation::hold`).
pub fn business_days_later(
    tx: &impl Reader,
    org: &str,
    at: DateTime<Utc>,
    n: u32,
) -> Result<DateTime<Utc>> {
    let engine = tx.engine_settings(org)?;
    let zone = engine
        .time_zone
        .parse::<chrono_tz::Tz>()
        .unwrap_or(chrono_tz::UTC);
    // Without a business day in ten years (every day a holiday), calendar days.
    Ok(
        nth_business_day_end(&engine.follow_up_days, &engine.holidays, zone, at, n)
            .unwrap_or(at + chrono::Duration::days(i64::from(n))),
    )
}

fn nth_business_day_end(
    days: &[String],
    holidays: &[String],
    zone: chrono_tz::Tz,
    at: DateTime<Utc>,
    n: u32,
) -> Option<DateTime<Utc>> {
    use chrono::{Datelike, TimeZone};
    let business = |day: chrono::NaiveDate| {
        let index = day.weekday().num_days_from_monday() as usize;
        let working = if days.is_empty() {
            index < 5
        } else {
            days.iter().any(|d| d == WEEKDAYS[index])
        };
        working && !holidays.contains(&day.format("%Y-%m-%d").to_string())
    };
    let mut day = at.with_timezone(&zone).date_naive();
    let mut counted = 0;
    for _ in 0..3660 {
        day = day.succ_opt()?;
        if business(day) {
            counted += 1;
            if counted >= n {
                let start = day.succ_opt()?.and_hms_opt(0, 0, 0)?;
                return Some(
                    zone.from_local_datetime(&start)
                        .earliest()?
                        .with_timezone(&Utc),
                );
            }
        }
    }
    None
}

/// The start of the next day steps may run on, when `t`'s day (in `zone`) is not one.
fn next_follow_up_day(
    days: &[String],
    holidays: &[String],
    zone: chrono_tz::Tz,
    t: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    use chrono::{Datelike, TimeZone};
    if days.is_empty() && holidays.is_empty() {
        return None;
    }
    let allowed = |day: chrono::NaiveDate| {
        let weekday = WEEKDAYS[day.weekday().num_days_from_monday() as usize];
        (days.is_empty() || days.iter().any(|d| d == weekday))
            && !holidays
                .iter()
                .any(|h| *h == day.format("%Y-%m-%d").to_string())
    };
    let mut day = t.with_timezone(&zone).date_naive();
    if allowed(day) {
        return None;
    }
    for _ in 0..400 {
        day = day.succ_opt()?;
        if allowed(day) {
            let start = zone
                .from_local_datetime(&day.and_hms_opt(0, 0, 0)?)
                .earliest()?;
            return Some(start.with_timezone(&Utc));
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_hold_lasts_ten_business_days_of_the_organization() {
        // Thursday 26 November 2026: ten weekdays later is Thursday 10 December, whose
        // end is the 11th's start; a holiday on Monday 30 November adds a day, and so do
        // follow-up days without Fridays.
        let thursday = at("2026-11-26T15:00:00Z");
        let end = |days: &[String], holidays: &[String]| {
            nth_business_day_end(days, holidays, chrono_tz::UTC, thursday, 10)
        };
        assert_eq!(end(&[], &[]), Some(at("2026-12-11T00:00:00Z")));
        let holiday = ["2026-11-30".to_string()];
        assert_eq!(end(&[], &holiday), Some(at("2026-12-12T00:00:00Z")));
        let days: Vec<String> = ["mon", "tue", "wed", "thu"].map(String::from).to_vec();
        assert_eq!(end(&days, &[]), Some(at("2026-12-16T00:00:00Z")));
    }

    #[test]
    fn steps_wait_for_the_next_follow_up_day_that_is_no_holiday() {
        let days: Vec<String> = ["mon", "tue", "wed", "thu", "fri"]
            .map(String::from)
            .to_vec();
        let saturday = at("2026-11-28T10:00:00Z");
        assert_eq!(
            next_follow_up_day(&days, &[], chrono_tz::UTC, saturday),
            Some(at("2026-11-30T00:00:00Z")),
            "Saturday waits for Monday"
        );
        let holidays = vec!["2026-11-30".to_string()];
        assert_eq!(
            next_follow_up_day(&days, &holidays, chrono_tz::UTC, saturday),
            Some(at("2026-12-01T00:00:00Z")),
            "a Monday holiday waits for Tuesday"
        );
        let wednesday = at("2026-11-25T10:00:00Z");
        assert_eq!(
            next_follow_up_day(&days, &holidays, chrono_tz::UTC, wednesday),
            None
        );
        assert_eq!(next_follow_up_day(&[], &[], chrono_tz::UTC, saturday), None);
        // In the lead's zone: Saturday 02:00 UTC is still Friday evening in Chicago.
        let chicago: chrono_tz::Tz = "America/Chicago".parse().unwrap();
        assert_eq!(
            next_follow_up_day(&days, &[], chicago, at("2026-11-28T02:00:00Z")),
            None
        );
    }
    use crate::store::rows::OrgSettings;

    /// An organization with `quiet` hours (also the compliance gate's tests').
    pub(crate) fn org(quiet: Option<(&str, &str)>) -> OrgRecord {
        OrgRecord {
            id: "o".into(),
            name: "o".into(),
            created_at: 0,
            settings: OrgSettings {
                quiet_hours: quiet.map(|(a, b)| (a.to_string(), b.to_string())),
                ..Default::default()
            },
        }
    }

    pub(crate) fn lead() -> LeadRecord {
        LeadRecord {
            id: "l".into(),
            phone: "+15551234567".into(),
            time_zone: "America/New_York".into(),
            ..Default::default()
        }
    }

    pub(crate) fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn quiet_hours_follow_the_lead_time_zone_and_wrap_midnight() {
        let o = org(Some(("21:00", "08:00")));
        let l = lead();
        // 02:00 UTC is 21:00 in New York (EST, UTC-5): quiet.
        assert!(in_quiet_hours(&o, &l.time_zone, at("2026-11-22T02:00:00Z")));
        // 13:00 in New York: not quiet.
        assert!(!in_quiet_hours(
            &o,
            &l.time_zone,
            at("2026-11-22T18:00:00Z")
        ));
        // 07:59 in New York: still quiet.
        assert!(in_quiet_hours(&o, &l.time_zone, at("2026-11-22T12:59:00Z")));
        let no_zone = LeadRecord {
            time_zone: String::new(),
            ..lead()
        };
        assert!(!in_quiet_hours(
            &o,
            &no_zone.time_zone,
            at("2026-11-22T02:00:00Z")
        ));
        let daytime = org(Some(("09:00", "17:00")));
        assert!(in_quiet_hours(
            &daytime,
            &l.time_zone,
            at("2026-11-22T15:00:00Z")
        ));
    }
}
