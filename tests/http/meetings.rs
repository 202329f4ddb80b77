//! Calendars, open times, meetings and the feed (`../shared/spec/appointments.md`):
//! each bad input refused in words, a booking's effects on the lead, its cadence and the
//! webhooks, moving, cancelling and closing, the keyset listing, the feed parsed by the
//! `icalendar` crate and by Python's `vobject`, and 100 concurrent bookings of one slot.

use chrono::{Duration as ChronoDuration, TimeZone, Utc};
use serde_json::{json, Value};

use engaged::testkit::webhooks::WebhookReceiver;
use engaged::testkit::{enc, Org, Response, TestServer};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::walk;

/// Every day, all day, in UTC, no notice: any half hour from now on is open.
fn always_open() -> Value {
    engaged::testkit::fixtures::always_open_calendar("Consultation with {{business.name}}")
}

/// Tomorrow at `hour:minute` UTC, as RFC 3339.
fn tomorrow(hour: u32, minute: u32) -> String {
    let day = (Utc::now() + ChronoDuration::days(1)).date_naive();
    Utc.from_utc_datetime(&day.and_hms_opt(hour, minute, 0).unwrap())
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

async fn put_calendar(ts: &TestServer, admin: &str, name: &str, body: &Value) -> Value {
    expect(
        &ts.put(admin, &format!("/v1/calendars/{name}"), body).await,
        200,
    )
}

async fn lead(ts: &TestServer, key: &str, body: Value) -> String {
    str_of(&ts.create_lead(key, &body).await["id"]).to_string()
}

async fn book(ts: &TestServer, key: &str, lead: &str, start: &str) -> Response {
    ts.post(
        key,
        &format!("/v1/leads/{lead}/meetings"),
        &json!({"calendar": "sales", "start": start}),
    )
    .await
}

fn refused(r: &Response, status: u16, message: &str) {
    assert_eq!(r.status, status, "{}", text(r));
    assert_eq!(r.json()["message"], json!(message), "{}", text(r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendars_are_checked_field_by_field_and_keep_their_password() {
    let org = Org::start().await;
    let (ts, admin) = (&org.ts, org.admin.as_str());
    let path = "/v1/calendars/sales";
    let with = |member: &str, value: Value| {
        let mut body = always_open();
        body[member] = value;
        body
    };
    let cases = [
        (
            with("timeZone", json!("Mars/Olympus")),
            "Unknown time zone: Mars/Olympus",
        ),
        (
            with("hours", json!({"mon": [["12:00", "09:00"]]})),
            "hours.mon[0]: the start must come before the end",
        ),
        (
            with(
                "hours",
                json!({"tue": [["09:00", "12:00"], ["11:30", "13:00"]]}),
            ),
            "hours.tue[1]: intervals must be in order and must not overlap",
        ),
        (
            with("hours", json!({"wed": vec![json!(["09:00", "09:30"]); 6]})),
            "Too many: hours.wed (at most 5)",
        ),
        (
            with("meetingMinutes", json!(481)),
            "meetingMinutes must be a whole number from 5 to 480",
        ),
        (
            with("bufferMinutes", json!(-1)),
            "bufferMinutes must be a whole number from 0 to 240",
        ),
        (
            with("minNoticeMinutes", json!(20_161)),
            "minNoticeMinutes must be a whole number from 0 to 20160",
        ),
        (
            with("daysAhead", json!(0)),
            "daysAhead must be a whole number from 1 to 180",
        ),
        (
            with("reminders", json!(["24h", "later"])),
            "reminders[1] must be a duration from 1m to 30d (e.g. 24h)",
        ),
        (with("color", json!("red")), "Unknown field: color"),
    ];
    for (body, message) in cases {
        refused(&ts.put(admin, path, &body).await, 400, message);
    }
    assert_eq!(ts.get(admin, path).await.status, 404, "nothing was stored");
    // The read key does not write.
    assert_eq!(ts.put(&org.read, path, &always_open()).await.status, 403);

    let mut body = always_open();
    body["caldav"] = json!({"url": "https://cal.acme.example/ana/sales/", "username": "ana", "password": "s3cret"});
    body["reminders"] = json!(["24h", "1h"]);
    let saved = put_calendar(ts, admin, "sales", &body).await;
    assert_eq!(
        saved["caldav"],
        json!({"url": "https://cal.acme.example/ana/sales/", "username": "ana", "passwordSet": true})
    );
    assert!(!text(&ts.get(&org.read, path).await).contains("s3cret"));
    let token = str_of(&saved["feedToken"]).to_string();
    assert!(
        str_of(&saved["feedUrl"]).ends_with(&format!("/v1/calendars/sales/feed.ics?token={token}"))
    );
    // A PUT without the password keeps it, and the feed token.
    body["caldav"] = json!({"url": "https://cal.acme.example/ana/sales/", "username": "ana"});
    let again = put_calendar(ts, admin, "sales", &body).await;
    assert_eq!(again["caldav"]["passwordSet"], json!(true));
    assert_eq!(again["feedToken"], json!(token));
    assert_eq!(again["hours"]["mon"], json!([["00:00", "24:00"]]));
    let rotated = expect(
        &ts.post(admin, "/v1/calendars/sales/rotate-feed-token", &json!({}))
            .await,
        200,
    );
    assert_ne!(rotated["feedToken"], json!(token));
    let listed = expect(&ts.get(&org.read, "/v1/calendars").await, 200);
    assert_eq!(listed["calendars"].as_array().map(Vec::len), Some(1));

    // At most 20 calendars.
    for i in 1..20 {
        put_calendar(ts, admin, &format!("c{i}"), &always_open()).await;
    }
    refused(
        &ts.put(admin, "/v1/calendars/one-more", &always_open())
            .await,
        400,
        "Too many: calendars (at most 20)",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_a_profile_names_is_not_deleted() {
    let org = Org::start().await;
    let (ts, admin) = (&org.ts, org.admin.as_str());
    let mut profile = profile_with(json!([]));
    profile["calendar"] = json!("sales");
    refused(
        &ts.put(admin, &profile_path("solar"), &profile).await,
        400,
        "Calendar not found",
    );
    put_calendar(ts, admin, "sales", &always_open()).await;
    let saved = put_profile(ts, admin, "solar", &profile).await;
    assert_eq!(saved["calendar"], json!("sales"));
    refused(
        &ts.delete(admin, "/v1/calendars/sales").await,
        409,
        "Calendar in use by profile solar: set the profile's calendar to another one or none first",
    );
    profile["calendar"] = Value::Null;
    put_profile(ts, admin, "solar", &profile).await;
    expect(&ts.delete(admin, "/v1/calendars/sales").await, 200);
    assert_eq!(ts.get(admin, "/v1/calendars/sales").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_booking_stops_the_cadence_and_tells_the_lead_the_timeline_and_the_webhooks() {
    let org = Org::start().await;
    let (ts, admin, write) = (&org.ts, org.admin.as_str(), org.write.as_str());
    let hooks = WebhookReceiver::ok().await;
    hooks.register(ts, admin).await;
    put_calendar(ts, admin, "sales", &always_open()).await;
    put_profile(
        ts,
        admin,
        "solar",
        &profile_with(json!([sms_step("1d", "Hi {{firstName}}")])),
    )
    .await;
    let ada = lead(ts, write, json!({"firstName": "Ada", "phone": "+15551230001", "email": "ada@example.com", "customerProfile": "solar"})).await;
    wait_state(ts, write, &ada, "active", None).await;

    // Not a slot: a quarter past, a past time, a day beyond daysAhead; an unknown calendar.
    for start in [tomorrow(10, 15), "2020-01-01T10:00:00Z".to_string()] {
        refused(
            &book(ts, write, &ada, &start).await,
            409,
            "Time not available",
        );
    }
    let far = (Utc::now() + ChronoDuration::days(20))
        .format("%Y-%m-%dT10:00:00Z")
        .to_string();
    refused(
        &book(ts, write, &ada, &far).await,
        409,
        "Time not available",
    );
    refused(
        &ts.post(
            write,
            &format!("/v1/leads/{ada}/meetings"),
            &json!({"calendar": "nope", "start": tomorrow(10, 0)}),
        )
        .await,
        400,
        "Calendar not found",
    );
    refused(
        &ts.post(
            write,
            &format!("/v1/leads/{ada}/meetings"),
            &json!({"calendar": "sales"}),
        )
        .await,
        400,
        "Missing field: start",
    );
    assert_eq!(
        book(ts, &org.read, &ada, &tomorrow(10, 0)).await.status,
        403
    );

    let start = tomorrow(10, 0);
    let booked = expect(&book(ts, write, &ada, &start).await, 201);
    let id = str_of(&booked["id"]).to_string();
    assert_eq!(booked["status"], json!("booked"));
    assert_eq!(booked["bookedBy"], json!("api"));
    assert_eq!(booked["calendarSync"], json!("none"));
    assert_eq!(booked["start"], json!(start));
    assert_eq!(booked["end"], json!(tomorrow(10, 30)));
    assert_eq!(booked["location"], json!("Phone call"));
    let seen = expect(&ts.get(&org.read, &format!("/v1/leads/{ada}")).await, 200);
    assert_eq!(seen["nextMeetingAt"], json!(start));
    wait_state(ts, write, &ada, "stopped", Some("meeting_booked")).await;
    let data = hooks.wait_event("meeting.booked").await;
    assert_eq!(
        data,
        json!({"meetingId": id, "leadId": ada, "calendar": "sales", "start": start,
               "end": tomorrow(10, 30), "status": "booked", "bookedBy": "api"})
    );
    let events = expect(
        &ts.get(&org.read, &format!("/v1/leads/{ada}/events?types=MEETING"))
            .await,
        200,
    );
    assert_eq!(events["events"][0]["data"]["action"], json!("booked"));

    // The slot is taken, for another lead too; the open times leave it out.
    let bob = lead(
        ts,
        write,
        json!({"firstName": "Bob", "phone": "+15551230002"}),
    )
    .await;
    refused(
        &book(ts, write, &bob, &start).await,
        409,
        "Time not available",
    );
    let times = expect(
        &ts.get(
            &org.read,
            &format!(
                "/v1/calendars/sales/times?from={}&to={}",
                enc(&tomorrow(9, 0)),
                enc(&tomorrow(12, 0))
            ),
        )
        .await,
        200,
    );
    let starts: Vec<&str> = times["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| str_of(&t["start"]))
        .collect();
    assert_eq!(
        starts,
        [
            tomorrow(9, 0),
            tomorrow(9, 30),
            tomorrow(10, 30),
            tomorrow(11, 0),
            tomorrow(11, 30)
        ]
    );

    // Moved: the old slot opens, the new one is checked the same way.
    let path = format!("/v1/meetings/{id}");
    refused(
        &ts.post(
            write,
            &format!("{path}/reschedule"),
            &json!({"start": tomorrow(11, 10)}),
        )
        .await,
        409,
        "Time not available",
    );
    let moved = expect(
        &ts.post(
            write,
            &format!("{path}/reschedule"),
            &json!({"start": tomorrow(11, 0)}),
        )
        .await,
        200,
    );
    assert_eq!(moved["start"], json!(tomorrow(11, 0)));
    assert_eq!(
        hooks.wait_event("meeting.rescheduled").await["start"],
        json!(tomorrow(11, 0))
    );
    let seen = expect(&ts.get(&org.read, &format!("/v1/leads/{ada}")).await, 200);
    assert_eq!(seen["nextMeetingAt"], json!(tomorrow(11, 0)));
    expect(&book(ts, write, &bob, &start).await, 201);

    // Cancelled: the lead has no next meeting; a cancelled meeting is not closed.
    let canceled = expect(
        &ts.post(write, &format!("{path}/cancel"), &json!({})).await,
        200,
    );
    assert_eq!(canceled["status"], json!("canceled"));
    assert_eq!(
        hooks.wait_event("meeting.canceled").await["status"],
        json!("canceled")
    );
    let seen = expect(&ts.get(&org.read, &format!("/v1/leads/{ada}")).await, 200);
    assert_eq!(seen["nextMeetingAt"], Value::Null);
    refused(
        &ts.post(write, &format!("{path}/cancel"), &json!({})).await,
        409,
        "Meeting is canceled, not booked",
    );
    refused(
        &ts.patch(write, &path, &json!({"status": "completed"}))
            .await,
        409,
        "Meeting is canceled",
    );
    let actions: Vec<Value> = expect(
        &ts.get(&org.read, &format!("/v1/leads/{ada}/events?types=MEETING"))
            .await,
        200,
    )["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["action"].clone())
        .collect();
    assert_eq!(
        actions,
        [json!("booked"), json!("rescheduled"), json!("canceled")]
    );

    // Completed and no-show.
    let other = expect(&book(ts, write, &ada, &tomorrow(14, 0)).await, 201);
    let other_path = format!("/v1/meetings/{}", str_of(&other["id"]));
    refused(
        &ts.patch(write, &other_path, &json!({"status": "booked"}))
            .await,
        400,
        "status must be \"completed\" or \"no_show\"",
    );
    // Kept or missed only once it has begun: tomorrow's meeting is neither yet.
    for status in ["no_show", "completed"] {
        let early = ts
            .patch(write, &other_path, &json!({ "status": status }))
            .await;
        assert_eq!(early.status, 409, "{}", text(&early));
        let message = early.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            message.starts_with("The meeting has not started yet: it can be marked")
                && message.ends_with(&format!("from {}", tomorrow(14, 0))),
            "{message}"
        );
    }
    assert_eq!(
        expect(&ts.get(&org.read, &other_path).await, 200)["status"],
        json!("booked")
    );
    ts.move_meeting_directly(
        "acme",
        str_of(&other["id"]),
        engaged::time::now_micros() - 3_600_000_000,
    )
    .await;
    assert_eq!(
        expect(
            &ts.patch(write, &other_path, &json!({"status": "no_show"}))
                .await,
            200
        )["status"],
        json!("no_show")
    );
    assert_eq!(
        expect(
            &ts.patch(write, &other_path, &json!({"status": "completed"}))
                .await,
            200
        )["status"],
        json!("completed")
    );
    assert_eq!(
        expect(&ts.get(&org.read, &other_path).await, 200)["status"],
        json!("completed")
    );
    assert_eq!(ts.get(&org.read, "/v1/meetings/mtg_nope").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_meetings_listing_is_a_keyset_walk_by_updated_at() {
    let org = Org::start().await;
    let (ts, admin, write) = (&org.ts, org.admin.as_str(), org.write.as_str());
    put_calendar(ts, admin, "sales", &always_open()).await;
    let ada = lead(
        ts,
        write,
        json!({"firstName": "Ada", "phone": "+15551230001"}),
    )
    .await;
    let mut ids = Vec::new();
    for hour in 8..13 {
        ids.push(
            str_of(&expect(&book(ts, write, &ada, &tomorrow(hour, 0)).await, 201)["id"])
                .to_string(),
        );
    }
    // The first one moves last: it comes last.
    expect(
        &ts.post(
            write,
            &format!("/v1/meetings/{}/cancel", ids[0]),
            &json!({}),
        )
        .await,
        200,
    );
    let (all, pages) = walk(ts, &org.read, "/v1/meetings?limit=2", "meetings").await;
    assert_eq!(pages, 3);
    let order: Vec<&str> = all.iter().map(|m| str_of(&m["id"])).collect();
    assert_eq!(order, [&ids[1], &ids[2], &ids[3], &ids[4], &ids[0]]);
    let updated: Vec<&str> = all.iter().map(|m| str_of(&m["updatedAt"])).collect();
    assert!(updated.windows(2).all(|w| w[0] < w[1]));
    // since is inclusive; filters by status and calendar.
    let since = expect(
        &ts.get(
            &org.read,
            &format!("/v1/meetings?since={}", enc(updated[3])),
        )
        .await,
        200,
    );
    assert_eq!(since["meetings"].as_array().map(Vec::len), Some(2));
    assert_eq!(since["nextToken"], Value::Null);
    let canceled = expect(
        &ts.get(&org.read, "/v1/meetings?status=canceled").await,
        200,
    );
    assert_eq!(canceled["meetings"][0]["id"], json!(ids[0]));
    assert_eq!(canceled["meetings"].as_array().map(Vec::len), Some(1));
    let none = expect(&ts.get(&org.read, "/v1/meetings?calendar=other").await, 200);
    assert_eq!(none["meetings"], json!([]));
    refused(
        &ts.get(&org.read, "/v1/meetings?status=maybe").await,
        400,
        "Invalid format for field: status",
    );
    // A token is bound to its filters.
    let first = expect(&ts.get(&org.read, "/v1/meetings?limit=2").await, 200);
    let token = str_of(&first["nextToken"]);
    refused(
        &ts.get(
            &org.read,
            &format!(
                "/v1/meetings?limit=2&status=booked&nextToken={}",
                enc(token)
            ),
        )
        .await,
        400,
        "Invalid nextToken",
    );
}

/// The Python interpreters that may have a third-party iCalendar parser.
fn python_with_parser() -> Option<(&'static str, &'static str)> {
    for python in ["python3", "/usr/bin/python3"] {
        for module in ["vobject", "icalendar"] {
            let ok = std::process::Command::new(python)
                .args(["-c", &format!("import {module}")])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                return Some((python, module));
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_is_icalendar_that_third_party_parsers_read() {
    let org = Org::start().await;
    let (ts, admin, write) = (&org.ts, org.admin.as_str(), org.write.as_str());
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &json!({"business": {"name": "Acme Solar"}}),
        )
        .await,
        200,
    );
    let calendar = put_calendar(ts, admin, "sales", &always_open()).await;
    let token = str_of(&calendar["feedToken"]).to_string();
    let ada = lead(
        ts,
        write,
        json!({"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com"}),
    )
    .await;
    let one = expect(&book(ts, write, &ada, &tomorrow(10, 0)).await, 201);
    expect(&book(ts, write, &ada, &tomorrow(15, 30)).await, 201);
    let gone = expect(&book(ts, write, &ada, &tomorrow(16, 0)).await, 201);
    expect(
        &ts.post(
            write,
            &format!("/v1/meetings/{}/cancel", str_of(&gone["id"])),
            &json!({}),
        )
        .await,
        200,
    );

    // No key: the token is the secret; a wrong one is a missing calendar.
    let open = |path: String| async move {
        ts.request(hyper::Method::GET, &path, None, None, Vec::new())
            .await
    };
    assert_eq!(
        open("/v1/calendars/sales/feed.ics?token=acme.nope".into())
            .await
            .status,
        404
    );
    assert_eq!(
        open("/v1/calendars/sales/feed.ics".into()).await.status,
        404
    );
    let r = open(format!(
        "/v1/calendars/sales/feed.ics?token={}",
        enc(&token)
    ))
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/calendar; charset=utf-8")
    );
    let body = text(&r);
    assert!(
        body.contains(&format!(
            "PRODID:-//engaged//engaged {}//EN\r\n",
            env!("CARGO_PKG_VERSION")
        )),
        "{body}"
    );

    // The feed has an ETag: sent back, 304 while nothing changed; after a booking, 200.
    let path = format!("/v1/calendars/sales/feed.ics?token={}", enc(&token));
    let etag = r
        .headers
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .expect("an ETag")
        .to_string();
    let again = |etag: String| {
        let request = hyper::Request::get(format!("{}{path}", ts.base))
            .header("if-none-match", etag)
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .expect("request");
        ts.send(request)
    };
    let unchanged = again(etag.clone()).await;
    assert_eq!(unchanged.status, 304);
    assert!(unchanged.body.is_empty());
    assert_eq!(
        unchanged.headers.get("etag").and_then(|v| v.to_str().ok()),
        Some(etag.as_str())
    );
    let later = expect(&book(ts, write, &ada, &tomorrow(17, 0)).await, 201);
    let changed = again(etag.clone()).await;
    assert_eq!(changed.status, 200);
    assert_ne!(
        changed.headers.get("etag").and_then(|v| v.to_str().ok()),
        Some(etag.as_str())
    );
    expect(
        &ts.post(
            write,
            &format!("/v1/meetings/{}/cancel", str_of(&later["id"])),
            &json!({}),
        )
        .await,
        200,
    );

    let parsed: icalendar::Calendar = body.parse().expect("the icalendar crate reads the feed");
    use icalendar::Component;
    let events: Vec<_> = parsed.events().collect();
    assert_eq!(events.len(), 2, "booked meetings only: {body}");
    assert_eq!(
        events[0].get_uid(),
        Some(format!("{}@engaged", str_of(&one["id"])).as_str())
    );
    assert_eq!(
        events[0].get_summary(),
        Some("Consultation with Acme Solar")
    );

    match python_with_parser() {
        None => eprintln!("NOTICE: neither python3-vobject nor python3-icalendar is installed; the feed was parsed by the icalendar crate only"),
        Some((python, module)) => {
            let dir = tempfile::tempdir().expect("temp dir");
            let file = dir.path().join("feed.ics");
            std::fs::write(&file, &body).expect("write feed");
            let script = match module {
                "vobject" => "import sys, vobject\ncal = vobject.readOne(open(sys.argv[1]).read())\nprint(len(cal.vevent_list), cal.vevent_list[0].summary.value, cal.vevent_list[0].dtstart.value.isoformat())",
                _ => "import sys, icalendar\ncal = icalendar.Calendar.from_ical(open(sys.argv[1], 'rb').read())\nev = [c for c in cal.walk('VEVENT')]\nprint(len(ev), ev[0]['SUMMARY'], ev[0].decoded('DTSTART').isoformat())",
            };
            let out = std::process::Command::new(python)
                .args(["-c", script, file.to_str().expect("path")])
                .output()
                .expect("run python");
            assert!(out.status.success(), "{module}: {}", String::from_utf8_lossy(&out.stderr));
            let printed = String::from_utf8_lossy(&out.stdout);
            let start = tomorrow(10, 0);
            assert_eq!(
                printed.trim(),
                format!("2 Consultation with Acme Solar {}+00:00", &start[..19]),
                "{module} read: {printed}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_100_concurrent_bookings_of_one_slot_exactly_one_succeeds() {
    let org = Org::start().await;
    let (ts, admin, write) = (&org.ts, org.admin.as_str(), org.write.as_str());
    put_calendar(ts, admin, "sales", &always_open()).await;
    let mut leads = Vec::new();
    for i in 0..100 {
        leads.push(
            lead(
                ts,
                write,
                json!({"firstName": format!("L{i}"), "phone": format!("+1555200{i:04}")}),
            )
            .await,
        );
    }
    let start = tomorrow(10, 0);
    let body = json!({"calendar": "sales", "start": start});
    let answers = futures_util::future::join_all(leads.iter().map(|id| {
        let path = format!("/v1/leads/{id}/meetings");
        let body = &body;
        async move { ts.post_until_answered(write, &path, body).await }
    }))
    .await;
    let created = answers.iter().filter(|r| r.status == 201).count();
    let taken = answers
        .iter()
        .filter(|r| r.status == 409 && r.json()["message"] == json!("Time not available"))
        .count();
    assert_eq!((created, taken), (1, 99));
    let listed = expect(&ts.get(&org.read, "/v1/meetings?status=booked").await, 200);
    assert_eq!(listed["meetings"].as_array().map(Vec::len), Some(1));
}
