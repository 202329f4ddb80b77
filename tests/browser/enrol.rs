//! "Add to campaign": one lead from its page, and the leads list's filtered set in bulk
//! (the count, the confirmation naming the campaign, the result with what was skipped).

use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

/// A campaign `solar` of two SMS steps; answers a write key.
async fn solar(server: &TestServer) -> String {
    let admin = server.key("acme", "admin").await;
    let profile = json!({"instructions": "You are Sam.",
        "cadence": [{"after": "0s", "channel": "sms", "text": "Hi {{firstName}}"}, {"after": "2d", "channel": "sms", "text": "Still there?"}]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    server.key("acme", "write").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_to_campaign_from_a_leads_page_and_refused_when_already_in_one() {
    let server = TestServer::start().await;
    let key = solar(&server).await;
    server
        .create_lead(
            &key,
            &json!({"id": "e-1", "firstName": "Maria", "lastName": "Gonzalez", "phone": "+15125550101"}),
        )
        .await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser.goto("/console/leads/e-1").await;
    browser.wait_for_text("Add to campaign").await;
    browser.select("Campaign", "solar").await;
    browser.click_button("Add to campaign").await;
    browser
        .wait_for_text("Ana Ruiz added the lead to the campaign solar")
        .await;
    let engagement = server.get(&key, "/v1/leads/e-1/engagement").await;
    assert_eq!(engagement.json()["profile"], "solar");
    assert_eq!(engagement.json()["state"], "active");

    // Again: refused in words beside the campaign, nothing changed.
    browser.select("Campaign", "solar").await;
    browser.click_button("Add to campaign").await;
    browser
        .wait_for_text("This lead is already in a campaign; it is not added again.")
        .await;
    let events = server.get(&key, "/v1/leads/e-1/events?limit=100").await;
    let added = events.json()["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["data"]["action"] == "add_to_campaign")
        .count();
    assert_eq!(added, 1, "{}", events.json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_add_to_campaign_confirms_the_count_and_reports_what_it_skipped() {
    let server = TestServer::start().await;
    let key = solar(&server).await;
    for (id, first, phone, hot, profile) in [
        ("b-1", "Ada", "+15125550101", true, ""),
        ("b-2", "Grace", "+15125550102", true, "solar"),
        ("b-3", "Alan", "+15125550103", true, ""),
        ("b-4", "Edsger", "+15125550104", false, ""),
    ] {
        let mut lead = json!({"id": id, "firstName": first, "phone": phone, "isHot": hot});
        if !profile.is_empty() {
            lead["customerProfile"] = json!(profile);
        }
        server.create_lead(&key, &lead).await;
    }
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser.click_link("Leads").await;
    browser.wait_for_text("4 leads").await;
    browser.select("Hot", "Yes").await;
    browser.click_button("Filter").await;
    browser.wait_for_text("3 leads").await;
    browser.select("Campaign", "solar").await;
    browser.click_button("Add 3 leads to a campaign").await;
    browser
        .wait_for_text("Add 3 leads to the campaign solar?")
        .await;
    browser.click_button("Add 3 leads to solar").await;
    browser
        .wait_for_text("Added 2, skipped 1 (1 already in a campaign).")
        .await;
    assert!(browser.path().await.starts_with("/console/enrolments/"));
    for (id, state) in [("b-1", "active"), ("b-3", "active"), ("b-4", "none")] {
        let engagement = server
            .get(&key, &format!("/v1/leads/{id}/engagement"))
            .await;
        assert_eq!(engagement.json()["state"], state, "{id}");
    }
}
