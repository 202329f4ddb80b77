//! The time zones of one iCalendar object, read as RFC 5545 §3.2.19 says: a `TZID`
//! names the `VTIMEZONE` of the same object, whose `STANDARD`/`DAYLIGHT` observances
//! (`DTSTART`, `TZOFFSETFROM`, `TZOFFSETTO`, a yearly `RRULE` or `RDATE`s) give the
//! offsets. Those rules are computed here and matched to the IANA zone (chrono-tz) that
//! keeps the same offsets over the range read — the zone its name says when it agrees
//! (an IANA name, a `/mozilla.org/.../Europe/Berlin` path, a Windows name such as
//! `W. Europe Standard Time` through CLDR's table, or `X-LIC-LOCATION`), else any zone
//! that does — so recurrences and DST are then read with chrono-tz. A `TZID` without a
//! `VTIMEZONE` is read by its name alone. A `TZID` neither way readable is unknown:
//! its events are read in the calendar's zone and held busy for their whole days by the
//! caller, never free.
//!
//! [`rewrite`] puts the IANA name in place of every `TZID` of the object's events, so
//! the rest of the reading (`busy`) only ever sees IANA names.

use std::collections::HashMap;

use chrono::{DateTime, Duration, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use icalendar::parser::Component;

use super::windows_zones::iana_of_windows;

/// At most this many onsets of one observance are computed (a yearly rule since 1601
/// has about 430 to today).
const MAX_ONSETS: u16 = 3_000;

/// The rule parts a `VTIMEZONE`'s `RRULE` may use: every published zone needs only
/// these, and a yearly rule with them has a few occurrences a year, whatever it says.
const RULE_PARTS: [&str; 9] = [
    "FREQ",
    "INTERVAL",
    "UNTIL",
    "COUNT",
    "BYMONTH",
    "BYDAY",
    "BYMONTHDAY",
    "BYSETPOS",
    "WKST",
];

/// A zone name as it is written: an IANA name, a path ending in one
/// (`/mozilla.org/20050126_1/Europe/Berlin`, `/citadel.org/.../America/New_York`), or a
/// Windows name (CLDR's table).
pub fn named_zone(name: &str) -> Option<Tz> {
    let name = name.trim().trim_matches('"').trim();
    if let Ok(zone) = name.parse::<Tz>() {
        return Some(zone);
    }
    if let Some(zone) = iana_of_windows(name).and_then(|iana| iana.parse::<Tz>().ok()) {
        return Some(zone);
    }
    let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
    (0..parts.len()).find_map(|i| parts[i..].join("/").parse::<Tz>().ok())
}

/// What one `TZID` of the object reads as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    Zone(Tz),
    Unknown,
}

/// Puts the IANA name each `TZID` of the object's `VEVENT`s resolves to in its place,
/// reading it over `[from, to)`; an unknown one is replaced by `fallback` (the
/// calendar's zone). Answers, for each `VEVENT` in order, the first unknown `TZID` it
/// had (`None`: all read).
pub fn rewrite(
    components: &mut [Component<'_>],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    fallback: Tz,
) -> Vec<Option<String>> {
    let mut resolved: HashMap<String, Resolved> = HashMap::new();
    for event in components.iter().filter(|c| is(c, "VEVENT")) {
        for prop in &event.properties {
            for param in prop
                .params
                .iter()
                .filter(|p| is_key(p.key.as_str(), "TZID"))
            {
                let Some(tzid) = param.val.as_ref().map(|v| unquoted(v.as_str())) else {
                    continue;
                };
                if !resolved.contains_key(tzid) {
                    let zone = resolve_cached(tzid, vtimezone(components, tzid), from, to);
                    resolved.insert(tzid.to_string(), zone);
                }
            }
        }
    }
    let mut unknown = Vec::new();
    for event in components.iter_mut().filter(|c| is(c, "VEVENT")) {
        let mut first_unknown = None;
        for prop in &mut event.properties {
            for param in prop.params.iter_mut() {
                if !is_key(param.key.as_str(), "TZID") {
                    continue;
                }
                let Some(tzid) = param.val.as_ref().map(|v| unquoted(v.as_str()).to_string())
                else {
                    continue;
                };
                let zone = match resolved.get(&tzid) {
                    Some(Resolved::Zone(zone)) => *zone,
                    _ => {
                        first_unknown.get_or_insert(tzid);
                        fallback
                    }
                };
                param.val = Some(zone.name().to_string().into());
            }
        }
        unknown.push(first_unknown);
    }
    unknown
}

fn is(component: &Component<'_>, name: &str) -> bool {
    component.name.as_str().eq_ignore_ascii_case(name)
}

fn is_key(key: &str, name: &str) -> bool {
    key.trim().eq_ignore_ascii_case(name)
}

fn unquoted(value: &str) -> &str {
    value.trim().trim_matches('"')
}

/// The object's `VTIMEZONE` whose `TZID` is `tzid`.
fn vtimezone<'c, 'a>(components: &'c [Component<'a>], tzid: &str) -> Option<&'c Component<'a>> {
    components.iter().find(|c| {
        is(c, "VTIMEZONE")
            && c.properties
                .iter()
                .any(|p| is_key(p.name.as_str(), "TZID") && unquoted(p.val.as_str()) == tzid)
    })
}

/// At most this many resolutions are remembered (a calendar of Outlook events repeats
/// one `VTIMEZONE` in every object); the memory is emptied when full.
const REMEMBERED: usize = 512;

/// A resolution by its `TZID`, its `VTIMEZONE` (hashed with this process's random
/// keys, so that no object can be made to collide with another) and the days read.
type Remembered = HashMap<(String, u64, i64, i64), Resolved>;

fn remembered() -> &'static (std::sync::Mutex<Remembered>, std::hash::RandomState) {
    static MEMORY: std::sync::OnceLock<(std::sync::Mutex<Remembered>, std::hash::RandomState)> =
        std::sync::OnceLock::new();
    MEMORY.get_or_init(|| (std::sync::Mutex::default(), std::hash::RandomState::new()))
}

/// [`resolve`], remembered across the objects of a read and the reads of a day.
fn resolve_cached(
    tzid: &str,
    vtimezone: Option<&Component<'_>>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Resolved {
    use std::hash::{BuildHasher, Hash, Hasher};
    let (memory, keys) = remembered();
    let mut hasher = keys.build_hasher();
    if let Some(vtimezone) = vtimezone {
        hash_component(vtimezone, &mut hasher);
    }
    const DAY: i64 = 86_400;
    let key = (
        tzid.to_string(),
        hasher.finish(),
        from.timestamp().div_euclid(DAY),
        to.timestamp().div_euclid(DAY),
    );
    if let Some(found) = memory.lock().ok().and_then(|m| m.get(&key).copied()) {
        return found;
    }
    let zone = resolve(tzid, vtimezone, from, to);
    if let Ok(mut memory) = memory.lock() {
        if memory.len() >= REMEMBERED {
            memory.clear();
        }
        memory.insert(key, zone);
    }
    fn hash_component(component: &Component<'_>, hasher: &mut impl Hasher) {
        component.name.as_str().hash(hasher);
        for prop in &component.properties {
            prop.name.as_str().hash(hasher);
            for param in &prop.params {
                param.key.as_str().hash(hasher);
                param.val.as_ref().map(|v| v.as_str()).hash(hasher);
            }
            prop.val.as_str().hash(hasher);
        }
        component.components.len().hash(hasher);
        for child in &component.components {
            hash_component(child, hasher);
        }
    }
    zone
}

/// How `tzid` reads over `[from, to)`: by its `VTIMEZONE`'s rules when it has readable
/// ones (the IANA zone that keeps their offsets there, its own name's first), else by
/// its name.
pub fn resolve(
    tzid: &str,
    vtimezone: Option<&Component<'_>>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Resolved {
    let named = named_zone(tzid);
    let by_name = named.map_or(Resolved::Unknown, Resolved::Zone);
    let Some(vtimezone) = vtimezone else {
        return by_name;
    };
    let until = to.checked_add_signed(Duration::days(1)).unwrap_or(to);
    let Some(rules) = Rules::of(vtimezone, from, until) else {
        return by_name;
    };
    let samples = rules.samples(from, until);
    if samples.is_empty() {
        return by_name;
    }
    let location = vtimezone
        .properties
        .iter()
        .find(|p| is_key(p.name.as_str(), "X-LIC-LOCATION"))
        .and_then(|p| named_zone(p.val.as_str()));
    let keeps = |zone: &Tz| {
        samples.iter().all(|(t, offset)| {
            zone.offset_from_utc_datetime(&t.naive_utc())
                .fix()
                .local_minus_utc()
                == *offset
        })
    };
    named
        .into_iter()
        .chain(location)
        .chain(chrono_tz::TZ_VARIANTS.iter().copied())
        .find(keeps)
        .map_or(Resolved::Unknown, Resolved::Zone)
}

/// A `VTIMEZONE`'s offsets: every onset (in UTC) up to a bound, with the offset from it
/// on, sorted.
#[derive(Debug)]
struct Rules {
    onsets: Vec<(DateTime<Utc>, i32)>,
}

impl Rules {
    /// The onsets of `vtimezone`'s observances up to `until` (those of a yearly rule
    /// from two years before `from` on); none when an observance cannot be read (its
    /// offsets, start or rule), so that the name decides.
    fn of(vtimezone: &Component<'_>, from: DateTime<Utc>, until: DateTime<Utc>) -> Option<Rules> {
        let mut onsets = Vec::new();
        for observance in vtimezone
            .components
            .iter()
            .filter(|c| is(c, "STANDARD") || is(c, "DAYLIGHT"))
        {
            onsets.extend(observance_onsets(observance, from, until)?);
        }
        if onsets.is_empty() {
            return None;
        }
        onsets.sort();
        Some(Rules { onsets })
    }

    /// The offset in force at `t`: the latest onset's at or before it (none before the
    /// first).
    fn offset_at(&self, t: DateTime<Utc>) -> Option<i32> {
        let after = self.onsets.partition_point(|(onset, _)| *onset <= t);
        after.checked_sub(1).map(|i| self.onsets[i].1)
    }

    /// Instants at which a zone must keep these offsets to read times in `[from, until)`
    /// as they do: the ends, and each onset there and the second before it.
    fn samples(&self, from: DateTime<Utc>, until: DateTime<Utc>) -> Vec<(DateTime<Utc>, i32)> {
        let mut instants = vec![from, until];
        for (onset, _) in &self.onsets {
            if *onset >= from && *onset <= until {
                instants.push(*onset);
                instants.push(*onset - Duration::seconds(1));
            }
        }
        instants
            .into_iter()
            .filter_map(|t| self.offset_at(t).map(|offset| (t, offset)))
            .collect()
    }
}

/// One observance's onsets up to `until`, each with its `TZOFFSETTO`: its `DTSTART`,
/// its `RDATE`s and its yearly `RRULE`'s occurrences, all local times in
/// `TZOFFSETFROM`.
fn observance_onsets(
    observance: &Component<'_>,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Option<Vec<(DateTime<Utc>, i32)>> {
    let value = |name: &str| {
        observance
            .properties
            .iter()
            .find(|p| is_key(p.name.as_str(), name))
            .map(|p| p.val.as_str().trim())
    };
    let offset_from = utc_offset(value("TZOFFSETFROM")?)?;
    let offset_to = utc_offset(value("TZOFFSETTO")?)?;
    let start = local_time(value("DTSTART")?)?;
    let to_utc = |local: NaiveDateTime| {
        Utc.from_utc_datetime(&local) - Duration::seconds(i64::from(offset_from))
    };
    let mut locals = vec![start];
    for rdate in observance
        .properties
        .iter()
        .filter(|p| is_key(p.name.as_str(), "RDATE"))
    {
        for item in rdate.val.as_str().split(',') {
            locals.push(local_time(item.trim())?);
        }
    }
    // The rule expanded in local time written as UTC ("pseudo-UTC"), so that a BYDAY
    // stays on its local day; its UNTIL (UTC, RFC 5545) moved into that frame.
    let pseudo_until =
        (until + Duration::seconds(i64::from(offset_from))).with_timezone(&rrule::Tz::UTC);
    for rule in observance
        .properties
        .iter()
        .filter(|p| is_key(p.name.as_str(), "RRULE"))
    {
        let text = rule.val.as_str().trim();
        if !yearly_with_known_parts(text) {
            return None;
        }
        let mut parsed = text.parse::<rrule::RRule<rrule::Unvalidated>>().ok()?;
        let rule_start = recent_start(start, text, &parsed, from);
        let dtstart = Utc
            .from_utc_datetime(&rule_start)
            .with_timezone(&rrule::Tz::UTC);
        if let Some(end) = parsed.get_until().copied() {
            let moved = if end.timezone().name() == "UTC" {
                end + Duration::seconds(i64::from(offset_from))
            } else {
                end
            };
            parsed = parsed.until(moved.with_timezone(&rrule::Tz::UTC));
        }
        let validated = parsed.validate(dtstart).ok()?;
        let occurrences = rrule::RRuleSet::new(dtstart)
            .rrule(validated)
            .before(pseudo_until)
            .all(MAX_ONSETS)
            .dates;
        locals.extend(occurrences.into_iter().map(|t| t.naive_utc()));
    }
    Some(
        locals
            .into_iter()
            .map(to_utc)
            .filter(|onset| *onset <= until)
            .map(|onset| (onset, offset_to))
            .collect(),
    )
}

/// Where a yearly rule's expansion may start: its `DTSTART` moved to two years before
/// `from` (same month, day and time) when that is later, so that a rule since 1601
/// (what Outlook writes) is a few occurrences, not four hundred. Only a rule that
/// counts nothing (`COUNT`), steps one year at a time and has not ended by then is
/// moved: its occurrences from then on are the same.
fn recent_start(
    start: NaiveDateTime,
    text: &str,
    rule: &rrule::RRule<rrule::Unvalidated>,
    from: DateTime<Utc>,
) -> NaiveDateTime {
    use chrono::Datelike;
    let upper = text.to_ascii_uppercase();
    let interval_one = upper
        .split(';')
        .find_map(|p| p.trim().strip_prefix("INTERVAL="))
        .is_none_or(|n| n.trim() == "1");
    let year = from.year() - 2;
    let Some(moved) = start.with_year(year) else {
        return start;
    };
    let ended = rule
        .get_until()
        .is_some_and(|until| until.naive_utc() < moved);
    if moved <= start || upper.contains("COUNT=") || !interval_one || ended {
        return start;
    }
    moved
}

/// `FREQ=YEARLY` with only the parts a zone's rule needs ([`RULE_PARTS`]).
fn yearly_with_known_parts(rule: &str) -> bool {
    let mut yearly = false;
    for part in rule.split(';').filter(|p| !p.trim().is_empty()) {
        let Some((key, value)) = part.split_once('=') else {
            return false;
        };
        let key = key.trim().to_ascii_uppercase();
        if !RULE_PARTS.contains(&key.as_str()) {
            return false;
        }
        if key == "FREQ" {
            yearly = value.trim().eq_ignore_ascii_case("YEARLY");
        }
    }
    yearly
}

/// A `UTC-OFFSET` (`+0100`, `-0500`, `+053000`) in seconds east of UTC.
fn utc_offset(value: &str) -> Option<i32> {
    let (sign, digits) = match value.as_bytes().first()? {
        b'+' => (1, &value[1..]),
        b'-' => (-1, &value[1..]),
        _ => return None,
    };
    if !(digits.len() == 4 || digits.len() == 6) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = digits[0..2].parse().ok()?;
    let minutes: i32 = digits[2..4].parse().ok()?;
    let seconds: i32 = digits.get(4..6).map_or(Some(0), |s| s.parse().ok())?;
    (hours < 24 && minutes < 60 && seconds < 60)
        .then_some(sign * (hours * 3600 + minutes * 60 + seconds))
}

/// A local `DATE-TIME` (`19701025T030000`; a trailing `Z` some writers add is read the
/// same).
fn local_time(value: &str) -> Option<NaiveDateTime> {
    let value = value.trim().trim_end_matches(['Z', 'z']);
    NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S").ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use icalendar::parser::{read_calendar, unfold};

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// What Outlook writes for Berlin.
    pub const OUTLOOK_BERLIN: &str = "BEGIN:VTIMEZONE\r\nTZID:W. Europe Standard Time\r\nBEGIN:STANDARD\r\nDTSTART:16010101T030000\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nRRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10\r\nEND:STANDARD\r\nBEGIN:DAYLIGHT\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nRRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n";

    fn resolve_in(vtimezone: &str, tzid: &str) -> Resolved {
        let text = format!("BEGIN:VCALENDAR\r\n{vtimezone}END:VCALENDAR\r\n");
        let unfolded = unfold(&text);
        let calendar = read_calendar(&unfolded).unwrap();
        let found = vtimezone_in(&calendar.components, tzid);
        resolve(
            tzid,
            found,
            utc("2026-11-27T00:00:00Z"),
            utc("2027-05-01T00:00:00Z"),
        )
    }

    fn vtimezone_in<'c, 'a>(c: &'c [Component<'a>], tzid: &str) -> Option<&'c Component<'a>> {
        vtimezone(c, tzid)
    }

    #[test]
    fn outlooks_berlin_reads_as_berlin() {
        assert_eq!(
            resolve_in(OUTLOOK_BERLIN, "W. Europe Standard Time"),
            Resolved::Zone(chrono_tz::Europe::Berlin)
        );
    }

    #[test]
    fn a_custom_name_is_read_by_its_rules_and_a_wrong_name_gives_way_to_them() {
        // The rules of New York under a name nothing knows, and under Berlin's name.
        let rules = |tzid: &str| {
            format!("BEGIN:VTIMEZONE\r\nTZID:{tzid}\r\nBEGIN:STANDARD\r\nDTSTART:20071104T020000\r\nTZOFFSETFROM:-0400\r\nTZOFFSETTO:-0500\r\nRRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=1SU\r\nEND:STANDARD\r\nBEGIN:DAYLIGHT\r\nDTSTART:20070311T020000\r\nTZOFFSETFROM:-0500\r\nTZOFFSETTO:-0400\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n")
        };
        let Resolved::Zone(zone) =
            resolve_in(&rules("Customized Time Zone"), "Customized Time Zone")
        else {
            panic!("the rules match a zone")
        };
        let noon = zone
            .from_local_datetime(&utc("2026-12-11T12:00:00Z").naive_utc())
            .unwrap();
        assert_eq!(noon.with_timezone(&Utc), utc("2026-12-11T17:00:00Z"));
        let summer = zone
            .from_local_datetime(&utc("2027-04-11T12:00:00Z").naive_utc())
            .unwrap();
        assert_eq!(summer.with_timezone(&Utc), utc("2027-04-11T16:00:00Z"));
        let Resolved::Zone(wrong) = resolve_in(&rules("Europe/Berlin"), "Europe/Berlin") else {
            panic!("the rules match a zone")
        };
        assert_ne!(
            wrong,
            chrono_tz::Europe::Berlin,
            "the rules decide, not the name"
        );
    }

    #[test]
    fn names_without_a_vtimezone_and_unknown_zones() {
        assert_eq!(
            resolve(
                "Eastern Standard Time",
                None,
                utc("2026-01-01T00:00:00Z"),
                utc("2026-02-01T00:00:00Z")
            ),
            Resolved::Zone(chrono_tz::America::New_York)
        );
        assert_eq!(
            named_zone("/mozilla.org/20050126_1/Europe/Berlin"),
            Some(chrono_tz::Europe::Berlin)
        );
        assert_eq!(
            resolve(
                "Mars/Olympus",
                None,
                utc("2026-01-01T00:00:00Z"),
                utc("2026-02-01T00:00:00Z")
            ),
            Resolved::Unknown
        );
        // Offsets no zone keeps (+01:23 all year).
        let odd = "BEGIN:VTIMEZONE\r\nTZID:Odd\r\nBEGIN:STANDARD\r\nDTSTART:19700101T000000\r\nTZOFFSETFROM:+0123\r\nTZOFFSETTO:+0123\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\n";
        assert_eq!(resolve_in(odd, "Odd"), Resolved::Unknown);
    }

    #[test]
    fn a_rule_that_is_not_a_zones_is_not_expanded() {
        assert!(yearly_with_known_parts("FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU"));
        assert!(!yearly_with_known_parts("FREQ=SECONDLY"));
        assert!(!yearly_with_known_parts("FREQ=YEARLY;BYSECOND=1,2,3"));
        let secondly = "BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\nBEGIN:STANDARD\r\nDTSTART:19000101T000000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0100\r\nRRULE:FREQ=SECONDLY\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\n";
        // Unreadable rules: the name decides.
        assert_eq!(
            resolve_in(secondly, "Europe/Berlin"),
            Resolved::Zone(chrono_tz::Europe::Berlin)
        );
        assert_eq!(utc_offset("+0530"), Some(19_800));
        assert_eq!(utc_offset("-0500"), Some(-18_000));
        assert_eq!(utc_offset("0100"), None);
    }

    /// An Outlook-style event read whole (`busy::busy_report`): Berlin 17:00 is 11:00 in
    /// New York, and an event in a zone nothing knows holds its day.
    #[test]
    fn events_are_read_in_their_vtimezone_and_unknown_zones_hold_the_day() {
        use super::super::busy::{busy_report, Busy, Window};
        let window = Window {
            from: utc("2026-12-10T00:00:00Z"),
            to: utc("2026-12-14T00:00:00Z"),
            zone: chrono_tz::America::New_York,
        };
        let ics = format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN\r\n{OUTLOOK_BERLIN}BEGIN:VEVENT\r\nUID:o1\r\nSUMMARY:Vorstand\r\nDTSTART;TZID=\"W. Europe Standard Time\":20261211T170000\r\nDTEND;TZID=\"W. Europe Standard Time\":20261211T180000\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:o2\r\nSUMMARY:Somewhere\r\nDTSTART;TZID=Mars/Olympus:20261212T090000\r\nDTEND;TZID=Mars/Olympus:20261212T100000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        );
        let report = busy_report(
            &ics,
            &window,
            &mut crate::providers::caldav::busy::Budget::new(),
        )
        .unwrap();
        assert_eq!(report.events, 2);
        assert_eq!(
            report.busy,
            vec![
                Busy {
                    start: utc("2026-12-11T16:00:00Z"),
                    end: utc("2026-12-11T17:00:00Z")
                },
                // Midnight to midnight in New York.
                Busy {
                    start: utc("2026-12-12T05:00:00Z"),
                    end: utc("2026-12-13T05:00:00Z")
                }
            ]
        );
        assert_eq!(
            report.unreadable_zones,
            vec!["\"Somewhere\" (TZID \"Mars/Olympus\")".to_string()]
        );
    }

    /// A measure, not a check (no bound asserted): the time one object takes to read
    /// with an IANA `TZID`, Outlook's `VTIMEZONE` and a custom-named one;
    /// `cargo test --lib -- --ignored measure_outlook_reads --nocapture`.
    #[test]
    #[ignore]
    fn measure_outlook_reads() {
        use super::super::busy::{busy_report, Window};
        let window = Window {
            from: utc("2026-11-27T00:00:00Z"),
            to: utc("2027-05-27T00:00:00Z"),
            zone: chrono_tz::America::New_York,
        };
        let custom = OUTLOOK_BERLIN.replace("W. Europe Standard Time", "Customized Time Zone");
        for (what, vtz, tzid) in [
            ("iana without VTIMEZONE", String::new(), "Europe/Berlin"),
            (
                "named",
                OUTLOOK_BERLIN.to_string(),
                "W. Europe Standard Time",
            ),
            ("custom", custom, "Customized Time Zone"),
        ] {
            let ics = format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//x//x//EN\r\n{vtz}BEGIN:VEVENT\r\nUID:o1\r\nDTSTART;TZID=\"{tzid}\":20261211T170000\r\nDTEND;TZID=\"{tzid}\":20261211T180000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n");
            let n = 200;
            let started = std::time::Instant::now();
            for _ in 0..n {
                let r = busy_report(
                    &ics,
                    &window,
                    &mut crate::providers::caldav::busy::Budget::new(),
                )
                .unwrap();
                assert_eq!(r.busy.len(), 1);
            }
            println!(
                "MEASURE {what}: {:.3} ms per object",
                started.elapsed().as_secs_f64() * 1000.0 / n as f64
            );
        }
    }
}
