//! Meeting reminders (`../shared/spec/appointments.md`): scheduled in the booking's
//! write by the calendar's `reminders`, moved by a reschedule, nothing after a cancel,
//! quiet hours (sent at the window's end if that is before the meeting, else dropped);
//! a reply to one with the assistant off needs attention as "Meeting reply", with it on
//! goes to the assistant, which sees `nextMeeting`; a campaign's `meetingsBooked`. A due reminder is made due now (`reminders_due_now`)
//! rather than waited for.

use chrono::{DateTime, Duration, DurationRound, Utc};
use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::{poll, Org, TestServer, WAIT};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::inbound_sms;

const HOUR: i64 = 3_600_000_000;

/// Every day, all day, in UTC, no notice, with reminders 24h and 1h before.
fn calendar() -> Value {
    let day = json!([["00:00", "24:00"]]);
    json!({"timeZone": "UTC",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": day, "sun": day},
        "meetingMinutes": 30, "bufferMinutes": 0, "minNoticeMinutes": 0, "daysAhead": 14,
        "location": "Phone call", "reminders": ["24h", "1h"]})
}

/// The first half hour at least `after` from now, and its RFC 3339 form.
fn slot(after: Duration) -> (DateTime<Utc>, String) {
    let at = (Utc::now() + after + Duration::minutes(30))
        .duration_trunc(Duration::minutes(30))
        .unwrap();
    (at, at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
}

async fn setup() -> Org {
    let org = Org::start().await;
    set_business(&org.ts, &org.admin).await;
    expect(
        &org.ts
            .put(&org.admin, "/v1/calendars/sales", &calendar())
            .await,
        200,
    );
    org
}

async fn lead(ts: &TestServer, key: &str, body: Value) -> String {
    str_of(&ts.create_lead(key, &body).await["id"]).to_string()
}

async fn book(ts: &TestServer, key: &str, lead: &str, start: &str) -> String {
    let booked = expect(
        &ts.post(
            key,
            &format!("/v1/leads/{lead}/meetings"),
            &json!({"calendar": "sales", "start": start}),
        )
        .await,
        201,
    );
    str_of(&booked["id"]).to_string()
}

/// Waits until the lead has no reminder left in the agenda (each ran).
async fn wait_reminders_ran(ts: &TestServer, lead: &str) {
    poll("the reminders ran", WAIT, || async move {
        let left = ts.reminders("acme", lead).await;
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await
}

fn reminder_text(start: DateTime<Utc>) -> String {
    format!(
        "Reminder: your meeting with {BUSINESS_NAME} is {} (Phone call). Reply R to reschedule or C to cancel.",
        start.format("%a %b %-d, %-I:%M %p UTC")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_are_scheduled_at_booking_moved_by_a_reschedule_and_not_sent_after_a_cancel() {
    let org = setup().await;
    let (ts, write) = (&org.ts, org.write.as_str());
    let ada = lead(
        ts,
        write,
        json!({"firstName": "Ada", "phone": "+15551230001"}),
    )
    .await;
    let (start, start_text) = slot(Duration::hours(48));
    let id = book(ts, write, &ada, &start_text).await;
    let micros = start.timestamp_micros();
    assert_eq!(
        ts.reminders("acme", &ada).await,
        vec![
            (micros - 24 * HOUR, id.clone(), micros),
            (micros - HOUR, id.clone(), micros)
        ]
    );

    // A move schedules the new start's reminders; the old start's rows send nothing.
    let (moved, moved_text) = slot(Duration::hours(50));
    expect(
        &ts.post(
            write,
            &format!("/v1/meetings/{id}/reschedule"),
            &json!({"start": moved_text}),
        )
        .await,
        200,
    );
    let rows = ts.reminders("acme", &ada).await;
    assert_eq!(rows.len(), 4, "{rows:?}");
    let m = moved.timestamp_micros();
    assert!(rows.contains(&(m - 24 * HOUR, id.clone(), m)), "{rows:?}");
    assert!(rows.contains(&(m - HOUR, id.clone(), m)), "{rows:?}");
    ts.reminders_due_now("acme", &ada).await;
    wait_reminders_ran(ts, &ada).await;
    // Beside the booking's and the move's confirmations.
    let sent = wait_outbound(ts, write, &ada, 4).await;
    let reminders: Vec<String> = texts(&sent)
        .into_iter()
        .filter(|t| t.starts_with("Reminder:"))
        .collect();
    assert_eq!(reminders, vec![reminder_text(moved); 2]);
    let events = events_of_type(ts, write, &ada, "MESSAGE").await;
    for event in &events {
        assert_eq!(event["data"]["origin"], json!("meeting"), "{event}");
        assert_eq!(event["data"]["meetingId"], json!(id), "{event}");
    }

    // A reminder whose time has passed at booking is not scheduled: 24h before a
    // meeting two hours away.
    let bo = lead(
        ts,
        write,
        json!({"firstName": "Bo", "email": "bo@example.com"}),
    )
    .await;
    let (soon, soon_text) = slot(Duration::hours(2));
    let soon_id = book(ts, write, &bo, &soon_text).await;
    let s = soon.timestamp_micros();
    assert_eq!(
        ts.reminders("acme", &bo).await,
        vec![(s - HOUR, soon_id.clone(), s)]
    );
    // Canceled: the row runs and sends nothing.
    expect(
        &ts.post(write, &format!("/v1/meetings/{soon_id}/cancel"), &json!({}))
            .await,
        200,
    );
    ts.reminders_due_now("acme", &bo).await;
    wait_reminders_ran(ts, &bo).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let sent = texts(&outbound(ts, write, &bo).await);
    assert!(!sent.iter().any(|t| t.starts_with("Reminder:")), "{sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_due_in_quiet_hours_goes_at_the_windows_end_if_that_is_before_the_meeting() {
    let org = setup().await;
    let (ts, write) = (&org.ts, org.write.as_str());
    // A window from an hour ago to two hours before now tomorrow: ends in about 22h.
    let now = Utc::now();
    let hhmm = |t: DateTime<Utc>| t.format("%H:%M").to_string();
    set_org(
        ts,
        &org.admin,
        &json!({"timeZone": "UTC", "quietHours": {
            "start": hhmm(now - Duration::hours(1)),
            "end": hhmm(now - Duration::hours(2))}}),
    )
    .await;
    let ada = lead(
        ts,
        write,
        json!({"firstName": "Ada", "phone": "+15551230001"}),
    )
    .await;
    let bo = lead(
        ts,
        write,
        json!({"firstName": "Bo", "phone": "+15551230002"}),
    )
    .await;
    // Ada's meeting is inside the window: the reminder is dropped.
    let (_, early) = slot(Duration::hours(3));
    book(ts, write, &ada, &early).await;
    // Bo's is after it: the reminder waits for the window's end.
    let (late, late_text) = slot(Duration::hours(23));
    let late_id = book(ts, write, &bo, &late_text).await;
    ts.reminders_due_now("acme", &ada).await;
    ts.reminders_due_now("acme", &bo).await;
    wait_reminders_ran(ts, &ada).await;
    let l = late.timestamp_micros();
    let deferred = poll("Bo's reminder deferred", WAIT, || async {
        let rows = ts.reminders("acme", &bo).await;
        match rows.as_slice() {
            [(due, _, _)] if *due > Utc::now().timestamp_micros() => Ok(rows.clone()),
            _ => Err(format!("{rows:?}")),
        }
    })
    .await;
    let (due, meeting, start) = deferred[0].clone();
    assert_eq!((meeting, start), (late_id, l));
    assert!(due < l, "the window's end is before the meeting");
    let end = (now - Duration::hours(2)).timestamp_micros();
    assert!(
        (due - (end + 24 * HOUR)).abs() <= 60_000_000,
        "at the window's end"
    );
    assert!(outbound(ts, write, &ada).await.is_empty());
    assert!(outbound(ts, write, &bo).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_a_reminder_with_the_assistant_off_needs_attention_as_meeting_reply() {
    let org = setup().await;
    let (ts, write) = (&org.ts, org.write.as_str());
    let phone = "+15551230001";
    let ada = lead(ts, write, json!({"firstName": "Ada", "phone": phone})).await;
    let (_, start) = slot(Duration::hours(48));
    book(ts, write, &ada, &start).await;
    ts.reminders_due_now("acme", &ada).await;
    wait_outbound(ts, write, &ada, 2).await;
    expect(
        &ts.patch(
            write,
            &format!("/v1/leads/{ada}"),
            &json!({"isAiOn": false}),
        )
        .await,
        200,
    );
    inbound_sms(ts, write, phone, "Can we make it later?").await;
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = ts.sign_in("pat@example.com", &password).await;
    let inbox = ts
        .console(
            Method::GET,
            "/console/inbox",
            Some(&agent.cookie),
            None,
            &[],
        )
        .await
        .text();
    assert!(inbox.contains("Meeting reply"), "{inbox}");
    assert!(!inbox.contains("Waiting for a reply"), "{inbox}");

    // A reply to it from the organization ends the reason.
    expect(
        &ts.post(
            write,
            &format!("/v1/leads/{ada}/messages"),
            &json!({"owner": "user", "channel": "sms",
                    "content": {"text": "Sure, which time suits you?"}}),
        )
        .await,
        201,
    );
    let inbox = ts
        .console(
            Method::GET,
            "/console/inbox",
            Some(&agent.cookie),
            None,
            &[],
        )
        .await
        .text();
    assert!(!inbox.contains("Meeting reply"), "{inbox}");
}

async fn stats(ts: &TestServer, key: &str) -> Value {
    expect(&ts.get(key, "/v1/profiles/solar/stats").await, 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_counts_each_lead_that_booked_while_enrolled_once() {
    let org = setup().await;
    let (ts, admin, write) = (&org.ts, org.admin.as_str(), org.write.as_str());
    put_profile(
        ts,
        admin,
        "solar",
        &profile_with(json!([sms_step("1d", "Hi {{firstName}}")])),
    )
    .await;
    assert_eq!(stats(ts, &org.read).await["meetingsBooked"], json!(0));
    let ada = lead(
        ts,
        write,
        json!({"firstName": "Ada", "phone": "+15551230001", "customerProfile": "solar"}),
    )
    .await;
    let other = lead(
        ts,
        write,
        json!({"firstName": "Cy", "phone": "+15551230003"}),
    )
    .await;
    wait_state(ts, write, &ada, "active", None).await;
    let (_, first) = slot(Duration::hours(48));
    let id = book(ts, write, &ada, &first).await;
    assert_eq!(stats(ts, &org.read).await["meetingsBooked"], json!(1));
    // Counted once per lead, a cancellation does not un-count it, a lead outside the
    // campaign is not counted.
    expect(
        &ts.post(write, &format!("/v1/meetings/{id}/cancel"), &json!({}))
            .await,
        200,
    );
    let (_, second) = slot(Duration::hours(50));
    book(ts, write, &ada, &second).await;
    let (_, third) = slot(Duration::hours(52));
    book(ts, write, &other, &third).await;
    let numbers = stats(ts, &org.read).await;
    assert_eq!(numbers["meetingsBooked"], json!(1), "{numbers}");
    assert_eq!(numbers["enrolled"], json!(1), "{numbers}");

    // The console shows it as a count and a share of enrolled.
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = ts.sign_in("pat@example.com", &password).await;
    for path in ["/console/campaigns", "/console/campaigns/solar"] {
        let page = ts
            .console(Method::GET, path, Some(&agent.cookie), None, &[])
            .await
            .text();
        assert!(page.contains("Meetings booked"), "{path}: {page}");
        assert!(
            page.contains(r#"<td data-label="Meetings booked">1 (100%)</td>"#)
                || page.contains(concat!(
                    r#"<span class="card-label">Meetings booked</span>"#,
                    r#"<span class="card-count">1</span><span class="card-share">100%</span>"#
                )),
            "{path}: {page}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_a_reminder_with_the_assistant_on_goes_to_it_with_the_next_meeting() {
    let org = setup().await;
    let (ts, admin, write) = (&org.ts, org.admin.as_str(), org.write.as_str());
    let model = engaged::testkit::model::FakeModel::start().await;
    set_org(ts, admin, &model.settings()).await;
    put_profile(
        ts,
        admin,
        "assist",
        &json!({"instructions": "Be brief.",
                "cadence": [sms_step("1d", "Checking in.")], "replyDelay": "1s"}),
    )
    .await;
    let phone = "+15551230001";
    let ada = lead(
        ts,
        write,
        json!({"firstName": "Ada", "phone": phone, "timeZone": "America/Chicago",
               "customerProfile": "assist"}),
    )
    .await;
    let (start, start_text) = slot(Duration::hours(48));
    book(ts, write, &ada, &start_text).await;
    ts.reminders_due_now("acme", &ada).await;
    wait_outbound(ts, write, &ada, 2).await;
    // `R` (to reschedule) goes to the assistant; a `C` would cancel the meeting itself
    // (`revocation.rs`).
    inbound_sms(ts, write, phone, "R").await;
    model.wait_requests(1, WAIT).await;
    let system = model.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let when = start
        .with_timezone(&chrono_tz::America::Chicago)
        .format("%a %b %-d, %-I:%M %p %Z")
        .to_string();
    assert!(
        system.contains(&format!("\"nextMeeting\":\"{when}\"")),
        "{when} in {system}"
    );
}
