//! No API text on any page: a walk over every page of a seeded organization (the inbox's
//! tabs, leads, a lead with events of many types, campaigns, a campaign, its editor,
//! import, every settings page, meetings, notifications) fails on visible text that
//! speaks the API: `/v1/`, `PATCH `, `PUT `, `customerProfile`, a JSON block or a
//! `snake_case` code. Without an assistant no lead reads Owner "Assistant" or
//! "Assistant on", and "Hand back" is not offered.

use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

/// The visible text's faults, one line each (the match and its surroundings).
const FAULTS: &str = r#"
const text = document.body.innerText;
const rules = [
  ["an API path", /\/v1\//g],
  ["an HTTP method", /\b(PATCH|PUT) /g],
  ["a wire field", /customerProfile/g],
  ["a JSON block", /\{[^{}]*"[^"\n]+"\s*:[^{}]*\}/g],
  // (A webhook's event names, `lead.opted_out`, are for integrators: dotted names pass.)
  ["a snake_case code", /(?<![.\w])[a-z][a-z0-9]*(_[a-z0-9]+)+(?![.\w])/g],
];
const out = [];
for (const [what, re] of rules) {
  for (const m of text.matchAll(re)) {
    const at = Math.max(0, m.index - 40);
    out.push(what + ": " + JSON.stringify(text.slice(at, m.index + m[0].length + 40)));
  }
}
return out;
"#;

/// An organization with a campaign, a calendar, an admin, and the lead "l-1" with
/// messages both ways, an email, a booked meeting, consent, a custom event, a tool call,
/// a blocked send, a person's actions and an outbound call.
async fn seeded(server: &TestServer) -> String {
    let admin = server.key("acme", "admin").await;
    let key = server.key("acme", "write").await;
    let profile = json!({"instructions": "You are Sam.", "cadence": [
        {"after": "0s", "channel": "sms", "text": "Hi {{firstName}}, it's Sam from Acme Solar."},
        {"after": "2d", "channel": "email", "subject": "Your quote", "text": "Homes near you are saving."}
    ]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar-spring", &profile)
            .await
            .status,
        200
    );
    let password = super::conversation::lead_with_a_full_sidebar(server).await;
    let body =
        json!({"customerProfile": "solar-spring", "tags": [{"id": "roof", "name": "Metal roof"}]});
    let patched = server
        .request(
            hyper::Method::PATCH,
            "/v1/leads/l-1",
            Some(&key),
            Some("application/json"),
            body.to_string().into_bytes(),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    for body in [
        json!({"owner": "lead", "channel": "sms", "content": {"text": "How much would panels cost for my roof?"}}),
        json!({"owner": "user", "channel": "sms", "content": {"text": "About $12,000 before the tax credit."}}),
        json!({"owner": "user", "channel": "email", "content": {"text": "Quote attached.", "subject": "Your quote"}, "recordOnly": true}),
    ] {
        let sent = server.post(&key, "/v1/leads/l-1/messages", &body).await;
        assert!(sent.status < 300, "{:?}", sent.body);
    }
    for body in [
        json!({"type": "QUOTE_SENT", "id": "quote-1", "data": {"amount": 12000, "roofType": "metal"}}),
        json!({"type": "TOOL_CALL", "id": "tool-1", "data": {"tool": "mark_hot", "arguments": {}, "result": {"ok": true}}}),
    ] {
        let added = server.post(&key, "/v1/leads/l-1/events", &body).await;
        assert!(added.status < 300, "{:?}", added.body);
    }
    let called = server
        .post(
            &key,
            "/v1/leads/l-1/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    assert!(called.status < 500, "{:?}", called.body);
    // A second lead on the DNC list, whose send is blocked.
    server
        .create_lead(&key, &json!({"id": "l-2", "firstName": "Grace", "lastName": "Hopper", "phone": "+15125550102"}))
        .await;
    let _ = server
        .post(&key, "/v1/dnc/register", &json!({"phone": "+15125550102"}))
        .await;
    let _ = server
        .post(
            &key,
            "/v1/leads/l-2/messages",
            &json!({"owner": "user", "channel": "sms", "content": {"text": "Hello Grace"}}),
        )
        .await;
    password
}

async fn walk(browser: &Browser) -> Vec<String> {
    let mut pages: Vec<String> = [
        "/console/inbox?tab=attention",
        "/console/inbox?tab=replied",
        "/console/inbox?tab=mine",
        "/console/inbox?tab=assistant",
        "/console/inbox?tab=all",
        "/console/leads",
        "/console/leads?state=stopped",
        "/console/leads/l-1",
        "/console/leads/l-2",
        "/console/leads/l-1/meetings",
        "/console/campaigns",
        "/console/campaigns/solar-spring",
        "/console/campaigns/solar-spring/edit",
        "/console/import",
        "/console/meetings",
        "/console/notifications",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
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
    ] {
        pages.push(format!("/console/settings/{section}"));
    }
    let mut faults = Vec::new();
    for path in &pages {
        browser.goto(path).await;
        browser.wait_for_text("Sign out").await;
        let found = browser.run(FAULTS).await;
        for fault in found.as_array().into_iter().flatten() {
            faults.push(format!("{path}: {}", fault.as_str().unwrap_or_default()));
        }
    }
    faults
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_speaks_the_api() {
    let server = TestServer::start().await;
    let password = seeded(&server).await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    let faults = walk(&browser).await;
    assert!(faults.is_empty(), "{}", faults.join("\n"));

    // Without an assistant nothing reads as if one answered, and nothing hands back to it.
    browser.goto("/console/leads/l-1").await;
    browser.wait_for_text("Owner").await;
    let text = browser.text().await;
    assert!(!text.contains("Assistant on"), "{text}");
    let owner = browser
        .run("const dt = [...document.querySelectorAll('dt')].find(d => d.textContent === 'Owner'); return dt.nextElementSibling.textContent;")
        .await;
    assert_ne!(owner, json!("Assistant"));
    assert!(!browser.has_button("Hand back").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_speaks_the_api_on_a_phone() {
    let server = TestServer::start().await;
    let password = seeded(&server).await;
    let browser = Browser::phone(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    let faults = walk(&browser).await;
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}
