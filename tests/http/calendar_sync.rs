//! CalDAV wired in, against the test kit's real Radicale: an event in the collection
//! takes its slot out of the open times and refuses a booking there; a booking is
//! written as `{id}.ics` (read back and parsed), a move rewrites it with `SEQUENCE` 1,
//! a cancellation deletes it, each ending `calendarSync: "synced"`; an unreachable
//! server answers 424 `Calendar unavailable` and books nothing; a failed write leaves
//! the meeting booked, `failed` with its error, and the retry after the server is
//! mended ends `synced`.

use std::time::Duration;

use chrono::{DateTime, Duration as ChronoDuration, TimeZone, Utc};
use engaged::http_client::HttpClient;
use engaged::providers::caldav::{CalDav, PutMode};
use engaged::testkit::caldav::unfiltered_collection;
use engaged::testkit::{closed_addr, enc, Org, Radicale, Response, TestServer};
use icalendar::{Component, EventLike};
use serde_json::{json, Value};

use crate::answers::*;

fn client() -> HttpClient {
    HttpClient::new(Duration::from_secs(10), None).unwrap()
}

/// Every day, all day, UTC, no notice, 30-minute meetings, no buffer; `caldav` at `url`.
fn calendar_at(url: &str, user: &str, password: &str) -> Value {
    let day = json!([["00:00", "24:00"]]);
    json!({"timeZone": "UTC",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": day, "sun": day},
        "meetingMinutes": 30, "bufferMinutes": 0, "minNoticeMinutes": 0, "daysAhead": 14,
        "title": "Consultation", "location": "Phone call",
        "owner": {"name": "Ana Ruiz", "email": "ana@acme.example"},
        "caldav": {"url": url, "username": user, "password": password}})
}

fn on_radicale(radicale: &Radicale) -> Value {
    calendar_at(radicale.url(), radicale.user(), radicale.password())
}

fn collection(radicale: &Radicale) -> CalDav {
    CalDav::new(radicale.url(), radicale.user(), radicale.password()).unwrap()
}

/// Tomorrow at `hour:minute` UTC.
fn tomorrow(hour: u32, minute: u32) -> DateTime<Utc> {
    let day = (Utc::now() + ChronoDuration::days(1)).date_naive();
    Utc.from_utc_datetime(&day.and_hms_opt(hour, minute, 0).unwrap())
}

fn wire(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

async fn lead(ts: &TestServer, key: &str) -> String {
    let lead = ts
        .create_lead(
            key,
            &json!({"firstName": "Lee", "email": "lee@example.com"}),
        )
        .await;
    str_of(&lead["id"]).to_string()
}

async fn book(ts: &TestServer, key: &str, lead: &str, start: DateTime<Utc>) -> Response {
    ts.post(
        key,
        &format!("/v1/leads/{lead}/meetings"),
        &json!({"calendar": "sales", "start": wire(start)}),
    )
    .await
}

/// The meeting once its `calendarSync` is `wanted` (polled, bounded).
async fn meeting_when(ts: &TestServer, key: &str, id: &str, wanted: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..300 {
        last = expect(&ts.get(key, &format!("/v1/meetings/{id}")).await, 200);
        if last["calendarSync"] == json!(wanted) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("calendarSync never became {wanted}: {last}");
}

async fn times(ts: &TestServer, key: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> Response {
    ts.get(
        key,
        &format!(
            "/v1/calendars/sales/times?from={}&to={}",
            enc(&wire(from)),
            enc(&wire(to))
        ),
    )
    .await
}

fn starts(answer: &Value) -> Vec<String> {
    answer["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| str_of(&t["start"]).to_string())
        .collect()
}

/// The event `name` as Radicale holds it: (UID, DTSTART, SEQUENCE).
async fn held(cal: &CalDav, name: &str) -> Option<(String, DateTime<Utc>, u32)> {
    let text = cal.get(&client(), name).await.unwrap()?;
    let parsed: icalendar::Calendar = text.parse().unwrap();
    let event = parsed.events().next().expect("one event").clone();
    let start = match event.get_start().unwrap() {
        icalendar::DatePerhapsTime::DateTime(icalendar::CalendarDateTime::Utc(t)) => t,
        other => panic!("DTSTART {other:?}"),
    };
    Some((
        event.get_uid().unwrap().to_string(),
        start,
        event.get_sequence().unwrap_or(0),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookings_moves_and_cancellations_reach_the_caldav_collection() {
    let radicale = Radicale::start().await;
    let cal = collection(&radicale);
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    // Busy in the collection, tomorrow 10:00–11:00 UTC.
    let mut busy = icalendar::Event::new();
    busy.uid("dentist@example")
        .summary("Dentist")
        .timestamp(Utc::now())
        .starts(tomorrow(10, 0))
        .ends(tomorrow(11, 0));
    let busy = icalendar::Calendar::new()
        .push(busy.done())
        .done()
        .to_string();
    cal.put(&client(), "dentist", &busy, PutMode::Create)
        .await
        .unwrap();
    expect(
        &ts.put(admin, "/v1/calendars/sales", &on_radicale(&radicale))
            .await,
        200,
    );

    let open = expect(&times(ts, key, tomorrow(9, 0), tomorrow(12, 0)).await, 200);
    assert_eq!(
        starts(&open),
        [
            tomorrow(9, 0),
            tomorrow(9, 30),
            tomorrow(11, 0),
            tomorrow(11, 30)
        ]
        .map(wire),
        "{open}"
    );

    let lead = lead(ts, key).await;
    let taken = book(ts, key, &lead, tomorrow(10, 30)).await;
    assert_eq!(taken.status, 409, "{}", text(&taken));
    assert_eq!(taken.json()["message"], json!("Time not available"));

    let booked = expect(&book(ts, key, &lead, tomorrow(14, 0)).await, 201);
    let id = str_of(&booked["id"]).to_string();
    assert_eq!(booked["calendarSync"], json!("pending"), "{booked}");
    let synced = meeting_when(ts, key, &id, "synced").await;
    assert!(synced["syncError"].is_null(), "{synced}");
    let (uid, start, sequence) = held(&cal, &id).await.expect("the booking in Radicale");
    assert_eq!(uid, format!("{id}@engaged"));
    assert_eq!((start, sequence), (tomorrow(14, 0), 0));

    let moved = expect(
        &ts.post(
            key,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": wire(tomorrow(15, 0))}),
        )
        .await,
        200,
    );
    assert_eq!(moved["calendarSync"], json!("pending"), "{moved}");
    meeting_when(ts, key, &id, "synced").await;
    let (_, start, sequence) = held(&cal, &id).await.expect("the move in Radicale");
    assert_eq!((start, sequence), (tomorrow(15, 0), 1));

    expect(
        &ts.post(key, &format!("/v1/meetings/{id}/cancel"), &json!({}))
            .await,
        200,
    );
    meeting_when(ts, key, &id, "synced").await;
    assert_eq!(held(&cal, &id).await, None, "the cancellation deletes it");
    // The event put there by someone else stays.
    assert!(held(&cal, "dentist").await.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_caldav_server_offers_no_times_and_books_nothing() {
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    let url = format!("http://{}/ana/sales/", closed_addr());
    expect(
        &ts.put(
            admin,
            "/v1/calendars/sales",
            &calendar_at(&url, "ana", "pw"),
        )
        .await,
        200,
    );
    let answer = times(ts, key, tomorrow(9, 0), tomorrow(12, 0)).await;
    assert_eq!(answer.status, 424, "{}", text(&answer));
    assert_eq!(
        answer.json()["message"],
        json!("Calendar unavailable: the CalDAV server could not be reached")
    );
    let lead = lead(ts, key).await;
    let refused = book(ts, key, &lead, tomorrow(14, 0)).await;
    assert_eq!(refused.status, 424, "{}", text(&refused));
    let listed = expect(&ts.get(key, "/v1/meetings?calendar=sales").await, 200);
    assert_eq!(listed["meetings"], json!([]), "nothing booked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_keeps_the_meeting_and_is_retried_until_synced() {
    let org = Org::start_with(|c| {
        c.webhooks.retry_schedule = vec![Duration::from_millis(200); 10];
    })
    .await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    let first = Radicale::start().await;
    expect(
        &ts.put(admin, "/v1/calendars/sales", &on_radicale(&first))
            .await,
        200,
    );
    // The busy times are read (and cached), then the server goes away before the write.
    expect(&times(ts, key, tomorrow(9, 0), tomorrow(12, 0)).await, 200);
    drop(first);
    let lead = lead(ts, key).await;
    let booked = expect(&book(ts, key, &lead, tomorrow(14, 0)).await, 201);
    let id = str_of(&booked["id"]).to_string();
    let failed = meeting_when(ts, key, &id, "failed").await;
    assert_eq!(failed["status"], json!("booked"));
    assert!(
        str_of(&failed["syncError"]) == "the CalDAV server could not be reached",
        "{failed}"
    );

    // Mended: the calendar now points at a server that answers; the retry writes it.
    let second = Radicale::start().await;
    expect(
        &ts.put(admin, "/v1/calendars/sales", &on_radicale(&second))
            .await,
        200,
    );
    let synced = meeting_when(ts, key, &id, "synced").await;
    assert!(synced["syncError"].is_null(), "{synced}");
    let (_, start, _) = held(&collection(&second), &id)
        .await
        .expect("written on the retry");
    assert_eq!(start, tomorrow(14, 0));
}

/// An event repeating every second since 1900 (issue 41: anyone who can put an event on
/// the owner's calendar writes its rule).
const FLOOD: &str = concat!(
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//probe//probe//EN\r\n",
    "BEGIN:VEVENT\r\nUID:flood@example\r\nDTSTAMP:20250101T000000Z\r\n",
    "SUMMARY:Every second\r\nDTSTART:19000101T000000Z\r\nDURATION:PT1S\r\n",
    "RRULE:FREQ=SECONDLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
);

/// A collection that hands engaged the event unexpanded: it is read within the
/// expansion's budget, off the runtime's workers. The times answer (none open: it is busy
/// from its start on), `/healthz` answers while it is read, the calendar names the event
/// in `caldav.warnings`, and a booking over it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_repeating_every_second_since_1900_is_busy_and_named_never_a_freeze() {
    let addr = unfiltered_collection(vec![FLOOD.to_string()]).await;
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    let url = format!("http://{addr}/cal/");
    expect(
        &ts.put(
            admin,
            "/v1/calendars/sales",
            &calendar_at(&url, "ana", "pw"),
        )
        .await,
        200,
    );
    let (open, health) = tokio::join!(times(ts, key, tomorrow(9, 0), tomorrow(12, 0)), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        ts.request(hyper::Method::GET, "/healthz", None, None, Vec::new())
            .await
    });
    assert_eq!(health.status, 200, "{}", text(&health));
    let open = expect(&open, 200);
    assert_eq!(starts(&open), Vec::<String>::new(), "{open}");
    let calendar = expect(&ts.get(key, "/v1/calendars/sales").await, 200);
    let warnings = calendar["caldav"]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{calendar}");
    assert!(
        str_of(&warnings[0]).contains("\"Every second\" repeats too often"),
        "{calendar}"
    );
    let lead = lead(ts, key).await;
    let refused = book(ts, key, &lead, tomorrow(14, 0)).await;
    assert_eq!(refused.status, 409, "{}", text(&refused));
}

/// Radicale itself hangs filtering that event by time: engaged answers 424 in words
/// after its bound and keeps answering everything else meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caldav_server_hung_on_the_event_leaves_engaged_answering() {
    let radicale = Radicale::start().await;
    collection(&radicale)
        .put(&client(), "flood", FLOOD, PutMode::Create)
        .await
        .unwrap();
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    expect(
        &ts.put(admin, "/v1/calendars/sales", &on_radicale(&radicale))
            .await,
        200,
    );
    let (open, health) = tokio::join!(times(ts, key, tomorrow(9, 0), tomorrow(12, 0)), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        ts.request(hyper::Method::GET, "/healthz", None, None, Vec::new())
            .await
    });
    assert_eq!(health.status, 200, "{}", text(&health));
    assert_eq!(open.status, 424, "{}", text(&open));
    assert!(
        text(&open).starts_with("{\"message\":\"Calendar unavailable"),
        "{}",
        text(&open)
    );
}
