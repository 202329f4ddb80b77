//! Settings: an admin saves a change (one invalid field first, then fixed), the call
//! opt-out's digit and sentence too; an agent and a viewer are refused the page.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_saves_the_organization_after_fixing_a_field() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Settings").await;
    browser.fill("Business name", "Acme Solar").await;
    browser.fill("Time zone", "Mars/Olympus").await;
    browser.click_button("Save").await;
    browser
        .wait_for_text("Choose a time zone from the list")
        .await;
    browser.fill("Time zone", "America/Chicago").await;
    browser.fill("Default country", "US").await;
    browser.click_button("Save").await;
    browser.wait_for_text("Saved.").await;
    let org = server.get(&admin, "/v1/org").await.json();
    assert_eq!(org["timeZone"], "America/Chicago");
    assert_eq!(org["business"]["name"], "Acme Solar");
    assert_eq!(org["defaultCountry"], "US");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_sets_the_call_opt_out_digit_and_turns_the_sentence_off() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Settings").await;
    assert_eq!(
        browser
            .field("Call opt-out digit")
            .await
            .prop("value")
            .await
            .expect("value"),
        Some("9".to_string())
    );
    browser.fill("Call opt-out digit", "#").await;
    browser.click_button("Save").await;
    browser.wait_for_text("Use one key from 0 to 9.").await;
    browser.fill("Call opt-out digit", "8").await;
    browser
        .field("Calls say how to opt out")
        .await
        .click()
        .await
        .expect("click");
    browser.click_button("Save").await;
    browser.wait_for_text("Saved.").await;
    let org = server.get(&admin, "/v1/org").await.json();
    assert_eq!(org["voiceOptOutDigit"], "8");
    assert_eq!(org["voiceOptOutSentence"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_and_a_viewer_are_refused_settings() {
    let server = TestServer::start().await;
    for role in ["agent", "viewer"] {
        let email = format!("{role}@acme.example");
        let password = server.user("acme", &email, role, role).await;
        let browser = Browser::open(&server).await;
        browser.sign_in(&email, &password).await;
        browser.wait_for_text("Sign out").await;
        assert!(
            !browser.text().await.contains("Settings"),
            "{role} has no Settings link"
        );
        browser.goto("/console/settings").await;
        browser
            .wait_for_text("You do not have permission to do this.")
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_saves_the_consent_section_and_sees_it_again() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Settings").await;
    browser.click_link("Consent").await;
    browser
        .wait_for_text("Outreach that needs recorded consent")
        .await;
    let checked = |label: &'static str| {
        let browser = &browser;
        async move {
            browser
                .field(label)
                .await
                .is_selected()
                .await
                .expect("checked")
        }
    };
    assert!(checked("voice marketing").await, "a new org's default");
    assert!(!checked("sms marketing").await);
    browser
        .field("sms marketing")
        .await
        .click()
        .await
        .expect("click");
    browser.fill("Opt-out keywords", "¡Basta!\n!!!").await;
    browser.click_button("Save consent").await;
    browser.wait_for_text("each of optOutKeywords").await;
    browser.fill("Opt-out keywords", "¡Basta!\nAlto").await;
    browser
        .field("Only the channel it came on")
        .await
        .click()
        .await
        .expect("click");
    browser.click_button("Save consent").await;
    browser.wait_for_text("Saved.").await;
    let org = server.get(&admin, "/v1/org").await.json();
    assert_eq!(
        org["consentRequired"],
        serde_json::json!([{"channel": "sms", "purpose": "marketing"},
                           {"channel": "voice", "purpose": "marketing"}])
    );
    assert_eq!(org["optOutKeywords"], serde_json::json!(["basta", "alto"]));
    assert_eq!(org["revocationScope"], "channel");
    assert_eq!(
        browser.path().await,
        "/console/settings/consent",
        "back to its section"
    );
    browser.goto("/console/settings/consent").await;
    assert!(checked("sms marketing").await);
    assert!(checked("voice marketing").await);
    assert!(checked("Only the channel it came on").await);
    let keywords = browser.field("Opt-out keywords").await;
    assert_eq!(
        keywords.prop("value").await.expect("value").as_deref(),
        Some("basta\nalto")
    );
}

/// "Send test" to a phone typed as people write it: refused in words beside the field
/// (with the navigation) until the organization has a default country, then sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_test_to_a_phone_in_any_format() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Settings").await;
    browser.click_link("Providers").await;
    browser.fill("Send the test to", "(512) 555-0100").await;
    browser.click_button("Send test").await;
    browser
        .wait_for_text("Write the number with its country code")
        .await;
    assert!(browser.text().await.contains("Sign out"), "a whole page");
    let org = serde_json::json!({"defaultCountry": "US"});
    assert_eq!(server.patch(&admin, "/v1/org", &org).await.status, 200);
    browser.fill("Send the test to", "(512) 555-0100").await;
    browser.click_button("Send test").await;
    browser.wait_for_text("sandbox took it").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_organization_takes_central_time_usa_and_9pm_in_one_save_on_both_widths() {
    for (width, height) in [(1280, 900), (360, 800)] {
        let server = TestServer::start().await;
        let admin = server.key("acme", "admin").await;
        let password = server
            .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
            .await;
        let browser = Browser::sized(&server, width, height).await;
        browser.sign_in("ana@acme.example", &password).await;
        browser.click_link("Settings").await;
        browser.fill("Time zone", "Central Time").await;
        browser.fill("Default country", "USA").await;
        browser.fill("Quiet hours from", "9pm").await;
        browser.fill("Quiet hours until", "8:00 AM").await;
        browser.click_button("Save").await;
        browser.wait_for_text("Saved.").await;
        let org = server.get(&admin, "/v1/org").await.json();
        assert_eq!(org["timeZone"], "America/Chicago", "{width}");
        assert_eq!(org["defaultCountry"], "US", "{width}");
        assert_eq!(org["quietHours"]["start"], "21:00", "{width}");
        assert_eq!(org["quietHours"]["end"], "08:00", "{width}");
        assert!(browser.layout_faults().await.is_empty(), "{width}");
    }
}

/// A channel on the sandbox shows no provider fields (nothing to fill for it); choosing
/// Twilio shows its Account SID and the rest at once, and the sandbox again hides them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_hides_a_providers_fields_until_a_provider_is_chosen() {
    let server = TestServer::start().await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Settings").await;
    browser.click_link("Providers").await;
    let shown = |label: &'static str| {
        let browser = &browser;
        async move {
            browser
                .field(label)
                .await
                .is_displayed()
                .await
                .expect("displayed or not")
        }
    };
    assert!(!shown("Account SID (SMS)").await, "hidden on the sandbox");
    assert!(!shown("SMTP host (Email)").await, "hidden on the sandbox");
    browser.select("Kind (SMS)", "Twilio").await;
    assert!(shown("Account SID (SMS)").await, "shown for Twilio");
    assert!(shown("Auth token (SMS)").await, "shown for Twilio");
    assert!(
        !shown("Account SID (Voice)").await,
        "voice stays on the sandbox"
    );
    browser.select("Kind (SMS)", "Sandbox").await;
    assert!(!shown("Account SID (SMS)").await, "hidden again");
}
