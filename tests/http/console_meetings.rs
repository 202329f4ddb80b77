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
