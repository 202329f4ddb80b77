//! The layout: Settings is one page per section under a sub-navigation, each form
//! returning to its own section; at a phone's width (360 pixels) no main page is wider
//! than the viewport and no table cell is narrower than its longest word (the leads list
//! and the import preview become labelled cards); at 1280 pixels a form is wider than
//! a narrow column.

use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

/// An organization with a campaign, leads (long names, emails and additional fields)
/// and an admin; the admin's password.
async fn seeded(server: &TestServer) -> String {
    let admin = server.key("acme", "admin").await;
    let key = server.key("acme", "write").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [
        {"after": "0s", "channel": "sms", "text": "Hi {{firstName}}, it's Sam from Acme Solar."},
        {"after": "2d", "channel": "email", "subject": "Your quote", "text": "Homes in {{additionalInfo.City}} are saving."}
    ]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar-spring-2027", &profile)
            .await
            .status,
        200
    );
    for (id, first, last, phone, email) in [
        (
            "l-1",
            "Maximiliana",
            "Oppenheimer-Castellanos",
            "+15125550101",
            "maximiliana.oppenheimer-castellanos@solar-installers.example",
        ),
        (
            "l-2",
            "Grace",
            "Hopper",
            "+15125550102",
            "grace@example.com",
        ),
    ] {
        server
            .create_lead(&key, &json!({"id": id, "firstName": first, "lastName": last, "phone": phone, "email": email,
                "customerProfile": "solar-spring-2027", "additionalInfo": {"City": "Austin", "Monthly bill": "180"}}))
            .await;
    }
    server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_has_a_sub_navigation_with_one_page_per_section() {
    let server = TestServer::start().await;
    let password = seeded(&server).await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Settings").await;
    browser.wait_for_text("Business name").await;
    let current = "document.querySelector('nav.subnav [aria-current=page]').textContent";
    assert_eq!(
        browser.run(&format!("return {current};")).await,
        json!("Organization"),
        "Settings lands on its first section"
    );
    assert!(
        !browser.text().await.contains("Create key"),
        "one section per page"
    );
    browser.click_link("API keys").await;
    browser.wait_for_text("Create key").await;
    assert_eq!(browser.path().await, "/console/settings/keys");
    assert!(!browser.text().await.contains("Business name"));
    browser.fill("Key name", "CRM sync").await;
    browser.click_button("Create key").await;
    browser.wait_for_text("It is shown only now").await;
    assert_eq!(
        browser.run(&format!("return {current};")).await,
        json!("API keys"),
        "the form returned to its own section"
    );
    for (link, path, shows) in [
        ("Providers", "/console/settings/providers", "Providers"),
        ("Assistant", "/console/settings/assistant", "Assistant"),
        ("Webhooks", "/console/settings/webhooks", "Webhooks"),
        ("People", "/console/settings/people", "Ana Ruiz"),
        ("Consent", "/console/settings/consent", "Opt-out keywords"),
        (
            "Notification emails",
            "/console/settings/notifications",
            "Notifications",
        ),
        (
            "Web chat",
            "/console/settings/webchat",
            "Put this on your website",
        ),
        (
            "Organization",
            "/console/settings/organization",
            "Business name",
        ),
    ] {
        browser.click_link(link).await;
        browser.wait_for_text(shows).await;
        assert_eq!(browser.path().await, path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_main_page_fits_a_phone_and_keeps_words_whole() {
    let server = TestServer::start().await;
    let password = seeded(&server).await;
    let browser = Browser::phone(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    let mut pages: Vec<String> = [
        "/console/inbox",
        "/console/inbox?tab=all",
        "/console/leads",
        "/console/leads/l-1",
        "/console/campaigns",
        "/console/campaigns/solar-spring-2027",
        "/console/campaigns/solar-spring-2027/edit",
        "/console/import",
        "/console/notifications",
        "/console/meetings",
        "/console/leads/l-1/meetings",
        "/console/webchats",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    pages.push("/console/settings".into());
    for section in [
        "organization",
        "providers",
        "assistant",
        "webhooks",
        "keys",
        "people",
        "consent",
        "calendars",
        "notifications",
        "webchat",
    ] {
        pages.push(format!("/console/settings/{section}"));
    }
    let mut faults = Vec::new();
    for path in &pages {
        browser.goto(path).await;
        browser.wait_for_text("Sign out").await;
        for fault in browser.layout_faults().await {
            faults.push(format!("{path}: {fault}"));
        }
    }
    // The import preview, a table of the file's first rows.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("leads.csv");
    std::fs::write(
        &file,
        "First Name,Last Name,Phone Number,Email,Roof type,Monthly bill,Notes\n\
         Maximiliana,Oppenheimer-Castellanos,(512) 555-0109,maximiliana@solar-installers.example,standing-seam metal,180,Wants a call after five\n",
    )
    .expect("write the file");
    browser.goto("/console/import").await;
    browser.attach("File", &file).await;
    browser.click_button("Upload and preview").await;
    browser.wait_for_text("First rows").await;
    for fault in browser.layout_faults().await {
        faults.push(format!("the import preview: {fault}"));
    }
    let labelled = browser
        .run("return getComputedStyle(document.querySelector('table.cards td[data-label]'), '::before').content;")
        .await;
    assert_eq!(
        labelled,
        json!("\"First Name: \""),
        "a card's cell shows its column"
    );
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn desktop_forms_use_the_width_in_two_columns() {
    let server = TestServer::start().await;
    let password = seeded(&server).await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    for (path, label) in [
        ("/console/campaigns/solar-spring-2027/edit", "Instructions"),
        ("/console/settings/organization", "Business name"),
    ] {
        browser.goto(path).await;
        let field = browser.field(label).await;
        let id = field.attr("id").await.expect("id").unwrap_or_default();
        let script = format!(
            "const f = document.getElementById('{id}'); const l = document.querySelector('label[for={id}]'); \
             const a = f.getBoundingClientRect(), b = l.getBoundingClientRect(); \
             return [Math.round(a.width), Math.round(a.left - b.right), Math.round(Math.abs(a.top - b.top))];"
        );
        let measured = browser.run(&script).await;
        let width = measured[0].as_i64().unwrap_or_default();
        let beside = measured[1].as_i64().unwrap_or_default();
        let level = measured[2].as_i64().unwrap_or(99);
        assert!(width >= 560, "{path}: the field is {width} px wide");
        assert!(
            beside >= 0 && level < 12,
            "{path}: the label beside its field: {measured}"
        );
    }
}
