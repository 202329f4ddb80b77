//! Bounds on stored values (decisions.md, "Limits on stored values"): for each, a value
//! at the bound is stored, one over it is 400 `Field too long: NAME (at most N)` or
//! `Too many: NAME (at most N)` and changes nothing.

use serde_json::{json, Map, Value};

use engaged::testkit::TestServer;

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;

async fn start() -> (TestServer, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    (ts, key)
}

/// An email address of exactly `n` characters.
fn email_of(n: usize) -> String {
    format!("{}@example.com", "a".repeat(n - "@example.com".len()))
}

/// `{"p": "..."}` of exactly `n` bytes as JSON.
fn object_of_bytes(n: usize) -> Value {
    json!({"p": "x".repeat(n - r#"{"p":""}"#.len())})
}

fn tags(n: usize, prefix: &str) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"id": format!("{prefix}{i}"), "name": "n"}))
        .collect()
}

/// A lead with every bounded field at its bound.
pub fn lead_at_every_maximum(id: &str) -> Value {
    let max_tags: Vec<Value> = (0..100)
        .map(|i| {
            json!({"id": format!("{i:0>100}"), "name": "n".repeat(100), "condition": "c".repeat(200)})
        })
        .collect();
    let info: Map<String, Value> = (0..99)
        .map(|i| (format!("k{i:02}"), json!(1)))
        .chain([("pad".to_string(), json!(""))])
        .collect();
    let mut info = Value::Object(info);
    let size = info.to_string().len();
    info["pad"] = json!("p".repeat(16 * 1024 - size));
    json!({
        "id": id,
        "firstName": "f".repeat(200),
        "lastName": "l".repeat(200),
        "email": email_of(254),
        "externalLeadId": "e".repeat(200),
        "secondaryCrmLeadId": "s".repeat(200),
        "customerProfile": "c".repeat(200),
        "summary": "é".repeat(10_000),
        "tags": max_tags,
        "additionalInfo": info,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_fields_are_bounded_on_create_and_patch() {
    let (ts, key) = start().await;
    let max = lead_at_every_maximum("max");
    assert_eq!(max["additionalInfo"].to_string().len(), 16 * 1024);
    let stored = ts.create_lead(&key, &max).await;
    assert_eq!(stored["summary"], max["summary"]);
    assert_eq!(stored["additionalInfo"], max["additionalInfo"]);
    assert_eq!(stored["tags"].as_array().map(Vec::len), Some(100));
    let before = get_lead(&ts, &key, "max").await;
    ts.create_lead(&key, &json!({"id": "small"})).await;
    let small = get_lead(&ts, &key, "small").await;

    let over: [(&str, Value, &str); 9] = [
        (
            "firstName",
            json!("f".repeat(201)),
            "Field too long: firstName (at most 200)",
        ),
        (
            "lastName",
            json!("é".repeat(201)),
            "Field too long: lastName (at most 200)",
        ),
        (
            "email",
            json!(email_of(255)),
            "Field too long: email (at most 254)",
        ),
        (
            "externalLeadId",
            json!("e".repeat(201)),
            "Field too long: externalLeadId (at most 200)",
        ),
        (
            "secondaryCrmLeadId",
            json!("s".repeat(201)),
            "Field too long: secondaryCrmLeadId (at most 200)",
        ),
        (
            "customerProfile",
            json!("c".repeat(201)),
            "Field too long: customerProfile (at most 200)",
        ),
        (
            "summary",
            json!("s".repeat(10_001)),
            "Field too long: summary (at most 10000)",
        ),
        (
            "additionalInfo",
            object_of_bytes(16 * 1024 + 1),
            "Field too long: additionalInfo (at most 16384)",
        ),
        (
            "additionalInfo",
            Value::Object((0..101).map(|i| (format!("k{i}"), json!(1))).collect()),
            "Too many: additionalInfo (at most 100)",
        ),
    ];
    for (field, value, message) in over {
        let r = ts
            .post(&key, "/v1/leads", &json!({"id": "new", field: value}))
            .await;
        assert_error(&r, 400, message);
        assert_eq!(ts.get(&key, "/v1/leads/new").await.status, 404, "{field}");
        let r = ts
            .patch(&key, "/v1/leads/small", &json!({ field: value }))
            .await;
        assert_error(&r, 400, message);
    }
    assert_eq!(get_lead(&ts, &key, "small").await, small, "nothing changed");
    // A merge that would grow additionalInfo past its bounds is refused too.
    let r = ts
        .patch(
            &key,
            "/v1/leads/max",
            &json!({"additionalInfo": {"one-more": 1}}),
        )
        .await;
    assert_error(&r, 400, "Too many: additionalInfo (at most 100)");
    let r = ts
        .patch(
            &key,
            "/v1/leads/max",
            &json!({"additionalInfo": {"k00": "grown"}}),
        )
        .await;
    assert_error(&r, 400, "Field too long: additionalInfo (at most 16384)");
    let r = ts
        .patch(
            &key,
            "/v1/leads/max",
            &json!({"firstName": "f".repeat(201)}),
        )
        .await;
    assert_error(&r, 400, "Field too long: firstName (at most 200)");
    assert_eq!(get_lead(&ts, &key, "max").await, before, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_bounded_per_request_per_lead_and_in_length() {
    let (ts, key) = start().await;
    ts.create_lead(&key, &json!({"id": "t", "tags": tags(100, "a")}))
        .await;
    let before = get_lead(&ts, &key, "t").await;
    let add = |body: Value| {
        let ts = &ts;
        let key = key.clone();
        async move { ts.post(&key, "/v1/leads/t/tags/add", &body).await }
    };
    // Repeated ids count toward the request's bound.
    let mut repeated = tags(100, "a");
    repeated.push(json!({"id": "a0", "name": "again"}));
    for body in [json!({"tags": tags(101, "b")}), json!({"tags": repeated})] {
        assert_error(&add(body).await, 400, "Too many: tags (at most 100)");
    }
    let r = ts
        .post(
            &key,
            "/v1/leads",
            &json!({"id": "u", "tags": tags(101, "c")}),
        )
        .await;
    assert_error(&r, 400, "Too many: tags (at most 100)");
    // The lead carries 100: a new one is too many, replacing one is not.
    assert_error(
        &add(json!({"tags": [{"id": "new", "name": "New"}]})).await,
        400,
        "Too many: tags (at most 100)",
    );
    assert_eq!(get_lead(&ts, &key, "t").await, before, "nothing changed");
    expect(
        &add(json!({"tags": [{"id": "a0", "name": "Renamed"}]})).await,
        200,
    );
    expect(
        &ts.post(&key, "/v1/leads/t/tags/remove", &json!({"tagIds": ["a1"]}))
            .await,
        200,
    );
    let long = |n: usize| "x".repeat(n);
    expect(
        &add(json!({"tags": [{"id": long(100), "name": long(100), "condition": long(200)}]})).await,
        200,
    );
    let before = get_lead(&ts, &key, "t").await;
    for (tag, message) in [
        (
            json!({"id": long(101), "name": "n"}),
            "Field too long: tags.id (at most 100)",
        ),
        (
            json!({"id": "i", "name": long(101)}),
            "Field too long: tags.name (at most 100)",
        ),
        (
            json!({"id": "i", "name": "n", "condition": long(201)}),
            "Field too long: tags.condition (at most 200)",
        ),
    ] {
        assert_error(&add(json!({ "tags": [tag] })).await, 400, message);
    }
    assert_eq!(get_lead(&ts, &key, "t").await, before, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_data_is_bounded() {
    let (ts, key) = start().await;
    ts.create_lead(&key, &json!({"id": "L1"})).await;
    let at = json!({"type": "NOTE", "id": "n1", "data": object_of_bytes(64 * 1024)});
    expect(&ts.post(&key, "/v1/leads/L1/events", &at).await, 200);
    let before = all_events(&ts, &key, "L1").await;
    for id in ["n1", "n2"] {
        let over = json!({"type": "NOTE", "id": id, "data": object_of_bytes(64 * 1024 + 1)});
        let r = ts.post(&key, "/v1/leads/L1/events", &over).await;
        assert_error(&r, 400, "Field too long: data (at most 65536)");
    }
    assert_eq!(all_events(&ts, &key, "L1").await, before, "nothing changed");
}

const SMS_11_SEGMENTS: &str = "Too long for one SMS: 11 segments (at most 10: 1530 characters, or 670 with an emoji or a character outside the GSM alphabet)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_text_and_subject_are_bounded() {
    let (ts, key) = start().await;
    reachable_lead(&ts, &key, "L1").await;
    let message = |channel: &str, text: String, subject: Option<String>| {
        let mut content = json!({ "text": text });
        if let Some(subject) = subject {
            content["subject"] = json!(subject);
        }
        json!({"owner": "lead", "channel": channel, "content": content})
    };
    for body in [
        // Ten segments: 1,530 GSM-7 characters, or 335 emoji (670 UTF-16 units).
        message("sms", "s".repeat(1_530), None),
        message("sms", "😀".repeat(335), None),
        message("email", "é".repeat(10_000), Some("s".repeat(1_000))),
    ] {
        expect(&ts.post(&key, "/v1/leads/L1/messages", &body).await, 201);
    }
    let before = messages_of(&ts, &key, "L1").await;
    for (body, reason) in [
        (
            message("sms", "s".repeat(1_601), None),
            "Field too long: content.text (at most 1600)",
        ),
        (message("sms", "s".repeat(1_531), None), SMS_11_SEGMENTS),
        (message("sms", "😀".repeat(336), None), SMS_11_SEGMENTS),
        (
            message("email", "e".repeat(10_001), None),
            "Field too long: content.text (at most 10000)",
        ),
        (
            message("email", "e".into(), Some("s".repeat(1_001))),
            "Field too long: content.subject (at most 1000)",
        ),
    ] {
        let r = ts.post(&key, "/v1/leads/L1/messages", &body).await;
        assert_error(&r, 400, reason);
    }
    // Inbound messages obey the same bounds.
    let phone = get_lead(&ts, &key, "L1").await["phone"].clone();
    let email = get_lead(&ts, &key, "L1").await["email"].clone();
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": phone, "text": "s".repeat(1_601)}),
        )
        .await;
    assert_error(&r, 400, "Field too long: text (at most 1600)");
    let r = ts
        .post(
            &key,
            "/v1/inbound/email",
            &json!({"from": email, "subject": "s".repeat(1_001), "text": "hi"}),
        )
        .await;
    assert_error(&r, 400, "Field too long: subject (at most 1000)");
    let r = ts
        .post(
            &key,
            "/v1/inbound/email",
            &json!({"from": email, "text": "e".repeat(10_001)}),
        )
        .await;
    assert_error(&r, 400, "Field too long: text (at most 10000)");
    assert_eq!(
        messages_of(&ts, &key, "L1").await,
        before,
        "nothing changed"
    );
    inbound_sms(&ts, &key, phone.as_str().unwrap_or(""), &"s".repeat(1_600)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_transcripts_and_fields_are_bounded() {
    let (ts, key) = start().await;
    reachable_lead(&ts, &key, "L1").await;
    let turns = |n: usize, text: &str| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"role": if i % 2 == 0 { "agent" } else { "lead" }, "text": text}))
            .collect()
    };
    let call = json!({
        "leadId": "L1", "direction": "OUTBOUND", "callStatus": "COMPLETE",
        "transcript": turns(2_000, "ok"), "summary": "s".repeat(10_000),
        "dispositionId": "d".repeat(200), "dispositionName": "n".repeat(200),
    });
    expect(&ts.put(&key, "/v1/calls/c1", &call).await, 201);
    let long_turn = json!([{"role": "lead", "text": "t".repeat(4_000)}]);
    expect(
        &ts.put(&key, "/v1/calls/c2", &json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE", "transcript": long_turn}))
            .await,
        201,
    );
    let before = expect(&ts.get(&key, "/v1/calls/c1").await, 200);
    for (field, value, reason) in [
        (
            "transcript",
            json!(turns(2_001, "ok")),
            "Too many: transcript (at most 2000)",
        ),
        (
            "transcript",
            json!([{"role": "lead", "text": "t".repeat(4_001)}]),
            "Field too long: transcript.text (at most 4000)",
        ),
        (
            "summary",
            json!("s".repeat(10_001)),
            "Field too long: summary (at most 10000)",
        ),
        (
            "dispositionName",
            json!("n".repeat(201)),
            "Field too long: dispositionName (at most 200)",
        ),
        (
            "callStatus",
            json!("C".repeat(201)),
            "Field too long: callStatus (at most 200)",
        ),
    ] {
        let r = ts.put(&key, "/v1/calls/c1", &json!({ field: value })).await;
        assert_error(&r, 400, reason);
        let r = ts
            .put(
                &key,
                "/v1/calls/c3",
                &json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE", field: value}),
            )
            .await;
        assert_error(&r, 400, reason);
    }
    assert_eq!(expect(&ts.get(&key, "/v1/calls/c1").await, 200), before);
    assert_eq!(ts.get(&key, "/v1/calls/c3").await.status, 404);
}
