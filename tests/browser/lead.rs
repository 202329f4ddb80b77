//! A lead's page: take over, reply, hand back, each named after the person.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use serde_json::{json, Value};

/// Connects an assistant (a fake model server) to `acme`: the lead page then says
/// "Assistant on" or "Assistant off" (without one, nobody answers but a person).
async fn connect_assistant(server: &TestServer) -> engaged::testkit::model::FakeModel {
    let admin = server.key("acme", "admin").await;
    let model = engaged::testkit::model::FakeModel::start().await;
    let r = server.patch(&admin, "/v1/org", &model.settings()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    model
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_over_reply_and_hand_back() {
    let server = TestServer::start().await;
    let _model = connect_assistant(&server).await;
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
    let _model = connect_assistant(&server).await;
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

/// A possible opt-out holds the lead: the page quotes the lead's words with "Opt out"
/// and "Not an opt-out"; deciding ends the hold and removes the buttons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_possible_opt_out_is_decided_on_the_lead_page() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    for (id, first, phone) in [
        ("lead-1", "Ada", "+15125550101"),
        ("lead-2", "Bea", "+15125550102"),
    ] {
        server
            .create_lead(
                &key,
                &json!({"id": id, "firstName": first, "lastName": "Lovelace", "phone": phone}),
            )
            .await;
        server
            .post(
                &key,
                "/v1/inbound/sms",
                &json!({"from": phone, "text": "can we end this"}),
            )
            .await;
    }
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Possible opt-out").await;

    browser.goto("/console/leads/lead-1").await;
    browser.wait_for_text("can we end this").await;
    browser.click_button("Opt out").await;
    browser
        .wait_for_text("Ana Ruiz opted the lead out (a possible opt-out)")
        .await;
    assert!(!browser.has_button("Not an opt-out").await);
    let lead: Value = server.get(&key, "/v1/leads/lead-1").await.json();
    assert_eq!(lead["subscriptions"]["sms"], "unsubscribed", "{lead}");

    browser.goto("/console/leads/lead-2").await;
    browser.wait_for_text("can we end this").await;
    browser.click_button("Not an opt-out").await;
    browser
        .wait_for_text("Ana Ruiz decided it was not an opt-out")
        .await;
    assert!(!browser.has_button("Opt out").await);
    let lead: Value = server.get(&key, "/v1/leads/lead-2").await.json();
    assert_eq!(lead["subscriptions"]["sms"], "subscribed", "{lead}");
}

/// "Reply as this lead (sandbox)": the text shows in the timeline as the lead's, and
/// a STOP sent that way unsubscribes them, as a real text would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_as_this_lead_in_the_sandbox() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser.goto("/console/leads/lead-1").await;
    browser.wait_for_text("Reply as this lead (sandbox)").await;
    browser.fill("The lead's message", "Is this a scam?").await;
    browser.click_button("Reply as this lead").await;
    browser.wait_for_text("Is this a scam?").await;
    browser.fill("The lead's message", "STOP").await;
    browser.click_button("Reply as this lead").await;
    browser.wait_for_text("STOP").await;
    // The opt-out is read in the inbound message's own write.
    let lead: Value = server.get(&key, "/v1/leads/lead-1").await.json();
    assert_eq!(lead["subscriptions"]["sms"], json!("unsubscribed"));
}

/// The reply box counts SMS segments as a person types, as phones count them: 160
/// GSM-7 characters are one, 161 two; a character outside the GSM alphabet makes 71
/// characters two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_box_counts_sms_segments_as_you_type() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(
            &key,
            &json!({"id": "lead-1", "firstName": "Ada", "phone": "+15125550101"}),
        )
        .await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser.click_link("Leads").await;
    browser.click_link("Ada").await;
    browser.wait_for_text("0 SMS segments").await;
    browser.fill("Message", &"a".repeat(160)).await;
    browser.wait_for_text("1 SMS segment").await;
    browser.fill("Message", &"a".repeat(161)).await;
    browser.wait_for_text("2 SMS segments").await;
    browser.fill("Message", &"ç".repeat(71)).await;
    browser.wait_for_text("2 SMS segments").await;
    browser.fill("Message", &"{".repeat(770)).await;
    browser
        .wait_for_text("11 SMS segments: too long, at most 10")
        .await;
}
