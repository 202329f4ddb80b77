//! Calendars (`/v1/calendars/{name}`): `CalendarInput` (read from a `PUT` body by
//! `from_json`) and its rules, each refusal naming its field; put (at most 20 per
//! organization), delete (409 while a profile names it), find, list, the view (the
//! CalDAV password write-only, the feed's URL and token), the feed token's rotation and
//! check, and the `availability::Rules` a calendar makes.

use chrono::NaiveDate;
use chrono_tz::Tz;
use serde_json::{json, Map, Value};

use super::availability::Rules;
use super::clock::{parse_hhmm, WEEKDAYS};
use super::templates::check_placeholders;
use super::{bound_secret, Endpoint};
use crate::domain::records::limits;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::outbound_address::OutboundPolicy;
use crate::store::calendars::{CaldavRecord, CalendarReader, CalendarRecord};
use crate::store::{ReadTx, Reader, WriteTx};

/// At most this many calendars per organization.
pub const MAX_CALENDARS: usize = 20;
/// At most this many intervals a day.
pub const MAX_INTERVALS: usize = 5;
/// At most this many reminders.
pub const MAX_REMINDERS: usize = 5;
const MAX_NAME_CHARS: usize = 64;
const MAX_TEXT_CHARS: usize = 500;

const MEMBERS: &[&str] = &[
    "timeZone",
    "hours",
    "meetingMinutes",
    "bufferMinutes",
    "minNoticeMinutes",
    "daysAhead",
    "title",
    "location",
    "owner",
    "reminders",
    "caldav",
    "invitations",
];

/// (member, least, most, default) of the numbers.
const NUMBERS: [(&str, u32, u32, u32); 4] = [
    ("meetingMinutes", 5, 480, 30),
    ("bufferMinutes", 0, 240, 0),
    ("minNoticeMinutes", 0, 20_160, 60),
    ("daysAhead", 1, 180, 14),
];

/// A calendar's members as the `PUT` body gives them, each checked as it is read.
#[derive(Debug, Clone, PartialEq)]
pub struct CalendarInput {
    pub time_zone: String,
    pub hours: [Vec<(u16, u16)>; 7],
    /// meetingMinutes, bufferMinutes, minNoticeMinutes, daysAhead.
    pub numbers: [u32; 4],
    pub title: String,
    pub location: String,
    pub owner_name: String,
    pub owner_email: String,
    pub reminders: Vec<String>,
    pub caldav: Option<CaldavInput>,
    /// `invitations`: `"server"` (true) lets the CalDAV server send them, `"engaged"`
    /// (false) sends them by email; absent keeps what is stored (`engaged` for a new
    /// calendar).
    pub server_schedules: Option<bool>,
}

/// The CalDAV connection as written: an absent password keeps the stored one.
#[derive(Debug, Clone, PartialEq)]
pub struct CaldavInput {
    pub url: String,
    pub username: String,
    pub password: Option<String>,
}

/// The days a calendar's `hours` may name.
const WEEKDAYS_IN_HOURS: usize = 7;

/// Takes the member a refusal of `field` names (`hours.mon[0]`: the day; `owner.email`:
/// the owner's email; `timeZone`: read as UTC) out of `body`, so that the rest can be
/// read; false when nothing could be set aside.
fn set_aside(body: &mut Map<String, Value>, field: &str) -> bool {
    let root_end = field.find(['.', '[']).unwrap_or(field.len());
    let (root, rest) = field.split_at(root_end);
    if root == "timeZone" {
        let utc = Value::String("UTC".into());
        return body.insert(root.into(), utc.clone()) != Some(utc);
    }
    if let (Some(inner), Some(Value::Object(members))) =
        (rest.strip_prefix('.'), body.get_mut(root))
    {
        let member = inner.split(['.', '[']).next().unwrap_or_default();
        if members.remove(member).is_some() {
            return true;
        }
    }
    body.remove(root).is_some()
}

fn present<'a>(body: &'a Map<String, Value>, member: &str) -> Option<&'a Value> {
    body.get(member).filter(|v| !v.is_null())
}

fn text(body: &Map<String, Value>, member: &str, path: &str) -> Result<String> {
    match present(body, member) {
        None => Ok(String::new()),
        Some(Value::String(t)) => {
            limits::text(path, t, MAX_TEXT_CHARS)?;
            // One line each, no control or bidi character: they reach iCalendar
            // documents, invitations' subjects and the console.
            limits::characters(path, t, false)?;
            Ok(t.trim().to_string())
        }
        Some(_) => Err(Error::invalid_field(path)),
    }
}

/// A time of day of `hours`: `HH:MM`, or `24:00` as an interval's end.
fn clock(value: &Value, end: bool) -> Option<u16> {
    let text = value.as_str()?;
    if end && text == "24:00" {
        return Some(24 * 60);
    }
    parse_hhmm(text).and_then(|m| u16::try_from(m).ok())
}

impl CalendarInput {
    /// Reads a `PUT /v1/calendars/{name}` body: unknown members first, then each member.
    /// Reads a body for every refusal at once (a form's save): each refused member is
    /// set aside (a refused `timeZone` read as UTC, a refused day of `hours` or member
    /// of `owner` alone) and the rest read again, until it reads; `Err` lists the
    /// refusals in the order [`CalendarInput::from_json`] meets them, its own first.
    pub fn from_json_all(
        body: &Map<String, Value>,
    ) -> std::result::Result<CalendarInput, Vec<Error>> {
        let mut body = body.clone();
        let mut refusals = Vec::new();
        // Each round sets one member aside, so there are at most as many as members.
        for _ in 0..=MEMBERS.len() + WEEKDAYS_IN_HOURS + 2 {
            match CalendarInput::from_json(&body) {
                Ok(input) if refusals.is_empty() => return Ok(input),
                Ok(_) => return Err(refusals),
                Err(e) => {
                    let set_aside = e
                        .refused_field()
                        .is_some_and(|field| set_aside(&mut body, field));
                    refusals.push(e);
                    if !set_aside {
                        return Err(refusals);
                    }
                }
            }
        }
        Err(refusals)
    }

    pub fn from_json(body: &Map<String, Value>) -> Result<CalendarInput> {
        if let Some(unknown) = body.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
            return Err(Error::unknown_field(unknown));
        }
        let time_zone = match present(body, "timeZone") {
            Some(Value::String(zone)) => {
                zone.parse::<Tz>()
                    .map_err(|_| Error::field("timeZone", format!("Unknown time zone: {zone}")))?;
                zone.clone()
            }
            None => return Err(Error::field("timeZone", "Missing field: timeZone")),
            Some(_) => return Err(Error::invalid_field("timeZone")),
        };
        let hours = hours(present(body, "hours"))?;
        let mut numbers = [0u32; 4];
        for (slot, (member, least, most, default)) in numbers.iter_mut().zip(NUMBERS) {
            *slot = match present(body, member) {
                None => default,
                Some(value) => value
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| (least..=most).contains(n))
                    .ok_or_else(|| {
                        Error::field(
                            member,
                            format!("{member} must be a whole number from {least} to {most}"),
                        )
                    })?,
            };
        }
        let title = text(body, "title", "title")?;
        check_placeholders(&title).map_err(|e| Error::field("title", e.to_string()))?;
        let location = text(body, "location", "location")?;
        let (owner_name, owner_email) = match present(body, "owner") {
            None => (String::new(), String::new()),
            Some(Value::Object(owner)) => {
                if let Some(unknown) = owner.keys().find(|k| *k != "name" && *k != "email") {
                    return Err(Error::unknown_field(&format!("owner.{unknown}")));
                }
                let email = text(owner, "email", "owner.email")?;
                if !email.is_empty() && email.parse::<lettre::Address>().is_err() {
                    return Err(Error::invalid_field("owner.email"));
                }
                (text(owner, "name", "owner.name")?, email)
            }
            Some(_) => return Err(Error::invalid_field("owner")),
        };
        let reminders = match present(body, "reminders") {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                limits::count("reminders", items.len(), MAX_REMINDERS)?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let path = format!("reminders[{i}]");
                    let text = item.as_str().ok_or_else(|| Error::invalid_field(&path))?;
                    match crate::duration::parse(text) {
                        Ok(d) if d.as_secs() >= 60 && d.as_secs() <= 30 * 86_400 => {
                            out.push(text.trim().to_string())
                        }
                        _ => {
                            return Err(Error::field(
                                &path,
                                format!("{path} must be a duration from 1m to 30d (e.g. 24h)"),
                            ))
                        }
                    }
                }
                out
            }
            Some(_) => return Err(Error::invalid_field("reminders")),
        };
        let caldav = match present(body, "caldav") {
            None => None,
            Some(Value::Object(c)) => {
                const KNOWN: [&str; 3] = ["url", "username", "password"];
                if let Some(unknown) = c.keys().find(|k| !KNOWN.contains(&k.as_str())) {
                    return Err(Error::unknown_field(&format!("caldav.{unknown}")));
                }
                let url = text(c, "url", "caldav.url")?;
                let parsed = url.parse::<hyper::Uri>().ok();
                let https = parsed.as_ref().is_some_and(|u| {
                    matches!(u.scheme_str(), Some("https" | "http")) && u.host().is_some()
                });
                if !https {
                    return Err(Error::invalid_field("caldav.url"));
                }
                let password = match present(c, "password") {
                    None => None,
                    Some(Value::String(p)) => Some(p.clone()),
                    Some(_) => return Err(Error::invalid_field("caldav.password")),
                };
                Some(CaldavInput {
                    url,
                    username: text(c, "username", "caldav.username")?,
                    password,
                })
            }
            Some(_) => return Err(Error::invalid_field("caldav")),
        };
        let server_schedules = match present(body, "invitations") {
            None => None,
            Some(Value::String(v)) if v == "engaged" => Some(false),
            Some(Value::String(v)) if v == "server" => Some(true),
            Some(_) => {
                return Err(Error::field(
                    "invitations",
                    "invitations must be \"engaged\" or \"server\"",
                ))
            }
        };
        if server_schedules == Some(true) && caldav.is_none() {
            return Err(Error::field(
                "invitations",
                "invitations \"server\" needs caldav: the CalDAV server sends them",
            ));
        }
        Ok(CalendarInput {
            time_zone,
            hours,
            numbers,
            title,
            location,
            owner_name,
            owner_email,
            reminders,
            caldav,
            server_schedules,
        })
    }
}

/// `hours`: a day (`mon` ... `sun`) to at most five `["HH:MM", "HH:MM"]` intervals, in
/// order and not overlapping.
fn hours(value: Option<&Value>) -> Result<[Vec<(u16, u16)>; 7]> {
    let mut out: [Vec<(u16, u16)>; 7] = Default::default();
    let days = match value {
        Some(Value::Object(days)) => days,
        None => return Err(Error::field("hours", "Missing field: hours")),
        Some(_) => return Err(Error::invalid_field("hours")),
    };
    for (day, intervals) in days {
        let Some(index) = WEEKDAYS.iter().position(|d| d == day) else {
            return Err(Error::unknown_field(&format!("hours.{day}")));
        };
        let path = format!("hours.{day}");
        let Value::Array(items) = intervals else {
            return Err(Error::invalid_field(&path));
        };
        limits::count(&path, items.len(), MAX_INTERVALS)?;
        let mut previous_end = 0u16;
        for (i, item) in items.iter().enumerate() {
            let item_path = format!("{path}[{i}]");
            let pair = item.as_array().filter(|p| p.len() == 2);
            let (start, end) = match pair {
                Some(p) => (clock(&p[0], false), clock(&p[1], true)),
                None => (None, None),
            };
            let (Some(start), Some(end)) = (start, end) else {
                return Err(Error::field(
                    &item_path,
                    format!("{item_path} must be [\"HH:MM\", \"HH:MM\"]"),
                ));
            };
            if start >= end {
                return Err(Error::field(
                    &item_path,
                    format!("{item_path}: the start must come before the end"),
                ));
            }
            if i > 0 && start < previous_end {
                return Err(Error::field(
                    &item_path,
                    format!("{item_path}: intervals must be in order and must not overlap"),
                ));
            }
            previous_end = end;
            out[index].push((start, end));
        }
    }
    Ok(out)
}

/// 400 `Invalid format for field: name` unless `name` may name a calendar: 1 to 64
/// characters, none of them whitespace, a control character or `/`.
pub fn check_name(name: &str) -> Result<()> {
    let count = name.chars().count();
    let fine = (1..=MAX_NAME_CHARS).contains(&count)
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/');
    if fine {
        Ok(())
    } else {
        Err(Error::invalid_field("name"))
    }
}

pub fn not_found() -> Error {
    Error::NotFound("Calendar not found".into())
}

/// A feed token: the organization's id (the feed has no key to say it), a dot, and 192
/// random bits.
fn new_token(org: &str) -> String {
    let bytes: [u8; 24] = crate::ids::random_bytes();
    let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{org}.{random}")
}

/// `PUT /v1/calendars/{name}`: replaces the calendar (keeping its `createdAt`, its feed
/// token and, when none is given for the same URL, its CalDAV password: a new URL
/// without a password clears it, `bound_secret`). A new CalDAV URL `policy` refuses is
/// a 400 naming `caldav.url`.
pub fn put(
    tx: &mut WriteTx,
    caller: &Caller,
    name: &str,
    input: &CalendarInput,
    policy: OutboundPolicy,
) -> Result<CalendarRecord> {
    check_name(name)?;
    let org = caller.org_id.as_str();
    let old = tx.calendar(org, name)?;
    if old.is_none() && tx.calendar_count(org)? >= MAX_CALENDARS {
        return Err(limits::too_many("calendars", MAX_CALENDARS));
    }
    let caldav = match &input.caldav {
        None => None,
        Some(c) => {
            if old
                .as_ref()
                .and_then(|o| o.caldav.as_ref())
                .is_none_or(|o| o.url != c.url)
            {
                policy.check_url("caldav.url", &c.url)?;
            }
            let stored = old
                .as_ref()
                .and_then(|o| o.caldav.as_ref())
                .map(|o| (Endpoint::url(&o.url), o.password.clone()));
            let password = bound_secret(
                c.password.clone(),
                stored.as_ref().map(|(at, p)| (at, p.clone())),
                &Endpoint::url(&c.url),
            );
            Some(CaldavRecord {
                url: c.url.clone(),
                username: c.username.clone(),
                password: password.unwrap_or_default(),
            })
        }
    };
    let server_schedules = caldav.is_some()
        && input
            .server_schedules
            .or(old.as_ref().map(|o| o.server_schedules))
            .unwrap_or(false);
    let now = tx.tick();
    let [meeting_minutes, buffer_minutes, min_notice_minutes, days_ahead] = input.numbers;
    let calendar = CalendarRecord {
        name: name.to_string(),
        time_zone: input.time_zone.clone(),
        hours: input.hours.clone(),
        meeting_minutes,
        buffer_minutes,
        min_notice_minutes,
        days_ahead,
        title: input.title.clone(),
        location: input.location.clone(),
        owner_name: input.owner_name.clone(),
        owner_email: input.owner_email.clone(),
        reminders: input.reminders.clone(),
        caldav,
        feed_token: old
            .as_ref()
            .map_or_else(|| new_token(org), |o| o.feed_token.clone()),
        created_at: old.as_ref().map_or(now, |o| o.created_at),
        updated_at: now,
        server_schedules,
    };
    tx.put_calendar(org, &calendar)?;
    Ok(calendar)
}

/// `DELETE /v1/calendars/{name}`: 409 while a profile names it.
pub fn delete(tx: &mut WriteTx, caller: &Caller, name: &str) -> Result<()> {
    let org = caller.org_id.as_str();
    if tx.calendar(org, name)?.is_none() {
        return Err(not_found());
    }
    if let Some(profile) = tx.profile_using_calendar(org, name)? {
        return Err(Error::Conflict(format!(
            "Calendar in use by profile {profile}: set the profile's calendar to another one or none first"
        )));
    }
    tx.delete_calendar(org, name)
}

/// `POST /v1/calendars/{name}/rotate-feed-token`: a new feed token; the old URL stops.
pub fn rotate_feed_token(tx: &mut WriteTx, caller: &Caller, name: &str) -> Result<CalendarRecord> {
    let org = caller.org_id.as_str();
    let mut calendar = tx.calendar(org, name)?.ok_or_else(not_found)?;
    calendar.feed_token = new_token(org);
    calendar.updated_at = tx.tick();
    tx.put_calendar(org, &calendar)?;
    Ok(calendar)
}

pub fn find(read: &impl Reader, org: &str, name: &str) -> Result<CalendarRecord> {
    read.calendar(org, name)?.ok_or_else(not_found)
}

pub fn list(read: &ReadTx, caller: &Caller) -> Result<Vec<CalendarRecord>> {
    read.calendars(&caller.org_id)
}

/// The calendar whose feed `token` opens, and its organization; 404 for a wrong token,
/// like a missing calendar.
pub fn by_feed_token(read: &ReadTx, name: &str, token: &str) -> Result<(String, CalendarRecord)> {
    let (org, _) = token.rsplit_once('.').ok_or_else(not_found)?;
    let calendar = read.calendar(org, name)?.ok_or_else(not_found)?;
    let expected = calendar.feed_token.as_bytes();
    let given = token.as_bytes();
    // Constant time over the token's length.
    let same = expected.len() == given.len()
        && expected
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same {
        Ok((org.to_string(), calendar))
    } else {
        Err(not_found())
    }
}

/// The calendar's zone (checked when written).
pub fn zone(calendar: &CalendarRecord) -> Result<Tz> {
    calendar
        .time_zone
        .parse()
        .map_err(|_| Error::Internal(format!("stored time zone {}", calendar.time_zone)))
}

/// The organization's holidays as dates.
pub fn holidays(read: &impl Reader, org: &str) -> Result<Vec<NaiveDate>> {
    let settings = read.engine_settings(org)?;
    Ok(settings
        .holidays
        .iter()
        .filter_map(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
        .collect())
}

/// The open-time rules of `calendar`.
pub fn rules<'a>(calendar: &'a CalendarRecord, holidays: &'a [NaiveDate]) -> Result<Rules<'a>> {
    Ok(Rules {
        zone: zone(calendar)?,
        hours: &calendar.hours,
        meeting_minutes: calendar.meeting_minutes,
        buffer_minutes: calendar.buffer_minutes,
        min_notice_minutes: calendar.min_notice_minutes,
        days_ahead: calendar.days_ahead,
        holidays,
    })
}

/// The path of a calendar's feed, token included.
pub fn feed_path(calendar: &CalendarRecord) -> String {
    format!(
        "/v1/calendars/{}/feed.ics?token={}",
        percent(&calendar.name),
        calendar.feed_token
    )
}

fn percent(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The wire shape of a calendar; `base` is the server's public URL, if configured.
pub fn view(c: &CalendarRecord, base: Option<&str>) -> Value {
    let mut hours = Map::new();
    for (day, intervals) in WEEKDAYS.iter().zip(&c.hours) {
        if intervals.is_empty() {
            continue;
        }
        let pairs: Vec<Value> = intervals
            .iter()
            .map(|&(s, e)| json!([hhmm(s), hhmm(e)]))
            .collect();
        hours.insert((*day).to_string(), Value::Array(pairs));
    }
    let path = feed_path(c);
    let feed_url = format!("{}{path}", base.unwrap_or("").trim_end_matches('/'));
    json!({
        "name": c.name,
        "timeZone": c.time_zone,
        "hours": hours,
        "meetingMinutes": c.meeting_minutes,
        "bufferMinutes": c.buffer_minutes,
        "minNoticeMinutes": c.min_notice_minutes,
        "daysAhead": c.days_ahead,
        "title": c.title,
        "location": c.location,
        "owner": if c.owner_name.is_empty() && c.owner_email.is_empty() {
            Value::Null
        } else {
            json!({"name": c.owner_name, "email": c.owner_email})
        },
        "reminders": c.reminders,
        "invitations": if c.server_schedules { "server" } else { "engaged" },
        "caldav": c.caldav.as_ref().map(|d| json!({
            "url": d.url,
            "username": d.username,
            "passwordSet": !d.password.is_empty(),
        })),
        "feedUrl": feed_url,
        "feedToken": c.feed_token,
        "createdAt": crate::time::format(c.created_at),
        "updatedAt": crate::time::format(c.updated_at),
    })
}

fn hhmm(minutes: u16) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(body: Value) -> Result<CalendarInput> {
        CalendarInput::from_json(body.as_object().unwrap())
    }

    fn message(body: Value) -> String {
        read(body).unwrap_err().to_string()
    }

    #[test]
    fn a_calendar_is_read_with_its_defaults() {
        let input = read(json!({"timeZone": "America/Chicago",
            "hours": {"mon": [["09:00", "12:00"], ["13:00", "24:00"]]}}))
        .unwrap();
        assert_eq!(input.hours[0], vec![(540, 720), (780, 1440)]);
        assert_eq!(input.numbers, [30, 0, 60, 14]);
    }

    #[test]
    fn bad_calendars_are_refused_by_field() {
        let base = |extra: Value| {
            let mut body = json!({"timeZone": "UTC", "hours": {"mon": [["09:00", "17:00"]]}});
            for (k, v) in extra.as_object().unwrap() {
                body[k] = v.clone();
            }
            body
        };
        assert_eq!(
            message(base(json!({"timeZone": "Mars/Olympus"}))),
            "Unknown time zone: Mars/Olympus"
        );
        assert!(
            message(base(json!({"hours": {"mon": [["10:00", "09:00"]]}})))
                .contains("before the end")
        );
        assert!(message(base(
            json!({"hours": {"mon": [["09:00", "12:00"], ["11:00", "13:00"]]}})
        ))
        .contains("overlap"));
        assert_eq!(
            message(base(
                json!({"hours": {"fri": vec![json!(["01:00", "02:00"]); 6]}})
            )),
            "Too many: hours.fri (at most 5)"
        );
        assert_eq!(
            message(base(json!({"hours": {"funday": []}}))),
            "Unknown field: hours.funday"
        );
        assert_eq!(
            message(base(json!({"meetingMinutes": 4}))),
            "meetingMinutes must be a whole number from 5 to 480"
        );
        assert_eq!(
            message(base(json!({"daysAhead": 181}))),
            "daysAhead must be a whole number from 1 to 180"
        );
        assert!(message(base(json!({"reminders": ["soon"]})))
            .starts_with("reminders[0] must be a duration"));
        assert_eq!(
            message(base(json!({"caldav": {"url": "ftp://x"}}))),
            "Invalid format for field: caldav.url"
        );
    }
}
