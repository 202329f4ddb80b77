//! Busy intervals out of one `calendar-data` (an iCalendar object of a CalDAV
//! collection): each `VEVENT` parsed with the `icalendar` crate's parser, times read in
//! their `TZID` zone (chrono-tz), all-day (`DATE`) events busy from midnight to midnight
//! in the zone given, recurring masters expanded with `rrule` when the server returned
//! them unexpanded (overridden instances and `EXDATE`s left out), `TRANSP:TRANSPARENT`
//! and `STATUS:CANCELLED` free, every interval clipped to the range asked for. A `TZID`
//! is read by the object's own `VTIMEZONE` first, else by its name (IANA or Windows):
//! `zones`; an event whose zone cannot be read is held busy for its whole days (in the
//! calendar's zone) and named in the [`Report`].
//!
//! Expansion is bounded, since anyone who can put an event on the owner's calendar
//! writes its rule: only occurrences near the range are produced (a rule without
//! `COUNT` stepping by days or weeks, or by seconds to hours without `BY...` parts,
//! starts from a whole number of its periods before the range, not from its `DTSTART`),
//! each event takes at most [`MAX_STEPS_PER_EVENT`] steps of the rule and
//! [`MAX_OCCURRENCES`] occurrences, and a read shares a [`Budget`] of steps and time. An
//! event that runs out of either is busy from its start to the end of the range, and
//! its name is kept in [`Budget::too_many`] for the calendar's status: busy rather than
//! forgotten.

use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use icalendar::parser::{read_calendar, unfold, Component, Property};

/// A busy interval, `start` before `end`, both in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Busy {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

/// The range asked for, and the zone in which all-day and floating times are read.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub zone: Tz,
}

/// At most this many occurrences of one recurring event are expanded (a daily event over
/// the 180 days a calendar looks ahead is 180; one every 5 minutes over a week, 2,016).
pub const MAX_OCCURRENCES: usize = 2_500;

/// At most this many steps of one event's rules (occurrences produced before the range
/// count: a daily rule from 1900 is about 46,000, a weekly one with `COUNT` as many).
pub const MAX_STEPS_PER_EVENT: u32 = 200_000;

/// At most this many steps for one read of a collection, over all its events.
pub const MAX_STEPS_PER_READ: u32 = 2_000_000;

/// At most this long expanding the events of one read.
pub const READ_TIME: StdDuration = StdDuration::from_secs(2);

/// What one read of a collection may still spend on expansion, and the events that ran
/// out of it (each then busy to the end of the range).
#[derive(Debug)]
pub struct Budget {
    steps_left: u32,
    deadline: Instant,
    /// The events treated as busy to the end of the range: their `SUMMARY` (else
    /// `UID`), at most ten.
    pub too_many: Vec<String>,
}

/// At most this many events are named in [`Budget::too_many`].
const MAX_NAMED: usize = 10;

impl Budget {
    /// [`MAX_STEPS_PER_READ`] steps and [`READ_TIME`] from now.
    pub fn new() -> Budget {
        Budget::with(MAX_STEPS_PER_READ, READ_TIME)
    }

    /// `steps` steps and `time` from now.
    pub fn with(steps: u32, time: StdDuration) -> Budget {
        Budget {
            steps_left: steps,
            deadline: Instant::now() + time,
            too_many: Vec::new(),
        }
    }

    fn name(&mut self, event: &Component) {
        let name = text(event, "SUMMARY")
            .filter(|s| !s.is_empty())
            .or_else(|| text(event, "UID"))
            .unwrap_or("an event without a name");
        let name: String = name.chars().filter(|c| !c.is_control()).take(80).collect();
        if self.too_many.len() < MAX_NAMED && !self.too_many.contains(&name) {
            self.too_many.push(name);
        }
    }
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new()
    }
}

/// Why a `calendar-data` could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotICalendar(pub String);

/// The busy intervals of one iCalendar object within `window`, clipped to it; the
/// event count is the number of `VEVENT` components read (free ones included), with a
/// budget of its own.
pub fn busy_of(ics: &str, window: &Window) -> Result<(Vec<Busy>, usize), NotICalendar> {
    busy_report(ics, window, &mut Budget::new()).map(|r| (r.busy, r.events))
}

/// What one iCalendar object says about a window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Busy intervals, clipped to the window.
    pub busy: Vec<Busy>,
    /// `VEVENT` components read (free ones included).
    pub events: usize,
    /// Events whose time zone could not be read (held busy for their whole days), in
    /// words: `"Board call" (TZID "Mars/Olympus")`.
    pub unreadable_zones: Vec<String>,
}

/// [`busy_of`], with the events whose zone could not be read named, expansion spending
/// `budget` (shared over a read).
pub fn busy_report(
    ics: &str,
    window: &Window,
    budget: &mut Budget,
) -> Result<Report, NotICalendar> {
    let unfolded = unfold(ics);
    let mut calendar = read_calendar(&unfolded).map_err(|e| {
        NotICalendar(
            e.lines()
                .next()
                .unwrap_or("not iCalendar")
                .chars()
                .take(200)
                .collect(),
        )
    })?;
    let unknown_zones = super::zones::rewrite(
        &mut calendar.components,
        window.from,
        window.to,
        window.zone,
    );
    let mut unreadable_zones = Vec::new();
    let events: Vec<&Component> = calendar
        .components
        .iter()
        .filter(|c| c.name.as_str().eq_ignore_ascii_case("VEVENT"))
        .collect();
    if events.is_empty() && !ics.trim_start().starts_with("BEGIN:VCALENDAR") {
        return Err(NotICalendar("no VCALENDAR".into()));
    }
    // Instances that override a master's occurrence (RECURRENCE-ID): the master's
    // expansion leaves those occurrences to them.
    let overridden: Vec<(String, DateTime<Utc>)> = events
        .iter()
        .filter_map(|e| {
            let uid = text(e, "UID")?;
            let id = time_of(e.find_prop("RECURRENCE-ID")?, window.zone)?;
            Some((uid.to_string(), id.utc()))
        })
        .collect();
    let mut busy = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let first = busy.len();
        if let Some(tzid) = unknown_zones.get(index).and_then(Option::as_ref) {
            if !is_free(event) {
                let summary: String =
                    crate::carrier_text::line(text(event, "SUMMARY").unwrap_or("an event"))
                        .chars()
                        .take(80)
                        .collect();
                let tzid: String = crate::carrier_text::line(tzid).chars().take(80).collect();
                unreadable_zones.push(format!("\"{summary}\" (TZID \"{tzid}\")"));
            }
        }
        if is_free(event) {
            continue;
        }
        let Some(start_prop) = event.find_prop("DTSTART") else {
            continue;
        };
        let Some(start) = time_of(start_prop, window.zone) else {
            continue;
        };
        let length = length_of(event, &start, window.zone);
        let is_master = event.find_prop("RECURRENCE-ID").is_none();
        let rules: Vec<&str> = props(event, "RRULE").map(|p| p.val.as_str()).collect();
        if is_master && (!rules.is_empty() || props(event, "RDATE").next().is_some()) {
            let uid = text(event, "UID").unwrap_or_default();
            let skip: Vec<DateTime<Utc>> = overridden
                .iter()
                .filter(|(u, _)| u == uid)
                .map(|(_, t)| *t)
                .collect();
            let Some(occurrences) = expand(event, &start, &rules, length, window, budget) else {
                budget.name(event);
                push_clipped(&mut busy, start.utc(), window.to, window);
                continue;
            };
            for occurrence in occurrences {
                if !skip.contains(&occurrence) {
                    let end = match start {
                        // Whole days end at a midnight, whatever DST did in between.
                        When::Day(_, zone) => {
                            let day = occurrence.with_timezone(&zone).date_naive();
                            let days = chrono::Days::new(length.num_days().max(1).unsigned_abs());
                            day.checked_add_days(days)
                                .map_or(window.to, |end| midnight(end, zone))
                        }
                        When::At(_) => plus(occurrence, length),
                    };
                    push_clipped(&mut busy, occurrence, end, window);
                }
            }
        } else {
            let start = start.utc();
            push_clipped(&mut busy, start, plus(start, length), window);
        }
        if unknown_zones.get(index).is_some_and(Option::is_some) {
            whole_days(&mut busy[first..], window);
        }
    }
    Ok(Report {
        busy,
        events: events.len(),
        unreadable_zones,
    })
}

/// Each interval widened to the whole days (midnight to midnight in the window's zone)
/// it touches, clipped to the window: an event whose zone is unknown could be at any
/// time of its day.
fn whole_days(busy: &mut [Busy], window: &Window) {
    for interval in busy {
        let first = interval.start.with_timezone(&window.zone).date_naive();
        let last = (interval.end - Duration::microseconds(1))
            .max(interval.start)
            .with_timezone(&window.zone)
            .date_naive();
        let end = last
            .succ_opt()
            .map_or(window.to, |next| midnight(next, window.zone));
        interval.start = midnight(first, window.zone).max(window.from);
        interval.end = end.min(window.to);
    }
}

/// `TRANSP:TRANSPARENT` or `STATUS:CANCELLED`: the event takes no time.
fn is_free(event: &Component) -> bool {
    let transparent = text(event, "TRANSP").is_some_and(|v| v.eq_ignore_ascii_case("TRANSPARENT"));
    let cancelled = text(event, "STATUS").is_some_and(|v| v.eq_ignore_ascii_case("CANCELLED"));
    transparent || cancelled
}

fn props<'c, 'a>(
    event: &'c Component<'a>,
    name: &'static str,
) -> impl Iterator<Item = &'c Property<'a>> {
    event
        .properties
        .iter()
        .filter(move |p| p.name.as_str().eq_ignore_ascii_case(name))
}

fn text<'c>(event: &'c Component, name: &'static str) -> Option<&'c str> {
    props(event, name).next().map(|p| p.val.as_str().trim())
}

fn param<'p>(prop: &'p Property, key: &str) -> Option<&'p str> {
    prop.params
        .iter()
        .find(|p| p.key.as_str().eq_ignore_ascii_case(key))
        .and_then(|p| p.val.as_ref())
        .map(|v| v.as_str().trim_matches('"'))
}

/// A `DTSTART`-like value: a whole day, or a moment in a zone.
#[derive(Debug, Clone, Copy)]
enum When {
    Day(NaiveDate, Tz),
    At(DateTime<Tz>),
}

impl When {
    fn utc(&self) -> DateTime<Utc> {
        match self {
            When::Day(day, zone) => midnight(*day, *zone),
            When::At(at) => at.with_timezone(&Utc),
        }
    }

    fn in_zone(&self) -> DateTime<Tz> {
        match self {
            When::Day(day, zone) => midnight(*day, *zone).with_timezone(zone),
            When::At(at) => *at,
        }
    }
}

/// The first moment of `day` in `zone` (a midnight skipped by DST: the first moment
/// after it).
fn midnight(day: NaiveDate, zone: Tz) -> DateTime<Utc> {
    let naive = day.and_time(chrono::NaiveTime::MIN);
    local(naive, zone)
}

/// A local time in `zone` as UTC: an ambiguous time is the earlier, a time a DST change
/// skipped is read an hour later (as the clocks show it).
fn local(naive: NaiveDateTime, zone: Tz) -> DateTime<Utc> {
    for shift in 0..3 {
        let Some(shifted) = naive.checked_add_signed(Duration::hours(shift)) else {
            break;
        };
        match zone.from_local_datetime(&shifted) {
            chrono::LocalResult::Single(t) => return t.with_timezone(&Utc),
            chrono::LocalResult::Ambiguous(early, _) => return early.with_timezone(&Utc),
            chrono::LocalResult::None => continue,
        }
    }
    Utc.from_utc_datetime(&naive)
}

/// A date or date-time property read in its `TZID` (an unknown zone name, or a floating
/// time: `zone`; a `Z` time: UTC).
fn time_of(prop: &Property, zone: Tz) -> Option<When> {
    let value = prop.val.as_str().trim();
    let is_date = param(prop, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("DATE"))
        || (value.len() == 8 && value.bytes().all(|b| b.is_ascii_digit()));
    if is_date {
        let day = NaiveDate::parse_from_str(value.get(..8)?, "%Y%m%d").ok()?;
        return Some(When::Day(day, zone));
    }
    if let Some(utc) = value.strip_suffix('Z').or_else(|| value.strip_suffix('z')) {
        let naive = NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S").ok()?;
        return Some(When::At(
            Utc.from_utc_datetime(&naive).with_timezone(&Tz::UTC),
        ));
    }
    let naive = NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S").ok()?;
    let zone = param(prop, "TZID").and_then(zone_named).unwrap_or(zone);
    Some(When::At(local(naive, zone).with_timezone(&zone)))
}

/// An IANA zone name, also as some servers write it (`/mozilla.org/.../Europe/Berlin`),
/// or a Windows name (CLDR's table); by the time an event is read, `zones::rewrite` has
/// put the zone its `VTIMEZONE` says in place of every `TZID`.
fn zone_named(name: &str) -> Option<Tz> {
    super::zones::named_zone(name)
}

/// How long the event lasts: `DTEND` less `DTSTART`, else `DURATION`, else a day for an
/// all-day event and nothing for a moment (RFC 5545 3.6.1); an all-day event whose
/// `DTEND` is not after its start lasts its day.
fn length_of(event: &Component, start: &When, zone: Tz) -> Duration {
    if let Some(end) = event.find_prop("DTEND").and_then(|p| time_of(p, zone)) {
        let length = end.utc() - start.utc();
        return match start {
            // A day's event ending on its own day (some writers do): the day.
            When::Day(..) if length <= Duration::zero() => Duration::days(1),
            _ => length.max(Duration::zero()),
        };
    }
    if let Some(length) = text(event, "DURATION").and_then(parse_duration) {
        return length;
    }
    match start {
        When::Day(..) => Duration::days(1),
        When::At(_) => Duration::zero(),
    }
}

/// An RFC 5545 duration (`PT1H30M`, `P1D`, `P2W`); a negative one is none.
fn parse_duration(value: &str) -> Option<Duration> {
    let value = value.strip_prefix('+').unwrap_or(value);
    let rest = value.strip_prefix('P')?;
    let mut total = Duration::zero();
    let mut number = String::new();
    let mut in_time = false;
    for c in rest.chars() {
        match c {
            'T' => in_time = true,
            '0'..='9' => number.push(c),
            unit => {
                let n: i64 = number.parse().ok()?;
                number.clear();
                let part = match (unit, in_time) {
                    ('W', false) => Duration::try_weeks(n),
                    ('D', false) => Duration::try_days(n),
                    ('H', true) => Duration::try_hours(n),
                    ('M', true) => Duration::try_minutes(n),
                    ('S', true) => Duration::try_seconds(n),
                    _ => None,
                }?;
                total = total.checked_add(&part)?;
            }
        }
    }
    number.is_empty().then_some(total)
}

/// The starts of a recurring master's occurrences that may overlap `window` (an
/// occurrence starting up to `length` before it), read with `rrule`; a rule `rrule`
/// refuses leaves the first occurrence alone, busy rather than forgotten. `None`: the
/// event ran out of its steps, its occurrences or the read's budget.
fn expand(
    event: &Component,
    start: &When,
    rules: &[&str],
    length: Duration,
    window: &Window,
    budget: &mut Budget,
) -> Option<Vec<DateTime<Utc>>> {
    // An occurrence that began up to its length before the range still covers part of it
    // (a length over a year is looked back a year).
    let lookback = length.min(Duration::days(366)) + Duration::seconds(1);
    let after = window
        .from
        .checked_sub_signed(lookback)
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    let zone = zone_of(start);
    let original = start.in_zone();
    let mut parsed = Vec::new();
    for rule in rules {
        match rule.parse::<rrule::RRule<rrule::Unvalidated>>() {
            Ok(rule) => parsed.push(with_utc_until(rule, zone)),
            Err(_) => return Some(vec![start.utc()]),
        }
    }
    // A rule that ended before the range adds nothing to it (its RDATEs still count).
    parsed.retain(|r| r.get_until().is_none_or(|u| u.with_timezone(&Utc) >= after));
    let dtstart = match parsed.as_slice() {
        [only] => fast_forward(only, original, after),
        _ => original,
    };
    let rrule_zone: rrule::Tz = dtstart.timezone().into();
    let dtstart = dtstart.with_timezone(&rrule_zone);
    let mut set = rrule::RRuleSet::new(dtstart).limit();
    for rule in parsed {
        match rule.validate(dtstart) {
            Ok(rule) => set = set.rrule(rule),
            Err(_) => return Some(vec![start.utc()]),
        }
    }
    for prop in props(event, "EXDATE") {
        for value in prop.val.as_str().split(',') {
            if let Some(t) = list_item(prop, value, zone) {
                set = set.exdate(t.with_timezone(&rrule_zone));
            }
        }
    }
    for prop in props(event, "RDATE") {
        for value in prop.val.as_str().split(',') {
            if let Some(t) = list_item(prop, value, zone) {
                set = set.rdate(t.with_timezone(&rrule_zone));
            }
        }
    }
    let mut found = Vec::new();
    let mut steps: u32 = 0;
    for occurrence in &set {
        steps += 1;
        if steps > MAX_STEPS_PER_EVENT || budget.steps_left == 0 {
            return None;
        }
        budget.steps_left -= 1;
        if steps.is_multiple_of(1_024) && Instant::now() >= budget.deadline {
            return None;
        }
        let occurrence = occurrence.with_timezone(&Utc);
        if occurrence >= window.to {
            break;
        }
        if occurrence >= after {
            if found.len() >= MAX_OCCURRENCES {
                return None;
            }
            found.push(occurrence);
        }
    }
    Some(found)
}

/// Where a rule's expansion may start instead of its `DTSTART`: a whole number of its
/// periods later, at least two days before `after` (so a DST change in between moves
/// nothing), for a rule without `COUNT` stepping by days or weeks, or by seconds to
/// hours without `BY...` parts, whose occurrences then fall where they fell from the
/// original start. Other rules start where they do.
fn fast_forward(
    rule: &rrule::RRule<rrule::Unvalidated>,
    dtstart: DateTime<Tz>,
    after: DateTime<Utc>,
) -> DateTime<Tz> {
    use rrule::Frequency;
    let unit: i64 = match rule.get_freq() {
        Frequency::Secondly => 1,
        Frequency::Minutely => 60,
        Frequency::Hourly => 3_600,
        Frequency::Daily => 86_400,
        Frequency::Weekly => 604_800,
        Frequency::Monthly | Frequency::Yearly => return dtstart,
    };
    // `rrule` steps a sub-daily rule that filters its own units (`BYHOUR` on a minutely
    // rule) in its own way; such a rule starts where it does, within its budget.
    let sub_daily = unit < 86_400;
    let filters = !rule.get_by_hour().is_empty()
        || !rule.get_by_minute().is_empty()
        || !rule.get_by_second().is_empty()
        || !rule.get_by_weekday().is_empty()
        || !rule.get_by_month_day().is_empty()
        || !rule.get_by_month().is_empty()
        || !rule.get_by_year_day().is_empty()
        || !rule.get_by_week_no().is_empty()
        || !rule.get_by_set_pos().is_empty();
    if rule.get_count().is_some() || (sub_daily && filters) {
        return dtstart;
    }
    let zone = dtstart.timezone();
    let period = unit * i64::from(rule.get_interval().max(1));
    let Some(target) = after.checked_sub_signed(Duration::days(2)) else {
        return dtstart;
    };
    let from = dtstart.naive_local();
    let to = target.with_timezone(&zone).naive_local();
    let gap = (to - from).num_seconds();
    if gap <= period {
        return dtstart;
    }
    // A start on a local time that is ambiguous or skipped would move the rule's time of
    // day: the period before it is taken instead.
    let periods = gap / period;
    (0..4)
        .filter_map(|back| {
            let seconds = (periods - back).checked_mul(period)?;
            let naive = from.checked_add_signed(Duration::try_seconds(seconds)?)?;
            match zone.from_local_datetime(&naive) {
                chrono::LocalResult::Single(t) if back < periods => Some(t),
                _ => None,
            }
        })
        .next()
        .unwrap_or(dtstart)
}

fn zone_of(start: &When) -> Tz {
    match start {
        When::Day(_, zone) => *zone,
        When::At(at) => at.timezone(),
    }
}

/// An `UNTIL` written as a local date or time (all-day and floating events) read in the
/// event's zone and given in UTC, as `rrule` requires of a start with a zone.
fn with_utc_until(
    rule: rrule::RRule<rrule::Unvalidated>,
    zone: Tz,
) -> rrule::RRule<rrule::Unvalidated> {
    match rule.get_until().copied() {
        Some(until) if until.timezone().name() != "UTC" => {
            let utc = local(until.naive_local(), zone).with_timezone(&rrule::Tz::UTC);
            rule.until(utc)
        }
        _ => rule,
    }
}

/// One value of an `EXDATE` or `RDATE` list, read with the property's parameters.
fn list_item(prop: &Property, value: &str, zone: Tz) -> Option<DateTime<Utc>> {
    let single = Property {
        name: prop.name.clone(),
        val: value.trim().into(),
        params: prop.params.clone(),
    };
    time_of(&single, zone).map(|w| w.utc())
}

/// `t` later by `d`, or the end of time.
fn plus(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t.checked_add_signed(d).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn push_clipped(busy: &mut Vec<Busy>, start: DateTime<Utc>, end: DateTime<Utc>, window: &Window) {
    let (start, end) = (start.max(window.from), end.min(window.to));
    if start < end {
        busy.push(Busy { start, end });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn window(from: &str, to: &str) -> Window {
        Window {
            from: utc(from),
            to: utc(to),
            zone: chrono_tz::America::Chicago,
        }
    }

    fn cal(events: &str) -> String {
        format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n{events}END:VCALENDAR\r\n")
    }

    #[test]
    fn a_utc_event_is_busy_and_clipped_to_the_window() {
        let ics = cal("BEGIN:VEVENT\r\nUID:a\r\nDTSTART:20260105T150000Z\r\nDTEND:20260105T160000Z\r\nEND:VEVENT\r\n");
        let (busy, seen) = busy_of(
            &ics,
            &window("2026-01-05T15:30:00Z", "2026-01-06T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(seen, 1);
        assert_eq!(
            busy,
            vec![Busy {
                start: utc("2026-01-05T15:30:00Z"),
                end: utc("2026-01-05T16:00:00Z")
            }]
        );
    }

    #[test]
    fn a_tzid_event_is_read_in_its_zone_and_duration_counts() {
        let ics = cal("BEGIN:VEVENT\r\nUID:a\r\nDTSTART;TZID=Europe/Berlin:20260705T090000\r\nDURATION:PT1H30M\r\nEND:VEVENT\r\n");
        let (busy, _) = busy_of(
            &ics,
            &window("2026-07-01T00:00:00Z", "2026-08-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(
            busy,
            vec![Busy {
                start: utc("2026-07-05T07:00:00Z"),
                end: utc("2026-07-05T08:30:00Z")
            }]
        );
    }

    #[test]
    fn an_all_day_event_is_busy_the_whole_day_in_the_zone_given() {
        let ics = cal("BEGIN:VEVENT\r\nUID:a\r\nDTSTART;VALUE=DATE:20260105\r\nDTEND;VALUE=DATE:20260106\r\nEND:VEVENT\r\n");
        let (busy, _) = busy_of(
            &ics,
            &window("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(
            busy,
            vec![Busy {
                start: utc("2026-01-05T06:00:00Z"),
                end: utc("2026-01-06T06:00:00Z")
            }]
        );
    }

    #[test]
    fn instances_a_server_expanded_are_each_busy() {
        let ics = cal(concat!(
            "BEGIN:VEVENT\r\nUID:w\r\nRECURRENCE-ID:20260105T150000Z\r\n",
            "DTSTART:20260105T150000Z\r\nDTEND:20260105T160000Z\r\nEND:VEVENT\r\n",
            "BEGIN:VEVENT\r\nUID:w\r\nRECURRENCE-ID:20260112T150000Z\r\n",
            "DTSTART:20260112T150000Z\r\nDTEND:20260112T160000Z\r\nEND:VEVENT\r\n",
        ));
        let (busy, seen) = busy_of(
            &ics,
            &window("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!((busy.len(), seen), (2, 2));
        assert_eq!(busy[1].start, utc("2026-01-12T15:00:00Z"));
    }

    #[test]
    fn an_all_day_event_ending_on_its_own_day_lasts_the_day() {
        let ics = cal("BEGIN:VEVENT\r\nUID:a\r\nDTSTART;VALUE=DATE:20260105\r\nDTEND;VALUE=DATE:20260105\r\nEND:VEVENT\r\n");
        let (busy, _) = busy_of(
            &ics,
            &window("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(
            busy,
            vec![Busy {
                start: utc("2026-01-05T06:00:00Z"),
                end: utc("2026-01-06T06:00:00Z")
            }]
        );
    }

    #[test]
    fn transparent_and_cancelled_events_are_free() {
        let ics = cal("BEGIN:VEVENT\r\nUID:a\r\nDTSTART:20260105T150000Z\r\nDTEND:20260105T160000Z\r\nTRANSP:TRANSPARENT\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\nDTSTART:20260105T170000Z\r\nDTEND:20260105T180000Z\r\nSTATUS:CANCELLED\r\nEND:VEVENT\r\n");
        let (busy, seen) = busy_of(
            &ics,
            &window("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!((busy, seen), (vec![], 2));
    }

    #[test]
    fn a_recurring_master_is_expanded_less_its_exdates_and_overrides_across_dst() {
        let ics = cal(concat!(
            "BEGIN:VEVENT\r\nUID:w\r\nDTSTART;TZID=America/Chicago:20260302T090000\r\n",
            "DTEND;TZID=America/Chicago:20260302T100000\r\nRRULE:FREQ=WEEKLY;COUNT=10\r\n",
            "EXDATE;TZID=America/Chicago:20260316T090000\r\nEND:VEVENT\r\n",
            "BEGIN:VEVENT\r\nUID:w\r\nRECURRENCE-ID;TZID=America/Chicago:20260323T090000\r\n",
            "DTSTART;TZID=America/Chicago:20260323T140000\r\nDTEND;TZID=America/Chicago:20260323T150000\r\nEND:VEVENT\r\n",
        ));
        let (mut busy, _) = busy_of(
            &ics,
            &window("2026-03-01T00:00:00Z", "2026-03-29T00:00:00Z"),
        )
        .unwrap();
        busy.sort();
        let starts: Vec<String> = busy.iter().map(|b| b.start.to_rfc3339()).collect();
        assert_eq!(
            starts,
            [
                "2026-03-02T15:00:00+00:00", // CST
                "2026-03-09T14:00:00+00:00", // CDT from March 8
                "2026-03-23T19:00:00+00:00", // the override at 2 PM
            ]
        );
        assert!(busy.iter().all(|b| b.end - b.start == Duration::hours(1)));
    }

    #[test]
    fn a_recurring_all_day_event_with_until_is_expanded() {
        let ics = cal("BEGIN:VEVENT\r\nUID:d\r\nDTSTART;VALUE=DATE:20260105\r\nRRULE:FREQ=DAILY;UNTIL=20260107\r\nEND:VEVENT\r\n");
        let (busy, _) = busy_of(
            &ics,
            &window("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(busy.len(), 3, "{busy:?}");
        assert_eq!(busy[0].start, utc("2026-01-05T06:00:00Z"));
    }

    #[test]
    fn garbage_is_not_icalendar_and_never_panics() {
        let w = window("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
        assert!(busy_of("<html>not a calendar</html>", &w).is_err());
        for odd in [
            "",
            "BEGIN:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:nonsense\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:20260105T150000Z\r\nRRULE:FREQ=SOMETIMES\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;TZID=Mars/Olympus:20260105T150000\r\nDURATION:PXYZ\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:99991231T230000Z\r\nDURATION:P999999999999W\r\nRRULE:FREQ=SECONDLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:20251231T230000Z\r\nDURATION:P99999999W\r\nRRULE:FREQ=SECONDLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:99991231\r\nDTEND;VALUE=DATE:00010101\r\nRRULE:FREQ=DAILY;COUNT=4\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:+2621430101T000000\r\nEXDATE:,,x\r\nRDATE:20260101T000000Z,bad\r\nRRULE:FREQ=YEARLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        ] {
            let _ = busy_of(odd, &w);
            let _ = busy_of(odd, &Window { from: DateTime::<Utc>::MIN_UTC, to: DateTime::<Utc>::MAX_UTC, zone: Tz::Pacific__Kiritimati });
        }
    }

    /// The occurrences `rrule` gives from the event's own `DTSTART`, with no bound: what
    /// the bounded expansion must agree with.
    fn plain(dtstart: &str, zone: Tz, rule: &str, window: &Window) -> Vec<DateTime<Utc>> {
        let naive = NaiveDateTime::parse_from_str(dtstart, "%Y%m%dT%H%M%S").unwrap();
        let start = local(naive, zone).with_timezone(&rrule::Tz::from(zone));
        let rule = rule
            .parse::<rrule::RRule<rrule::Unvalidated>>()
            .unwrap()
            .validate(start)
            .unwrap();
        rrule::RRuleSet::new(start)
            .rrule(rule)
            .after(window.from.with_timezone(&rrule::Tz::UTC))
            .before(window.to.with_timezone(&rrule::Tz::UTC))
            .all(u16::MAX)
            .dates
            .into_iter()
            .map(|t| t.with_timezone(&Utc))
            .filter(|t| *t < window.to)
            .collect()
    }

    #[test]
    fn a_secondly_rule_from_1900_is_busy_to_the_end_and_named_without_expanding_it() {
        let ics = cal("BEGIN:VEVENT\r\nUID:flood\r\nSUMMARY:Flood\r\nDTSTART:19000101T000000Z\r\nDURATION:PT1S\r\nRRULE:FREQ=SECONDLY\r\nEND:VEVENT\r\n");
        let w = window("2026-12-01T00:00:00Z", "2026-12-16T00:00:00Z");
        let started = Instant::now();
        let mut budget = Budget::new();
        let Report {
            busy, events: seen, ..
        } = busy_report(&ics, &w, &mut budget).unwrap();
        assert!(started.elapsed() < READ_TIME + StdDuration::from_secs(1));
        assert_eq!(seen, 1);
        assert_eq!(
            busy,
            vec![Busy {
                start: w.from,
                end: w.to
            }]
        );
        assert_eq!(budget.too_many, ["Flood"]);
        // With COUNT (no fast-forward): the steps run out, busy all the same.
        let counted = cal("BEGIN:VEVENT\r\nUID:c\r\nDTSTART:19000101T000000Z\r\nRRULE:FREQ=SECONDLY;COUNT=4000000000\r\nEND:VEVENT\r\n");
        let mut budget = Budget::new();
        let busy = busy_report(&counted, &w, &mut budget).unwrap().busy;
        assert_eq!(
            busy,
            vec![Busy {
                start: w.from,
                end: w.to
            }]
        );
        assert_eq!(budget.too_many, ["c"]);
    }

    #[test]
    fn a_spent_read_budget_makes_the_next_recurring_events_busy_not_free() {
        let ics = cal("BEGIN:VEVENT\r\nUID:w\r\nDTSTART:20260105T150000Z\r\nDTEND:20260105T160000Z\r\nRRULE:FREQ=WEEKLY\r\nEND:VEVENT\r\n");
        let w = window("2026-03-01T00:00:00Z", "2026-03-08T00:00:00Z");
        let mut budget = Budget::with(0, READ_TIME);
        let busy = busy_report(&ics, &w, &mut budget).unwrap().busy;
        assert_eq!(
            busy,
            vec![Busy {
                start: w.from,
                end: w.to
            }]
        );
        let mut spent = Budget::with(MAX_STEPS_PER_READ, StdDuration::ZERO);
        let daily = cal("BEGIN:VEVENT\r\nUID:d\r\nDTSTART:19000101T150000Z\r\nRRULE:FREQ=DAILY;COUNT=60000\r\nEND:VEVENT\r\n");
        let busy = busy_report(&daily, &w, &mut spent).unwrap().busy;
        assert_eq!(
            busy,
            vec![Busy {
                start: w.from,
                end: w.to
            }]
        );
    }

    #[test]
    fn rules_started_long_ago_give_the_occurrences_of_their_own_start() {
        let zone = chrono_tz::America::Chicago;
        // Across the spring DST change, with the look-back of a long event.
        let w = Window {
            from: utc("2027-03-10T00:00:00Z"),
            to: utc("2027-03-24T00:00:00Z"),
            zone,
        };
        for (dtstart, rule) in [
            ("19000101T093000", "FREQ=DAILY"),
            ("19500301T093000", "FREQ=DAILY;INTERVAL=3"),
            ("19990104T140000", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE"),
            (
                "20010104T140000",
                "FREQ=WEEKLY;WKST=SU;INTERVAL=3;BYDAY=TU,SA",
            ),
            ("19900101T000000", "FREQ=HOURLY;INTERVAL=5"),
            ("20200101T010000", "FREQ=HOURLY;INTERVAL=7;BYHOUR=1,8,15"),
            (
                "20240101T000000",
                "FREQ=MINUTELY;INTERVAL=97;BYHOUR=9,10,11",
            ),
            ("20250101T000000", "FREQ=MINUTELY;INTERVAL=97"),
            ("20260101T000000", "FREQ=DAILY;UNTIL=20270315T000000Z"),
            (
                "19000101T080000",
                "FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8,13",
            ),
        ] {
            let ics = cal(&format!(
                "BEGIN:VEVENT\r\nUID:r\r\nDTSTART;TZID=America/Chicago:{dtstart}\r\nDURATION:PT30M\r\nRRULE:{rule}\r\nEND:VEVENT\r\n"
            ));
            let mut budget = Budget::new();
            let busy = busy_report(&ics, &w, &mut budget).unwrap().busy;
            assert!(budget.too_many.is_empty(), "{rule}");
            let mut expected: Vec<Busy> = plain(
                dtstart,
                zone,
                rule,
                &Window {
                    from: w.from - Duration::minutes(30),
                    ..w
                },
            )
            .into_iter()
            .filter_map(|s| {
                let (start, end) = (s.max(w.from), (s + Duration::minutes(30)).min(w.to));
                (start < end).then_some(Busy { start, end })
            })
            .collect();
            expected.sort();
            assert!(!expected.is_empty(), "{rule}");
            assert_eq!(busy, expected, "{rule} from {dtstart}");
        }
    }

    #[test]
    fn durations_read_as_rfc_5545_writes_them() {
        assert_eq!(parse_duration("PT1H30M"), Some(Duration::minutes(90)));
        assert_eq!(parse_duration("P2W"), Some(Duration::weeks(2)));
        assert_eq!(parse_duration("P1DT2H"), Some(Duration::hours(26)));
        assert_eq!(parse_duration("-PT1H"), None);
        assert_eq!(parse_duration("PT"), Some(Duration::zero()));
        assert_eq!(parse_duration("P1"), None);
    }
}
