//! The assistant books (`../shared/spec/appointments.md`, "The assistant books"): with a
//! calendar on the lead's profile the model gets `find_times`, `book_meeting`,
//! `reschedule_meeting` and `cancel_meeting`; the times are written in the lead's zone
//! with their RFC 3339 values, a taken time answers the open times and books nothing,
//! and each call is a `TOOL_CALL` event applied through the meetings' domain functions.

use chrono::{Duration as ChronoDuration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde_json::{json, Value};

use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::{poll, Org, WAIT};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;

const PHONE: &str = "+15551234567";
const ZONE: &str = "America/Chicago";

struct Setup {
    acme: Org,
    model: FakeModel,
}

impl std::ops::Deref for Setup {
    type Target = Org;

    fn deref(&self) -> &Org {
        &self.acme
    }
}

/// Every day, all day, in UTC, no notice: any half hour from now on is open.
fn always_open() -> Value {
    engaged::testkit::fixtures::always_open_calendar("Consultation with {{business.name}}")
}

/// The lead "L1" in Chicago on profile "assist", whose calendar is "sales".
async fn start() -> Setup {
    start_with(json!("sales")).await
}

/// The lead "L1" in Chicago on profile "assist" with `calendar`.
async fn start_with(calendar: Value) -> Setup {
    let acme = Org::start().await;
    let (ts, key, admin) = (&acme.ts, &acme.write, &acme.admin);
    let model = FakeModel::start().await;
    set_business(ts, admin).await;
    set_org(ts, admin, &model.settings()).await;
    expect(
        &ts.put(admin, "/v1/calendars/sales", &always_open()).await,
        200,
    );
    put_profile(
        ts,
        admin,
        "assist",
        &json!({"instructions": "You are Sam from Acme Solar. Book a consultation.",
                "cadence": [sms_step("1d", "Checking in, {{firstName}}.")],
                "replyDelay": "1s", "calendar": calendar}),
    )
    .await;
    ts.create_lead(
        key,
        &json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "email": "ada@example.com",
                "timeZone": ZONE, "customerProfile": "assist"}),
    )
    .await;
    wait_state(ts, key, "L1", "active", None).await;
    Setup { acme, model }
}

/// Tomorrow in Chicago.
fn tomorrow() -> NaiveDate {
    (Utc::now() + ChronoDuration::days(1))
        .with_timezone(&ZONE.parse::<Tz>().unwrap())
        .date_naive()
}

/// Tomorrow at `hour:minute` in Chicago.
fn local(hour: u32, minute: u32) -> chrono::DateTime<Tz> {
    let tz: Tz = ZONE.parse().unwrap();
    tz.from_local_datetime(&tomorrow().and_hms_opt(hour, minute, 0).unwrap())
        .earliest()
        .unwrap()
}

fn words(t: chrono::DateTime<Tz>) -> String {
    t.format("%a %b %-d, %-I:%M %p %Z").to_string()
}

fn rfc3339(t: chrono::DateTime<Tz>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// Waits for the TOOL_CALL event `id` named `name`; its result.
async fn tool_result(s: &Setup, id: &str, name: &str) -> Value {
    let (ts, key) = (&s.ts, s.write.as_str());
    let event = poll(&format!("TOOL_CALL {id}"), WAIT, || async move {
        let calls = events_of_type(ts, key, "L1", "TOOL_CALL").await;
        calls
            .iter()
            .find(|e| e["id"] == json!(id))
            .cloned()
            .ok_or_else(|| format!("{calls:?}"))
    })
    .await;
    assert_eq!(event["data"]["name"], json!(name), "{event}");
    event["data"]["result"].clone()
}

async fn meeting(s: &Setup, id: &str) -> Value {
    expect(&s.ts.get(&s.read, &format!("/v1/meetings/{id}")).await, 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_calendar_the_booking_tools_are_not_offered() {
    let s = start_with(Value::Null).await;
    s.model.push(Step::tool("call_1", "find_times", json!({})));
    s.model.push(Step::text("Let me check."));
    inbound_sms(&s.ts, &s.write, PHONE, "Can we meet?").await;
    let result = tool_result(&s, "call_1", "find_times").await;
    assert_eq!(
        result,
        json!({"ok": false, "error": "unknown tool: find_times"})
    );
    let asked = &s.model.requests()[0];
    let names: Vec<&str> = asked["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| str_of(&t["function"]["name"]))
        .collect();
    assert!(!names.contains(&"find_times"), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistant_finds_times_books_moves_and_cancels() {
    let s = start().await;
    let (ts, write) = (&s.ts, s.write.as_str());
    // Bob holds tomorrow 10:00 in Chicago.
    let bob = ts
        .create_lead(write, &json!({"firstName": "Bob", "phone": "+15551230002"}))
        .await;
    let taken = local(10, 0);
    expect(
        &ts.post(
            write,
            &format!("/v1/leads/{}/meetings", str_of(&bob["id"])),
            &json!({"calendar": "sales", "start": rfc3339(taken)}),
        )
        .await,
        201,
    );

    let day = tomorrow().format("%Y-%m-%d").to_string();
    s.model
        .push(Step::tool("call_find", "find_times", json!({"day": day})));
    s.model.push(Step::tool(
        "call_taken",
        "book_meeting",
        json!({"start": rfc3339(taken)}),
    ));
    let booked_at = local(11, 0);
    s.model.push(Step::tool(
        "call_book",
        "book_meeting",
        json!({"start": rfc3339(booked_at)}),
    ));
    s.model
        .push(Step::text("You're booked for tomorrow at 11."));
    inbound_sms(ts, write, PHONE, "Can we talk tomorrow?").await;

    // find_times: the first 5 open times of the lead's day, in its zone.
    let found = tool_result(&s, "call_find", "find_times").await;
    let expected: Vec<Value> = (0..5)
        .map(|i| {
            let t = local(0, 0) + ChronoDuration::minutes(30 * i);
            json!({"time": words(t), "start": rfc3339(t)})
        })
        .collect();
    assert_eq!(found, json!({"ok": true, "times": expected}));
    assert!(words(local(0, 0)).starts_with(&tomorrow().format("%a %b %-d, 12:00 AM").to_string()));

    // A taken time: the open times instead, nothing booked.
    let refused = tool_result(&s, "call_taken", "book_meeting").await;
    assert_eq!(refused["ok"], json!(false), "{refused}");
    assert_eq!(refused["error"], json!("Time not available"));
    let open = refused["openTimes"].as_array().expect("openTimes");
    assert!(!open.is_empty() && open.len() <= 5, "{refused}");
    assert!(open.iter().all(|t| t["start"] != json!(rfc3339(taken))));

    // An open time: booked by the assistant, the cadence stopped.
    let booked = tool_result(&s, "call_book", "book_meeting").await;
    assert_eq!(booked["ok"], json!(true), "{booked}");
    assert_eq!(booked["time"], json!(words(booked_at)));
    let id = str_of(&booked["meetingId"]).to_string();
    let m = meeting(&s, &id).await;
    assert_eq!(m["bookedBy"], json!("assistant"));
    assert_eq!(m["status"], json!("booked"));
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(str_of(&m["start"])).unwrap(),
        booked_at
    );
    // The lead's message stopped the cadence first (`replied`); it stays stopped.
    wait_state(ts, write, "L1", "stopped", None).await;
    let meetings = events_of_type(ts, write, "L1", "MEETING").await;
    assert!(meetings
        .iter()
        .any(|e| e["data"]["action"] == json!("booked")));
    // The result went back to the model, and its words to the lead.
    let requests = s.model.requests();
    assert_eq!(requests.len(), 4, "three tool rounds and the text");
    let results: Vec<&Value> = requests[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == json!("tool"))
        .collect();
    assert_eq!(results.len(), 3);
    assert!(str_of(&results[2]["content"]).contains(&words(booked_at)));
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| str_of(&t["function"]["name"]))
        .collect();
    assert!(tools.ends_with(&[
        "find_times",
        "book_meeting",
        "reschedule_meeting",
        "cancel_meeting"
    ]));
    let system = str_of(&requests[0]["messages"][0]["content"]);
    assert!(system.contains("find_times"), "{system}");

    // A move to a taken time is refused with the open times; to an open one it moves.
    let moved_to = local(12, 0);
    s.model.push(Step::tool(
        "call_move_taken",
        "reschedule_meeting",
        json!({"start": rfc3339(taken)}),
    ));
    s.model.push(Step::tool(
        "call_move",
        "reschedule_meeting",
        json!({"start": rfc3339(moved_to)}),
    ));
    s.model.push(Step::text("Moved to noon."));
    inbound_sms(ts, write, PHONE, "Can we make it noon?").await;
    let refused = tool_result(&s, "call_move_taken", "reschedule_meeting").await;
    assert_eq!(refused["error"], json!("Time not available"), "{refused}");
    assert!(refused["openTimes"].is_array());
    let moved = tool_result(&s, "call_move", "reschedule_meeting").await;
    assert_eq!(moved["ok"], json!(true), "{moved}");
    assert_eq!(moved["meetingId"], json!(id));
    let m = meeting(&s, &id).await;
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(str_of(&m["start"])).unwrap(),
        moved_to
    );

    // Cancel: the meeting is canceled; a second cancel has nothing to cancel.
    s.model
        .push(Step::tool("call_cancel", "cancel_meeting", json!({})));
    s.model
        .push(Step::tool("call_cancel_again", "cancel_meeting", json!({})));
    s.model.push(Step::text("Canceled."));
    inbound_sms(ts, write, PHONE, "Actually, cancel it.").await;
    let canceled = tool_result(&s, "call_cancel", "cancel_meeting").await;
    assert_eq!(canceled["ok"], json!(true), "{canceled}");
    assert_eq!(meeting(&s, &id).await["status"], json!("canceled"));
    let again = tool_result(&s, "call_cancel_again", "cancel_meeting").await;
    assert_eq!(
        again,
        json!({"ok": false, "error": "The lead has no booked meeting"})
    );
}

/// The texts of the lead's outbound messages once there are `n`.
async fn sent_texts(s: &Setup, n: usize) -> Vec<String> {
    wait_outbound(&s.ts, &s.write, "L1", n)
        .await
        .iter()
        .map(|m| str_of(&m["content"]["text"]).to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_booking_a_move_and_a_cancel_each_send_the_lead_one_confirmation() {
    let s = start().await;
    let (ts, write) = (&s.ts, s.write.as_str());
    // Booked through the API: the same confirmation as the assistant's bookings.
    let at = local(15, 0);
    let booked = expect(
        &ts.post(
            write,
            "/v1/leads/L1/meetings",
            &json!({"calendar": "sales", "start": rfc3339(at)}),
        )
        .await,
        201,
    );
    let id = str_of(&booked["id"]).to_string();
    let first = sent_texts(&s, 1).await;
    assert_eq!(
        first,
        [format!(
            "You're booked: {} with {BUSINESS_NAME} (Phone call). Reply R to reschedule or C to cancel.",
            words(at)
        )]
    );
    let sent = wait_outbound(ts, write, "L1", 1).await;
    assert_eq!(sent[0]["channel"], json!("sms"));
    let event = wait_settled(ts, write, "L1", &sent[0]["id"]).await;
    assert_sandbox_delivered(&event, "meeting");

    let moved_to = local(16, 30);
    expect(
        &ts.post(
            write,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": rfc3339(moved_to)}),
        )
        .await,
        200,
    );
    let second = sent_texts(&s, 2).await;
    assert_eq!(
        second[1],
        format!(
            "Your meeting moved to {} with {BUSINESS_NAME} (Phone call). Reply R to reschedule or C to cancel.",
            words(moved_to)
        )
    );
    expect(
        &ts.post(write, &format!("/v1/meetings/{id}/cancel"), &json!({}))
            .await,
        200,
    );
    let third = sent_texts(&s, 3).await;
    assert_eq!(
        third[2],
        format!("Your meeting on {} is canceled.", words(moved_to))
    );
}

/// The `VCALENDAR` of each message the sink holds for `to`, with the message's
/// `Content-Type` line of the calendar part.
fn invitations(sink: &engaged::testkit::smtp::SmtpSink, to: &str) -> Vec<(String, String)> {
    sink.messages()
        .iter()
        .filter(|m| m.contains(&format!("To: {to}")) && m.contains("BEGIN:VCALENDAR"))
        .filter_map(|m| {
            let kind = m
                .lines()
                .find(|l| l.starts_with("Content-Type: text/calendar"))?
                .to_string();
            let begin = m.find("BEGIN:VCALENDAR")?;
            let end = m.find("END:VCALENDAR")? + "END:VCALENDAR".len();
            let part = m[begin..end].to_string() + "\r\n";
            // A part with lines of 75 octets goes quoted-printable.
            let encoded = m[..begin]
                .rsplit("Content-Type: text/calendar")
                .next()
                .is_some_and(|headers| headers.contains("quoted-printable"));
            Some((
                kind,
                if encoded {
                    quoted_printable(&part)
                } else {
                    part
                },
            ))
        })
        .collect()
}

/// Python's `vobject` (else `icalendar`) reads `ics`: its METHOD, UID and SEQUENCE.
fn python_reads(ics: &str) -> Option<String> {
    let script = "import sys, vobject\ncal = vobject.readOne(open(sys.argv[1]).read())\nev = cal.vevent\nprint(cal.method.value, ev.uid.value, ev.sequence.value, ev.attendee.value, ev.organizer.value)";
    // Debian's python3-vobject (installed with radicale) may sit beside another python3.
    let Some(python) = ["python3", "/usr/bin/python3"].into_iter().find(|python| {
        std::process::Command::new(python)
            .args(["-c", "import vobject"])
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        eprintln!("NOTICE: python3-vobject is not installed; the invitation was parsed by the icalendar crate only");
        return None;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("invite.ics");
    std::fs::write(&file, ics).expect("write");
    let out = std::process::Command::new(python)
        .args(["-c", script, file.to_str().expect("path")])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "vobject: {}\n{ics}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Waits for `n` invitations to `to`.
async fn wait_invitations(
    sink: &engaged::testkit::smtp::SmtpSink,
    to: &str,
    n: usize,
) -> Vec<(String, String)> {
    poll(&format!("{n} invitation(s) to {to}"), WAIT, || async move {
        let got = invitations(sink, to);
        if got.len() >= n {
            Ok(got)
        } else {
            Err(format!("{} messages", sink.messages().len()))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_and_the_owner_get_itip_invitations_by_email() {
    use icalendar::Component;
    let sink = engaged::testkit::smtp::SmtpSink::start().await;
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.example".into())).await;
    let (ts, admin, write) = (&org.ts, org.admin.as_str(), org.write.as_str());
    set_business(ts, admin).await;
    set_org(
        ts,
        admin,
        &json!({"providers": {"email": {"kind": "smtp", "host": "127.0.0.1",
        "port": sink.port, "security": "none", "from": "Acme Solar <sales@acme.example>"}}}),
    )
    .await;
    expect(
        &ts.put(admin, "/v1/calendars/sales", &always_open()).await,
        200,
    );
    let lead = ts
        .create_lead(
            write,
            &json!({"firstName": "Ada", "email": "ada@example.com", "timeZone": ZONE}),
        )
        .await;
    let lead = str_of(&lead["id"]).to_string();
    let booked = expect(
        &ts.post(
            write,
            &format!("/v1/leads/{lead}/meetings"),
            &json!({"calendar": "sales", "start": rfc3339(local(15, 0))}),
        )
        .await,
        201,
    );
    let id = str_of(&booked["id"]).to_string();
    let uid = format!("{id}@engaged");
    let check = |(kind, ics): &(String, String), method: &str, sequence: u32| {
        // Parameter values' case is not significant (RFC 2045): lettre writes `utf-8`.
        assert_eq!(
            kind.to_ascii_lowercase(),
            format!("content-type: text/calendar; method={method}; charset=utf-8")
                .to_ascii_lowercase()
        );
        let parsed: icalendar::Calendar = ics.parse().expect("the icalendar crate reads it");
        assert!(ics.contains(&format!("METHOD:{method}")), "{ics}");
        let event = parsed.events().next().expect("one VEVENT");
        assert_eq!(event.get_uid(), Some(uid.as_str()));
        assert_eq!(event.get_sequence(), Some(sequence));
        if let Some(read) = python_reads(ics) {
            assert_eq!(
                read,
                format!("{method} {uid} {sequence} mailto:ada@example.com mailto:ana@acme.example")
            );
        }
    };
    let lead_got = wait_invitations(&sink, "ada@example.com", 1).await;
    check(&lead_got[0], "REQUEST", 0);
    // The owner organizes (sent by the organization's sender) and is no attendee; the
    // lead is marked for engaged to schedule; the `.ics` is attached too.
    let ics = &lead_got[0].1;
    let unfolded = ics.replace("\r\n ", "");
    assert!(
        unfolded.contains("ORGANIZER;CN=\"Ana Ruiz\";SENT-BY=\"mailto:sales@acme.example\":mailto:ana@acme.example"),
        "{ics}"
    );
    assert_eq!(unfolded.matches("\r\nATTENDEE").count(), 1, "{ics}");
    assert!(
        unfolded.contains("SCHEDULE-AGENT=CLIENT:mailto:ada@example.com"),
        "{ics}"
    );
    assert!(
        sink.messages()
            .iter()
            .any(|m| m.contains("To: ada@example.com")
                && m.contains("Content-Disposition: attachment; filename=\"invite.ics\"")),
        "the .ics is attached"
    );
    let owner_got = wait_invitations(&sink, "ana@acme.example", 1).await;
    check(&owner_got[0], "REQUEST", 0);
    // The confirmation went by email too (the lead has no phone).
    let sent = wait_outbound(ts, write, &lead, 1).await;
    assert_eq!(sent[0]["channel"], json!("email"));

    expect(
        &ts.post(
            write,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": rfc3339(local(16, 0))}),
        )
        .await,
        200,
    );
    check(
        &wait_invitations(&sink, "ada@example.com", 2).await[1],
        "REQUEST",
        1,
    );
    expect(
        &ts.post(write, &format!("/v1/meetings/{id}/cancel"), &json!({}))
            .await,
        200,
    );
    check(
        &wait_invitations(&sink, "ada@example.com", 3).await[2],
        "CANCEL",
        2,
    );
    check(
        &wait_invitations(&sink, "ana@acme.example", 3).await[2],
        "CANCEL",
        2,
    );
}
