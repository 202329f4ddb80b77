//! A first run that guides: the empty inbox lists the first steps with each one's state,
//! with links for an admin and words for an agent; Leads has "Add lead", whose form
//! reads a phone as a person writes it (in the organization's country) and creates the
//! lead as the API would (a second lead with the same phone is refused with a link).

use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

/// The first-steps list's items, each item's text.
const STEPS: &str = "return [...document.querySelectorAll('section.checklist li')].map(li => li.textContent.trim());";

async fn checklist(browser: &Browser) -> Vec<String> {
    serde_json::from_value(browser.run(STEPS).await).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_empty_inbox_lists_the_first_steps_for_an_admin_and_an_agent() {
    let server = TestServer::start().await;
    let admin = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let agent = server
        .user("acme", "al@acme.example", "Al Agent", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &admin).await;
    browser.wait_for_text("First steps").await;
    let steps = checklist(&browser).await;
    assert_eq!(steps.len(), 6, "{steps:?}");
    assert!(steps.iter().all(|s| s.starts_with("To do")), "{steps:?}");
    for link in [
        "Settings → Assistant",
        "Settings → Providers",
        "Settings → Calendars",
        "Import leads",
        "New campaign",
    ] {
        assert!(steps.iter().any(|s| s.ends_with(link)), "{link}: {steps:?}");
    }
    // A campaign and a lead: those steps are done.
    let key = server.key("acme", "admin").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "1d", "channel": "sms", "text": "Hi"}]});
    assert_eq!(
        server
            .put(&key, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    server
        .create_lead(&key, &json!({"firstName": "Ada", "phone": "+15125550101"}))
        .await;
    browser.goto("/console/inbox").await;
    browser.wait_for_text("First steps").await;
    let steps = checklist(&browser).await;
    assert!(
        steps.iter().any(|s| s == "Done Create a campaign"),
        "{steps:?}"
    );
    assert!(
        steps.iter().any(|s| s == "Done Import your leads"),
        "{steps:?}"
    );

    let phone = Browser::phone(&server).await;
    phone.sign_in("al@acme.example", &agent).await;
    phone.wait_for_text("First steps").await;
    let steps = checklist(&phone).await;
    assert!(
        steps.iter().any(|s| s
            .ends_with("Connect an assistant, so that replies are answered: an admin connects it")),
        "{steps:?}"
    );
    assert!(!phone.text().await.contains("Settings → Assistant"));
    let faults = phone.layout_faults().await;
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

async fn add_lead(browser: &Browser) {
    browser.goto("/console/leads").await;
    browser.click_link("Add lead").await;
    browser.wait_for_text("Campaign").await;
    browser.fill("First name", "Dana").await;
    browser.fill("Last name", "Ortiz").await;
    browser.fill("Phone", "(512) 555-0126").await;
    browser.fill("Email", "dana@example.com").await;
    browser.select("Campaign", "solar").await;
    browser.click_button("Add lead").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_lead_creates_one_lead_as_the_api_does_at_1280_and_360_pixels() {
    let server = TestServer::start().await;
    let key = server.key("acme", "admin").await;
    let org = server
        .request(
            hyper::Method::PATCH,
            "/v1/org",
            Some(&key),
            Some("application/json"),
            json!({"defaultCountry": "US"}).to_string().into_bytes(),
        )
        .await;
    assert_eq!(org.status, 200, "{:?}", org.body);
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "1d", "channel": "sms", "text": "Hi"}]});
    assert_eq!(
        server
            .put(&key, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    let password = server
        .user("acme", "al@acme.example", "Al Agent", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("al@acme.example", &password).await;
    add_lead(&browser).await;
    browser.wait_for_text("Conversation").await;
    assert!(browser.path().await.starts_with("/console/leads/"));
    // The phone as people in the organization's country write it.
    browser.wait_for_text("(512) 555-0126").await;
    let id = browser
        .path()
        .await
        .trim_start_matches("/console/leads/")
        .to_string();
    let lead = server.get(&key, &format!("/v1/leads/{id}")).await.json();
    assert_eq!(lead["phone"], json!("+15125550126"));
    assert_eq!(lead["customerProfile"], json!("solar"));
    let engagement = server
        .get(&key, &format!("/v1/leads/{id}/engagement"))
        .await
        .json();
    assert_eq!(engagement["state"], json!("active"), "{engagement}");

    // The same lead again, at a phone's width: refused, with a link to the one there is.
    let phone = Browser::phone(&server).await;
    phone.sign_in("al@acme.example", &password).await;
    add_lead(&phone).await;
    phone
        .wait_for_text("A lead with this phone or email exists already.")
        .await;
    phone.click_link("Open that lead").await;
    phone.wait_for_text("Conversation").await;
    assert_eq!(phone.path().await, format!("/console/leads/{id}"));
    phone.goto("/console/new-lead").await;
    phone.fill("First name", "Nobody").await;
    phone.fill("Phone", "12").await;
    phone.click_button("Add lead").await;
    phone
        .wait_for_text("Use a phone number like (512) 555-0101.")
        .await;
    let faults = phone.layout_faults().await;
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    let found = server.get(&key, "/v1/leads/search?q=Nobody").await.json();
    assert_eq!(found["leads"], json!([]), "nothing created");
}

/// Whether the field labelled `label` is shown (it has a box).
async fn shown(browser: &Browser, label: &str) -> bool {
    let script = format!(
        "const l = [...document.querySelectorAll('label')].find(l => l.textContent.trim() === '{label}'); \
         const f = l && document.getElementById(l.htmlFor); return !!f && f.checkVisibility();"
    );
    browser.run(&script).await == json!(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leads_filters_fold_on_a_phone_and_show_on_a_desktop() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(
            &key,
            &json!({"id": "ada", "firstName": "Ada", "phone": "+15125550101"}),
        )
        .await;
    let password = server
        .user("acme", "al@acme.example", "Al Agent", "agent")
        .await;
    let phone = Browser::phone(&server).await;
    phone.sign_in("al@acme.example", &password).await;
    phone.goto("/console/leads").await;
    phone.wait_for_text("More filters").await;
    assert!(shown(&phone, "Search").await);
    assert!(!shown(&phone, "Hot").await, "the filters are folded");
    let first_row = phone
        .run("return document.querySelector('table.leads tbody tr').getBoundingClientRect().top;")
        .await;
    assert!(
        first_row.as_f64().unwrap_or(9999.0) < 800.0,
        "the first lead is on the first screen: {first_row}"
    );
    phone
        .run("document.querySelector('details.more-filters summary').click(); return null;")
        .await;
    assert!(shown(&phone, "Hot").await, "unfolded");

    let desktop = Browser::open(&server).await;
    desktop.sign_in("al@acme.example", &password).await;
    desktop.goto("/console/leads").await;
    desktop.wait_for_text("Export CSV").await;
    assert!(shown(&desktop, "Hot").await, "shown on a desktop");
    assert!(shown(&desktop, "Campaign").await);
}
