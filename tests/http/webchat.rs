//! Web chat (`shared/spec/webchat.md`) over real HTTPS: a visitor's session from an
//! allowed origin, the assistant's answer on the session's stream (the test kit's fake
//! model), the contact form making a lead (the unique-contact rule, `source: webchat`,
//! the transcript joined on channel `webchat`) and the consent box's ledger entry with
//! its proof, the assistant's `capture_contact`; and every refusal: a foreign origin
//! (403, no CORS), a bad token (401), web chat off (404), a long message (413), each
//! bound (429 with `Retry-After` and words), another organization's session.

use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::{poll, Org, TestServer, WAIT};

use crate::answers::*;
use crate::engagement::*;

const SITE: &str = "https://shop.example";
const CONSENT: &str = "I agree that Acme Solar may text and call me about solar offers.";

/// `acme` with web chat on for [`SITE`], campaign `web`, and (when given) the fake
/// model as its assistant. Answers the organization's id.
async fn enable(ts: &TestServer, admin: &str, model: Option<&FakeModel>, extra: Value) -> String {
    put_profile(
        ts,
        admin,
        "web",
        &json!({"instructions": "You are Sam from Acme Solar.",
                "cadence": [sms_step("1d", "Hello {{firstName}}")]}),
    )
    .await;
    if let Some(model) = model {
        set_org(ts, admin, &model.settings()).await;
    }
    let mut webchat = json!({"enabled": true, "allowedOrigins": [SITE], "greeting": "Hi! Questions about solar?",
                             "profile": "web", "consentText": CONSENT});
    if let (Value::Object(w), Value::Object(e)) = (&mut webchat, extra) {
        w.extend(e);
    }
    let org = set_org(ts, admin, &json!({"webchat": webchat})).await;
    assert_eq!(org["webchat"]["enabled"], json!(true), "{org}");
    org["id"].as_str().expect("org id").to_string()
}

async fn new_session(ts: &TestServer, org: &str) -> (String, String) {
    let r = ts
        .webchat(
            Method::POST,
            &format!("/webchat/{org}/sessions"),
            Some(SITE),
            None,
            None,
        )
        .await;
    let body = expect(&r, 201);
    assert_eq!(r.headers["access-control-allow-origin"], SITE);
    (
        body["sessionId"].as_str().expect("sessionId").to_string(),
        body["token"].as_str().expect("token").to_string(),
    )
}

async fn say(
    ts: &TestServer,
    org: &str,
    session: &str,
    token: &str,
    text: &str,
) -> engaged::testkit::server::Response {
    ts.webchat(
        Method::POST,
        &format!("/webchat/{org}/sessions/{session}/messages"),
        Some(SITE),
        Some(token),
        Some(&json!({"text": text})),
    )
    .await
}

/// Reads the stream until a line event whose text is `text`.
async fn line_with(stream: &mut engaged::testkit::console::EventStream, text: &str) -> Value {
    let mut seen = Vec::new();
    loop {
        let Some(event) = stream.next(WAIT).await else {
            panic!("no line {text:?} on the stream; seen {seen:?}");
        };
        if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
            let value: Value = serde_json::from_str(data).expect("JSON data");
            if value["text"] == json!(text) {
                return value;
            }
        }
        seen.push(event);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visitor_chats_with_the_assistant_then_becomes_a_lead_with_consent() {
    let acme = Org::start().await;
    let (ts, admin, key) = (&acme.ts, &acme.admin, &acme.write);
    let model = FakeModel::start().await;
    let org = enable(ts, admin, Some(&model), json!({})).await;
    let (session, token) = new_session(ts, &org).await;
    assert_eq!(token.len(), 43, "256 bits, URL-safe base64");

    let mut stream = ts.webchat_events(&org, &session, &token, SITE).await;
    assert_eq!(stream.status, 200);
    line_with(&mut stream, "Hi! Questions about solar?").await;
    model.push(Step::text("Solar pays back in about 7 years."));
    let r = say(
        ts,
        &org,
        &session,
        &token,
        "How long until solar pays back?",
    )
    .await;
    assert_eq!(expect(&r, 202)["from"], json!("visitor"));
    assert_eq!(r.headers["access-control-allow-origin"], SITE);
    line_with(&mut stream, "How long until solar pays back?").await;
    let answer = line_with(&mut stream, "Solar pays back in about 7 years.").await;
    assert_eq!(answer["from"], json!("assistant"));
    // The model was asked with the campaign's instructions and the visitor's words.
    let asked = model.requests();
    let asked = asked.last().expect("a model request").to_string();
    assert!(asked.contains("You are Sam from Acme Solar."), "{asked}");
    assert!(asked.contains("How long until solar pays back?"), "{asked}");

    // The form with the consent box ticked: a lead, its transcript, its consent.
    let form = json!({"name": "Dana Reyes", "phone": "+15125550142", "email": "dana@example.com",
                      "consent": true, "pageUrl": "https://shop.example/solar?x=1"});
    let path = format!("/webchat/{org}/sessions/{session}/contact");
    let r = ts
        .webchat(Method::POST, &path, Some(SITE), Some(&token), Some(&form))
        .await;
    let lead_id = expect(&r, 200)["leadId"]
        .as_str()
        .expect("leadId")
        .to_string();
    let lead = expect(&ts.get(key, &format!("/v1/leads/{lead_id}")).await, 200);
    assert_eq!(lead["firstName"], json!("Dana"));
    assert_eq!(lead["customerProfile"], json!("web"));
    assert_eq!(lead["additionalInfo"]["source"], json!("webchat"));
    let messages = expect(
        &ts.get(key, &format!("/v1/leads/{lead_id}/messages")).await,
        200,
    );
    let lines: Vec<(String, String, String)> = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["channel"].as_str().unwrap_or_default().to_string(),
                m["owner"].as_str().unwrap_or_default().to_string(),
                m["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let line = |c: &str, o: &str, t: &str| (c.to_string(), o.to_string(), t.to_string());
    assert_eq!(
        lines,
        [
            line("webchat", "user", "Hi! Questions about solar?"),
            line("webchat", "lead", "How long until solar pays back?"),
            line("webchat", "user", "Solar pays back in about 7 years."),
        ],
        "{messages}"
    );
    let ledger = expect(
        &ts.get(key, &format!("/v1/leads/{lead_id}/consent")).await,
        200,
    );
    let entries = ledger["entries"].as_array().expect("entries");
    let mut channels: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["channel"].as_str())
        .collect();
    channels.sort_unstable();
    assert_eq!(channels, ["email", "sms", "voice"], "{ledger}");
    for entry in entries {
        assert_eq!(entry["source"], json!("webchat"));
        assert_eq!(entry["status"], json!("granted"));
        let proof = &entry["proof"];
        assert_eq!(proof["text"], json!(CONSENT));
        assert_eq!(proof["url"], json!("https://shop.example/solar?x=1"));
        assert_eq!(proof["ip"], json!("127.0.0.1"));
        assert_eq!(proof["userAgent"], json!("WebchatTest/1.0"));
    }

    // A later message joins the lead's messages as it comes.
    model.push(Step::text("Thanks Dana!"));
    expect(&say(ts, &org, &session, &token, "Great").await, 202);
    line_with(&mut stream, "Thanks Dana!").await;
    let messages = expect(
        &ts.get(key, &format!("/v1/leads/{lead_id}/messages")).await,
        200,
    );
    assert_eq!(
        messages["messages"].as_array().map(Vec::len),
        Some(5),
        "{messages}"
    );
    // The console's inbox names where the lead wrote, in words.
    let password = ts.user("acme", "ana@acme.example", "Ana", "agent").await;
    let person = ts.sign_in("ana@acme.example", &password).await;
    let inbox = ts
        .console(
            Method::GET,
            "/console/inbox?tab=all",
            Some(&person.cookie),
            None,
            &[],
        )
        .await;
    assert!(
        inbox
            .text()
            .contains(r#"<td data-label="Channel">Web chat</td>"#),
        "{}",
        inbox.text()
    );

    // Another visit giving the same phone, the box unticked: the same lead, no new consent.
    let (second, token2) = new_session(ts, &org).await;
    let form = json!({"name": "Dana", "phone": "+1 (512) 555-0142", "consent": false});
    let path = format!("/webchat/{org}/sessions/{second}/contact");
    let r = ts
        .webchat(Method::POST, &path, Some(SITE), Some(&token2), Some(&form))
        .await;
    assert_eq!(
        expect(&r, 200)["leadId"],
        json!(lead_id),
        "the unique-contact rule"
    );
    let ledger = expect(
        &ts.get(key, &format!("/v1/leads/{lead_id}/consent")).await,
        200,
    );
    assert_eq!(ledger["entries"].as_array().map(Vec::len), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistant_makes_a_visitor_a_lead_with_capture_contact() {
    let acme = Org::start().await;
    let (ts, admin, key) = (&acme.ts, &acme.admin, &acme.write);
    let model = FakeModel::start().await;
    let org = enable(ts, admin, Some(&model), json!({})).await;
    let (session, token) = new_session(ts, &org).await;
    let mut stream = ts.webchat_events(&org, &session, &token, SITE).await;
    model.push(Step::tool(
        "c1",
        "capture_contact",
        json!({"name": "Bo", "email": "bo@example.com"}),
    ));
    model.push(Step::text("Thanks Bo, we will email you."));
    expect(
        &say(ts, &org, &session, &token, "Email me at bo@example.com").await,
        202,
    );
    line_with(&mut stream, "Thanks Bo, we will email you.").await;
    let first = &model.requests()[0];
    assert_eq!(
        first["tools"][0]["function"]["name"],
        json!("capture_contact")
    );
    let leads = expect(
        &ts.get(
            key,
            "/v1/leads?createdSince=2000-01-01T00%3A00%3A00.000000Z",
        )
        .await,
        200,
    );
    let leads = leads["leads"].as_array().expect("leads").clone();
    assert_eq!(leads.len(), 1, "{leads:?}");
    assert_eq!(leads[0]["email"], json!("bo@example.com"));
    assert_eq!(leads[0]["additionalInfo"]["source"], json!("webchat"));
    let id = leads[0]["id"].as_str().expect("id");
    let messages = poll("the answer on the lead", WAIT, || async move {
        let m = expect(&ts.get(key, &format!("/v1/leads/{id}/messages")).await, 200);
        match m["messages"].as_array().map(Vec::len) {
            Some(3) => Ok(m),
            _ => Err(m.to_string()),
        }
    })
    .await;
    assert_eq!(
        messages["messages"][2]["content"]["text"],
        json!("Thanks Bo, we will email you.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_change_nothing_and_name_their_cause() {
    let acme = Org::start().await;
    let (ts, admin) = (&acme.ts, &acme.admin);
    let org = enable(ts, admin, None, json!({})).await;
    let sessions = format!("/webchat/{org}/sessions");

    // A foreign origin: 403 in words, no CORS header; its preflight too.
    for origin in [Some("https://evil.example"), None] {
        let r = ts
            .webchat(Method::POST, &sessions, origin, None, None)
            .await;
        let body = expect(&r, 403);
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.contains("not allowed")),
            "{body}"
        );
        assert!(r.headers.get("access-control-allow-origin").is_none());
    }
    let r = ts
        .webchat(
            Method::OPTIONS,
            &sessions,
            Some("https://evil.example"),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, 403);
    assert!(r.headers.get("access-control-allow-origin").is_none());
    let r = ts
        .webchat(Method::OPTIONS, &sessions, Some(SITE), None, None)
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(r.headers["access-control-allow-origin"], SITE);
    assert!(r.headers["access-control-allow-headers"]
        .to_str()
        .is_ok_and(|h| h.contains("authorization")));

    let (session, token) = new_session(ts, &org).await;
    let messages = format!("/webchat/{org}/sessions/{session}/messages");
    // A wrong token, none, or the stream's: 401.
    for bad in [Some("nope"), None] {
        let r = ts
            .webchat(
                Method::POST,
                &messages,
                Some(SITE),
                bad,
                Some(&json!({"text": "hi"})),
            )
            .await;
        assert_eq!(r.status, 401, "{}", r.text());
    }
    let stream = ts.webchat_events(&org, &session, "nope", SITE).await;
    assert_eq!(stream.status, 401);
    // Too long: 413 in words; unknown member: 400.
    let r = say(ts, &org, &session, &token, &"x".repeat(1_001)).await;
    let body = expect(&r, 413);
    assert_eq!(
        body["message"],
        json!("A message is at most 1000 characters.")
    );
    assert_eq!(
        r.headers["access-control-allow-origin"], SITE,
        "the widget reads it"
    );
    expect(
        &say(ts, &org, &session, &token, &"x".repeat(1_000)).await,
        202,
    );
    let r = ts
        .webchat(
            Method::POST,
            &messages,
            Some(SITE),
            Some(&token),
            Some(&json!({"text": "a", "html": "<b>"})),
        )
        .await;
    assert_eq!(r.status, 400);

    // Another organization: its chat off is 404; on, this session is none of its own.
    let globex_admin = ts.key("globex", "admin").await;
    let globex = ts.org_id("globex").await;
    let r = ts
        .webchat(
            Method::POST,
            &format!("/webchat/{globex}/sessions"),
            Some(SITE),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, 404);
    assert!(r.headers.get("access-control-allow-origin").is_none());
    set_org(
        ts,
        &globex_admin,
        &json!({"webchat": {"enabled": true, "allowedOrigins": [SITE]}}),
    )
    .await;
    let r = ts
        .webchat(
            Method::POST,
            &format!("/webchat/{globex}/sessions/{session}/messages"),
            Some(SITE),
            Some(&token),
            Some(&json!({"text": "hi"})),
        )
        .await;
    assert_eq!(r.status, 401, "another organization's session");
    // Turned off: 404, and the setting shows off.
    let org_view = set_org(ts, admin, &json!({"webchat": {"enabled": false}})).await;
    assert_eq!(org_view["webchat"]["allowedOrigins"], json!([SITE]));
    assert_eq!(say(ts, &org, &session, &token, "hi").await.status, 404);
    // A setting refused names its field and changes nothing.
    let r = ts
        .patch(
            admin,
            "/v1/org",
            &json!({"webchat": {"allowedOrigins": ["https://a.example/path"]}}),
        )
        .await;
    assert_eq!(r.status, 400);
    let r = ts
        .patch(admin, "/v1/org", &json!({"webchat": {"profile": "nope"}}))
        .await;
    assert_eq!(r.status, 400);
    let view = expect(&ts.get(admin, "/v1/org").await, 200);
    assert_eq!(view["webchat"]["profile"], json!("web"));
}

fn retry_after(r: &engaged::testkit::server::Response) -> u64 {
    r.headers["retry-after"]
        .to_str()
        .ok()
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bound_is_a_429_with_retry_after_and_words() {
    let acme = Org::start().await;
    let (ts, admin) = (&acme.ts, &acme.admin);
    // No assistant: messages are kept for a person, nobody spends the model.
    let org = enable(ts, admin, None, json!({"maxSessionsPerHour": 2})).await;
    let sessions = format!("/webchat/{org}/sessions");
    let (session, token) = new_session(ts, &org).await;
    new_session(ts, &org).await;
    let r = ts
        .webchat(Method::POST, &sessions, Some(SITE), None, None)
        .await;
    let body = expect(&r, 429);
    assert!(retry_after(&r) >= 1);
    assert!(
        body["message"].as_str().is_some_and(|m| m.contains("busy")),
        "{body}"
    );
    assert_eq!(r.headers["access-control-allow-origin"], SITE);

    // Per address: 5 new sessions a minute (the refused one counted too).
    set_org(ts, admin, &json!({"webchat": {"maxSessionsPerHour": 500}})).await;
    new_session(ts, &org).await;
    new_session(ts, &org).await;
    let r = ts
        .webchat(Method::POST, &sessions, Some(SITE), None, None)
        .await;
    let body = expect(&r, 429);
    assert!((1..=60).contains(&retry_after(&r)));
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("a minute")),
        "{body}"
    );

    // Per session: 20 messages a minute.
    for i in 0..20 {
        expect(
            &say(ts, &org, &session, &token, &format!("m{i}")).await,
            202,
        );
    }
    let r = say(ts, &org, &session, &token, "one more").await;
    let body = expect(&r, 429);
    assert!((1..=60).contains(&retry_after(&r)));
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("too fast")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_answers_at_most_max_assistant_turns_per_session() {
    let acme = Org::start().await;
    let (ts, admin) = (&acme.ts, &acme.admin);
    let model = FakeModel::start().await;
    let org = enable(
        ts,
        admin,
        Some(&model),
        json!({"maxAssistantTurnsPerSession": 1}),
    )
    .await;
    let (session, token) = new_session(ts, &org).await;
    let mut stream = ts.webchat_events(&org, &session, &token, SITE).await;
    model.push(Step::text("One answer."));
    expect(&say(ts, &org, &session, &token, "Hello").await, 202);
    line_with(&mut stream, "One answer.").await;
    let r = say(ts, &org, &session, &token, "And another?").await;
    let body = expect(&r, 429);
    assert!(retry_after(&r) >= 1);
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("phone or email")),
        "{body}"
    );
    assert_eq!(model.count(), 1, "the model was asked once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_takes_over_from_the_console_while_the_visitor_watches() {
    let acme = Org::start().await;
    let (ts, admin) = (&acme.ts, &acme.admin);
    let model = FakeModel::start().await;
    let org = enable(ts, admin, Some(&model), json!({})).await;
    let password = ts.user("acme", "dana@acme.example", "Dana", "agent").await;
    let person = ts.sign_in("dana@acme.example", &password).await;
    let (session, token) = new_session(ts, &org).await;
    let mut stream = ts.webchat_events(&org, &session, &token, SITE).await;
    model.push(Step::text("Hello from the assistant."));
    expect(
        &say(ts, &org, &session, &token, "Can I talk to a person?").await,
        202,
    );
    line_with(&mut stream, "Hello from the assistant.").await;

    // The chat is on the console's Web chat list and page.
    let list = ts
        .console(
            Method::GET,
            "/console/webchats",
            Some(&person.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(list.status, 200);
    assert!(list.text().contains(&session), "{}", list.text());
    let path = format!("/console/webchats/{session}");
    let page = ts
        .console_post(
            &format!("{path}/take-over"),
            &person.cookie,
            &[("csrf", &person.csrf)],
        )
        .await;
    assert!(page.text().contains("Can I talk to a person?"));
    let joined = line_with(&mut stream, "Dana joined the chat").await;
    assert_eq!(joined["from"], json!("notice"));
    ts.console_post(
        &format!("{path}/reply"),
        &person.cookie,
        &[
            ("csrf", &person.csrf),
            ("text", "Hi, Dana here. <b>How</b> can I help?"),
        ],
    )
    .await;
    let reply = line_with(&mut stream, "Hi, Dana here. <b>How</b> can I help?").await;
    assert_eq!(
        (reply["from"].clone(), reply["name"].clone()),
        (json!("person"), json!("Dana"))
    );
    // Taken over, the assistant no longer answers.
    expect(&say(ts, &org, &session, &token, "Thanks Dana").await, 202);
    line_with(&mut stream, "Thanks Dana").await;
    assert_eq!(
        model.count(),
        1,
        "the model was asked once, before the take-over"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_consent_text_no_box_was_shown_and_nothing_is_recorded() {
    let acme = Org::start().await;
    let (ts, admin, key) = (&acme.ts, &acme.admin, &acme.write);
    let org = enable(ts, admin, None, json!({"consentText": ""})).await;
    let (session, token) = new_session(ts, &org).await;
    let form = json!({"name": "Eve", "email": "eve@example.com", "consent": true,
                      "pageUrl": "https://shop.example/"});
    let path = format!("/webchat/{org}/sessions/{session}/contact");
    let r = ts
        .webchat(Method::POST, &path, Some(SITE), Some(&token), Some(&form))
        .await;
    let lead = expect(&r, 200)["leadId"]
        .as_str()
        .expect("leadId")
        .to_string();
    let ledger = expect(
        &ts.get(key, &format!("/v1/leads/{lead}/consent")).await,
        200,
    );
    assert_eq!(ledger["entries"], json!([]), "{ledger}");
    // Neither phone nor email: 400 in words, no lead.
    let r = ts
        .webchat(
            Method::POST,
            &path,
            Some(SITE),
            Some(&token),
            Some(&json!({"name": "Eve"})),
        )
        .await;
    assert_eq!(
        expect(&r, 400)["message"],
        json!("Give a phone number or an email address.")
    );
}
