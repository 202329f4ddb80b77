//! The lead page's person-actions over HTTPS, each one domain function
//! (`domain::contact::handling`) holding its rules: a refusal changes nothing and
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
    let page = act(&ts, &session, "dnc", &[]).await;
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
        ("resubscribe", &[("channel", "sms")]),
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
    let blocked = act(
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
            &json!({"channels": ["sms"]}),
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
