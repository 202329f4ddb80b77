//! The profile editor: a campaign edited and saved with an invalid field first, then
//! fixed, a step added and the first moved down; every refusal of one "Save" beside its
//! field, in words, nothing saved; the help beside durations and texts (the
//! organization's own fields offered); the preview for a lead found by name or phone,
//! an empty placeholder flagged; the playground answering by email with unsaved
//! instructions, nothing stored.

use hyper::Method;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::TestServer;

async fn admin_browser(server: &TestServer) -> Browser {
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_is_edited_with_one_invalid_field_then_saved() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "0s", "channel": "sms", "text": "Hi {{firstName}}"}]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    let browser = admin_browser(&server).await;
    browser.click_link("Campaigns").await;
    browser.click_link("solar").await;
    browser.click_link("Edit campaign").await;
    browser.fill("After (step 1)", "soon").await;
    browser.click_button("Save").await;
    browser
        .wait_for_text("Step 1 · After: write a duration such as 2d, 3h or 30m")
        .await;
    browser.fill("After (step 1)", "2h").await;
    browser.click_button("Add step").await;
    browser
        .fill(
            "Text (step 2)",
            "Still thinking about solar, {{firstName}}?",
        )
        .await;
    browser.click_button("Preview").await;
    browser
        .wait_for_text("Still thinking about solar, Sam?")
        .await;
    browser.click_button("Move step 1 down").await;
    browser.click_button("Save").await;
    browser.wait_for_text("Funnel").await;
    let saved = server.get(&admin, "/v1/profiles/solar").await.json();
    assert_eq!(
        saved["cadence"][0]["text"],
        json!("Still thinking about solar, {{firstName}}?"),
        "{saved}"
    );
    assert_eq!(saved["cadence"][1]["after"], json!("2h"), "{saved}");
    assert_eq!(saved["cadence"][1]["text"], json!("Hi {{firstName}}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_answers_with_unsaved_instructions_and_stores_nothing() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let model = FakeModel::start().await;
    server
        .send_json(Method::PATCH, &admin, "/v1/org", &model.settings())
        .await;
    model.push(Step::text("Yes, we install on metal roofs."));
    let browser = admin_browser(&server).await;
    browser.goto("/console/campaigns/new").await;
    browser
        .fill(
            "Instructions",
            "You are Sam from Acme Solar; you know roofs.",
        )
        .await;
    browser.select("Conversation on", "Email").await;
    browser
        .fill("As the lead", "Do you install on metal roofs?")
        .await;
    browser.click_button("Try the assistant").await;
    browser
        .wait_for_text("Yes, we install on metal roofs.")
        .await;
    browser.wait_for_text("Answered in").await;
    let request = model.requests().pop().expect("one request");
    let text = request.to_string();
    assert!(
        text.contains("you know roofs"),
        "the unsaved instructions: {text}"
    );
    assert!(text.contains("Do you install on metal roofs?"), "{text}");
    assert!(
        text.contains("plain-text body of an email"),
        "answered as on the chosen channel: {text}"
    );
    assert_eq!(
        server.get(&admin, "/v1/profiles").await.json()["profiles"],
        json!([]),
        "nothing saved"
    );
    let leads = server.get(&admin, "/v1/leads/search").await.json();
    assert_eq!(leads["total"], json!(0), "no lead, no message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_save_shows_every_refusal_beside_its_field_and_keeps_what_was_typed() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [
        {"after": "0s", "channel": "sms", "text": "Hi {{firstName}}"},
        {"after": "1d", "channel": "sms", "text": "Still there?"},
        {"after": "2d", "channel": "sms", "text": "Last try"}
    ]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    let browser = admin_browser(&server).await;
    browser.goto("/console/campaigns/solar/edit").await;
    assert!(
        browser
            .description("After (step 2)")
            .await
            .contains("a duration such as 2d, 3h or 30m"),
        "help beside After"
    );
    assert!(
        browser
            .description("Reply delay")
            .await
            .contains("30s, 5m or 1h"),
        "help beside Reply delay"
    );
    browser.fill("After (step 2)", "2 days").await;
    browser.fill("Text (step 1)", "").await;
    browser
        .fill("Text (step 3)", "Hi {{lead.fist_name}}, last try")
        .await;
    browser.fill("Reply delay", "soon").await;
    browser.click_button("Save").await;
    browser.wait_for_text("4 fields need a change").await;
    let beside = |label: &'static str| {
        let browser = &browser;
        async move { browser.description(label).await }
    };
    assert!(
        beside("After (step 2)")
            .await
            .contains("Step 2 · After: write a duration such as 2d, 3h or 30m"),
        "{}",
        beside("After (step 2)").await
    );
    assert!(beside("Text (step 1)")
        .await
        .contains("Step 1 · Text: write the message this step sends"));
    let step3 = beside("Text (step 3)").await;
    assert!(
        step3.contains("Step 3 · Text: unknown placeholder {{lead.fist_name}}; the placeholders are {{firstName}}"),
        "{step3}"
    );
    assert!(beside("Reply delay")
        .await
        .contains("Reply delay: write a duration such as 30s, 5m or 1h"));
    assert!(
        !beside("After (step 1)").await.contains("Step 1 · After"),
        "only refused fields are marked"
    );
    assert!(
        !browser.text().await.contains("Invalid format for field"),
        "no API words"
    );
    assert_eq!(
        browser
            .field("After (step 2)")
            .await
            .prop("value")
            .await
            .expect("value")
            .as_deref(),
        Some("2 days"),
        "what was typed is kept"
    );
    let saved = server.get(&admin, "/v1/profiles/solar").await.json();
    assert_eq!(saved["cadence"], profile["cadence"], "nothing saved");
    assert_eq!(saved["replyDelay"], json!("5s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_finds_a_lead_by_name_or_phone_and_flags_an_empty_placeholder() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let key = server.key("acme", "write").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [
        {"after": "0s", "channel": "sms", "text": "Homes in {{additionalInfo.City}} are saving, {{firstName}}."}
    ]});
    server.put(&admin, "/v1/profiles/solar", &profile).await;
    for (id, first, last, phone, info) in [
        (
            "l-1",
            "Maria",
            "Gonzalez",
            "+15125550101",
            json!({"City": "Austin"}),
        ),
        (
            "l-2",
            "Derek",
            "Stone",
            "+15125550102",
            json!({"Roof": "metal"}),
        ),
        ("l-3", "Maria", "Lopez", "+15125550103", json!({})),
    ] {
        server
            .create_lead(&key, &json!({"id": id, "firstName": first, "lastName": last, "phone": phone, "additionalInfo": info}))
            .await;
    }
    let browser = admin_browser(&server).await;
    browser.goto("/console/campaigns/solar/edit").await;
    let help = browser.description("Text (step 1)").await;
    assert!(
        help.contains("{{additionalInfo.City}}") && help.contains("{{additionalInfo.Roof}}"),
        "the organization's own fields offered: {help}"
    );
    browser.fill("Preview for lead", "(512) 555-0102").await;
    browser.click_button("Preview").await;
    browser.wait_for_text("Previewed for Derek Stone").await;
    browser
        .wait_for_text("{{additionalInfo.City}} is empty for this lead")
        .await;
    browser.wait_for_text("Homes in are saving, Derek.").await;
    browser.fill("Preview for lead", "Maria").await;
    browser.click_button("Preview").await;
    browser.wait_for_text("Also matching; preview for:").await;
    let first = browser.text().await;
    let other = if first.contains("Previewed for Maria Gonzalez") {
        "Maria Lopez (+15125550103)"
    } else {
        "Maria Gonzalez (+15125550101)"
    };
    browser.click_button(other).await;
    browser
        .wait_for_text(&format!("Previewed for {other}"))
        .await;
    browser.fill("Preview for lead", "Nobody Here").await;
    browser.click_button("Preview").await;
    browser
        .wait_for_text("No lead matches \"Nobody Here\"")
        .await;
    browser.wait_for_text("Edit solar").await;
}

/// The editor chooses the calendar the assistant books on, what a call screener hears
/// and the voicemail a machine gets; "Leave the voicemail" without its words is refused
/// beside the field, and the saved campaign says all three as the API reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_chooses_the_calendar_the_screener_reply_and_the_voicemail() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let calendar = json!({"timeZone": "America/Chicago",
        "hours": {"mon": [["09:00", "17:00"]]},
        "owner": {"name": "Dana Ortiz", "email": "dana@acme.example"}});
    let r = server.put(&admin, "/v1/calendars/sales", &calendar).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "0s", "channel": "sms", "text": "Hi"}]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );
    let browser = admin_browser(&server).await;
    browser.click_link("Campaigns").await;
    browser.click_link("solar").await;
    browser.click_link("Edit campaign").await;
    browser.select("Calendar", "sales").await;
    browser
        .fill(
            "What a call screener hears",
            "Hi, this is Sam from Acme Solar calling for {{firstName}}.",
        )
        .await;
    browser
        .select("When a machine answers", "Leave the voicemail below")
        .await;
    browser.click_button("Save").await;
    browser
        .wait_for_text("Voicemail: write what is said after the beep, or choose Hang up")
        .await;
    browser
        .fill(
            "Voicemail",
            "Hi {{firstName}}, Sam from Acme Solar. I will text you.",
        )
        .await;
    browser.click_button("Save").await;
    browser.wait_for_text("Funnel").await;
    let saved = server.get(&admin, "/v1/profiles/solar").await.json();
    assert_eq!(saved["calendar"], json!("sales"), "{saved}");
    assert_eq!(
        saved["screeningReply"],
        json!("Hi, this is Sam from Acme Solar calling for {{firstName}}."),
        "{saved}"
    );
    assert_eq!(
        saved["voicemail"],
        json!({"text": "Hi {{firstName}}, Sam from Acme Solar. I will text you.", "onMachine": "leave"}),
        "{saved}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_campaign_is_named_with_spaces_and_every_page_shows_that_name() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let browser = admin_browser(&server).await;
    browser.click_link("Campaigns").await;
    browser.click_link("New campaign").await;
    browser.fill("Campaign name", "Spring Solar Push").await;
    browser.fill("Instructions", "You are Sam.").await;
    browser.fill("Text (step 1)", "Hi {{firstName}}").await;
    browser.click_button("Save").await;
    browser.wait_for_text("Funnel").await;
    assert_eq!(browser.path().await, "/console/campaigns/spring-solar-push");
    let saved = server
        .get(&admin, "/v1/profiles/spring-solar-push")
        .await
        .json();
    assert_eq!(saved["displayName"], json!("Spring Solar Push"));
    // The editor shows the id only as the integrators' one.
    browser.click_link("Edit campaign").await;
    browser
        .wait_for_text("ID for integrations: spring-solar-push")
        .await;
    // Leads: the filter and the "Add to campaign" choice read its name.
    browser.click_link("Leads").await;
    browser.select("Campaign", "Spring Solar Push").await;
}
