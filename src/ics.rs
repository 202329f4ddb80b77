//! iCalendar documents of meetings, built with the `icalendar` crate (never by string
//! concatenation): one meeting's `VEVENT` ([`meeting_event`]), a calendar's feed
//! ([`feed`]) and an iTIP invitation or cancellation ([`invitation`], RFC 5546). A pure
//! leaf: the feed's handler, the CalDAV writer and the email invitations all build their
//! documents here from plain values.

use chrono::{DateTime, Utc};
use icalendar::{Attendee, Calendar, Component, EventLike, EventStatus, Property};

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
    pub attendees: Vec<Person>,
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

/// The `VEVENT` of one meeting.
pub fn meeting_event(meeting: &MeetingIcs) -> icalendar::Event {
    let mut event = icalendar::Event::new();
    event
        .uid(&meeting.uid)
        .timestamp(utc(meeting.stamp))
        .starts(utc(meeting.start))
        .ends(utc(meeting.end))
        .summary(&meeting.summary)
        .sequence(meeting.sequence)
        .status(if meeting.canceled {
            EventStatus::Cancelled
        } else {
            EventStatus::Confirmed
        });
    if !meeting.location.is_empty() {
        event.location(&meeting.location);
    }
    if !meeting.description.is_empty() {
        event.description(&meeting.description);
    }
    if let Some(organizer) = &meeting.organizer {
        let mut property = Property::new("ORGANIZER", format!("mailto:{}", organizer.email));
        if !organizer.name.is_empty() {
            property.add_parameter("CN", &organizer.name);
        }
        event.append_property(property);
    }
    for person in &meeting.attendees {
        let mut attendee = Attendee::new(format!("mailto:{}", person.email)).rsvp(true);
        if !person.name.is_empty() {
            attendee = attendee.cn(person.name.clone());
        }
        event.attendee(attendee);
    }
    event.done()
}

/// A calendar's feed: every meeting given, as a `VCALENDAR` named `name`.
pub fn feed(name: &str, meetings: &[MeetingIcs]) -> String {
    let mut calendar = Calendar::new();
    calendar.name(name);
    for meeting in meetings {
        calendar.push(meeting_event(meeting));
    }
    calendar.done().to_string()
}

/// An iTIP document: `METHOD:REQUEST` (a booking or a move, with its `SEQUENCE`) or
/// `METHOD:CANCEL`, with the organizer and attendees of `meeting`.
pub fn invitation(method: Method, meeting: &MeetingIcs) -> String {
    let mut calendar = Calendar::new();
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
            attendees: vec![Person {
                name: "Lee".into(),
                email: "lee@example.com".into(),
            }],
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
}
