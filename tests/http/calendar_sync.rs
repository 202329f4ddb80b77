//! CalDAV wired in, against the test kit's real Radicale: an event in the collection
//! takes its slot out of the open times and refuses a booking there; a booking is
//! written as `{id}.ics` (read back and parsed), a move rewrites it with `SEQUENCE` 1,
//! a cancellation deletes it, each ending `calendarSync: "synced"`; an unreachable
//! server answers 424 `Calendar unavailable` and books nothing; a failed write leaves
//! the meeting booked, `failed` with its error, and the retry after the server is
//! mended ends `synced`. An Outlook-style event (a Windows `TZID` with its
//! `VTIMEZONE`) blocks its real time; the owner's move and delete in her calendar win
//! over engaged's next (conditional) write; names with quotes and line breaks stay
//! inside their parameters. The zone and ETag tests run on Xandikos too.

use std::time::Duration;

use chrono::{DateTime, Duration as ChronoDuration, TimeZone, Utc};
use engaged::http_client::HttpClient;
use engaged::providers::caldav::{CalDav, PutMode};
use engaged::testkit::caldav::unfiltered_collection;
use engaged::testkit::xandikos::{CalDavServer, Xandikos};
use engaged::testkit::{closed_addr, enc, Org, Radicale, Response, TestServer};
use icalendar::{Component, EventLike};
use serde_json::{json, Value};

use crate::answers::*;

fn client() -> HttpClient {
    HttpClient::new(Duration::from_secs(10), None).unwrap()
}

/// Every day, all day, UTC, no notice, 30-minute meetings, no buffer; `caldav` at `url`.
fn calendar_at(url: &str, user: &str, password: &str) -> Value {
    let mut calendar = engaged::testkit::fixtures::always_open_calendar("Consultation");
    calendar["caldav"] = json!({"url": url, "username": user, "password": password});
    calendar
}

fn on_radicale(radicale: &Radicale) -> Value {
    on_server(radicale)
}

fn on_server(server: &impl CalDavServer) -> Value {
    calendar_at(server.url(), server.user(), server.password())
}

fn collection(server: &impl CalDavServer) -> CalDav {
    CalDav::new(server.url(), server.user(), server.password()).unwrap()
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

/// What Outlook and Exchange write: a Windows zone name, quoted, with its `VTIMEZONE`.
const OUTLOOK_BERLIN: &str = "BEGIN:VTIMEZONE\r\nTZID:W. Europe Standard Time\r\nBEGIN:STANDARD\r\nDTSTART:16010101T030000\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nRRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10\r\nEND:STANDARD\r\nBEGIN:DAYLIGHT\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nRRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n";

/// An Outlook-style object: `summary` from `start` for an hour (local times written
/// `YYYYMMDDTHHMMSS`) in `tzid`, with `vtimezone`.
fn outlook_event(
    uid: &str,
    summary: &str,
    tzid: &str,
    vtimezone: &str,
    start: &str,
    end: &str,
) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nPRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN\r\nVERSION:2.0\r\nMETHOD:PUBLISH\r\n{vtimezone}BEGIN:VEVENT\r\nUID:{uid}\r\nSUMMARY:{summary}\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=\"{tzid}\":{start}\r\nDTEND;TZID=\"{tzid}\":{end}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outlook_event_blocks_its_real_time_and_an_unknown_zone_its_whole_day() {
    outlook_event_on(&Radicale::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_xandikos_an_outlook_event_blocks_its_real_time() {
    outlook_event_on(&Xandikos::start().await).await;
}

async fn outlook_event_on(server: &impl CalDavServer) {
    use chrono_tz::{America::New_York, Europe::Berlin};
    let cal = collection(server);
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    // Berlin 17:00 ten days ahead: 11:00 in New York most of the year (10:00 or 12:00
    // in the weeks the two change clocks apart); chrono-tz says which.
    let day = (Utc::now() + ChronoDuration::days(10)).date_naive();
    let local = |d: chrono::NaiveDate, h: u32| d.and_hms_opt(h, 0, 0).unwrap();
    let berlin_five = Berlin
        .from_local_datetime(&local(day, 17))
        .single()
        .unwrap()
        .with_timezone(&Utc);
    let stamp = |d: chrono::NaiveDate, h: u32| local(d, h).format("%Y%m%dT%H%M%S").to_string();
    let board = outlook_event(
        "board@outlook",
        "Vorstand",
        "W. Europe Standard Time",
        OUTLOOK_BERLIN,
        &stamp(day, 17),
        &stamp(day, 18),
    );
    cal.put(&client(), "board", &board, PutMode::Create)
        .await
        .unwrap();
    // The next day, an event in a zone nothing can read (no VTIMEZONE, no known name).
    let next = day.succ_opt().unwrap();
    let lost = outlook_event(
        "lost@x",
        "Somewhere",
        "Mars Standard Time",
        "",
        &stamp(next, 9),
        &stamp(next, 10),
    );
    cal.put(&client(), "lost", &lost, PutMode::Create)
        .await
        .unwrap();
    let mut calendar = on_server(server);
    calendar["timeZone"] = json!("America/New_York");
    expect(&ts.put(admin, "/v1/calendars/sales", &calendar).await, 200);

    let open = expect(
        &times(
            ts,
            key,
            berlin_five - ChronoDuration::hours(1),
            berlin_five + ChronoDuration::hours(2),
        )
        .await,
        200,
    );
    assert_eq!(
        starts(&open),
        [
            berlin_five - ChronoDuration::hours(1),
            berlin_five - ChronoDuration::minutes(30),
            berlin_five + ChronoDuration::hours(1),
            berlin_five + ChronoDuration::minutes(90)
        ]
        .map(wire),
        "Berlin 17:00 is {} in New York: {open}",
        berlin_five.with_timezone(&New_York)
    );
    // The time the zone's name misread (17:00 New York) is open; the real one is not.
    let misread = New_York
        .from_local_datetime(&local(day, 17))
        .single()
        .unwrap()
        .with_timezone(&Utc);
    let around = expect(
        &times(ts, key, misread, misread + ChronoDuration::hours(1)).await,
        200,
    );
    assert_eq!(starts(&around).len(), 2, "{around}");
    let lead = lead(ts, key).await;
    let refused = book(ts, key, &lead, berlin_five).await;
    assert_eq!(refused.status, 409, "{}", text(&refused));

    // The unknown zone holds the whole next day in New York, and is named.
    let next_day = expect(
        &times(
            ts,
            key,
            New_York
                .from_local_datetime(&local(next, 0))
                .single()
                .unwrap()
                .with_timezone(&Utc),
            New_York
                .from_local_datetime(&local(next, 23))
                .single()
                .unwrap()
                .with_timezone(&Utc),
        )
        .await,
        200,
    );
    assert_eq!(starts(&next_day), Vec::<String>::new(), "{next_day}");
    let shown = expect(&ts.get(admin, "/v1/calendars/sales").await, 200);
    assert_eq!(
        shown["caldavStatus"]["unreadableTimeZones"],
        json!(["\"Somewhere\" (TZID \"Mars Standard Time\")"]),
        "{shown}"
    );
}

/// The `CN` of each `property` line of the `VEVENT` in `ics`, read by the `icalendar`
/// crate's parser and RFC 6868 decoded; and the event's `SUMMARY`.
fn names_in(ics: &str, property: &str) -> (Vec<String>, String) {
    let unfolded = icalendar::parser::unfold(ics);
    let parsed = icalendar::parser::read_calendar(&unfolded).expect("the icalendar crate reads it");
    let event = parsed
        .components
        .iter()
        .find(|c| c.name.as_str() == "VEVENT")
        .expect("a VEVENT");
    let names = event
        .properties
        .iter()
        .filter(|p| p.name.as_str() == property)
        .map(|p| {
            let cn = p
                .params
                .iter()
                .find(|q| q.key.as_str() == "CN")
                .and_then(|q| q.val.as_ref())
                .map(|v| v.as_str().to_string())
                .unwrap_or_default();
            engaged::ics::param_decoded(&cn)
        })
        .collect();
    let summary = event
        .find_prop("SUMMARY")
        .map(|p| p.val.as_str().to_string())
        .unwrap_or_default();
    (names, summary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotes_and_line_breaks_in_names_stay_inside_their_parameters_everywhere() {
    let radicale = Radicale::start().await;
    let cal = collection(&radicale);
    let sink = engaged::testkit::smtp::SmtpSink::start().await;
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.example".into())).await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &json!({"business": {"name": "Acme Solar"},
                "providers": {"email": {"kind": "smtp", "host": "127.0.0.1",
                "port": sink.port, "security": "none", "from": "Acme Solar <sales@acme.example>"}}}),
        )
        .await,
        200,
    );
    // Calendar settings refuse control and bidi characters, naming the field.
    for (field, edit) in [
        (
            "owner.name",
            json!({"name": "Ana\nATTENDEE:mailto:mallory@evil.example", "email": "ana@acme.example"}),
        ),
        (
            "owner.name",
            json!({"name": "Ana \u{202e}ziuR", "email": "ana@acme.example"}),
        ),
    ] {
        let mut body = on_radicale(&radicale);
        body["owner"] = edit;
        let refused = ts.put(admin, "/v1/calendars/sales", &body).await;
        assert_eq!(refused.status, 400, "{}", text(&refused));
        assert!(text(&refused).contains(field), "{}", text(&refused));
    }
    for (field, value) in [("title", "Call\u{7}"), ("location", "Room\u{1}")] {
        let mut body = on_radicale(&radicale);
        body[field] = json!(value);
        let refused = ts.put(admin, "/v1/calendars/sales", &body).await;
        assert_eq!(refused.status, 400, "{}", text(&refused));
        assert!(text(&refused).contains(field), "{}", text(&refused));
    }
    let mut body = on_radicale(&radicale);
    body["owner"] = json!({"name": "Ana \"AR\" Ruiz", "email": "ana@acme.example"});
    body["title"] = json!("Call {{additionalInfo.note}}");
    let saved = expect(&ts.put(admin, "/v1/calendars/sales", &body).await, 200);
    assert_eq!(saved["invitations"], json!("engaged"), "{saved}");
    let token = str_of(&saved["feedToken"]).to_string();

    // A lead's quoted name, and a line break (CR LF) from a door that takes them.
    let lead = ts
        .create_lead(
            key,
            &json!({"firstName": "Pat \"PJ\"", "email": "pat@example.com",
                "additionalInfo": {"note": "x\r\nATTENDEE:mailto:mallory@evil.example"}}),
        )
        .await;
    let lead = str_of(&lead["id"]).to_string();
    let booked = expect(&book(ts, key, &lead, tomorrow(14, 0)).await, 201);
    let id = str_of(&booked["id"]).to_string();
    meeting_when(ts, key, &id, "synced").await;

    let check = |what: &str, ics: &str| {
        let (attendees, summary) = names_in(ics, "ATTENDEE");
        assert_eq!(attendees, ["Pat \"PJ\""], "{what}: {ics}");
        let (organizers, _) = names_in(ics, "ORGANIZER");
        assert_eq!(organizers, ["Ana \"AR\" Ruiz"], "{what}: {ics}");
        assert_eq!(
            summary, "Call x ATTENDEE:mailto:mallory@evil.example",
            "{what}"
        );
        assert!(
            !ics.contains("\r\nATTENDEE:mailto:mallory"),
            "{what}: {ics}"
        );
        assert!(!ics.contains("mallory@evil.example\r\n "), "{what}: {ics}");
    };
    let held = cal
        .get(&client(), &id)
        .await
        .unwrap()
        .expect("the event in Radicale");
    check("CalDAV", &held);

    let feed = ts
        .request(
            hyper::Method::GET,
            &format!("/v1/calendars/sales/feed.ics?token={}", enc(&token)),
            None,
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(feed.status, 200);
    check("feed", &text(&feed));

    let invitation =
        engaged::testkit::poll("the lead's invitation", engaged::testkit::WAIT, || async {
            sink.messages()
                .into_iter()
                .find(|m| m.contains("To: pat@example.com") && m.contains("BEGIN:VCALENDAR"))
                .ok_or_else(|| "none yet".to_string())
        })
        .await;
    let begin = invitation.find("BEGIN:VCALENDAR").unwrap();
    let end = invitation.find("END:VCALENDAR").unwrap() + "END:VCALENDAR".len();
    let part = invitation[begin..end].to_string() + "\r\n";
    let part = if invitation[..begin].contains("quoted-printable") {
        quoted_printable(&part)
    } else {
        part
    };
    check("invitation", &part);
    assert!(
        invitation.contains("Subject: Invitation: Call x ATTENDEE:mailto:mallory@evil.example"),
        "a one-line subject: {invitation}"
    );
}

/// The owner's own edit of the meeting's event in the collection: `start` for 30
/// minutes at `sequence` (as a calendar app writes it, the UID kept).
fn owners_version(uid: &str, start: DateTime<Utc>, sequence: u32) -> String {
    let mut event = icalendar::Event::new();
    event
        .uid(uid)
        .summary("Consultation (moved by Ana)")
        .timestamp(Utc::now())
        .starts(start)
        .ends(start + ChronoDuration::minutes(30))
        .sequence(sequence);
    icalendar::Calendar::new()
        .push(event.done())
        .done()
        .to_string()
}

/// The meeting once `check` holds (polled, bounded).
async fn meeting_until(
    ts: &TestServer,
    key: &str,
    id: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..300 {
        last = expect(&ts.get(key, &format!("/v1/meetings/{id}")).await, 200);
        if check(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the meeting never {what}: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_move_and_delete_in_the_calendar_win_over_engageds_next_write() {
    owners_changes_on(&Radicale::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_xandikos_the_owners_move_and_delete_win_over_engageds_next_write() {
    owners_changes_on(&Xandikos::start().await).await;
}

async fn owners_changes_on(server: &impl CalDavServer) {
    let cal = collection(server);
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    expect(
        &ts.put(admin, "/v1/calendars/sales", &on_server(server))
            .await,
        200,
    );
    let lead = lead(ts, key).await;
    let booked = expect(&book(ts, key, &lead, tomorrow(10, 0)).await, 201);
    let id = str_of(&booked["id"]).to_string();
    let uid = format!("{id}@engaged");
    meeting_when(ts, key, &id, "synced").await;

    // The owner moves it to 12:00 in her calendar (her app writes SEQUENCE 3).
    cal.put(
        &client(),
        &id,
        &owners_version(&uid, tomorrow(12, 0), 3),
        PutMode::Replace,
    )
    .await
    .unwrap();
    // engaged's next write (a move to 14:00) is conditional: refused, her version read
    // and kept, the meeting moved to her time.
    expect(
        &ts.post(
            key,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": wire(tomorrow(14, 0))}),
        )
        .await,
        200,
    );
    let taken = meeting_until(ts, key, &id, "took the owner's time", |m| {
        m["start"] == json!(wire(tomorrow(12, 0))) && m["calendarSync"] == json!("synced")
    })
    .await;
    assert_eq!(taken["status"], json!("booked"), "{taken}");
    let (_, start, sequence) = held(&cal, &id).await.expect("her version is kept");
    assert_eq!((start, sequence), (tomorrow(12, 0), 3));
    let events = crate::engagement::events_of_type(ts, key, &lead, "MEETING").await;
    assert!(
        events.iter().any(
            |e| e["data"]["note"] == json!("changed in the owner's calendar")
                && e["data"]["action"] == json!("rescheduled")
                && e["data"]["start"] == json!(wire(tomorrow(12, 0)))
        ),
        "{events:?}"
    );

    // The next move is written over her version, on its ETag, SEQUENCE above hers.
    expect(
        &ts.post(
            key,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": wire(tomorrow(15, 0))}),
        )
        .await,
        200,
    );
    meeting_until(ts, key, &id, "synced the move", |m| {
        m["start"] == json!(wire(tomorrow(15, 0))) && m["calendarSync"] == json!("synced")
    })
    .await;
    let (_, start, sequence) = held(&cal, &id).await.expect("the move");
    assert_eq!(
        (start, sequence),
        (tomorrow(15, 0), 4),
        "SEQUENCE never goes down"
    );

    // She deletes it: engaged's next write finds it gone and cancels the meeting.
    cal.delete(&client(), &id).await.unwrap();
    expect(
        &ts.post(
            key,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": wire(tomorrow(16, 0))}),
        )
        .await,
        200,
    );
    let canceled = meeting_until(ts, key, &id, "was canceled", |m| {
        m["status"] == json!("canceled") && m["calendarSync"] == json!("synced")
    })
    .await;
    assert_eq!(canceled["calendarSync"], json!("synced"), "{canceled}");
    assert_eq!(held(&cal, &id).await, None, "nothing written back");
    let events = crate::engagement::events_of_type(ts, key, &lead, "MEETING").await;
    assert!(
        events.iter().any(
            |e| e["data"]["note"] == json!("changed in the owner's calendar")
                && e["data"]["action"] == json!("canceled")
        ),
        "{events:?}"
    );
}

/// The inbox says "Meeting changed in the calendar" for `lead`, its page tells what the
/// owner did, and "Seen" ends it.
async fn owners_change_needs_attention_until_seen(ts: &TestServer, lead: &str) {
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = ts.sign_in("pat@example.com", &password).await;
    let get = |path: String| {
        let cookie = agent.cookie.clone();
        async move {
            let r = ts
                .console(hyper::Method::GET, &path, Some(&cookie), None, &[])
                .await;
            assert_eq!(r.status, 200, "{}", r.text());
            r.text()
        }
    };
    let inbox = get("/console/inbox".into()).await;
    assert!(inbox.contains("Meeting changed in the calendar"), "{inbox}");
    let page = get(format!("/console/leads/{lead}")).await;
    assert!(
        page.contains("The owner moved the meeting to")
            && page.contains("The lead was told the new time."),
        "{page}"
    );
    let seen = || {
        let agent = &agent;
        async move {
            let r = ts
                .console_post(
                    &format!("/console/leads/{lead}/calendar-change-seen"),
                    &agent.cookie,
                    &[("csrf", agent.csrf.as_str())],
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.text());
            r.text()
        }
    };
    seen().await;
    let inbox = get("/console/inbox".into()).await;
    assert!(
        !inbox.contains("Meeting changed in the calendar"),
        "{inbox}"
    );
    let page = get(format!("/console/leads/{lead}")).await;
    assert!(
        page.contains("saw the meeting changed in the calendar"),
        "{page}"
    );
    // A second "Seen" is shown on the page in words: nothing is left to see.
    let again = seen().await;
    assert!(
        again.contains("This calendar change was already seen"),
        "{again}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_the_calendar_takes_in_the_owners_move_and_delete() {
    let radicale = Radicale::start().await;
    let cal = collection(&radicale);
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    // The same collection written three ways (host case, a final `/`): one collection
    // to engaged's ETags, three entries of the busy times' cache, so that each read
    // below is a read of the server, not the cached one.
    let written = |host: &str, slash: bool| {
        let mut url = radicale.url().replace("127.0.0.1", host);
        if !slash {
            url.pop();
        }
        calendar_at(&url, radicale.user(), radicale.password())
    };
    expect(
        &ts.put(admin, "/v1/calendars/sales", &written("localhost", true))
            .await,
        200,
    );
    let lead = lead(ts, key).await;
    let booked = expect(&book(ts, key, &lead, tomorrow(10, 0)).await, 201);
    let id = str_of(&booked["id"]).to_string();
    let uid = format!("{id}@engaged");
    meeting_when(ts, key, &id, "synced").await;

    // She moves it to 12:00; the next read of her calendar (any `times`) moves the
    // meeting, says so on the lead and keeps her version.
    cal.put(
        &client(),
        &id,
        &owners_version(&uid, tomorrow(12, 0), 1),
        PutMode::Replace,
    )
    .await
    .unwrap();
    expect(
        &ts.put(admin, "/v1/calendars/sales", &written("LOCALHOST", true))
            .await,
        200,
    );
    let open = expect(&times(ts, key, tomorrow(9, 0), tomorrow(13, 0)).await, 200);
    assert!(
        !starts(&open).contains(&wire(tomorrow(12, 0))),
        "her 12:00 is busy: {open}"
    );
    let moved = meeting_until(ts, key, &id, "took her move", |m| {
        m["start"] == json!(wire(tomorrow(12, 0)))
    })
    .await;
    assert_eq!(moved["status"], json!("booked"), "{moved}");
    let events = crate::engagement::events_of_type(ts, key, &lead, "MEETING").await;
    assert!(
        events.iter().any(
            |e| e["data"]["note"] == json!("changed in the owner's calendar")
                && e["data"]["action"] == json!("rescheduled")
        ),
        "{events:?}"
    );
    let (_, start, sequence) = held(&cal, &id).await.expect("her version");
    assert_eq!((start, sequence), (tomorrow(12, 0), 1));
    // A person looks: the lead needs attention until someone marks the change seen.
    owners_change_needs_attention_until_seen(ts, &lead).await;

    // engaged's next write goes over her version with a higher SEQUENCE.
    expect(
        &ts.post(
            key,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": wire(tomorrow(14, 0))}),
        )
        .await,
        200,
    );
    meeting_until(ts, key, &id, "synced the move", |m| {
        m["start"] == json!(wire(tomorrow(14, 0))) && m["calendarSync"] == json!("synced")
    })
    .await;
    let (_, start, sequence) = held(&cal, &id).await.expect("the move");
    assert_eq!((start, sequence), (tomorrow(14, 0), 2));

    // She deletes it; the next read cancels the meeting.
    cal.delete(&client(), &id).await.unwrap();
    expect(
        &ts.put(admin, "/v1/calendars/sales", &written("localhost", false))
            .await,
        200,
    );
    expect(&times(ts, key, tomorrow(9, 0), tomorrow(13, 0)).await, 200);
    let canceled = meeting_until(ts, key, &id, "was canceled", |m| {
        m["status"] == json!("canceled")
    })
    .await;
    assert_eq!(canceled["calendarSync"], json!("synced"), "{canceled}");
    assert_eq!(held(&cal, &id).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_whose_server_schedules_gets_no_invitation_from_engaged() {
    let radicale = Radicale::start().await;
    let cal = collection(&radicale);
    let sink = engaged::testkit::smtp::SmtpSink::start().await;
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.example".into())).await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &json!({"providers": {"email": {"kind": "smtp", "host": "127.0.0.1",
                "port": sink.port, "security": "none", "from": "Acme Solar <sales@acme.example>"}}}),
        )
        .await,
        200,
    );
    let mut body = on_radicale(&radicale);
    body["invitations"] = json!("bogus");
    let refused = ts.put(admin, "/v1/calendars/sales", &body).await;
    assert_eq!(refused.status, 400, "{}", text(&refused));
    assert!(text(&refused).contains("invitations"), "{}", text(&refused));
    let mut local = body.clone();
    local.as_object_mut().unwrap().remove("caldav");
    local["invitations"] = json!("server");
    let refused = ts.put(admin, "/v1/calendars/sales", &local).await;
    assert_eq!(refused.status, 400, "{}", text(&refused));
    assert!(
        text(&refused).contains("needs caldav"),
        "{}",
        text(&refused)
    );
    body["invitations"] = json!("server");
    let saved = expect(&ts.put(admin, "/v1/calendars/sales", &body).await, 200);
    assert_eq!(saved["invitations"], json!("server"));
    // Absent keeps it.
    body.as_object_mut().unwrap().remove("invitations");
    let kept = expect(&ts.put(admin, "/v1/calendars/sales", &body).await, 200);
    assert_eq!(kept["invitations"], json!("server"));

    let lead = lead(ts, key).await;
    let booked = expect(&book(ts, key, &lead, tomorrow(14, 0)).await, 201);
    let id = str_of(&booked["id"]).to_string();
    meeting_when(ts, key, &id, "synced").await;
    let held = cal.get(&client(), &id).await.unwrap().expect("the event");
    let unfolded = held.replace("\r\n ", "");
    assert!(unfolded.contains("ATTENDEE"), "{held}");
    assert!(
        !unfolded.contains("SCHEDULE-AGENT"),
        "the server schedules: {held}"
    );
    // The lead's confirmation (by email: no phone) goes; no invitation does.
    engaged::testkit::poll("the confirmation", engaged::testkit::WAIT, || async {
        if sink
            .messages()
            .iter()
            .any(|m| m.contains("To: lee@example.com"))
        {
            Ok(())
        } else {
            Err("none yet".to_string())
        }
    })
    .await;
    assert!(
        !sink
            .messages()
            .iter()
            .any(|m| m.contains("BEGIN:VCALENDAR")),
        "no invitation from engaged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_moved_to_another_collection_writes_its_meetings_there_and_cancels_none() {
    let first = Radicale::start().await;
    let org = Org::start().await;
    let (ts, admin, key) = (&org.ts, org.admin.as_str(), org.write.as_str());
    expect(
        &ts.put(admin, "/v1/calendars/sales", &on_radicale(&first))
            .await,
        200,
    );
    let lead = lead(ts, key).await;
    let booked = expect(&book(ts, key, &lead, tomorrow(10, 0)).await, 201);
    let id = str_of(&booked["id"]).to_string();
    meeting_when(ts, key, &id, "synced").await;

    // Another server, which never held the event: its ETag there is none, and the
    // event's absence there is no deletion by the owner.
    let second = Radicale::start().await;
    expect(
        &ts.put(admin, "/v1/calendars/sales", &on_radicale(&second))
            .await,
        200,
    );
    expect(&times(ts, key, tomorrow(9, 0), tomorrow(12, 0)).await, 200);
    expect(
        &ts.post(
            key,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": wire(tomorrow(15, 0))}),
        )
        .await,
        200,
    );
    let moved = meeting_until(ts, key, &id, "synced the move", |m| {
        m["start"] == json!(wire(tomorrow(15, 0))) && m["calendarSync"] == json!("synced")
    })
    .await;
    assert_eq!(moved["status"], json!("booked"), "{moved}");
    let (_, start, sequence) = held(&collection(&second), &id)
        .await
        .expect("written in the new collection");
    assert_eq!((start, sequence), (tomorrow(15, 0), 1));
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
/// in `caldavStatus.tooManyOccurrences`, and a booking over it is refused.
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
    assert_eq!(
        calendar["caldavStatus"]["tooManyOccurrences"],
        json!(["Every second"]),
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
