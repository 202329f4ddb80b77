//! iCalendar documents of meetings, built with the `icalendar` crate (never by string
//! concatenation): one meeting's `VEVENT` ([`meeting_event`]), a calendar's feed
//! ([`feed`]) and an iTIP invitation or cancellation ([`invitation`], RFC 5546). A pure
//! leaf: the feed's handler, the CalDAV writer and the email invitations all build their
//! documents here from plain values.
//!
//! Every value is made safe here, whoever wrote it (a lead, an admin, the model): text
//! is cleaned as carrier text is (`carrier_text`: control characters, noncharacters and
//! bidi controls dropped; a summary or location on one line) and escaped by the crate
//! (`\,` `\;` `\\` `\n`); a parameter (`CN`, `SENT-BY`) is always quoted, with `^`,
//! `"` and newlines encoded as RFC 6868 says (`^^`, `^'`, `^n`), so no value can end its
//! line or add a parameter; an address keeps none of whitespace, controls, quotes,
//! `<>`, `;`, `:` or `,`.

use chrono::{DateTime, Utc};
use icalendar::{Calendar, Component, EventLike, EventStatus, Property};

use crate::time::Micros;

/// A person of a meeting: the organizer or an attendee.
#[derive(Debug, Clone, PartialEq)]
pub struct Person {
    pub name: String,
    pub email: String,
}

/// Everything a meeting's `VEVENT` says.
#[derive(Debug, Clone, PartialEq)]
pub struct MeetingIcs {
    /// Stable across moves and the cancellation (`{meeting id}@engaged`).
    pub uid: String,
    pub start: Micros,
    pub end: Micros,
    pub summary: String,
    pub location: String,
    pub description: String,
    pub canceled: bool,
    /// One more at each move or cancellation.
    pub sequence: u32,
    /// `DTSTAMP`: when this version was written.
    pub stamp: Micros,
    pub organizer: Option<Person>,
    /// The address that sends the invitations when it is not the organizer's
    /// (`SENT-BY`, RFC 5545 §3.2.18).
    pub sent_by: Option<String>,
    pub attendees: Vec<Person>,
    /// engaged sends the invitations itself: each attendee is marked
    /// `SCHEDULE-AGENT=CLIENT` (RFC 6638 §7.1) so that a scheduling CalDAV server does
    /// not send its own as well.
    pub schedule_agent_client: bool,
}

/// An iTIP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Request,
    Cancel,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Request => "REQUEST",
            Method::Cancel => "CANCEL",
        }
    }
}

fn utc(t: Micros) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(t).unwrap_or_default()
}

/// A parameter value as RFC 5545 §3.2 and RFC 6868 want it: cleaned as carrier text
/// (newlines kept), `^`, `"` and newlines encoded (`^^`, `^'`, `^n`), in quotes (the
/// crate writes a quoted value as it is).
pub fn param_value(value: &str) -> String {
    let clean = crate::carrier_text::clean(value);
    let mut out = String::with_capacity(clean.len() + 2);
    out.push('"');
    for c in clean.chars() {
        match c {
            '^' => out.push_str("^^"),
            '"' => out.push_str("^'"),
            '\n' => out.push_str("^n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reverses [`param_value`]'s RFC 6868 encoding (quotes taken off first): what a
/// reader of the parameter gets.
pub fn param_decoded(value: &str) -> String {
    let value = value.strip_prefix('"').unwrap_or(value);
    let value = value.strip_suffix('"').unwrap_or(value);
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '^' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('^') => out.push('^'),
            Some('\'') => out.push('"'),
            Some('n') => out.push('\n'),
            Some(other) => {
                out.push('^');
                out.push(other);
            }
            None => out.push('^'),
        }
    }
    out
}

/// `mailto:` and the address, keeping none of what could end the value or the line.
pub fn mailto(email: &str) -> String {
    let address: String = email
        .chars()
        .filter(|c| {
            !(c.is_whitespace()
                || c.is_control()
                || matches!(c, '"' | '<' | '>' | ';' | ':' | ',' | '\\')
                || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        })
        .collect();
    format!("mailto:{address}")
}

/// One line of text, cleaned (a summary, a location).
fn one_line(text: &str) -> String {
    crate::carrier_text::line(text)
}

/// The `VEVENT` of one meeting.
pub fn meeting_event(meeting: &MeetingIcs) -> icalendar::Event {
    let mut event = icalendar::Event::new();
    event
        .uid(&meeting.uid)
        .timestamp(utc(meeting.stamp))
        .starts(utc(meeting.start))
        .ends(utc(meeting.end))
        .summary(&one_line(&meeting.summary))
        .sequence(meeting.sequence)
        .status(if meeting.canceled {
            EventStatus::Cancelled
        } else {
            EventStatus::Confirmed
        });
    let location = one_line(&meeting.location);
    if !location.is_empty() {
        event.location(&location);
    }
    let description = crate::carrier_text::clean(&meeting.description);
    if !description.is_empty() {
        event.description(&description);
    }
    if let Some(organizer) = &meeting.organizer {
        let mut property = Property::new("ORGANIZER", mailto(&organizer.email));
        let name = one_line(&organizer.name);
        if !name.is_empty() {
            property.add_parameter("CN", &param_value(&name));
        }
        if let Some(sender) = meeting
            .sent_by
            .as_deref()
            .filter(|s| !s.eq_ignore_ascii_case(&organizer.email))
        {
            property.add_parameter("SENT-BY", &param_value(&mailto(sender)));
        }
        event.append_property(property);
    }
    let organizer_email = meeting.organizer.as_ref().map(|o| o.email.as_str());
    for person in &meeting.attendees {
        // The organizer is never an attendee of their own meeting.
        if organizer_email.is_some_and(|o| o.eq_ignore_ascii_case(&person.email)) {
            continue;
        }
        let mut attendee = Property::new("ATTENDEE", mailto(&person.email));
        let name = one_line(&person.name);
        if !name.is_empty() {
            attendee.add_parameter("CN", &param_value(&name));
        }
        attendee
            .add_parameter("ROLE", "REQ-PARTICIPANT")
            .add_parameter("PARTSTAT", "NEEDS-ACTION")
            .add_parameter("RSVP", "TRUE");
        if meeting.schedule_agent_client {
            attendee.add_parameter("SCHEDULE-AGENT", "CLIENT");
        }
        event.append_multi_property(attendee);
    }
    event.done()
}

/// The product that writes every document (`PRODID`, RFC 5545 §3.7.3).
pub const PRODID: &str = concat!("-//engaged//engaged ", env!("CARGO_PKG_VERSION"), "//EN");

/// An empty `VCALENDAR` as engaged writes it: version 2.0, its `PRODID`, Gregorian.
fn calendar() -> Calendar {
    let mut calendar = Calendar::empty();
    calendar
        .append_property(Property::new("VERSION", "2.0"))
        .append_property(Property::new("PRODID", PRODID))
        .append_property(Property::new("CALSCALE", "GREGORIAN"));
    calendar
}

/// One meeting as a calendar object resource (what CalDAV stores: RFC 4791 §4.1).
pub fn object(meeting: &MeetingIcs) -> String {
    let mut object = calendar();
    object.push(meeting_event(meeting));
    object.done().to_string()
}

/// A calendar's feed: every meeting given, as a `VCALENDAR` named `name`.
pub fn feed(name: &str, meetings: &[MeetingIcs]) -> String {
    let mut calendar = calendar();
    calendar.name(&one_line(name));
    for meeting in meetings {
        calendar.push(meeting_event(meeting));
    }
    calendar.done().to_string()
}

/// An iTIP document: `METHOD:REQUEST` (a booking or a move, with its `SEQUENCE`) or
/// `METHOD:CANCEL`, with the organizer and attendees of `meeting`.
pub fn invitation(method: Method, meeting: &MeetingIcs) -> String {
    let mut calendar = calendar();
    calendar.append_property(Property::new("METHOD", method.as_str()));
    let mut event = meeting.clone();
    event.canceled = method == Method::Cancel || event.canceled;
    calendar.push(meeting_event(&event));
    calendar.done().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MeetingIcs {
        MeetingIcs {
            uid: "mtg_1@engaged".into(),
            start: 1_796_000_000_000_000,
            end: 1_796_001_800_000_000,
            summary: "Solar consultation, with a comma; and semicolon".into(),
            location: "Phone call".into(),
            description: String::new(),
            canceled: false,
            sequence: 2,
            stamp: 1_795_000_000_000_000,
            organizer: Some(Person {
                name: "Ana Ruiz".into(),
                email: "ana@acme.example".into(),
            }),
            sent_by: None,
            attendees: vec![Person {
                name: "Lee".into(),
                email: "lee@example.com".into(),
            }],
            schedule_agent_client: true,
        }
    }

    #[test]
    fn a_feed_parses_back_with_its_events() {
        let text = feed("sales", &[sample()]);
        let parsed: Calendar = text.parse().unwrap();
        let events: Vec<_> = parsed.events().collect();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].get_uid(), Some("mtg_1@engaged"));
        assert_eq!(events[0].get_summary(), Some(sample().summary.as_str()));
        assert_eq!(events[0].get_sequence(), Some(2));
        assert!(text.contains("\r\n"));
    }

    #[test]
    fn an_invitation_names_its_method() {
        let text = invitation(Method::Cancel, &sample());
        assert!(text.contains("METHOD:CANCEL"));
        assert!(text.contains("STATUS:CANCELLED"));
        let parsed: Calendar = text.parse().unwrap();
        assert_eq!(parsed.events().count(), 1);
    }

    /// A parameter's value as the crate's parser reads it, RFC 6868 decoded.
    fn param_of(text: &str, property: &str, key: &str) -> Vec<String> {
        let unfolded = icalendar::parser::unfold(text);
        let parsed = icalendar::parser::read_calendar(&unfolded).unwrap();
        let event = parsed
            .components
            .iter()
            .find(|c| c.name.as_str() == "VEVENT")
            .unwrap();
        event
            .properties
            .iter()
            .filter(|p| p.name.as_str() == property)
            .filter_map(|p| {
                p.params
                    .iter()
                    .find(|q| q.key.as_str() == key)
                    .and_then(|q| q.val.as_ref())
                    .map(|v| param_decoded(v.as_str()))
            })
            .collect()
    }

    #[test]
    fn quotes_and_line_breaks_in_names_stay_inside_their_parameter() {
        let mut meeting = sample();
        meeting.attendees[0].name = "Pat \"PJ\" ^ O'Neil".into();
        meeting.organizer = Some(Person {
            name: "Ana\r\nATTENDEE:mailto:mallory@evil.example".into(),
            email: "ana@acme.example".into(),
        });
        meeting.summary = "Call\r\nATTENDEE:mailto:mallory@evil.example".into();
        meeting.description = "two\nlines; a comma, a \\ backslash".into();
        for text in [
            feed("sales", &[meeting.clone()]),
            invitation(Method::Request, &meeting),
        ] {
            let parsed: Calendar = text.parse().unwrap();
            let event = parsed.events().next().unwrap();
            assert_eq!(param_of(&text, "ATTENDEE", "CN"), ["Pat \"PJ\" ^ O'Neil"]);
            assert_eq!(
                param_of(&text, "ORGANIZER", "CN"),
                ["Ana ATTENDEE:mailto:mallory@evil.example"]
            );
            assert_eq!(
                event.get_summary(),
                Some("Call ATTENDEE:mailto:mallory@evil.example")
            );
            assert_eq!(
                event.get_description(),
                Some("two\nlines; a comma, a \\ backslash")
            );
            let unfolded = text.replace("\r\n ", "");
            let attendees: Vec<&str> = unfolded
                .lines()
                .filter(|l| l.starts_with("ATTENDEE"))
                .collect();
            assert_eq!(attendees.len(), 1, "{text}");
            assert!(attendees[0].contains("SCHEDULE-AGENT=CLIENT"), "{text}");
        }
    }

    #[test]
    fn the_organizer_is_never_an_attendee_and_sent_by_names_the_sender() {
        let mut meeting = sample();
        meeting.attendees.push(Person {
            name: "Ana".into(),
            email: "ANA@acme.example".into(),
        });
        meeting.sent_by = Some("sales@acme.example".into());
        meeting.schedule_agent_client = false;
        let text = invitation(Method::Request, &meeting);
        assert_eq!(text.matches("ATTENDEE").count(), 1, "{text}");
        assert!(!text.contains("SCHEDULE-AGENT"), "{text}");
        assert_eq!(
            param_of(&text, "ORGANIZER", "SENT-BY"),
            ["mailto:sales@acme.example"]
        );
    }

    #[test]
    fn rfc_6868_round_trips() {
        for value in ["plain", "Pat \"PJ\"", "a^b", "line\nbreak", "^n literally"] {
            assert_eq!(param_decoded(&param_value(value)), value);
        }
        assert_eq!(param_value("Pat \"PJ\""), "\"Pat ^'PJ^'\"");
        assert_eq!(mailto("a@b.example\r\nX:y"), "mailto:a@b.exampleXy");
    }
}
