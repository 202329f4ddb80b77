//! The import page: a CSV with a duplicate, an unreadable phone and an unknown profile,
//! previewed (nothing changes) then imported: the report as expected, no duplicate
//! lead, the refused rows listed; a column's mapping changed before importing.

use hyper::Method;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

const CSV: &str = "\
First Name,Last Name,Phone Number,Email,profile,Roof type
Ana,Ruiz,(512) 555-0101,ana@example.com,solar,tile
Ana,Ruiz,+1 512 555 0101,,,
Cy,Diaz,12,cy@example.com,,
Di,Wu,(512) 555-0104,di@example.com,wind,
Bo,Chen,,bo@example.com,,metal
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_is_previewed_then_imported_without_duplicates() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    let admin = server.key("acme", "admin").await;
    server
        .send_json(
            Method::PATCH,
            &admin,
            "/v1/org",
            &json!({"defaultCountry": "US"}),
        )
        .await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "1d", "channel": "sms", "text": "Hi"}]});
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
            &json!({"id": "bo", "firstName": "Bo", "email": "bo@example.com"}),
        )
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("leads.csv");
    std::fs::write(&file, CSV).expect("write the file");

    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Leads").await;
    browser.click_link("Import").await;
    browser.attach("File", &file).await;
    browser.click_button("Upload and preview").await;

    browser.wait_for_text("What importing would do").await;
    browser.wait_for_text("Unreadable phone: 12").await;
    browser.wait_for_text("Unknown profile: wind").await;
    let before = server.get(&key, "/v1/leads/search").await.json()["total"].clone();
    assert_eq!(before, json!(1), "a preview changes nothing");

    // "Roof type" is kept as additional information unless chosen otherwise: leave it out.
    browser.select("Roof type", "Leave out").await;
    browser.click_button("Import").await;
    browser.wait_for_text("Import done").await;
    browser
        .wait_for_text("1 created, 1 updated, 1 merged, 2 refused")
        .await;
    browser
        .wait_for_text("Download the refused rows (CSV)")
        .await;

    let found = server.get(&key, "/v1/leads/search?q=ruiz").await.json();
    assert_eq!(found["total"], json!(1), "Ana once: {found}");
    assert_eq!(found["leads"][0]["phone"], json!("+15125550101"));
    assert_eq!(
        found["leads"][0]["additionalInfo"],
        json!({}),
        "the column was left out"
    );
    let bo = server.get(&key, "/v1/leads/bo").await.json();
    assert_eq!(
        bo["lastName"],
        json!("Chen"),
        "the existing lead was updated"
    );
}
