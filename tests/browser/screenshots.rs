//! Screenshots of the console's pages for a person to look at (not a check):
//! `cargo test --test browser -- --ignored screenshots` writes them to
//! `target/screenshots/`.

use hyper::Method;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes screenshots for people to look at"]
async fn screenshots() {
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&out).expect("the screenshots' directory");
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    let admin = server.key("acme", "admin").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "0s", "channel": "sms", "text": "Hi {{firstName}}, it's Sam from Acme Solar."}, {"after": "2d", "channel": "sms", "text": "Still thinking about solar?"}]});
    server.put(&admin, "/v1/profiles/solar", &profile).await;
    for (id, first, last, phone) in [
        ("l-1", "Ada", "Lovelace", "+15125550101"),
        ("l-2", "Grace", "Hopper", "+15125550102"),
        ("l-3", "Alan", "Turing", "+15125550103"),
    ] {
        server
            .create_lead(&key, &json!({"id": id, "firstName": first, "lastName": last, "phone": phone, "customerProfile": "solar", "isAiOn": id != "l-2"}))
            .await;
    }
    server
        .send_json(
            Method::POST,
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550102", "text": "Can someone call me about the quote?"}),
        )
        .await;
    server
        .send_json(
            Method::POST,
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "Yes, interested!"}),
        )
        .await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    // A fresh organization: a lead whose sidebar holds meetings and consent; once it
    // is deleted, the empty inbox's first steps.
    let fresh = TestServer::start().await;
    let fresh_password = super::conversation::lead_with_a_full_sidebar(&fresh).await;
    let fresh_key = fresh.key("acme", "admin").await;
    let mut browsers = Vec::new();
    for (name, phone) in [("desktop", false), ("phone", true)] {
        let browser = if phone {
            Browser::phone(&fresh).await
        } else {
            Browser::open(&fresh).await
        };
        browser.sign_in("ana@acme.example", &fresh_password).await;
        browser.goto("/console/leads/l-1").await;
        browser.wait_for_text("Conversation").await;
        browser
            .screenshot(&out.join(format!("{name}-lead-sidebar.png")))
            .await;
        browsers.push((name, browser));
    }
    let _ = fresh
        .send_json(Method::DELETE, &fresh_key, "/v1/leads/l-1", &json!({}))
        .await;
    for (name, browser) in &browsers {
        browser.goto("/console/inbox").await;
        browser.wait_for_text("First steps").await;
        browser
            .screenshot(&out.join(format!("{name}-first-steps.png")))
            .await;
    }
    for (name, phone) in [("desktop", false), ("phone", true)] {
        let browser = if phone {
            Browser::phone(&server).await
        } else {
            Browser::open(&server).await
        };
        browser.goto("/console/login").await;
        browser
            .screenshot(&out.join(format!("{name}-login.png")))
            .await;
        browser.sign_in("ana@acme.example", &password).await;
        browser.wait_for_text("Sign out").await;
        for (page, path) in [
            ("inbox", "/console/inbox"),
            ("inbox-all", "/console/inbox?tab=all"),
            ("leads", "/console/leads"),
            ("lead", "/console/leads/l-2"),
            ("campaigns", "/console/campaigns"),
            ("campaign", "/console/campaigns/solar"),
            ("editor", "/console/campaigns/solar/edit"),
            ("import", "/console/import"),
            ("settings", "/console/settings"),
            ("settings-providers", "/console/settings/providers"),
            ("settings-assistant", "/console/settings/assistant"),
            ("settings-webhooks", "/console/settings/webhooks"),
            ("settings-keys", "/console/settings/keys"),
            ("settings-people", "/console/settings/people"),
            ("settings-consent", "/console/settings/consent"),
            ("settings-notifications", "/console/settings/notifications"),
            (
                "editor-playground",
                "/console/campaigns/solar/edit#chat-channel",
            ),
            ("notifications", "/console/notifications"),
            ("new-lead", "/console/new-lead"),
        ] {
            browser.goto(path).await;
            browser
                .screenshot(&out.join(format!("{name}-{page}.png")))
                .await;
        }
        // The editor after a refused "Save": each refusal beside its field.
        browser.goto("/console/campaigns/solar/edit").await;
        browser.fill("After (step 2)", "2 days").await;
        browser
            .fill("Text (step 2)", "Homes in {{lead.city}} are saving")
            .await;
        browser.click_button("Save").await;
        browser.wait_for_text("Not saved.").await;
        browser
            .run("document.getElementById('step-1-after').scrollIntoView(); return 0;")
            .await;
        browser
            .screenshot(&out.join(format!("{name}-editor-refused.png")))
            .await;
    }
}
