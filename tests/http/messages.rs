//! POST and GET /v1/leads/{id}/messages: validation, the event a message is, lead flags.

use serde_json::{json, Value};

use engaged::testkit::{enc, TestServer};

use crate::answers::*;
use crate::requests::*;
use crate::twilio_signing::*;

async fn start() -> (TestServer, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    reachable_lead(&ts, &key, "L1").await;
    (ts, key)
}

fn sms(owner: &str, text: &str) -> Value {
    json!({"owner": owner, "channel": "sms", "content": {"text": text}})
}

/// Posts a message and returns it as the listing shows it. An outbound (`user`)
/// message passed the compliance gate: its answer also says `"outcome": "sent"`.
async fn post_message(ts: &TestServer, key: &str, lead: &str, body: &Value) -> Value {
    let mut m = expect(
        &ts.post(key, &format!("/v1/leads/{lead}/messages"), body)
            .await,
        201,
    );
    if body["owner"] == "user" {
        assert_eq!(m["outcome"], json!("sent"), "{m}");
    }
    if let Some(fields) = m.as_object_mut() {
        fields.remove("outcome");
    }
    m
}

async fn messages(ts: &TestServer, key: &str, lead: &str, query: &str) -> Value {
    expect(
        &ts.get(key, &format!("/v1/leads/{lead}/messages{query}"))
            .await,
        200,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_message_returns_201_message() {
    let (ts, key) = start().await;
    let m = post_message(&ts, &key, "L1", &sms("lead", "Hello there")).await;
    assert!(!str_of(&m["id"]).is_empty());
    assert_eq!(m["channel"], json!("sms"));
    assert_eq!(m["owner"], json!("lead"));
    assert_eq!(m["content"]["text"], json!("Hello there"));
    time_of(&m["createdAt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn email_subject_round_trips() {
    let (ts, key) = start().await;
    let body = json!({"owner": "user", "channel": "email", "content": {"text": "Body", "subject": "Quote"}});
    let m = post_message(&ts, &key, "L1", &body).await;
    assert_eq!(m["content"], json!({"text": "Body", "subject": "Quote"}));
    let listed = messages(&ts, &key, "L1", "").await;
    assert_eq!(listed["messages"], json!([m]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_owner_is_400() {
    let (ts, key) = start().await;
    for owner in [json!("bot"), json!("LEAD"), json!(""), json!(1)] {
        let body = json!({"owner": owner, "channel": "sms", "content": {"text": "x"}});
        let r = ts.post(&key, "/v1/leads/L1/messages", &body).await;
        assert_error(&r, 400, "Invalid format for field: owner");
    }
    assert_eq!(messages(&ts, &key, "L1", "").await["messages"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_channel_is_400() {
    let (ts, key) = start().await;
    for channel in [json!("voice"), json!("SMS"), json!("fax"), json!(3)] {
        let body = json!({"owner": "lead", "channel": channel, "content": {"text": "x"}});
        let r = ts.post(&key, "/v1/leads/L1/messages", &body).await;
        assert_error(&r, 400, "Invalid format for field: channel");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_content_is_400() {
    let (ts, key) = start().await;
    let bodies = [
        json!({"owner": "lead", "channel": "sms"}),
        json!({"owner": "lead", "channel": "sms", "content": "hi"}),
        json!({"owner": "lead", "channel": "sms", "content": {}}),
        json!({"owner": "lead", "channel": "sms", "content": {"text": 5}}),
        json!({"owner": "lead", "channel": "sms", "content": {"text": null}}),
        json!({"owner": "lead", "channel": "email", "content": {"subject": "s"}}),
    ];
    for body in bodies {
        let r = ts.post(&key, "/v1/leads/L1/messages", &body).await;
        assert_error(&r, 400, "Invalid format for field: content");
    }
    assert_eq!(messages(&ts, &key, "L1", "").await["messages"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_lead_is_404() {
    let (ts, key) = start().await;
    let r = ts
        .post(&key, "/v1/leads/nope/messages", &sms("lead", "x"))
        .await;
    assert_error(&r, 404, "Resource not found: Lead with id nope");
    assert_error(
        &ts.get(&key, "/v1/leads/nope/messages").await,
        404,
        "Resource not found: Lead with id nope",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_also_an_event() {
    let (ts, key) = start().await;
    let s = post_message(&ts, &key, "L1", &sms("lead", "hi")).await;
    let email = json!({"owner": "user", "channel": "email", "content": {"text": "Body", "subject": "Hello"}});
    let e = post_message(&ts, &key, "L1", &email).await;
    let events = all_events(&ts, &key, "L1").await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["type"], json!("MESSAGE"));
    assert_eq!(events[0]["id"], s["id"]);
    assert_eq!(
        events[0]["data"],
        json!({"owner": "lead", "channel": "sms", "content": {"text": "hi"}})
    );
    assert_eq!(events[1]["type"], json!("EMAIL"));
    assert_eq!(events[1]["id"], e["id"]);
    // A message from the organization's side went out through the (sandbox) provider.
    let data = &events[1]["data"];
    assert_eq!(data["owner"], json!("user"));
    assert_eq!(data["channel"], json!("email"));
    assert_eq!(data["content"], json!({"text": "Body", "subject": "Hello"}));
    assert_eq!(data["status"], json!("delivered"));
    assert_eq!(data["origin"], json!("api"));
    let (only_email, _) = walk(&ts, &key, "/v1/leads/L1/events?types=EMAIL", "events").await;
    assert_eq!(only_email.len(), 1);
    // The message is activity on the lead.
    let lead = get_lead(&ts, &key, "L1").await;
    assert_eq!(lead["lastActivityAt"], events[1]["updatedAt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_listed_in_creation_order() {
    let (ts, key) = start().await;
    let mut posted = Vec::new();
    for i in 0..5 {
        let owner = if i % 2 == 0 { "lead" } else { "user" };
        posted.push(post_message(&ts, &key, "L1", &sms(owner, &format!("m{i}"))).await);
    }
    let listed = messages(&ts, &key, "L1", "").await;
    assert_eq!(listed["messages"], json!(posted));
    assert_eq!(listed["nextToken"], Value::Null);
    let listed = listed["messages"].as_array().unwrap().clone();
    for pair in listed.windows(2) {
        assert!(time_of(&pair[0]["createdAt"]) <= time_of(&pair[1]["createdAt"]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_limit_every_message_is_returned() {
    let (ts, key) = start().await;
    for i in 0..105 {
        post_message(&ts, &key, "L1", &sms("lead", &format!("m{i}"))).await;
    }
    let listed = messages(&ts, &key, "L1", "").await;
    assert_eq!(listed["messages"].as_array().unwrap().len(), 105);
    assert_eq!(listed["nextToken"], Value::Null);
    assert_eq!(listed["messages"][104]["content"]["text"], json!("m104"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_limit_messages_page() {
    let (ts, key) = start().await;
    let mut posted = Vec::new();
    for i in 0..5 {
        posted.push(post_message(&ts, &key, "L1", &sms("lead", &format!("m{i}"))).await);
    }
    let first = messages(&ts, &key, "L1", "?limit=2").await;
    assert_eq!(first["messages"], json!(posted[..2]));
    let (all, pages) = walk(&ts, &key, "/v1/leads/L1/messages?limit=2", "messages").await;
    assert_eq!(all, posted);
    assert_eq!(pages, 3);
    let exact = messages(&ts, &key, "L1", "?limit=5").await;
    assert_eq!(exact["nextToken"], Value::Null);

    let token = str_of(&first["nextToken"]).to_string();
    let r = ts
        .get(
            &key,
            &format!(
                "/v1/leads/L1/messages?limit=2&nextToken={}",
                enc(&tamper(&token))
            ),
        )
        .await;
    assert_error(&r, 400, "Invalid nextToken");
    for bad in ["0", "1001", "abc"] {
        let r = ts
            .get(&key, &format!("/v1/leads/L1/messages?limit={bad}"))
            .await;
        assert_error(&r, 400, "limit must be an integer between 1 and 1000");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_sms_sets_has_replied() {
    let (ts, key) = start().await;
    post_message(&ts, &key, "L1", &sms("lead", "yes please")).await;
    let lead = get_lead(&ts, &key, "L1").await;
    assert_eq!(lead["hasReplied"], json!(true));
    assert_eq!(lead["hasRepliedEmail"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_email_sets_has_replied_email() {
    let (ts, key) = start().await;
    let body = json!({"owner": "lead", "channel": "email", "content": {"text": "Re: quote"}});
    post_message(&ts, &key, "L1", &body).await;
    let lead = get_lead(&ts, &key, "L1").await;
    assert_eq!(lead["hasRepliedEmail"], json!(true));
    assert_eq!(lead["hasReplied"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_messages_set_no_reply_flag() {
    let (ts, key) = start().await;
    post_message(&ts, &key, "L1", &sms("user", "Hi Ada")).await;
    let body =
        json!({"owner": "user", "channel": "email", "content": {"text": "Hi", "subject": "Hello"}});
    post_message(&ts, &key, "L1", &body).await;
    let lead = get_lead(&ts, &key, "L1").await;
    assert_eq!(lead["hasReplied"], json!(false));
    assert_eq!(lead["hasRepliedEmail"], json!(false));
    assert_eq!(
        messages(&ts, &key, "L1", "").await["messages"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
