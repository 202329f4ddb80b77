//! PUT and GET /v1/calls/{id}: upsert, validation, the Call shape, the CALL event, lead flags.

use serde_json::{json, Map, Value};

use engaged::testkit::TestServer;

use crate::answers::*;
use crate::requests::*;

async fn start() -> (TestServer, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    reachable_lead(&ts, &key, "L1").await;
    (ts, key)
}

fn minimal() -> Value {
    json!({"leadId": "L1", "direction": "OUTBOUND", "callStatus": "IN_PROGRESS"})
}

async fn put_call(ts: &TestServer, key: &str, id: &str, body: &Value, status: u16) -> Value {
    expect(&ts.put(key, &format!("/v1/calls/{id}"), body).await, status)
}

async fn get_call(ts: &TestServer, key: &str, id: &str) -> Value {
    expect(&ts.get(key, &format!("/v1/calls/{id}")).await, 200)
}

/// Every Call field of the interface with a valid, non-default value.
fn every_field() -> Value {
    json!({
        "leadId": "L1",
        "direction": "INBOUND",
        "callStatus": "COMPLETE",
        "durationSeconds": 187,
        "transcript": [{"role": "agent", "text": "Hello"}, {"role": "lead", "text": "Hi"}],
        "summary": "Lead wants a quote.",
        "isTransfer": true,
        "midCallTransfer": true,
        "hasVoicemail": false,
        "transferNumber": "+15550001111",
        "fallbackTransferNumber": "+15550002222",
        "transferAnswerStatus": "answered",
        "transferAnsweredBy": "human",
        "transferFallbackAttempted": true,
        "transferFallbackAnswerStatus": "no_answer",
        "transferFallbackAnsweredBy": "machine_end_beep",
        "midCallTransferDuration": 42,
        "endedBy": "AGENT",
        "transferInitiatedAt": "2026-11-22T10:15:30.123456Z",
        "agentConnected": true,
        "transferFailureCode": "lead_disconnected",
        "transferWaitDurationSeconds": 12,
        "transferStatus": "connected",
        "aiCallWithoutHumanResponse": false,
        "isFollowUp": true,
        "isAiInitiated": true,
        "hitCallScreening": true,
        "reachedHumanAfterScreening": true,
        "isForward": false
    })
}

const REQUIRED: &[&str] = &[
    "id",
    "direction",
    "callStatus",
    "durationSeconds",
    "createdAt",
    "updatedAt",
    "transcript",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_call_is_201_and_readable() {
    let (ts, key) = start().await;
    let created = put_call(&ts, &key, "c1", &minimal(), 201).await;
    assert_eq!(created["id"], json!("c1"));
    assert_eq!(created["leadId"], json!("L1"));
    assert_eq!(created["direction"], json!("OUTBOUND"));
    assert_eq!(created["callStatus"], json!("IN_PROGRESS"));
    assert_eq!(get_call(&ts, &key, "c1").await, created);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_optional_fields_are_omitted_never_null() {
    let (ts, key) = start().await;
    let body = json!({"sessionId": "web-1", "direction": "INBOUND", "callStatus": "COMPLETE"});
    put_call(&ts, &key, "c1", &body, 201).await;
    let call = get_call(&ts, &key, "c1").await;
    let obj = call.as_object().expect("object");
    for field in REQUIRED {
        assert!(obj.contains_key(*field), "required {field}: {call}");
    }
    assert_eq!(call["durationSeconds"], json!(0), "0 if never given");
    assert_eq!(call["transcript"], json!([]), "[] if none");
    assert_eq!(call["sessionId"], json!("web-1"));
    time_of(&call["createdAt"]);
    time_of(&call["updatedAt"]);
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    let mut expected: Vec<&str> = REQUIRED.iter().copied().chain(["sessionId"]).collect();
    expected.sort();
    assert_eq!(keys, expected, "only known fields are present: {call}");
    assert!(obj.values().all(|v| !v.is_null()), "no nulls: {call}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_field_round_trips() {
    let (ts, key) = start().await;
    let body = every_field();
    let created = put_call(&ts, &key, "c1", &body, 201).await;
    let got = get_call(&ts, &key, "c1").await;
    assert_eq!(got, created);
    for (field, value) in body.as_object().unwrap() {
        assert_eq!(&got[field], value, "{field}");
    }
    for field in REQUIRED {
        assert!(got.get(*field).is_some(), "required {field}");
    }
    assert!(
        got.as_object().unwrap().values().all(|v| !v.is_null()),
        "no nulls: {got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposition_fields_are_accepted() {
    let (ts, key) = start().await;
    let mut body = minimal();
    body["dispositionId"] = json!("disp-1");
    body["dispositionName"] = json!("Interested");
    body["dispositionClassifiedAt"] = json!("2026-11-22T10:15:30Z");
    put_call(&ts, &key, "c1", &body, 201).await;
    let update = json!({"dispositionId": "disp-2", "dispositionName": "Callback"});
    put_call(&ts, &key, "c1", &update, 200).await;
    let call = get_call(&ts, &key, "c1").await;
    assert!(
        call.as_object().unwrap().values().all(|v| !v.is_null()),
        "no nulls: {call}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_never_carries_a_recording_url() {
    let (ts, key) = start().await;
    put_call(&ts, &key, "c1", &every_field(), 201).await;
    let call = get_call(&ts, &key, "c1").await;
    for k in call.as_object().unwrap().keys() {
        let lower = k.to_lowercase();
        assert!(
            !lower.contains("recording") && !lower.contains("url"),
            "field {k} in {call}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_put_updates_and_keeps_left_out_fields() {
    let (ts, key) = start().await;
    let mut body = minimal();
    body["summary"] = json!("first");
    body["hasVoicemail"] = json!(true);
    body["transcript"] = json!([{"text": "a"}]);
    let created = put_call(&ts, &key, "c1", &body, 201).await;
    let updated = put_call(
        &ts,
        &key,
        "c1",
        &json!({"callStatus": "COMPLETE", "durationSeconds": 61, "summary": "final"}),
        200,
    )
    .await;
    assert_eq!(updated["callStatus"], json!("COMPLETE"));
    assert_eq!(updated["durationSeconds"], json!(61));
    assert_eq!(updated["summary"], json!("final"));
    assert_eq!(updated["direction"], json!("OUTBOUND"), "kept");
    assert_eq!(updated["leadId"], json!("L1"), "kept");
    assert_eq!(updated["hasVoicemail"], json!(true), "kept");
    assert_eq!(updated["transcript"], json!([{"text": "a"}]), "kept");
    assert_eq!(updated["createdAt"], created["createdAt"]);
    assert!(time_of(&updated["updatedAt"]) > time_of(&created["updatedAt"]));
    assert_eq!(get_call(&ts, &key, "c1").await, updated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_call_needs_lead_or_session() {
    let (ts, key) = start().await;
    let r = ts
        .put(
            &key,
            "/v1/calls/c1",
            &json!({"direction": "INBOUND", "callStatus": "COMPLETE"}),
        )
        .await;
    assert_error(&r, 400, "leadId or sessionId is required");
    assert_error(&ts.get(&key, "/v1/calls/c1").await, 404, "Call not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_call_needs_direction_and_status() {
    let (ts, key) = start().await;
    let r = ts
        .put(
            &key,
            "/v1/calls/c1",
            &json!({"leadId": "L1", "callStatus": "COMPLETE"}),
        )
        .await;
    assert_error(&r, 400, "Missing required field: direction");
    let r = ts
        .put(
            &key,
            "/v1/calls/c1",
            &json!({"sessionId": "s", "direction": "INBOUND"}),
        )
        .await;
    assert_error(&r, 400, "Missing required field: callStatus");
    assert_error(&ts.get(&key, "/v1/calls/c1").await, 404, "Call not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_for_unknown_lead_is_404() {
    let (ts, key) = start().await;
    let body = json!({"leadId": "ghost", "direction": "INBOUND", "callStatus": "COMPLETE"});
    let r = ts.put(&key, "/v1/calls/c1", &body).await;
    assert_error(&r, 404, "Resource not found: Lead with id ghost");
    assert_error(&ts.get(&key, "/v1/calls/c1").await, 404, "Call not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_call_is_404() {
    let (ts, key) = start().await;
    assert_error(&ts.get(&key, "/v1/calls/nope").await, 404, "Call not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_call_fields_are_400() {
    let (ts, key) = start().await;
    let cases = [
        ("direction", json!("SIDEWAYS")),
        ("direction", json!("inbound")),
        ("durationSeconds", json!(-1)),
        ("durationSeconds", json!(1.5)),
        ("durationSeconds", json!("60")),
        ("transcript", json!("hello")),
        ("transcript", json!(["hello", "hi"])),
        ("transcript", json!([{"text": "a"}, 3])),
        ("transcript", json!([{"role": 1, "text": "a"}])),
        ("transcript", json!([{"role": "lead", "text": 5}])),
        (
            "transcript",
            json!([{"role": "agent", "text": "a", "interrupted": "yes"}]),
        ),
        ("transferAnswerStatus", json!("maybe")),
        ("transferAnsweredBy", json!("robot")),
        ("transferFallbackAnswerStatus", json!("ANSWERED")),
        ("transferFallbackAnsweredBy", json!("alien")),
        ("endedBy", json!("lead")),
        ("transferFailureCode", json!("busy")),
        ("transferStatus", json!("ok")),
        ("transferWaitDurationSeconds", json!(-3)),
        ("midCallTransferDuration", json!(-1)),
        ("transferInitiatedAt", json!("yesterday")),
        ("transferInitiatedAt", json!("9999-12-31T23:59:59-01:00")),
        ("isTransfer", json!("yes")),
        ("recordingUrl", json!("https://example.com/a.mp3")),
        ("colour", json!("red")),
    ];
    for (field, value) in cases {
        let mut body = minimal();
        body[field] = value.clone();
        let r = ts.put(&key, "/v1/calls/c1", &body).await;
        assert_error_status(&r, 400);
        assert_error(&ts.get(&key, "/v1/calls/c1").await, 404, "Call not found");
    }
    // The same checks apply to an update.
    put_call(&ts, &key, "c1", &minimal(), 201).await;
    let before = get_call(&ts, &key, "c1").await;
    for (field, value) in [
        ("direction", json!("UP")),
        ("durationSeconds", json!(-5)),
        ("colour", json!("red")),
    ] {
        let r = ts.put(&key, "/v1/calls/c1", &json!({field: value})).await;
        assert_error_status(&r, 400);
    }
    assert_eq!(get_call(&ts, &key, "c1").await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_keeps_a_call_event_on_its_lead() {
    let (ts, key) = start().await;
    let mut body = every_field();
    body["callStatus"] = json!("IN_PROGRESS");
    body["durationSeconds"] = json!(10);
    put_call(&ts, &key, "c1", &body, 201).await;
    let events = all_events(&ts, &key, "L1").await;
    assert_eq!(events.len(), 1, "{events:?}");
    let first = events[0].clone();
    assert_eq!(first["type"], json!("CALL"));
    assert_eq!(first["id"], json!("c1"));
    let data: &Map<String, Value> = first["data"].as_object().expect("data object");
    assert_eq!(data["direction"], json!("INBOUND"));
    assert_eq!(data["callStatus"], json!("IN_PROGRESS"));
    assert_eq!(data["durationSeconds"], json!(10));
    assert_eq!(data["isTransfer"], json!(true));
    assert_eq!(data["midCallTransfer"], json!(true));
    assert_eq!(data["transferStatus"], json!("connected"));
    assert!(
        !data.contains_key("transcript"),
        "no transcript in CALL data: {first}"
    );
    assert!(
        !data.contains_key("summary"),
        "no summary in CALL data: {first}"
    );
    let lead = get_lead(&ts, &key, "L1").await;
    assert_eq!(lead["lastActivityAt"], first["updatedAt"]);

    put_call(
        &ts,
        &key,
        "c1",
        &json!({"callStatus": "COMPLETE", "durationSeconds": 95}),
        200,
    )
    .await;
    let events = all_events(&ts, &key, "L1").await;
    assert_eq!(events.len(), 1, "still one CALL event: {events:?}");
    let second = &events[0];
    assert_eq!(second["type"], json!("CALL"));
    assert_eq!(second["id"], json!("c1"));
    assert_eq!(second["data"]["callStatus"], json!("COMPLETE"));
    assert_eq!(second["data"]["durationSeconds"], json!(95));
    assert_eq!(second["data"]["direction"], json!("INBOUND"));
    assert!(time_of(&second["updatedAt"]) > time_of(&first["updatedAt"]));
    assert_eq!(
        get_lead(&ts, &key, "L1").await["lastActivityAt"],
        second["updatedAt"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minimal_call_event_has_the_basic_data() {
    let (ts, key) = start().await;
    put_call(&ts, &key, "c1", &minimal(), 201).await;
    let events = all_events(&ts, &key, "L1").await;
    assert_eq!(events.len(), 1);
    let data = &events[0]["data"];
    assert_eq!(data["direction"], json!("OUTBOUND"));
    assert_eq!(data["callStatus"], json!("IN_PROGRESS"));
    assert_eq!(data["durationSeconds"], json!(0));
    let (calls, _) = walk(&ts, &key, "/v1/leads/L1/events?types=CALL", "events").await;
    assert_eq!(calls.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_initiated_call_sets_has_ai_call() {
    let (ts, key) = start().await;
    put_call(&ts, &key, "c0", &minimal(), 201).await;
    assert_eq!(get_lead(&ts, &key, "L1").await["hasAiCall"], json!(false));
    let mut body = minimal();
    body["isAiInitiated"] = json!(true);
    put_call(&ts, &key, "c1", &body, 201).await;
    let lead = get_lead(&ts, &key, "L1").await;
    assert_eq!(lead["hasAiCall"], json!(true));
    assert_eq!(lead["hasTransferCall"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_call_sets_has_transfer_call() {
    let (ts, key) = start().await;
    put_call(&ts, &key, "c1", &minimal(), 201).await;
    assert_eq!(
        get_lead(&ts, &key, "L1").await["hasTransferCall"],
        json!(false)
    );
    // Set on a later update of the same call.
    put_call(&ts, &key, "c1", &json!({"isTransfer": true}), 200).await;
    let lead = get_lead(&ts, &key, "L1").await;
    assert_eq!(lead["hasTransferCall"], json!(true));
    assert_eq!(lead["hasAiCall"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_initiated_at_is_normalised_to_utc_micros() {
    let (ts, key) = start().await;
    let mut body = minimal();
    body["transferInitiatedAt"] = json!("2026-11-22T11:15:30+01:00");
    put_call(&ts, &key, "c1", &body, 201).await;
    let call = get_call(&ts, &key, "c1").await;
    assert_eq!(
        call["transferInitiatedAt"],
        json!("2026-11-22T10:15:30.000000Z")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_call_ids_are_400_as_on_lead_creation() {
    let (ts, key) = start().await;
    let long = "x".repeat(129);
    for id in ["a%20b", "a%00b", "%00", "a%2Fb", "caf%C3%A9", long.as_str()] {
        let r = ts.put(&key, &format!("/v1/calls/{id}"), &minimal()).await;
        assert_error(&r, 400, "Invalid format for field: id");
    }
    let r = ts.post(&key, "/v1/leads", &json!({"id": "a b"})).await;
    assert_error(&r, 400, "Invalid format for field: id");
}
