//! A lead's consent in the console: the ledger, "Record consent" (the lead's words on
//! the phone, required), "Download consent record"; a viewer sees the ledger only.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use serde_json::json;

async fn lead_page(server: &TestServer, role: &str) -> Browser {
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    let email = format!("{role}@acme.example");
    let password = server.user("acme", &email, "Ana Ruiz", role).await;
    let browser = Browser::open(server).await;
    browser.sign_in(&email, &password).await;
    browser.wait_for_text("Sign out").await;
    browser.goto("/console/leads/lead-1").await;
    browser.wait_for_text("Consent").await;
    browser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_records_consent_given_on_the_phone_and_sees_it_in_the_ledger() {
    let server = TestServer::start().await;
    let browser = lead_page(&server, "agent").await;
    browser.wait_for_text("No consent recorded.").await;

    // The words are required: an empty text is refused beside the field.
    browser.select("Consent channel", "Voice").await;
    browser.click_button("Record consent").await;
    browser
        .wait_for_text("Write the words the lead said on the phone.")
        .await;
    assert!(browser.text().await.contains("No consent recorded."));

    browser.select("Consent channel", "Voice").await;
    browser.select("Consent status", "Granted").await;
    browser
        .fill(
            "Words the lead said",
            "Yes, you can call me about the offer",
        )
        .await;
    browser.click_button("Record consent").await;
    browser
        .wait_for_text("Yes, you can call me about the offer")
        .await;
    let text = browser.text().await;
    assert!(!text.contains("No consent recorded."), "{text}");
    assert!(
        text.contains("Ana Ruiz recorded consent granted (Voice)"),
        "{text}"
    );

    // The integrators' ledger has it, recorded by the person.
    let key = server.key("acme", "read").await;
    let ledger = server.get(&key, "/v1/leads/lead-1/consent").await.json();
    assert_eq!(ledger["current"]["voice"], "granted", "{ledger}");
    let entry = &ledger["entries"][0];
    assert_eq!(entry["source"], "console", "{ledger}");
    assert_eq!(
        entry["proof"]["text"],
        "Yes, you can call me about the offer"
    );
    assert_eq!(entry["proof"]["recordedBy"]["name"], "Ana Ruiz");

    // The download answers the record as a CSV file.
    let answer = browser
        .run(
            "const a = [...document.querySelectorAll('a')].find(l => l.textContent.trim() === 'Download consent record');
             return fetch(a.href).then(async r => [r.status, r.headers.get('content-type'),
               r.headers.get('content-disposition'), await r.text()]);",
        )
        .await;
    assert_eq!(answer[0], 200, "{answer}");
    assert_eq!(answer[1], "text/csv; charset=utf-8", "{answer}");
    assert_eq!(
        answer[2], "attachment; filename=\"consent-record.csv\"",
        "{answer}"
    );
    let csv = answer[3].as_str().unwrap_or_default();
    assert!(csv.starts_with("leadId,id,at,channel,status"), "{csv}");
    assert!(
        csv.contains(",voice,granted,marketing,console,Yes, you can call me")
            || csv.contains(",voice,granted,marketing,console,\"Yes, you can call me"),
        "{csv}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_sees_the_ledger_without_the_form() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    let browser = lead_page(&server, "viewer").await;
    server
        .post(&key, "/v1/leads/lead-1/consent", &json!({"channel": "sms", "status": "granted", "source": "web_form", "proof": {"text": "I agree to texts", "url": "https://acme.example/form"}}))
        .await;
    browser.goto("/console/leads/lead-1").await;
    browser.wait_for_text("I agree to texts").await;
    browser.wait_for_text("https://acme.example/form").await;
    browser.wait_for_text("Download consent record").await;
    assert!(!browser.has_button("Record consent").await);
    assert!(!browser.text().await.contains("Words the lead said"));
}
