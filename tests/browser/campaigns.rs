//! Campaigns: a campaign's numbers after enrolments and a reply, then pause and resume.

use hyper::Method;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaigns_numbers_then_pause_and_resume() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
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
    for (id, phone) in [("c-1", "+15125550101"), ("c-2", "+15125550102")] {
        server
            .create_lead(
                &key,
                &json!({"id": id, "firstName": "Ana", "phone": phone, "customerProfile": "solar"}),
            )
            .await;
    }
    server
        .send_json(
            Method::POST,
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Yes, call me"}),
        )
        .await;

    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Campaigns").await;
    browser.wait_for_text("Opted out").await;
    browser.click_link("solar").await;
    browser.wait_for_text("Funnel").await;
    browser.wait_for_text("Last 30 days").await;
    let text = browser.text().await;
    assert!(
        text.contains("Enrolled\n2") || text.contains("Enrolled 2"),
        "{text}"
    );
    drop(text);
    // One of two replied, as a card (label, count, share).
    browser.wait_for_text("Replied\n1\n50%").await;
    // The chart has its axes' tick labels and the bars' values.
    let svg = browser
        .run("return document.querySelector('figure.chart svg').textContent")
        .await;
    let svg = svg.as_str().unwrap_or_default().to_string();
    assert!(svg.contains('0') && svg.contains('2'), "{svg}");

    browser.click_button("Pause campaign").await;
    browser.wait_for_text("Resume campaign").await;
    browser
        .wait_for_text("No step of this campaign runs while it is paused.")
        .await;
    let engagement = server.get(&key, "/v1/leads/c-2/engagement").await.json();
    assert_eq!(engagement["state"], json!("paused"), "{engagement}");

    browser.click_button("Resume campaign").await;
    browser.wait_for_text("Pause campaign").await;
    let engagement = server.get(&key, "/v1/leads/c-2/engagement").await.json();
    assert_eq!(engagement["state"], json!("active"), "{engagement}");
}
