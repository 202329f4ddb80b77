//! A lead's page: take over, reply, hand back, each named after the person.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_over_reply_and_hand_back() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    server
        .post(&key, "/v1/leads/lead-1/messages", &json!({"owner": "lead", "channel": "sms", "content": {"text": "Is the offer still on?"}}))
        .await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;

    browser.click_link("Leads").await;
    browser.click_link("Ada Lovelace").await;
    browser.wait_for_text("Is the offer still on?").await;
    browser.wait_for_text("Assistant on").await;

    browser.click_button("Take over").await;
    browser.wait_for_text("Ana Ruiz took over").await;
    browser.wait_for_text("Assistant off").await;
    assert!(browser.has_button("Hand back").await);

    browser
        .fill("Message", "Yes it is! Ana here, when suits you for a call?")
        .await;
    browser
        .field("SMS")
        .await
        .click()
        .await
        .expect("choose SMS");
    browser.click_button("Send").await;
    browser.wait_for_text("Yes it is! Ana here").await;

    browser.click_button("Hand back").await;
    browser
        .wait_for_text("Ana Ruiz handed back to the assistant")
        .await;
    browser.wait_for_text("Assistant on").await;

    // Integrators see who did what.
    let messages = server.get(&key, "/v1/leads/lead-1/messages").await.json();
    let sent = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["content"]["text"] == "Yes it is! Ana here, when suits you for a call?")
        .cloned()
        .expect("the person's message");
    assert_eq!(sent["origin"], "human", "{sent}");
    assert_eq!(sent["sentBy"]["name"], "Ana Ruiz", "{sent}");
    assert!(sent["sentBy"]["userId"]
        .as_str()
        .is_some_and(|id| !id.is_empty()));

    let events = server
        .get(&key, "/v1/leads/lead-1/events?types=USER_ACTION")
        .await
        .json();
    let actions: Vec<&str> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["data"]["action"].as_str())
        .collect();
    assert_eq!(actions, ["take_over", "hand_back"]);
    let lead: Value = server.get(&key, "/v1/leads/lead-1").await.json();
    assert_eq!(lead["isAiOn"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sending_while_the_assistant_is_on_takes_over_first() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Grace", "lastName": "Hopper", "email": "grace@example.com"}))
        .await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser.goto("/console/leads/lead-1").await;
    browser.fill("Message", "Hello Grace").await;
    browser
        .field("Email")
        .await
        .click()
        .await
        .expect("choose Email");
    browser.fill("Subject", "Your quote").await;
    browser.click_button("Send").await;
    browser.wait_for_text("Ana Ruiz took over").await;
    browser.wait_for_text("Your quote").await;
    browser.wait_for_text("Assistant off").await;
}
