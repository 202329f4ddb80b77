//! The profile editor: a campaign edited and saved with an invalid field first, then
//! fixed, a step added and the first moved down; the playground answering by email
//! with unsaved instructions, nothing stored.

use hyper::Method;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::TestServer;

async fn admin_browser(server: &TestServer) -> Browser {
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_is_edited_with_one_invalid_field_then_saved() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "0s", "channel": "sms", "text": "Hi {{firstName}}"}]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    let browser = admin_browser(&server).await;
    browser.click_link("Campaigns").await;
    browser.click_link("solar").await;
    browser.click_link("Edit campaign").await;
    browser.fill("After (step 1)", "soon").await;
    browser.click_button("Save").await;
    browser
        .wait_for_text("Invalid format for field: cadence[0].after")
        .await;
    browser.fill("After (step 1)", "2h").await;
    browser.click_button("Add step").await;
    browser
        .fill(
            "Text (step 2)",
            "Still thinking about solar, {{firstName}}?",
        )
        .await;
    browser.click_button("Preview").await;
    browser
        .wait_for_text("Still thinking about solar, Sam?")
        .await;
    browser.click_button("Move step 1 down").await;
    browser.click_button("Save").await;
    browser.wait_for_text("Funnel").await;
    let saved = server.get(&admin, "/v1/profiles/solar").await.json();
    assert_eq!(
        saved["cadence"][0]["text"],
        json!("Still thinking about solar, {{firstName}}?"),
        "{saved}"
    );
    assert_eq!(saved["cadence"][1]["after"], json!("2h"), "{saved}");
    assert_eq!(saved["cadence"][1]["text"], json!("Hi {{firstName}}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_answers_with_unsaved_instructions_and_stores_nothing() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let model = FakeModel::start().await;
    server
        .send_json(Method::PATCH, &admin, "/v1/org", &model.settings())
        .await;
    model.push(Step::text("Yes, we install on metal roofs."));
    let browser = admin_browser(&server).await;
    browser.goto("/console/campaigns/new").await;
    browser
        .fill(
            "Instructions",
            "You are Sam from Acme Solar; you know roofs.",
        )
        .await;
    browser.select("Conversation on", "Email").await;
    browser
        .fill("As the lead", "Do you install on metal roofs?")
        .await;
    browser.click_button("Try the assistant").await;
    browser
        .wait_for_text("Yes, we install on metal roofs.")
        .await;
    browser.wait_for_text("Answered in").await;
    let request = model.requests().pop().expect("one request");
    let text = request.to_string();
    assert!(
        text.contains("you know roofs"),
        "the unsaved instructions: {text}"
    );
    assert!(text.contains("Do you install on metal roofs?"), "{text}");
    assert!(
        text.contains("plain-text body of an email"),
        "answered as on the chosen channel: {text}"
    );
    assert_eq!(
        server.get(&admin, "/v1/profiles").await.json()["profiles"],
        json!([]),
        "nothing saved"
    );
    let leads = server.get(&admin, "/v1/leads/search").await.json();
    assert_eq!(leads["total"], json!(0), "no lead, no message");
}
