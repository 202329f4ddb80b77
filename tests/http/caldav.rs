//! The CalDAV client (`providers::caldav`) against a real CalDAV server, the test kit's
//! Radicale: events written and read back as busy times (recurring ones expanded,
//! transparent and cancelled ones free), create versus replace, delete, and each failure
//! in its words (wrong password, nothing listening, an answer that is not XML, one too
//! large, a URL that is not a calendar). The events are built with the `icalendar`
//! crate; what Radicale holds is read back with its parser.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use engaged::http_client::HttpClient;
use engaged::providers::caldav::{Busy, CalDav, CalDavError, PutMode};
use engaged::testkit::caldav::{never_answers, not_caldav};
use engaged::testkit::{closed_addr, Radicale};
use icalendar::{CalendarDateTime, Component, EventLike, EventStatus};

fn client() -> HttpClient {
    HttpClient::new(Duration::from_secs(10), None).unwrap()
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn calendar_of(radicale: &Radicale) -> CalDav {
    CalDav::new(radicale.url(), radicale.user(), radicale.password()).unwrap()
}

/// A one-event iCalendar document from 2030-01-07 (a Monday) `start` to `end` UTC.
fn event(uid: &str, start: &str, end: &str, edit: impl FnOnce(&mut icalendar::Event)) -> String {
    let mut event = icalendar::Event::new();
    event
        .uid(uid)
        .summary("Consultation")
        .timestamp(utc("2029-12-01T00:00:00Z"))
        .starts(utc(start))
        .ends(utc(end));
    edit(&mut event);
    icalendar::Calendar::new()
        .push(event.done())
        .done()
        .to_string()
}

const FROM: &str = "2030-01-01T00:00:00Z";
const TO: &str = "2030-02-01T00:00:00Z";

async fn busy(cal: &CalDav) -> Result<Vec<Busy>, CalDavError> {
    cal.busy(&client(), utc(FROM), utc(TO), chrono_tz::America::Chicago)
        .await
}

#[tokio::test]
async fn a_single_event_put_reads_back_as_busy() {
    let radicale = Radicale::start().await;
    let cal = calendar_of(&radicale);
    let ics = event(
        "one",
        "2030-01-07T15:00:00Z",
        "2030-01-07T15:30:00Z",
        |_| {},
    );
    cal.put(&client(), "one", &ics, PutMode::Create)
        .await
        .unwrap();
    assert_eq!(
        busy(&cal).await.unwrap(),
        vec![Busy {
            start: utc("2030-01-07T15:00:00Z"),
            end: utc("2030-01-07T15:30:00Z")
        }]
    );
    // Clipped to the range asked for.
    let clipped = cal
        .busy(&client(), utc("2030-01-07T15:10:00Z"), utc(TO), Tz::UTC)
        .await
        .unwrap();
    assert_eq!(clipped[0].start, utc("2030-01-07T15:10:00Z"));
}

#[tokio::test]
async fn a_weekly_event_is_busy_each_week_of_three_in_its_zone() {
    let radicale = Radicale::start().await;
    let cal = calendar_of(&radicale);
    let mut weekly = icalendar::Event::new();
    let nine = NaiveDate::from_ymd_opt(2030, 1, 7)
        .unwrap()
        .and_hms_opt(9, 0, 0)
        .unwrap();
    weekly
        .uid("weekly")
        .timestamp(utc("2029-12-01T00:00:00Z"))
        .starts(CalendarDateTime::WithTimezone {
            date_time: nine,
            tzid: "America/Chicago".into(),
        })
        .ends(CalendarDateTime::WithTimezone {
            date_time: nine + chrono::Duration::hours(1),
            tzid: "America/Chicago".into(),
        })
        .add_property("RRULE", "FREQ=WEEKLY;BYDAY=MO");
    let ics = icalendar::Calendar::new()
        .push(weekly.done())
        .done()
        .to_string();
    cal.put(&client(), "weekly", &ics, PutMode::Create)
        .await
        .unwrap();
    let found = cal
        .busy(
            &client(),
            utc("2030-01-06T00:00:00Z"),
            utc("2030-01-27T00:00:00Z"),
            Tz::UTC,
        )
        .await
        .unwrap();
    let starts: Vec<DateTime<Utc>> = found.iter().map(|b| b.start).collect();
    assert_eq!(
        starts,
        [
            utc("2030-01-07T15:00:00Z"),
            utc("2030-01-14T15:00:00Z"),
            utc("2030-01-21T15:00:00Z")
        ]
    );
    assert!(found
        .iter()
        .all(|b| b.end - b.start == chrono::Duration::hours(1)));
}

#[tokio::test]
async fn transparent_and_cancelled_events_are_free() {
    let radicale = Radicale::start().await;
    let cal = calendar_of(&radicale);
    let free = event(
        "free",
        "2030-01-07T15:00:00Z",
        "2030-01-07T16:00:00Z",
        |e| {
            e.add_property("TRANSP", "TRANSPARENT");
        },
    );
    let cancelled = event(
        "gone",
        "2030-01-08T15:00:00Z",
        "2030-01-08T16:00:00Z",
        |e| {
            e.status(EventStatus::Cancelled);
        },
    );
    let all_day = {
        let mut e = icalendar::Event::new();
        e.uid("holiday")
            .timestamp(utc("2029-12-01T00:00:00Z"))
            .starts(NaiveDate::from_ymd_opt(2030, 1, 9).unwrap())
            .ends(NaiveDate::from_ymd_opt(2030, 1, 10).unwrap());
        icalendar::Calendar::new().push(e.done()).done().to_string()
    };
    for (uid, ics) in [("free", free), ("gone", cancelled), ("holiday", all_day)] {
        cal.put(&client(), uid, &ics, PutMode::Create)
            .await
            .unwrap();
    }
    // Only the all-day event is busy: midnight to midnight in Chicago.
    assert_eq!(
        busy(&cal).await.unwrap(),
        vec![Busy {
            start: utc("2030-01-09T06:00:00Z"),
            end: utc("2030-01-10T06:00:00Z")
        }]
    );
}

#[tokio::test]
async fn create_twice_is_already_exists_and_replace_keeps_the_higher_sequence() {
    let radicale = Radicale::start().await;
    let cal = calendar_of(&radicale);
    let first = event("m1", "2030-01-07T15:00:00Z", "2030-01-07T15:30:00Z", |e| {
        e.sequence(0);
    });
    cal.put(&client(), "m1", &first, PutMode::Create)
        .await
        .unwrap();
    assert_eq!(
        cal.put(&client(), "m1", &first, PutMode::Create).await,
        Err(CalDavError::AlreadyExists)
    );
    let moved = event("m1", "2030-01-08T17:00:00Z", "2030-01-08T17:30:00Z", |e| {
        e.sequence(1);
    });
    cal.put(&client(), "m1", &moved, PutMode::Replace)
        .await
        .unwrap();
    let held = cal
        .get(&client(), "m1")
        .await
        .unwrap()
        .expect("the event is there");
    let unfolded = icalendar::parser::unfold(&held);
    let parsed = icalendar::parser::read_calendar(&unfolded).unwrap();
    let vevent = parsed
        .components
        .iter()
        .find(|c| c.name.as_str() == "VEVENT")
        .expect("a VEVENT");
    assert_eq!(vevent.find_prop("SEQUENCE").unwrap().val.as_str(), "1");
    assert_eq!(
        vevent.find_prop("DTSTART").unwrap().val.as_str(),
        "20300108T170000Z"
    );
    assert_eq!(
        busy(&cal).await.unwrap(),
        vec![Busy {
            start: utc("2030-01-08T17:00:00Z"),
            end: utc("2030-01-08T17:30:00Z")
        }]
    );
    assert!(matches!(
        cal.put(&client(), "m2", "not a calendar", PutMode::Create)
            .await,
        Err(CalDavError::InvalidEvent(_))
    ));
}

#[tokio::test]
async fn a_deleted_event_is_free_and_deleting_it_again_is_done() {
    let radicale = Radicale::start().await;
    let cal = calendar_of(&radicale);
    let ics = event("d1", "2030-01-07T15:00:00Z", "2030-01-07T15:30:00Z", |_| {});
    cal.put(&client(), "d1", &ics, PutMode::Create)
        .await
        .unwrap();
    cal.delete(&client(), "d1").await.unwrap();
    assert_eq!(busy(&cal).await.unwrap(), vec![]);
    assert_eq!(cal.get(&client(), "d1").await.unwrap(), None);
    cal.delete(&client(), "d1").await.unwrap();
}

#[tokio::test]
async fn test_connection_counts_the_coming_weeks_events_or_says_what_is_wrong() {
    let radicale = Radicale::start().await;
    let cal = calendar_of(&radicale);
    assert_eq!(cal.test_connection(&client()).await, Ok(0));
    let soon = Utc::now() + chrono::Duration::days(2);
    let ics = event(
        "soon",
        &soon.to_rfc3339(),
        &(soon + chrono::Duration::hours(1)).to_rfc3339(),
        |_| {},
    );
    cal.put(&client(), "soon", &ics, PutMode::Create)
        .await
        .unwrap();
    assert_eq!(cal.test_connection(&client()).await, Ok(1));

    // The user's principal is a collection, but not a calendar.
    let principal = format!("{}/{}/", radicale.base(), radicale.user());
    let not_calendar = CalDav::new(&principal, radicale.user(), radicale.password()).unwrap();
    let refused = not_calendar.test_connection(&client()).await.unwrap_err();
    assert_eq!(refused, CalDavError::NotACalendar);
    assert_eq!(refused.to_string(), "the URL is not a calendar collection");
}

#[tokio::test]
async fn a_wrong_password_is_said_in_words() {
    let radicale = Radicale::start().await;
    let cal = CalDav::new(radicale.url(), radicale.user(), "not-the-password").unwrap();
    let refused = busy(&cal).await.unwrap_err();
    assert_eq!(refused, CalDavError::Unauthorized);
    assert_eq!(refused.to_string(), "wrong username or password");
    assert_eq!(
        cal.test_connection(&client()).await,
        Err(CalDavError::Unauthorized)
    );
}

#[tokio::test]
async fn an_answer_too_large_is_refused_not_read() {
    let radicale = Radicale::start().await;
    let cal = calendar_of(&radicale);
    for i in 0..5 {
        let uid = format!("big{i}");
        let ics = event(&uid, "2030-01-07T15:00:00Z", "2030-01-07T15:30:00Z", |_| {});
        cal.put(&client(), &uid, &ics, PutMode::Create)
            .await
            .unwrap();
    }
    let small = cal.with_bounds(Duration::from_secs(10), 1024);
    assert_eq!(busy(&small).await, Err(CalDavError::TooLarge(1024)));
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let url = format!("http://{}/ana/sales/", closed_addr());
    let cal = CalDav::new(&url, "ana", "pw").unwrap();
    let refused = busy(&cal).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "the CalDAV server cannot be reached: connection refused"
    );
    assert!(matches!(
        cal.test_connection(&client()).await,
        Err(CalDavError::Unreachable(_))
    ));
}

#[tokio::test]
async fn an_html_answer_is_not_xml() {
    let addr = not_caldav().await;
    let cal = CalDav::new(&format!("http://{addr}/calendar/"), "ana", "pw").unwrap();
    let refused = busy(&cal).await.unwrap_err();
    assert!(matches!(refused, CalDavError::NotXml(_)), "{refused:?}");
    assert!(
        refused
            .to_string()
            .starts_with("the CalDAV server's answer is not XML (it is text/html"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_is_unreachable_within_the_bound() {
    let addr = never_answers().await;
    let cal = CalDav::new(&format!("http://{addr}/calendar/"), "ana", "pw")
        .unwrap()
        .with_bounds(Duration::from_millis(300), 64 * 1024);
    assert_eq!(
        busy(&cal).await,
        Err(CalDavError::Unreachable("no answer within 300 ms".into()))
    );
    let empty = cal
        .busy(&client(), utc(TO), utc(FROM), Tz::UTC)
        .await
        .unwrap();
    assert!(empty.is_empty(), "an empty range asks nothing");
}
