//! The live inbox: conversations appear and move without a reload, the tab title
//! counts what needs attention, and a signed-out session's stream ends.

use engaged::admin::AdminRequest;
use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use serde_json::json;

async fn signed_in(server: &TestServer, role: &str) -> Browser {
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", role)
        .await;
    let browser = Browser::open(server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_conversation_appears_in_an_open_inbox_without_a_reload() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    let browser = signed_in(&server, "agent").await;
    browser.click_link("All (0)").await;
    browser.wait_for_text("No conversation yet").await;
    // Marks the page: a reload would lose it.
    browser.run("window.notReloaded = true; return true;").await;

    server
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Hi, is the offer still on?"}),
        )
        .await;
    browser.wait_for_text("Hi, is the offer still on?").await;
    browser.wait_for_text("All (1)").await;
    assert_eq!(
        browser.run("return window.notReloaded === true;").await,
        true
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_lead_of_a_person_needs_attention_until_they_reply() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    let browser = signed_in(&server, "agent").await;
    browser.goto("/console/leads/lead-1").await;
    browser.click_button("Take over").await;
    browser.wait_for_text("Ana Ruiz took over").await;

    browser.click_link("Inbox").await;
    browser.wait_for_text("Nothing needs you now").await;
    server
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Can you call me?"}),
        )
        .await;
    browser.wait_for_text("Waiting for a reply").await;
    browser.wait_for_text("Needs attention (1)").await;
    let title = browser.client.title().await.expect("title");
    assert!(title.starts_with("(1) Inbox"), "{title}");

    browser.click_link("Ada Lovelace").await;
    browser
        .fill("Message", "Calling you in five minutes.")
        .await;
    browser.click_button("Send").await;
    browser.wait_for_text("Calling you in five minutes.").await;
    browser.click_link("Inbox").await;
    browser.wait_for_text("Nothing needs you now").await;
    browser.wait_for_text("Needs attention (0)").await;
    browser.wait_for_text("Mine (1)").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_elsewhere_closes_the_open_inbox() {
    let server = TestServer::start().await;
    let browser = signed_in(&server, "viewer").await;
    assert_eq!(browser.path().await, "/console/inbox");
    server
        .admin(AdminRequest::UserDisable {
            email: "ana@acme.example".into(),
        })
        .await
        .expect("disable");
    browser.wait_for_text("Sign in").await;
    assert_eq!(browser.path().await, "/console/login");
}
