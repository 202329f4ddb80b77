//! The import page's choices: each matched row listed as "Row N → Name: first name A →
//! B" in the preview and the report; "Update fields", "Fill empty fields only" and
//! "Skip matched rows" previewed in turn; "Add the imported leads to a campaign" giving
//! rows without a profile the chosen one.

use hyper::Method;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

const CSV: &str = "\
First Name,Last Name,Phone Number,Email
Mia,Gonzalez,(512) 555-0100,mia@example.com
Zed,Park,(512) 555-0122,zed@example.com
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_choice_for_matched_rows_shows_what_it_changes_and_a_campaign_is_joined() {
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
    let put = server.put(&admin, "/v1/profiles/solar", &profile).await;
    assert_eq!(put.status, 200);
    server
        .create_lead(
            &key,
            &json!({"id": "maria", "firstName": "Maria", "lastName": "Gonzalez", "phone": "+15125550100"}),
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
    browser.goto("/console/import").await;
    browser.attach("File", &file).await;
    browser.click_button("Upload and preview").await;

    // "Update fields" is the default.
    browser
        .wait_for_text(
            "Row 2 → Maria Gonzalez: first name Maria → Mia; email (empty) → mia@example.com",
        )
        .await;

    browser
        .field("Fill empty fields only")
        .await
        .click()
        .await
        .expect("click");
    browser.click_button("Preview again").await;
    browser
        .wait_for_text("Row 2 → Maria Gonzalez: email (empty) → mia@example.com")
        .await;
    assert!(!browser.text().await.contains("first name Maria → Mia"));

    browser
        .field("Only create new leads (leave matching leads as they are)")
        .await
        .click()
        .await
        .expect("click");
    browser.click_button("Preview again").await;
    browser
        .wait_for_text("Row 2 → Maria Gonzalez: no change")
        .await;

    let maria = server.get(&key, "/v1/leads/maria").await.json();
    assert_eq!(
        maria["firstName"],
        json!("Maria"),
        "previews change nothing"
    );

    browser
        .field("Update fields")
        .await
        .click()
        .await
        .expect("click");
    browser
        .select("Add the imported leads to a campaign", "solar")
        .await;
    browser.click_button("Import").await;
    browser.wait_for_text("Import done").await;
    browser
        .wait_for_text("Row 2 → Maria Gonzalez: first name Maria → Mia")
        .await;
    browser.wait_for_text("campaign (empty) → solar").await;

    let maria = server.get(&key, "/v1/leads/maria").await.json();
    assert_eq!(maria["firstName"], json!("Mia"));
    let solar = server
        .get(&key, "/v1/leads/search?profile=solar")
        .await
        .json();
    assert_eq!(
        solar["total"],
        json!(2),
        "both rows joined the campaign: {solar}"
    );
}
