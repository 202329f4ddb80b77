//! The import page: a CSV with a duplicate, an unreadable phone and an unknown profile,
//! previewed (nothing changes) then imported: the report as expected, no duplicate
//! lead, the refused rows listed; a column's mapping changed before importing.
//! At 1280 pixels the preview scrolls sideways rather than break a word, and checkboxes
//! are 24 by 24 pixel targets.

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

/// At 1280 pixels, the preview keeps a long address whole (its table scrolls sideways
/// instead), and checkboxes (the import's, a lead's delete confirmation) are targets of
/// at least 24 by 24 pixels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_keeps_words_whole_and_its_checkbox_is_large_enough() {
    let server = TestServer::start().await;
    let email = "maximiliane.schwarzenberger-obermayer@sonnenstrom-genossenschaft.example";
    let csv = format!(
        "First Name,Last Name,Phone Number,Email,Street Address,City,Notes\n\
         Maximiliane,Schwarzenberger-Obermayer,+15125550101,{email},\
         Hauptstraße 123 Hinterhaus,Garmisch-Partenkirchen,Wants a quote\n"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("leads.csv");
    std::fs::write(&file, csv).expect("write the file");
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

    let width = browser.run("return window.innerWidth;").await;
    assert_eq!(width, serde_json::json!(1280), "the window's width");
    let checkbox = browser
        .run(
            "const label = [...document.querySelectorAll('label')]
                 .find(l => l.textContent.startsWith('Only create new leads'));
             const r = document.getElementById(label.htmlFor).getBoundingClientRect();
             return [r.width, r.height];",
        )
        .await;
    let size: Vec<f64> = serde_json::from_value(checkbox.clone()).expect("a size");
    assert!(
        size.iter().all(|&s| s >= 24.0),
        "the import's checkbox {checkbox}"
    );

    // The cell holding the address: its text is on one line, and the table scrolls.
    let cell = browser
        .run(&format!(
            "const td = [...document.querySelectorAll('td')].find(td => td.textContent === '{email}');
             const range = document.createRange();
             range.selectNodeContents(td);
             const wrap = td.closest('.table-wrap');
             return {{lines: range.getClientRects().length,
                      scrolls: wrap.scrollWidth > wrap.clientWidth,
                      focusable: wrap.tabIndex === 0}};"
        ))
        .await;
    assert_eq!(
        cell,
        serde_json::json!({"lines": 1, "scrolls": true, "focusable": true}),
        "the address in the preview"
    );

    // The delete confirmation's checkbox on a lead's page, likewise.
    let key = server.key("acme", "write").await;
    server
        .create_lead(
            &key,
            &json!({"id": "ada", "firstName": "Ada", "phone": "+15125550199"}),
        )
        .await;
    browser.goto("/console/leads/ada").await;
    browser.wait_for_text("Yes, delete this lead").await;
    let checkbox = browser
        .run(
            "const label = [...document.querySelectorAll('label')]
                 .find(l => l.textContent === 'Yes, delete this lead');
             const r = document.getElementById(label.htmlFor).getBoundingClientRect();
             return [r.width, r.height];",
        )
        .await;
    let size: Vec<f64> = serde_json::from_value(checkbox.clone()).expect("a size");
    assert!(
        size.iter().all(|&s| s >= 24.0),
        "the delete confirmation's checkbox {checkbox}"
    );
}
