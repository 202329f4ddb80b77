//! The lead page's person-actions over HTTPS, each one domain function
//! (`domain::conversation::handling`) holding its rules: a refusal changes nothing and
//! records no `USER_ACTION`, and each action records its own name.

use hyper::Method;
use serde_json::json;

use engaged::testkit::console::Session;
use engaged::testkit::TestServer;

use crate::requests::all_events;

/// A server with lead `c-1` of `acme` (`lead` merged in), a write key, and a signed-in
/// agent.
async fn start(lead: serde_json::Value) -> (TestServer, String, Session) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    let mut body = json!({"id": "c-1", "firstName": "Ana"});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), lead.as_object()) {
        body.extend(extra.clone());
    }
    ts.create_lead(&key, &body).await;
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let session = ts.sign_in("pat@example.com", &password).await;
    (ts, key, session)
}

async fn act(
    ts: &TestServer,
    session: &Session,
    action: &str,
    fields: &[(&str, &str)],
) -> engaged::testkit::server::Response {
    let mut form = vec![("csrf", session.csrf.as_str())];
    form.extend_from_slice(fields);
    let origin = ts.origin();
    ts.console(
        Method::POST,
        &format!("/console/leads/c-1/{action}"),
        Some(&session.cookie),
        Some(&origin),
        &form,
    )
    .await
}

/// [`act`], then the page its `303` leads to, as a browser shows it after a refusal
/// (Post/Redirect/Get).
async fn act_and_see(
    ts: &TestServer,
    session: &Session,
    action: &str,
    fields: &[(&str, &str)],
) -> engaged::testkit::server::Response {
    let mut form = vec![("csrf", session.csrf.as_str())];
    form.extend_from_slice(fields);
    ts.console_post(
        &format!("/console/leads/c-1/{action}"),
        &session.cookie,
        &form,
    )
    .await
}

/// The `action` of each `USER_ACTION` event of lead `c-1`, oldest first.
async fn user_actions(ts: &TestServer, key: &str) -> Vec<String> {
    let mut events: Vec<serde_json::Value> = all_events(ts, key, "c-1")
        .await
        .into_iter()
        .filter(|e| e["type"] == "USER_ACTION")
        .collect();
    events.sort_by(|a, b| a["updatedAt"].as_str().cmp(&b["updatedAt"].as_str()));
    events
        .iter()
        .map(|e| e["data"]["action"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dnc_add_of_a_lead_without_a_phone_is_refused_and_records_nothing() {
    let (ts, key, session) = start(json!({"email": "ana@example.com"})).await;
    let page = act_and_see(&ts, &session, "dnc", &[]).await;
    assert_eq!(page.status, 200, "the page again, with the refusal");
    assert!(page.text().contains("Lead has no phone"), "{}", page.text());
    assert!(user_actions(&ts, &key).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_name_without_a_letter_or_digit_is_refused_before_any_write() {
    let (ts, key, session) = start(json!({"phone": "+15125550101"})).await;
    let page = act(&ts, &session, "tags-add", &[("tag", " -!- ")]).await;
    assert_eq!(page.status, 400, "{}", page.text());
    assert!(page.text().contains("Invalid format for field: tags"));
    assert!(user_actions(&ts, &key).await.is_empty());
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert_eq!(lead["tags"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_action_records_its_name_and_changes_the_lead() {
    let (ts, key, session) = start(json!({"phone": "+15125550101"})).await;
    let steps: [(&str, &[(&str, &str)]); 9] = [
        ("take-over", &[]),
        ("hand-back", &[]),
        ("hot", &[]),
        ("qualified", &[]),
        ("tags-add", &[("tag", "Solar Panels")]),
        ("tags-remove", &[("tag", "solar-panels")]),
        ("unsubscribe", &[("channel", "sms")]),
        (
            "resubscribe",
            &[("channel", "sms"), ("words", "Ana called: text me again")],
        ),
        ("dnc", &[]),
    ];
    for (action, fields) in steps {
        let answer = act(&ts, &session, action, fields).await;
        assert_eq!(answer.status, 303, "{action}: {}", answer.text());
    }
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert_eq!(
        (lead["isHot"].clone(), lead["isQualified"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(lead["tags"], json!([]));
    assert_eq!(
        user_actions(&ts, &key).await,
        [
            "take_over",
            "hand_back",
            "mark_hot",
            "mark_qualified",
            "add_tag",
            "remove_tag",
            "unsubscribe",
            "resubscribe",
            "add_to_dnc"
        ]
    );
    let dnc = ts.get(&key, "/v1/dnc").await.text();
    assert!(dnc.contains("+15125550101"), "{dnc}");
    let deleted = act(&ts, &session, "delete", &[("confirm", "yes")]).await;
    assert_eq!(deleted.status, 303);
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert!(lead["deletedAt"].is_string(), "{lead}");
}

/// A reply the gate blocks (the lead unsubscribed) shows the reason and takes nothing
/// over: the assistant stays on and the lead keeps no owner; one that goes takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_reply_does_not_take_the_lead_over() {
    let (ts, key, session) = start(json!({"phone": "+15125550100"})).await;
    let off = ts
        .post(
            &key,
            "/v1/leads/c-1/unsubscribe",
            &json!({"channels": ["sms"]}),
        )
        .await;
    assert_eq!(off.status, 200, "{}", off.text());
    let blocked = act_and_see(
        &ts,
        &session,
        "reply",
        &[("channel", "sms"), ("message", "Hi Ana")],
    )
    .await;
    assert_eq!(blocked.status, 200);
    assert!(
        blocked.text().contains("Not sent. Blocked: UNSUBSCRIBED"),
        "{}",
        blocked.text()
    );
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert_eq!(lead["isAiOn"], json!(true), "the assistant stays on");
    assert!(
        user_actions(&ts, &key).await.is_empty(),
        "no take-over recorded"
    );

    let on = ts
        .post(
            &key,
            "/v1/leads/c-1/resubscribe",
            &json!({"channels": ["sms"], "proof": {"text": "Ana: text me again"}}),
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.text());
    let sent = act(
        &ts,
        &session,
        "reply",
        &[("channel", "sms"), ("message", "Hi Ana")],
    )
    .await;
    assert_eq!(sent.status, 303, "{}", sent.text());
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert_eq!(lead["isAiOn"], json!(false), "a send that goes takes over");
    assert_eq!(user_actions(&ts, &key).await, vec!["take_over".to_string()]);
}

/// "Reply as this lead (sandbox)": the text takes the inbound path (a lead message, a
/// keyword opts out); with a real SMS provider the form is not shown and a post is 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_as_the_lead_takes_the_inbound_path_only_with_the_sandbox() {
    let (ts, key, session) = start(json!({"phone": "+15125550100"})).await;
    let page = ts
        .console(
            Method::GET,
            "/console/leads/c-1",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert!(page.text().contains("Reply as this lead (sandbox)"));
    let empty = act_and_see(&ts, &session, "reply-as-lead", &[("message", " ")]).await;
    assert_eq!(empty.status, 200, "the page again, with the refusal");
    assert!(empty.text().contains("Write what the lead says."));
    let said = act(
        &ts,
        &session,
        "reply-as-lead",
        &[("message", "Who is this?")],
    )
    .await;
    assert_eq!(said.status, 303, "{}", said.text());
    let from_lead: Vec<_> = all_events(&ts, &key, "c-1")
        .await
        .into_iter()
        .filter(|e| e["type"] == "MESSAGE" && e["data"]["owner"] == "lead")
        .collect();
    assert_eq!(from_lead.len(), 1, "{from_lead:?}");
    assert_eq!(
        from_lead[0]["data"]["content"]["text"],
        json!("Who is this?")
    );
    let stop = act(&ts, &session, "reply-as-lead", &[("message", "STOP")]).await;
    assert_eq!(stop.status, 303);
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert_eq!(
        lead["subscriptions"]["sms"],
        json!("unsubscribed"),
        "{lead}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_as_the_lead_is_refused_with_a_real_sms_provider() {
    let twilio = engaged::testkit::FakeTwilio::start().await;
    let org =
        engaged::testkit::Org::start_with(|c| c.public_url = Some("https://engaged.test".into()))
            .await;
    let body = json!({"providers": {"sms": {"kind": "twilio", "accountSid": "AC0123456789abcdef0123456789abcdef",
        "authToken": "twilio-auth-token-secret", "from": "+15550100000", "baseUrl": twilio.base_url}}});
    assert_eq!(org.ts.patch(&org.admin, "/v1/org", &body).await.status, 200);
    org.ts
        .create_lead(&org.write, &json!({"id": "c-1", "phone": "+15125550100"}))
        .await;
    let password = org.ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let session = org.ts.sign_in("pat@example.com", &password).await;
    let page = org
        .ts
        .console(
            Method::GET,
            "/console/leads/c-1",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert!(!page.text().contains("Reply as this lead"));
    let refused = act(&org.ts, &session, "reply-as-lead", &[("message", "Hi")]).await;
    assert_eq!(refused.status, 403);
    assert!(refused
        .text()
        .contains("works only while the SMS provider is the sandbox"));
    assert!(all_events(&org.ts, &org.write, "c-1")
        .await
        .iter()
        .all(|e| e["type"] != "MESSAGE"));
}
