//! A lead's additional fields (`additionalInfo`) on its page: shown to everyone, added,
//! changed and removed by an agent (the lead's update, as `PATCH /v1/leads/{id}`),
//! read-only for a viewer.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use serde_json::json;

async fn lead_page(server: &TestServer, role: &str) -> Browser {
    let key = server.key("acme", "write").await;
    server
        .create_lead(
            &key,
            &json!({"id": "lead-1", "firstName": "Derek", "lastName": "Hale",
                "additionalInfo": {"Roof type": "tile", "Monthly bill": 120}}),
        )
        .await;
    let email = format!("{role}@acme.example");
    let password = server.user("acme", &email, "Ana Ruiz", role).await;
    let browser = Browser::open(server).await;
    browser.sign_in(&email, &password).await;
    browser.wait_for_text("Sign out").await;
    browser.goto("/console/leads/lead-1").await;
    browser.wait_for_text("Additional fields").await;
    browser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_adds_changes_and_removes_additional_fields() {
    let server = TestServer::start().await;
    let key = server.key("acme", "read").await;
    let browser = lead_page(&server, "agent").await;
    let text = browser.text().await;
    assert!(text.contains("Roof type\ntile"), "{text}");
    assert!(text.contains("Monthly bill\n120"), "{text}");

    browser.fill("Field", "Roof type").await;
    browser.fill("Value", "metal").await;
    browser.click_button("Save field").await;
    browser.wait_for_text("Roof type\nmetal").await;

    browser.fill("Field", "Notes").await;
    browser.fill("Value", "Call after 5").await;
    browser.click_button("Save field").await;
    browser.wait_for_text("Notes\nCall after 5").await;

    browser.select("Field to remove", "Monthly bill").await;
    browser.click_button("Remove field").await;
    browser.wait_for_text("Notes\nCall after 5").await;
    assert!(!browser.text().await.contains("Monthly bill\n120"));

    let lead = server.get(&key, "/v1/leads/lead-1").await.json();
    assert_eq!(
        lead["additionalInfo"],
        json!({"Roof type": "metal", "Notes": "Call after 5"})
    );
    // Who did it is on the timeline and in the events, as every person-action.
    browser
        .wait_for_text("Ana Ruiz set Roof type to metal")
        .await;
    browser
        .wait_for_text("Ana Ruiz removed the field Monthly bill")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_sees_additional_fields_without_the_forms() {
    let server = TestServer::start().await;
    let browser = lead_page(&server, "viewer").await;
    browser.wait_for_text("Roof type").await;
    assert!(!browser.has_button("Save field").await);
    assert!(!browser.has_button("Remove field").await);
}
