//! The live inbox: conversations appear and move without a reload, the tab title
//! counts what needs attention, a hand-off lands there until a person replies, a failed
//! send is sent again, and a signed-out session's stream ends.

use hyper::Method;
use serde_json::json;

use engaged::admin::AdminRequest;
use engaged::testkit::browser::Browser;
use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::twilio::FakeTwilio;
use engaged::testkit::TestServer;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_lands_in_needs_attention_and_leaves_when_a_person_replies() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    let admin = server.key("acme", "admin").await;
    let model = FakeModel::start().await;
    server
        .send_json(Method::PATCH, &admin, "/v1/org", &model.settings())
        .await;
    let profile = json!({"instructions": "You are Sam from Acme Solar. Be brief.",
        "cadence": [{"after": "1d", "channel": "sms", "text": "Checking in."}], "replyDelay": "1s"});
    let put = server.put(&admin, "/v1/profiles/assist", &profile).await;
    assert_eq!(put.status, 200, "{}", put.text());
    server
        .create_lead(
            &key,
            &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace",
            "phone": "+15125550101", "customerProfile": "assist"}),
        )
        .await;
    model.push(Step::tool(
        "call_1",
        "handoff",
        json!({"reason": "wants a person"}),
    ));
    model.push(Step::text("A colleague will be in touch."));
    let browser = signed_in(&server, "agent").await;
    browser.wait_for_text("Nothing needs you now").await;

    server
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Can I talk to a person?"}),
        )
        .await;
    browser.wait_for_text("Handed off").await;
    browser.wait_for_text("Needs attention (1)").await;

    browser.click_link("Ada Lovelace").await;
    browser
        .fill("Message", "Hi Ada, Ana here. Calling you now.")
        .await;
    browser.click_button("Send").await;
    browser
        .wait_for_text("Hi Ada, Ana here. Calling you now.")
        .await;
    browser.click_link("Inbox").await;
    browser.wait_for_text("Nothing needs you now").await;
    browser.wait_for_text("Needs attention (0)").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_send_is_sent_again_from_the_lead_page() {
    let server =
        TestServer::start_with(|c| c.public_url = Some("https://engaged.test".into())).await;
    let key = server.key("acme", "write").await;
    let admin = server.key("acme", "admin").await;
    let twilio = FakeTwilio::start().await;
    let sms = json!({"providers": {"sms": {"kind": "twilio", "accountSid": "AC0123456789abcdef0123456789abcdef",
        "authToken": "twilio-auth-token-secret", "from": "+15550100000", "baseUrl": twilio.base_url}}});
    let patched = server
        .send_json(Method::PATCH, &admin, "/v1/org", &sms)
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    twilio.script(&[(400, None)]);
    let browser = signed_in(&server, "agent").await;
    browser.goto("/console/leads/lead-1").await;
    browser.fill("Message", "Your quote is ready.").await;
    browser.click_button("Send").await;
    browser.wait_for_text("A send failed").await;
    browser.click_link("Inbox").await;
    browser.wait_for_text("Send failed").await;
    let title = browser.client.title().await.expect("title");
    assert!(title.starts_with("(1) Inbox"), "{title}");

    browser.click_link("Ada Lovelace").await;
    browser.click_button("Send again").await;
    browser
        .wait_for_text("Ana Ruiz sent a failed message again")
        .await;
    assert_eq!(twilio.sent().len(), 2, "a new message went out");
    browser.click_link("Inbox").await;
    browser.wait_for_text("Nothing needs you now").await;
}

/// Presses `key` where the focus is.
async fn press(browser: &Browser, key: &str) {
    let active = browser
        .client
        .active_element()
        .await
        .expect("the focused element");
    active.send_keys(key).await.expect("a key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keyboard_moves_opens_and_focuses() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    for (id, first, phone, text) in [
        ("lead-1", "Ada", "+15125550101", "First question"),
        ("lead-2", "Grace", "+15125550102", "Second question"),
    ] {
        server
            .create_lead(&key, &json!({"id": id, "firstName": first, "phone": phone}))
            .await;
        server
            .post(
                &key,
                "/v1/inbound/sms",
                &json!({"from": phone, "text": text}),
            )
            .await;
    }
    let browser = signed_in(&server, "agent").await;
    browser.goto("/console/inbox?tab=all").await;
    browser.wait_for_text("Second question").await;
    press(&browser, "/").await;
    let focused = browser.run("return document.activeElement.name;").await;
    assert_eq!(focused, json!("q"), "/ focuses the search");
    browser
        .run("document.activeElement.blur(); return true;")
        .await;
    press(&browser, "j").await;
    press(&browser, "j").await;
    press(&browser, "k").await;
    let current = browser
        .run("return document.activeElement.textContent;")
        .await;
    assert_eq!(
        current,
        json!("Grace"),
        "newest first: j, j, k is the first row"
    );
    press(&browser, "\u{E007}").await; // Enter
    browser.wait_for_text("Second question").await;
    assert_eq!(browser.path().await, "/console/leads/lead-2");
    browser
        .run("document.activeElement.blur(); return true;")
        .await;
    press(&browser, "r").await;
    let focused = browser.run("return document.activeElement.name;").await;
    assert_eq!(focused, json!("message"), "r focuses the reply box");
}
