//! POST and GET /v1/leads/{id}/events: upsert by (type, id), ordering, filters, paging.

use serde_json::{json, Value};

use engaged::testkit::{enc, TestServer};

use crate::answers::*;
use crate::requests::*;
use crate::twilio_signing::*;

async fn start() -> (TestServer, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    ts.create_lead(&key, &json!({"id": "L1"})).await;
    (ts, key)
}

fn ids(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{}/{}", str_of(&e["type"]), str_of(&e["id"])))
        .collect()
}

async fn page(ts: &TestServer, key: &str, path: &str) -> (Vec<Value>, Value) {
    let body = expect(&ts.get(key, path).await, 200);
    let events = body["events"]
        .as_array()
        .unwrap_or_else(|| panic!("events array: {body}"))
        .clone();
    (events, body["nextToken"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_event_returns_the_event() {
    let (ts, key) = start().await;
    let e = post_event(
        &ts,
        &key,
        "L1",
        &json!({"type": "CUSTOM", "id": "e1", "data": {"k": "v", "n": [1]}}),
    )
    .await;
    assert_eq!(e["id"], json!("e1"));
    assert_eq!(e["type"], json!("CUSTOM"));
    assert_eq!(e["data"], json!({"k": "v", "n": [1]}));
    time_of(&e["updatedAt"]);
    assert_eq!(all_events(&ts, &key, "L1").await, vec![e]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_id_is_generated_and_data_defaults_to_empty_object() {
    let (ts, key) = start().await;
    let a = post_event(&ts, &key, "L1", &json!({"type": "CUSTOM"})).await;
    let b = post_event(&ts, &key, "L1", &json!({"type": "CUSTOM"})).await;
    assert!(!str_of(&a["id"]).is_empty());
    assert_ne!(
        a["id"], b["id"],
        "generated ids differ, so these are two events"
    );
    assert_eq!(a["data"], json!({}));
    assert_eq!(all_events(&ts, &key, "L1").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_type_is_required() {
    let (ts, key) = start().await;
    let r = ts
        .post(
            &key,
            "/v1/leads/L1/events",
            &json!({"id": "e1", "data": {}}),
        )
        .await;
    assert_error(&r, 400, "Missing required field: type");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_type_format_is_checked() {
    let (ts, key) = start().await;
    let longest = "T".repeat(64);
    post_event(&ts, &key, "L1", &json!({"type": longest})).await;
    post_event(&ts, &key, "L1", &json!({"type": "lower.case-ok_1"})).await;
    for bad in [
        json!(""),
        json!("A B"),
        json!("A,B"),
        json!("A\tB"),
        json!("T".repeat(65)),
        json!(7),
        json!(["A"]),
    ] {
        let r = ts
            .post(&key, "/v1/leads/L1/events", &json!({"type": bad}))
            .await;
        assert_error(&r, 400, "Invalid format for field: type");
    }
    assert_eq!(all_events(&ts, &key, "L1").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_data_must_be_an_object() {
    let (ts, key) = start().await;
    for bad in [json!("x"), json!([1]), json!(5), json!(true)] {
        let r = ts
            .post(
                &key,
                "/v1/leads/L1/events",
                &json!({"type": "CUSTOM", "data": bad}),
            )
            .await;
        assert_error(&r, 400, "Invalid format for field: data");
    }
    assert_eq!(all_events(&ts, &key, "L1").await.len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posting_to_an_unknown_lead_is_404() {
    let (ts, key) = start().await;
    let r = ts
        .post(&key, "/v1/leads/nope/events", &json!({"type": "CUSTOM"}))
        .await;
    assert_error(&r, 404, "Resource not found: Lead with id nope");
    assert_error(
        &ts.get(&key, "/v1/leads/nope/events").await,
        404,
        "Resource not found: Lead with id nope",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_type_and_id_is_an_upsert() {
    let (ts, key) = start().await;
    let first = post_event(
        &ts,
        &key,
        "L1",
        &json!({"type": "CUSTOM", "id": "e1", "data": {"v": 1, "old": true}}),
    )
    .await;
    post_event(&ts, &key, "L1", &json!({"type": "CUSTOM", "id": "e2"})).await;
    let second = post_event(
        &ts,
        &key,
        "L1",
        &json!({"type": "CUSTOM", "id": "e1", "data": {"v": 2}}),
    )
    .await;
    assert_eq!(
        second["data"],
        json!({"v": 2}),
        "data is replaced, not merged"
    );
    assert!(time_of(&second["updatedAt"]) > time_of(&first["updatedAt"]));
    let events = all_events(&ts, &key, "L1").await;
    assert_eq!(
        ids(&events),
        ["CUSTOM/e2", "CUSTOM/e1"],
        "listed once, at its new place"
    );
    assert_eq!(events[1], second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_id_with_another_type_is_another_event() {
    let (ts, key) = start().await;
    post_event(
        &ts,
        &key,
        "L1",
        &json!({"type": "CUSTOM", "id": "x", "data": {"n": 1}}),
    )
    .await;
    post_event(
        &ts,
        &key,
        "L1",
        &json!({"type": "TOOL_CALL", "id": "x", "data": {"n": 2}}),
    )
    .await;
    let events = all_events(&ts, &key, "L1").await;
    assert_eq!(ids(&events), ["CUSTOM/x", "TOOL_CALL/x"]);
    assert_eq!(events[0]["data"], json!({"n": 1}));
    assert_eq!(events[1]["data"], json!({"n": 2}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_is_activity_on_the_lead() {
    let (ts, key) = start().await;
    let before = get_lead(&ts, &key, "L1").await;
    let e = post_event(&ts, &key, "L1", &json!({"type": "CUSTOM", "id": "e1"})).await;
    let after = get_lead(&ts, &key, "L1").await;
    assert_eq!(after["lastActivityAt"], e["updatedAt"]);
    assert!(time_of(&after["updatedAt"]) > time_of(&before["updatedAt"]));
    // An upsert of the same event is activity too.
    let e2 = post_event(
        &ts,
        &key,
        "L1",
        &json!({"type": "CUSTOM", "id": "e1", "data": {"v": 2}}),
    )
    .await;
    let later = get_lead(&ts, &key, "L1").await;
    assert_eq!(later["lastActivityAt"], e2["updatedAt"]);
    assert!(time_of(&later["updatedAt"]) > time_of(&after["updatedAt"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_ordered_by_updated_at() {
    let (ts, key) = start().await;
    let types = ["MESSAGE", "CALL", "CUSTOM", "AAA", "ZZZ", "EMAIL"];
    let mut posted = Vec::new();
    for (i, t) in types.iter().enumerate() {
        posted.push(
            post_event(
                &ts,
                &key,
                "L1",
                &json!({"type": t, "id": format!("z{}", 9 - i)}),
            )
            .await,
        );
    }
    let events = all_events(&ts, &key, "L1").await;
    assert_eq!(events, posted, "ascending updatedAt, which is write order");
    for pair in events.windows(2) {
        assert!(time_of(&pair[0]["updatedAt"]) < time_of(&pair[1]["updatedAt"]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn since_is_inclusive() {
    let (ts, key) = start().await;
    let mut posted = Vec::new();
    for i in 0..4 {
        posted.push(
            post_event(
                &ts,
                &key,
                "L1",
                &json!({"type": "CUSTOM", "id": format!("e{i}")}),
            )
            .await,
        );
    }
    let since = str_of(&posted[1]["updatedAt"]);
    let (events, _) = walk(
        &ts,
        &key,
        &format!("/v1/leads/L1/events?since={}", enc(since)),
        "events",
    )
    .await;
    assert_eq!(events, posted[1..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn since_accepts_any_rfc3339_offset() {
    let (ts, key) = start().await;
    let mut posted = Vec::new();
    for i in 0..3 {
        posted.push(
            post_event(
                &ts,
                &key,
                "L1",
                &json!({"type": "CUSTOM", "id": format!("e{i}")}),
            )
            .await,
        );
    }
    let since = with_offset(&posted[1]["updatedAt"]);
    assert!(since.ends_with("+02:00"), "{since}");
    let (events, _) = walk(
        &ts,
        &key,
        &format!("/v1/leads/L1/events?since={}", enc(&since)),
        "events",
    )
    .await;
    assert_eq!(events, posted[1..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_since_is_400() {
    let (ts, key) = start().await;
    for bad in [
        "yesterday",
        "2026-11-22",
        "2026-11-22 10:15:30",
        "1795342530",
    ] {
        let r = ts
            .get(&key, &format!("/v1/leads/L1/events?since={}", enc(bad)))
            .await;
        assert_error(&r, 400, "Invalid format for field: since");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn types_filters_events() {
    let (ts, key) = start().await;
    for (t, id) in [
        ("MESSAGE", "m1"),
        ("CALL", "c1"),
        ("EMAIL", "e1"),
        ("MESSAGE", "m2"),
        ("CUSTOM", "x1"),
    ] {
        post_event(&ts, &key, "L1", &json!({"type": t, "id": id})).await;
    }
    let (only, _) = walk(&ts, &key, "/v1/leads/L1/events?types=MESSAGE", "events").await;
    assert_eq!(ids(&only), ["MESSAGE/m1", "MESSAGE/m2"]);
    let (two, _) = walk(
        &ts,
        &key,
        &format!("/v1/leads/L1/events?types={}", enc("MESSAGE,CUSTOM")),
        "events",
    )
    .await;
    assert_eq!(ids(&two), ["MESSAGE/m1", "MESSAGE/m2", "CUSTOM/x1"]);
    let (none, _) = walk(
        &ts,
        &key,
        "/v1/leads/L1/events?types=COMPLIANCE_BLOCKED",
        "events",
    )
    .await;
    assert!(none.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn types_pages_are_filled_up_to_limit() {
    let (ts, key) = start().await;
    for i in 0..10 {
        let t = if i % 2 == 0 { "A" } else { "B" };
        post_event(&ts, &key, "L1", &json!({"type": t, "id": format!("e{i}")})).await;
    }
    let mut sizes = Vec::new();
    let mut all = Vec::new();
    let mut path = "/v1/leads/L1/events?types=A&limit=2".to_string();
    loop {
        let (events, token) = page(&ts, &key, &path).await;
        sizes.push(events.len());
        all.extend(events);
        match token {
            Value::Null => break,
            Value::String(t) => {
                path = format!("/v1/leads/L1/events?types=A&limit=2&nextToken={}", enc(&t))
            }
            other => panic!("nextToken {other}"),
        }
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(ids(&all), ["A/e0", "A/e2", "A/e4", "A/e6", "A/e8"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_types_are_stored_and_returned() {
    let (ts, key) = start().await;
    let e = post_event(
        &ts,
        &key,
        "L1",
        &json!({"type": "SOMETHING_NEW", "id": "n1", "data": {"x": 1}}),
    )
    .await;
    assert_eq!(all_events(&ts, &key, "L1").await, vec![e.clone()]);
    let (filtered, _) = walk(
        &ts,
        &key,
        "/v1/leads/L1/events?types=SOMETHING_NEW",
        "events",
    )
    .await;
    assert_eq!(filtered, vec![e]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_must_be_1_to_1000() {
    let (ts, key) = start().await;
    for bad in ["0", "1001", "abc", "1.5", "-1"] {
        let r = ts
            .get(&key, &format!("/v1/leads/L1/events?limit={}", enc(bad)))
            .await;
        assert_error(&r, 400, "limit must be an integer between 1 and 1000");
    }
    for good in ["1", "1000"] {
        expect(
            &ts.get(&key, &format!("/v1/leads/L1/events?limit={good}"))
                .await,
            200,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_limit_is_100() {
    let (ts, key) = start().await;
    for i in 0..101 {
        post_event(
            &ts,
            &key,
            "L1",
            &json!({"type": "CUSTOM", "id": format!("e{i:03}")}),
        )
        .await;
    }
    let (first, token) = page(&ts, &key, "/v1/leads/L1/events").await;
    assert_eq!(first.len(), 100);
    let token = str_of(&token).to_string();
    let (rest, end) = page(
        &ts,
        &key,
        &format!("/v1/leads/L1/events?nextToken={}", enc(&token)),
    )
    .await;
    assert_eq!(ids(&rest), ["CUSTOM/e100"]);
    assert_eq!(end, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_token_is_null_exactly_on_the_last_page() {
    let (ts, key) = start().await;
    for i in 0..3 {
        post_event(
            &ts,
            &key,
            "L1",
            &json!({"type": "CUSTOM", "id": format!("e{i}")}),
        )
        .await;
    }
    let (events, token) = page(&ts, &key, "/v1/leads/L1/events?limit=3").await;
    assert_eq!(events.len(), 3);
    assert_eq!(token, Value::Null, "3 events, limit 3: one page");

    post_event(&ts, &key, "L1", &json!({"type": "CUSTOM", "id": "e3"})).await;
    let (events, token) = page(&ts, &key, "/v1/leads/L1/events?limit=3").await;
    assert_eq!(events.len(), 3);
    let token = token
        .as_str()
        .expect("4 events, limit 3: a token")
        .to_string();
    let (rest, end) = page(
        &ts,
        &key,
        &format!("/v1/leads/L1/events?limit=3&nextToken={}", enc(&token)),
    )
    .await;
    assert_eq!(ids(&rest), ["CUSTOM/e3"]);
    assert_eq!(end, Value::Null);

    let (empty, token) = page(&ts, &key, "/v1/leads/L1/events?types=NONE").await;
    assert!(empty.is_empty());
    assert_eq!(token, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_cover_every_event_once() {
    let (ts, key) = start().await;
    let mut posted = Vec::new();
    for i in 0..7 {
        posted.push(
            post_event(
                &ts,
                &key,
                "L1",
                &json!({"type": "CUSTOM", "id": format!("e{i}")}),
            )
            .await,
        );
    }
    let (events, pages) = walk(&ts, &key, "/v1/leads/L1/events?limit=2", "events").await;
    assert_eq!(events, posted);
    assert_eq!(pages, 4);
}

/// A token from a first page of `/v1/leads/L1/events?<query>&limit=1`.
async fn first_token(ts: &TestServer, key: &str, lead: &str, query: &str) -> String {
    let (_, token) = page(ts, key, &format!("/v1/leads/{lead}/events?limit=1{query}")).await;
    str_of(&token).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_or_tampered_tokens_are_400() {
    let (ts, key) = start().await;
    for i in 0..3 {
        post_event(
            &ts,
            &key,
            "L1",
            &json!({"type": "CUSTOM", "id": format!("e{i}")}),
        )
        .await;
    }
    let token = first_token(&ts, &key, "L1", "").await;
    // The genuine token works.
    expect(
        &ts.get(
            &key,
            &format!("/v1/leads/L1/events?limit=1&nextToken={}", enc(&token)),
        )
        .await,
        200,
    );
    let truncated = token[..token.len() - 2].to_string();
    let extended = format!("{token}AA");
    for bad in [
        tamper(&token),
        truncated,
        extended,
        "garbage".to_string(),
        "!!!".to_string(),
    ] {
        let r = ts
            .get(
                &key,
                &format!("/v1/leads/L1/events?limit=1&nextToken={}", enc(&bad)),
            )
            .await;
        assert_error(&r, 400, "Invalid nextToken");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_of_another_query_is_400() {
    let (ts, key) = start().await;
    ts.create_lead(&key, &json!({"id": "L2"})).await;
    for lead in ["L1", "L2"] {
        for i in 0..3 {
            post_event(
                &ts,
                &key,
                lead,
                &json!({"type": "CUSTOM", "id": format!("e{i}")}),
            )
            .await;
        }
    }
    let since = enc("2020-01-01T00:00:00Z");
    let other_since = enc("2021-01-01T00:00:00Z");

    // Another lead.
    let t = first_token(&ts, &key, "L1", "").await;
    let r = ts
        .get(
            &key,
            &format!("/v1/leads/L2/events?limit=1&nextToken={}", enc(&t)),
        )
        .await;
    assert_error(&r, 400, "Invalid nextToken");
    // Other types (and none vs some).
    let t = first_token(&ts, &key, "L1", "&types=CUSTOM").await;
    let r = ts
        .get(
            &key,
            &format!(
                "/v1/leads/L1/events?limit=1&types=MESSAGE&nextToken={}",
                enc(&t)
            ),
        )
        .await;
    assert_error(&r, 400, "Invalid nextToken");
    let r = ts
        .get(
            &key,
            &format!("/v1/leads/L1/events?limit=1&nextToken={}", enc(&t)),
        )
        .await;
    assert_error(&r, 400, "Invalid nextToken");
    // Another since.
    let t = first_token(&ts, &key, "L1", &format!("&since={since}")).await;
    let r = ts
        .get(
            &key,
            &format!(
                "/v1/leads/L1/events?limit=1&since={other_since}&nextToken={}",
                enc(&t)
            ),
        )
        .await;
    assert_error(&r, 400, "Invalid nextToken");
    // The same query accepts it, even with another limit.
    let r = ts
        .get(
            &key,
            &format!(
                "/v1/leads/L1/events?limit=5&since={since}&nextToken={}",
                enc(&t)
            ),
        )
        .await;
    let body = expect(&r, 200);
    assert_eq!(
        ids(body["events"].as_array().unwrap()),
        ["CUSTOM/e1", "CUSTOM/e2"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_of_another_org_is_400() {
    let (ts, acme) = start().await;
    let beta = ts.key("beta", "write").await;
    ts.create_lead(&beta, &json!({"id": "L1"})).await;
    for k in [&acme, &beta] {
        for i in 0..3 {
            post_event(
                &ts,
                k,
                "L1",
                &json!({"type": "CUSTOM", "id": format!("e{i}")}),
            )
            .await;
        }
    }
    let t = first_token(&ts, &acme, "L1", "").await;
    let r = ts
        .get(
            &beta,
            &format!("/v1/leads/L1/events?limit=1&nextToken={}", enc(&t)),
        )
        .await;
    assert_error(&r, 400, "Invalid nextToken");
}
