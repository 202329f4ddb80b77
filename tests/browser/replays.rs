//! "Try this change" in the campaign editor: the unsaved instructions replayed over
//! the campaign's past conversations, read in words (what was said, what the change
//! says, flagged first), then back to the form and "Save".

use hyper::Method;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::model::FakeModel;
use engaged::testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_this_change_shows_each_answer_beside_what_was_said_then_save() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    let admin = server.key("acme", "admin").await;
    let model = FakeModel::start().await;
    server
        .send_json(Method::PATCH, &admin, "/v1/org", &model.settings())
        .await;
    let profile = json!({"instructions": "You are Sam."});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    server
        .create_lead(
            &key,
            &json!({"id": "c-1", "firstName": "Ana", "phone": "+15125550101", "customerProfile": "solar"}),
        )
        .await;
    server
        .send_json(
            Method::PATCH,
            &key,
            "/v1/leads/c-1",
            &json!({"isAiOn": false}),
        )
        .await;
    for (owner, text) in [
        ("lead", "What time works for a call?"),
        ("user", "We will call you."),
    ] {
        let body = json!({"owner": owner, "channel": "sms", "content": {"text": text}});
        assert_eq!(
            server
                .post(&key, "/v1/leads/c-1/messages", &body)
                .await
                .status,
            201
        );
    }

    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.goto("/console/campaigns/solar/edit").await;
    let changed = "You are Sam.\nfake-model: call book_meeting when the lead says \"time\"";
    browser.fill("Instructions", changed).await;
    browser.click_button("Try this change").await;
    browser
        .wait_for_text("Tried on 1 conversations, 1 answers")
        .await;
    let text = browser.text().await;
    assert!(text.contains("Flagged answers"), "{text}");
    assert!(
        text.contains("The lead wrote: What time works for a call?"),
        "{text}"
    );
    assert!(
        text.contains("What was said") && text.contains("We will call you."),
        "{text}"
    );
    assert!(
        text.contains("What the change says") && text.contains("Did: book_meeting"),
        "{text}"
    );
    assert!(text.contains("Does something different"), "{text}");
    assert!(!text.contains('{'), "words, never JSON: {text}");
    let before = server.get(&admin, "/v1/profiles/solar").await.json();
    assert_eq!(
        before["instructions"],
        json!("You are Sam."),
        "not saved by trying"
    );

    browser.click_link("Back to the change, to save it").await;
    browser.wait_for_text("Your change is not saved yet").await;
    browser.click_button("Save").await;
    browser.wait_for_text("Edit campaign").await;
    let saved = server.get(&admin, "/v1/profiles/solar").await.json();
    // A browser sends a textarea's line breaks as CRLF.
    let instructions = saved["instructions"].as_str().unwrap_or_default();
    assert_eq!(instructions.replace("\r\n", "\n"), changed);
    drop(model);
}
