//! The live inbox: conversations appear and move without a reload, the tab title
//! counts what needs attention, a hand-off lands there (unassigned) until a person
//! replies, a failed send is sent again, and a signed-out session's stream ends; the
//! "Replied" tab, per-person unread markers, who wrote each last message, and counts of
//! conversations only.

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
    // Nobody owns a handed-off lead until a person takes it.
    browser.wait_for_text("Unassigned").await;

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
    browser.click_link("Mine (1)").await;
    browser
        .wait_for_text("Ana Ruiz: Hi Ada, Ana here. Calling you now.")
        .await;
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

/// A profile whose assistant answers with the fake model, and lead `lead-1` (Ada) in it.
async fn assisted_lead(server: &TestServer) -> (String, FakeModel) {
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
    (key, model)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_the_assistant_answered_is_under_replied_and_rows_say_who_wrote() {
    let server = TestServer::start().await;
    let (key, model) = assisted_lead(&server).await;
    model.push(Step::text("No, we are Acme Solar. Happy to help."));
    let browser = signed_in(&server, "agent").await;
    browser.click_link("Replied (0)").await;
    browser
        .wait_for_text("No lead wrote in the last 7 days.")
        .await;

    server
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Is this a scam?"}),
        )
        .await;
    browser.wait_for_text("Ada Lovelace: Is this a scam?").await;
    // The assistant answers after the reply delay: the row stays, now saying so.
    browser
        .wait_for_text("Assistant: No, we are Acme Solar. Happy to help.")
        .await;
    browser.wait_for_text("Replied (1)").await;
    browser.wait_for_text("Needs attention (0)").await;
    let text = browser.text().await;
    assert!(text.contains("Assistant"), "{text}");
    assert!(!text.contains("You:"), "{text}");
    // A relative time, with the absolute one on hover.
    let time = browser
        .run("const t = document.querySelector('#inbox tbody time'); return [t.textContent, t.title];")
        .await;
    assert_eq!(time[0], json!("just now"), "{time}");
    assert!(time[1].as_str().is_some_and(|t| t.contains(':')), "{time}");
}

/// The leads whose inbox rows are marked unread, with their rows' font weight.
async fn unread_rows(browser: &Browser) -> serde_json::Value {
    browser
        .run(
            "return [...document.querySelectorAll('#inbox tbody tr')]
                .filter(r => r.textContent.includes('Unread'))
                .map(r => [r.querySelector('a').textContent, getComputedStyle(r.cells[0]).fontWeight]);",
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_message_is_unread_for_each_person_until_they_open_the_lead() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    server
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Do you install in Austin?"}),
        )
        .await;
    let ana = signed_in(&server, "agent").await;
    let password = server
        .user("acme", "bo@acme.example", "Bo Chen", "agent")
        .await;
    let bo = Browser::open(&server).await;
    bo.sign_in("bo@acme.example", &password).await;
    bo.wait_for_text("Sign out").await;

    let bold = json!([["Ada Lovelace", "700"]]);
    ana.goto("/console/inbox?tab=all").await;
    ana.wait_for_text("Do you install in Austin?").await;
    assert_eq!(unread_rows(&ana).await, bold);
    ana.click_link("Ada Lovelace").await;
    ana.wait_for_text("Do you install in Austin?").await;
    // The view is recorded in the writer's next batch, not before the page answers.
    let mut tries = 0;
    loop {
        ana.goto("/console/inbox?tab=all").await;
        ana.wait_for_text("Do you install in Austin?").await;
        if unread_rows(&ana).await == json!([]) {
            break;
        }
        tries += 1;
        assert!(tries < 50, "the row stayed unread for Ana");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Bo has not opened it.
    bo.goto("/console/inbox?tab=all").await;
    bo.wait_for_text("Do you install in Austin?").await;
    assert_eq!(unread_rows(&bo).await, bold);

    // A new message is unread for Ana again, live.
    server
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Or in Round Rock?"}),
        )
        .await;
    ana.wait_for_text("Or in Round Rock?").await;
    assert_eq!(unread_rows(&ana).await, bold);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_the_first_send_no_tab_counts_a_conversation() {
    let server = TestServer::start().await;
    // Enrolled, the assistant on and its cadence due tomorrow: no message yet.
    let _model = assisted_lead(&server).await;
    let browser = signed_in(&server, "agent").await;
    browser.wait_for_text("All (0)").await;
    let text = browser.text().await;
    for tab in [
        "Needs attention (0)",
        "Replied (0)",
        "Mine (0)",
        "Assistant (0)",
    ] {
        assert!(text.contains(tab), "{tab} missing from {text}");
    }
    browser.click_link("Assistant (0)").await;
    browser
        .wait_for_text("The assistant is handling no conversation.")
        .await;
}

/// With no assistant connected, a price question, a request to be called and "Is this
/// a scam?" wait under "Needs attention" in words, the inbox says replies wait for a
/// person, and no row reads Owner "Assistant" nor a tab "Assistant".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_assistant_every_reply_waits_for_a_person() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    let texts = [
        ("+15125550101", "Ada", "How much does it cost?"),
        ("+15125550102", "Bea", "Call me please"),
        ("+15125550103", "Cy", "Is this a scam?"),
    ];
    for (phone, first, _) in texts {
        server
            .create_lead(
                &key,
                &json!({"id": first, "firstName": first, "phone": phone}),
            )
            .await;
    }
    let browser = signed_in(&server, "agent").await;
    browser
        .wait_for_text("No assistant connected: replies wait for you")
        .await;
    for (phone, _, text) in texts {
        server
            .post(
                &key,
                "/v1/inbound/sms",
                &json!({"from": phone, "text": text}),
            )
            .await;
    }
    browser.wait_for_text("Needs attention (3)").await;
    browser.wait_for_text("Is this a scam?").await;
    let text = browser.text().await;
    assert_eq!(
        text.matches("Replied — no assistant connected").count(),
        3,
        "{text}"
    );
    assert!(!text.contains("Nothing needs you now"), "{text}");
    assert!(!text.contains("Assistant ("), "{text}");
}
