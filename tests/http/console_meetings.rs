//! The console's meeting pages over HTTPS: a viewer reads a lead's meetings but may not
//! book (403, nothing booked); an agent's booking of a time that is not one is a 400 in
//! words on the page, nothing booked; an agent may not save a calendar.

use hyper::Method;
use serde_json::json;

use engaged::testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookings_need_an_agent_and_a_real_time_and_calendars_an_admin() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "admin").await;
    ts.create_lead(&key, &json!({"id": "c-1", "firstName": "Ana"}))
        .await;
    let put = ts
        .put(
            &key,
            "/v1/calendars/sales",
            &json!({"timeZone": "UTC", "hours": {"mon": [["09:00", "17:00"]]}}),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.text());
    let origin = ts.origin();
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%dT09:00:00Z")
        .to_string();

    let password = ts.user("acme", "val@example.com", "Val", "viewer").await;
    let viewer = ts.sign_in("val@example.com", &password).await;
    let page = ts
        .console(
            Method::GET,
            "/console/leads/c-1/meetings?calendar=sales",
            Some(&viewer.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 200);
    assert!(!page.text().contains("Show open times"));
    let refused = ts
        .console(
            Method::POST,
            "/console/leads/c-1/meetings",
            Some(&viewer.cookie),
            Some(&origin),
            &[
                ("csrf", &viewer.csrf),
                ("calendar", "sales"),
                ("start", &tomorrow),
            ],
        )
        .await;
    assert_eq!(refused.status, 403);

    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = ts.sign_in("pat@example.com", &password).await;
    let bad = ts
        .console(
            Method::POST,
            "/console/leads/c-1/meetings",
            Some(&agent.cookie),
            Some(&origin),
            &[
                ("csrf", &agent.csrf),
                ("calendar", "sales"),
                ("start", "tomorrow at nine"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("Invalid format for field: start"));
    let saved = ts
        .console(
            Method::POST,
            "/console/settings/calendar",
            Some(&agent.cookie),
            Some(&origin),
            &[
                ("csrf", &agent.csrf),
                ("name", "other"),
                ("timeZone", "UTC"),
            ],
        )
        .await;
    assert_eq!(saved.status, 403);

    let meetings = ts.get(&key, "/v1/meetings").await.json();
    assert_eq!(meetings["meetings"], json!([]), "nothing booked");
    let calendars = ts.get(&key, "/v1/calendars").await.json();
    assert_eq!(calendars["calendars"].as_array().map(Vec::len), Some(1));
}

/// A booking reads as a sentence in the lead's timeline, in the calendar's zone and
/// naming who booked, and its confirmation names that person: no JSON, no "API".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_booking_reads_as_words_on_the_timeline() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "admin").await;
    ts.create_lead(
        &key,
        &json!({"id": "c-2", "firstName": "Ana", "phone": "+15125550144"}),
    )
    .await;
    let day = json!([["08:00", "18:00"]]);
    let put = ts
        .put(
            &key,
            "/v1/calendars/sales",
            &json!({"timeZone": "America/Chicago", "hours": {"mon": day, "tue": day, "wed": day,
                "thu": day, "fri": day, "sat": day, "sun": day}}),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.text());
    let start = (chrono::Utc::now() + chrono::Duration::days(2))
        .date_naive()
        .and_hms_opt(16, 0, 0)
        .expect("a time")
        .and_utc();
    let password = ts
        .user("acme", "dana@example.com", "Dana Ortiz", "agent")
        .await;
    let agent = ts.sign_in("dana@example.com", &password).await;
    let booked = ts
        .console(
            Method::POST,
            "/console/leads/c-2/meetings",
            Some(&agent.cookie),
            Some(&ts.origin()),
            &[
                ("csrf", &agent.csrf),
                ("calendar", "sales"),
                ("start", &start.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            ],
        )
        .await;
    assert!(booked.status < 400, "{} {}", booked.status, booked.text());
    let local = start.with_timezone(&chrono_tz::America::Chicago);
    let sentence = format!(
        "Meeting booked for {} (America/Chicago) on sales by Dana Ortiz",
        local.format("%a %-d %b, %-I:%M %p")
    );
    let page = engaged::testkit::poll(
        "the confirmation is on the timeline",
        engaged::testkit::WAIT,
        || async {
            let page = ts
                .console(
                    Method::GET,
                    "/console/leads/c-2",
                    Some(&agent.cookie),
                    None,
                    &[],
                )
                .await
                .text();
            if page.contains("Dana Ortiz · meeting confirmation") {
                Ok(page)
            } else {
                Err(page)
            }
        },
    )
    .await;
    assert!(page.contains(&sentence), "{sentence} not in {page}");
    for api_text in ["meetingId", "bookedBy", ">API<", "&quot;start&quot;"] {
        assert!(!page.contains(api_text), "{api_text} in {page}");
    }
}
