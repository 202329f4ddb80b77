//! Meetings in the console: an admin creates a calendar in Settings → Calendars (a bad
//! hours line refused beside its field), an agent books from a lead's page by clicking
//! an open time (a time taken meanwhile refused, with the fresh times), the Meetings
//! page shows it under its day with who booked it, a past one marked "No-show", a
//! meeting canceled from the lead's page; a viewer sees no booking buttons.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use serde_json::json;

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_is_made_a_meeting_booked_closed_and_canceled() {
    let server = TestServer::start().await;
    let key = server.key("acme", "admin").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    let admin_password = server
        .user("acme", "root@acme.example", "Rita Root", "admin")
        .await;
    let agent_password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let viewer_password = server
        .user("acme", "val@acme.example", "Val Viewer", "viewer")
        .await;

    // The admin makes the calendar; a bad hours line is refused beside its field.
    let admin = Browser::open(&server).await;
    admin.sign_in("root@acme.example", &admin_password).await;
    admin.goto("/console/settings/calendars").await;
    admin.wait_for_text("No calendar yet.").await;
    admin.fill("Name", "sales").await;
    admin.fill("Time zone", "Middle Earth").await;
    admin.fill("Monday", "nine to five").await;
    admin.fill("Meeting length (minutes)", "lots").await;
    admin.click_button("Save calendar").await;
    // One save: every refusal at once, each beside its field.
    admin
        .wait_for_text("Not done: 3 fields need a change.")
        .await;
    assert!(admin
        .description("Monday")
        .await
        .contains("write the hours as"));
    assert!(admin
        .description("Meeting length (minutes)")
        .await
        .contains("whole number from 5 to 480"));
    assert!(admin
        .description("Time zone")
        .await
        .contains("Choose a time zone from the list"));
    // As people write them: a zone's common name, "9am-5pm".
    admin.fill("Time zone", "UTC").await;
    admin.fill("Meeting length (minutes)", "30").await;
    admin.fill("Monday", "9am-5pm").await;
    for day in DAYS.iter().skip(1) {
        admin.fill(day, "09:00-17:00").await;
    }
    admin.fill("Reminders", "24h, 1h").await;
    admin.click_button("Save calendar").await;
    admin.wait_for_text("Saved.").await;
    let calendar = server.get(&key, "/v1/calendars/sales").await.json();
    assert_eq!(calendar["hours"]["mon"], json!([["09:00", "17:00"]]));
    assert_eq!(calendar["reminders"], json!(["24h", "1h"]));
    admin.click_link("sales").await;
    admin.wait_for_text("Edit calendar sales").await;
    admin.click_button("Test connection").await;
    admin
        .wait_for_text("This calendar has no CalDAV connection")
        .await;

    // The agent books tomorrow at 09:00 by clicking the time.
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let agent = Browser::open(&server).await;
    agent.sign_in("ana@acme.example", &agent_password).await;
    agent.goto("/console/leads/lead-1").await;
    agent.wait_for_text("Book a meeting").await;
    agent.select("Calendar", "sales").await;
    agent.click_button("Show open times").await;
    agent.wait_for_text("Meetings with Ada Lovelace").await;
    agent
        .goto(&format!(
            "/console/leads/lead-1/meetings?calendar=sales&day={tomorrow}"
        ))
        .await;
    agent.wait_for_text("Open times on").await;
    agent.click_button("09:00").await;
    agent.wait_for_text("Meeting booked.").await;
    agent.wait_for_text("Ana Ruiz").await;

    // A time taken meanwhile (through the API) is refused on the page, fresh times shown.
    agent
        .goto(&format!(
            "/console/leads/lead-1/meetings?calendar=sales&day={tomorrow}"
        ))
        .await;
    agent.wait_for_text("Open times on").await;
    let taken = server
        .post(
            &key,
            "/v1/leads/lead-1/meetings",
            &json!({"calendar": "sales", "start": format!("{tomorrow}T10:00:00Z")}),
        )
        .await;
    assert_eq!(taken.status, 201, "{}", taken.text());
    agent.click_button("10:00").await;
    agent.wait_for_text("Time not available").await;
    assert!(!agent.has_button("10:00").await);
    assert!(agent.has_button("10:30").await);

    // The Meetings page: both under "Tomorrow", with who booked them.
    agent.click_link("Meetings").await;
    agent.wait_for_text("Tomorrow").await;
    let text = agent.text().await;
    assert!(text.contains("Ada Lovelace"), "{text}");
    assert!(text.contains("Ana Ruiz") && text.contains("API"), "{text}");
    assert!(
        !agent.has_button("No-show").await,
        "future: nothing to close"
    );

    // The agent's meeting moved into the past is closed as "No-show".
    let meetings = server.get(&key, "/v1/meetings").await.json();
    let mine = meetings["meetings"]
        .as_array()
        .expect("meetings")
        .iter()
        .find(|m| m["bookedBy"]["name"] == "Ana Ruiz")
        .cloned()
        .expect("the agent's meeting");
    let id = mine["id"].as_str().expect("id").to_string();
    // "Reschedule" shows the open times the same way.
    agent.goto("/console/leads/lead-1/meetings").await;
    agent.click_link("Reschedule").await;
    agent
        .wait_for_text("Reschedule the meeting with Ada Lovelace")
        .await;
    agent
        .goto(&format!("/console/meetings/{id}/reschedule?day={tomorrow}"))
        .await;
    agent.click_button("11:00").await;
    agent.wait_for_text("Meeting rescheduled.").await;
    let moved = server.get(&key, &format!("/v1/meetings/{id}")).await.json();
    assert!(
        moved["start"]
            .as_str()
            .is_some_and(|s| s.starts_with(&format!("{tomorrow}T11:00"))),
        "{moved}"
    );
    server
        .move_meeting_directly("acme", &id, engaged::time::now_micros() - 86_400_000_000)
        .await;
    agent.goto("/console/meetings").await;
    agent.wait_for_text("Past").await;
    agent.click_button("No-show").await;
    agent.wait_for_text("Marked no-show.").await;
    let closed = server.get(&key, &format!("/v1/meetings/{id}")).await.json();
    assert_eq!(closed["status"], "no_show");

    // The viewer sees the meeting but no booking buttons.
    let viewer = Browser::open(&server).await;
    viewer.sign_in("val@acme.example", &viewer_password).await;
    viewer.goto("/console/leads/lead-1").await;
    viewer.wait_for_text("Meetings").await;
    assert!(!viewer.has_button("Show open times").await);
    assert!(!viewer.has_button("Cancel meeting").await);
    viewer
        .goto(&format!(
            "/console/leads/lead-1/meetings?calendar=sales&day={tomorrow}"
        ))
        .await;
    viewer.wait_for_text("Meetings with Ada Lovelace").await;
    assert!(!viewer.has_button("09:30").await);

    // The agent cancels the API's meeting from the lead's page.
    agent.goto("/console/leads/lead-1").await;
    agent.wait_for_text("Cancel meeting").await;
    agent
        .run("window.confirm = function () { return true; };")
        .await;
    agent.click_button("Cancel meeting").await;
    agent.wait_for_text("Meeting canceled.").await;
    let canceled = server
        .get(&key, "/v1/meetings?status=canceled")
        .await
        .json();
    assert_eq!(canceled["meetings"].as_array().map(Vec::len), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_tests_a_calendars_caldav_connection() {
    let radicale = engaged::testkit::caldav::Radicale::start().await;
    let server = TestServer::start().await;
    let key = server.key("acme", "admin").await;
    let password = server
        .user("acme", "root@acme.example", "Rita Root", "admin")
        .await;
    let admin = Browser::open(&server).await;
    admin.sign_in("root@acme.example", &password).await;
    admin.goto("/console/settings/calendars").await;
    admin.fill("Name", "sales").await;
    admin.fill("Time zone", "UTC").await;
    admin.fill("Monday", "09:00-17:00").await;
    admin.fill("CalDAV URL", radicale.url()).await;
    admin.fill("CalDAV username", radicale.user()).await;
    admin.fill("CalDAV password", "not-the-password").await;
    admin.click_button("Save calendar").await;
    admin.wait_for_text("Saved.").await;
    let calendar = server.get(&key, "/v1/calendars/sales").await.json();
    assert_eq!(calendar["caldav"]["passwordSet"], true);

    admin.click_link("sales").await;
    admin.wait_for_text("A password is set").await;
    admin.click_button("Test connection").await;
    admin
        .wait_for_text("Not connected: wrong username or password")
        .await;
    admin.fill("CalDAV password", radicale.password()).await;
    admin.click_button("Save calendar").await;
    admin.wait_for_text("Saved.").await;
    admin.click_link("sales").await;
    admin.click_button("Test connection").await;
    admin
        .wait_for_text("Connected: 0 events in the next 7 days")
        .await;
    // The feed link rotates: the old one stops.
    let old = calendar["feedToken"].as_str().expect("token").to_string();
    admin.click_button("Rotate feed link").await;
    admin.wait_for_text("the old one no longer works").await;
    let rotated = server.get(&key, "/v1/calendars/sales").await.json();
    assert_ne!(rotated["feedToken"], old.as_str());
}
