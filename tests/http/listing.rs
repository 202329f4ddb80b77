//! GET /v1/leads: required filters, ordering, inclusive bounds, limit and token rules.

use serde_json::{json, Value};

use engaged::testkit::{enc, TestServer};

use crate::answers::*;
use crate::requests::*;
use crate::twilio_signing::*;

async fn start() -> (TestServer, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    (ts, key)
}

fn ids(leads: &[Value]) -> Vec<String> {
    leads.iter().map(|l| str_of(&l["id"]).to_string()).collect()
}

async fn page(ts: &TestServer, key: &str, path: &str) -> (Vec<Value>, Value) {
    let body = expect(&ts.get(key, path).await, 200);
    let leads = body["leads"]
        .as_array()
        .unwrap_or_else(|| panic!("leads array: {body}"))
        .clone();
    (leads, body["nextToken"].clone())
}

fn updated_since(t: &str) -> String {
    format!("/v1/leads?updatedSince={}", enc(t))
}

fn created_since(t: &str) -> String {
    format!("/v1/leads?createdSince={}", enc(t))
}

async fn patch(ts: &TestServer, key: &str, id: &str, body: Value) -> Value {
    expect(&ts.patch(key, &lead_path(id), &body).await, 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_since_parameter_is_required() {
    let (ts, key) = start().await;
    for path in [
        "/v1/leads",
        "/v1/leads?limit=10",
        "/v1/leads?since=2020-01-01T00:00:00Z",
    ] {
        assert_error(
            &ts.get(&key, path).await,
            400,
            "updatedSince or createdSince is required",
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_timestamps_are_400_naming_the_parameter() {
    let (ts, key) = start().await;
    for bad in ["yesterday", "2026-11-22", "2026-13-01T00:00:00Z"] {
        let r = ts.get(&key, &updated_since(bad)).await;
        assert_error(&r, 400, "Invalid format for field: updatedSince");
        let r = ts.get(&key, &created_since(bad)).await;
        assert_error(&r, 400, "Invalid format for field: createdSince");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_leads_are_the_full_lead() {
    let (ts, key) = start().await;
    reachable_lead(&ts, &key, "L1").await;
    post_event(&ts, &key, "L1", &json!({"type": "CUSTOM"})).await;
    let (leads, token) = page(&ts, &key, &updated_since(EPOCH)).await;
    assert_eq!(token, Value::Null);
    assert_eq!(leads, vec![get_lead(&ts, &key, "L1").await]);
    for field in LEAD_FIELDS {
        assert!(leads[0].get(*field).is_some(), "{field}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updated_since_orders_by_updated_at() {
    let (ts, key) = start().await;
    for id in ["a", "b", "c"] {
        ts.create_lead(&key, &json!({"id": id})).await;
    }
    patch(&ts, &key, "a", json!({"firstName": "A"})).await;
    let (leads, _) = walk(&ts, &key, &updated_since(EPOCH), "leads").await;
    assert_eq!(ids(&leads), ["b", "c", "a"]);
    for pair in leads.windows(2) {
        assert!(time_of(&pair[0]["updatedAt"]) < time_of(&pair[1]["updatedAt"]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_since_orders_by_created_at() {
    let (ts, key) = start().await;
    for id in ["z", "m", "a"] {
        ts.create_lead(&key, &json!({"id": id})).await;
    }
    patch(&ts, &key, "z", json!({"firstName": "Z"})).await;
    let (leads, _) = walk(&ts, &key, &created_since(EPOCH), "leads").await;
    assert_eq!(ids(&leads), ["z", "m", "a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounds_are_inclusive() {
    let (ts, key) = start().await;
    let mut created = Vec::new();
    for id in ["a", "b", "c"] {
        created.push(ts.create_lead(&key, &json!({"id": id})).await);
    }
    let (leads, _) = walk(
        &ts,
        &key,
        &updated_since(str_of(&created[1]["updatedAt"])),
        "leads",
    )
    .await;
    assert_eq!(ids(&leads), ["b", "c"]);
    let (leads, _) = walk(
        &ts,
        &key,
        &created_since(str_of(&created[1]["createdAt"])),
        "leads",
    )
    .await;
    assert_eq!(ids(&leads), ["b", "c"]);
    // The same instant written with an offset.
    let (leads, _) = walk(
        &ts,
        &key,
        &updated_since(&with_offset(&created[2]["updatedAt"])),
        "leads",
    )
    .await;
    assert_eq!(ids(&leads), ["c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_parameters_apply_both_filters() {
    let (ts, key) = start().await;
    let mut created = Vec::new();
    for id in ["a", "b", "c"] {
        created.push(ts.create_lead(&key, &json!({"id": id})).await);
    }
    patch(&ts, &key, "a", json!({"firstName": "A"})).await;
    patch(&ts, &key, "b", json!({"firstName": "B"})).await;
    // updatedAt order is now c < a < b; `a` was created before `b`.
    let path = format!(
        "/v1/leads?createdSince={}&updatedSince={}",
        enc(str_of(&created[1]["createdAt"])),
        enc(str_of(&created[2]["updatedAt"]))
    );
    let (leads, _) = walk(&ts, &key, &path, "leads").await;
    assert_eq!(
        ids(&leads),
        ["c", "b"],
        "ordered by updatedAt, `a` filtered out by createdSince"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_must_be_1_to_1000() {
    let (ts, key) = start().await;
    for bad in ["0", "1001", "abc", "1.5", "-2"] {
        let r = ts
            .get(
                &key,
                &format!("{}&limit={}", updated_since(EPOCH), enc(bad)),
            )
            .await;
        assert_error(&r, 400, "limit must be an integer between 1 and 1000");
    }
    for good in ["1", "1000"] {
        expect(
            &ts.get(&key, &format!("{}&limit={good}", updated_since(EPOCH)))
                .await,
            200,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_limit_is_100() {
    let (ts, key) = start().await;
    for i in 0..101 {
        ts.create_lead(&key, &json!({"id": format!("l{i:03}")}))
            .await;
    }
    let (first, token) = page(&ts, &key, &created_since(EPOCH)).await;
    assert_eq!(first.len(), 100);
    let token = str_of(&token).to_string();
    let (rest, end) = page(
        &ts,
        &key,
        &format!("{}&nextToken={}", created_since(EPOCH), enc(&token)),
    )
    .await;
    assert_eq!(ids(&rest), ["l100"]);
    assert_eq!(end, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_token_is_null_exactly_on_the_last_page() {
    let (ts, key) = start().await;
    let (empty, token) = page(&ts, &key, &updated_since(EPOCH)).await;
    assert!(empty.is_empty());
    assert_eq!(token, Value::Null, "no leads: null");

    for id in ["a", "b", "c"] {
        ts.create_lead(&key, &json!({"id": id})).await;
    }
    let (leads, token) = page(&ts, &key, &format!("{}&limit=3", updated_since(EPOCH))).await;
    assert_eq!(leads.len(), 3);
    assert_eq!(token, Value::Null, "3 leads, limit 3: one page");

    ts.create_lead(&key, &json!({"id": "d"})).await;
    let base = format!("{}&limit=3", updated_since(EPOCH));
    let (leads, token) = page(&ts, &key, &base).await;
    assert_eq!(ids(&leads), ["a", "b", "c"]);
    let token = token
        .as_str()
        .expect("4 leads, limit 3: a token")
        .to_string();
    let (rest, end) = page(&ts, &key, &format!("{base}&nextToken={}", enc(&token))).await;
    assert_eq!(ids(&rest), ["d"]);
    assert_eq!(end, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_cover_every_lead_once() {
    let (ts, key) = start().await;
    for i in 0..9 {
        ts.create_lead(&key, &json!({"id": format!("l{i}")})).await;
    }
    for (path, what) in [
        (updated_since(EPOCH), "updated"),
        (created_since(EPOCH), "created"),
    ] {
        let (leads, pages) = walk(&ts, &key, &format!("{path}&limit=2"), "leads").await;
        assert_eq!(
            ids(&leads),
            (0..9).map(|i| format!("l{i}")).collect::<Vec<_>>(),
            "{what}"
        );
        assert_eq!(pages, 5, "{what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_deleted_leads_are_listed_as_deleted() {
    let (ts, key) = start().await;
    for id in ["a", "b"] {
        ts.create_lead(&key, &json!({"id": id})).await;
    }
    expect(&ts.delete(&key, "/v1/leads/a").await, 200);
    for path in [updated_since(EPOCH), created_since(EPOCH)] {
        let (leads, _) = walk(&ts, &key, &path, "leads").await;
        let a = leads
            .iter()
            .find(|l| l["id"] == json!("a"))
            .expect("deleted lead listed");
        assert_eq!(a["deleted"], json!(true));
        time_of(&a["deletedAt"]);
        let b = leads
            .iter()
            .find(|l| l["id"] == json!("b"))
            .expect("live lead listed");
        assert_eq!(b["deleted"], json!(false));
        assert_eq!(b["deletedAt"], Value::Null);
    }
}

async fn first_token(ts: &TestServer, key: &str, path: &str) -> String {
    let (_, token) = page(ts, key, &format!("{path}&limit=1")).await;
    str_of(&token).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_or_tampered_tokens_are_400() {
    let (ts, key) = start().await;
    for id in ["a", "b", "c"] {
        ts.create_lead(&key, &json!({"id": id})).await;
    }
    let base = updated_since(EPOCH);
    let token = first_token(&ts, &key, &base).await;
    expect(
        &ts.get(&key, &format!("{base}&limit=1&nextToken={}", enc(&token)))
            .await,
        200,
    );
    let truncated = token[..token.len() - 2].to_string();
    for bad in [
        tamper(&token),
        truncated,
        format!("{token}AA"),
        "garbage".to_string(),
        "%%%".to_string(),
    ] {
        let r = ts
            .get(&key, &format!("{base}&limit=1&nextToken={}", enc(&bad)))
            .await;
        assert_error(&r, 400, "Invalid nextToken");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_of_another_query_is_400() {
    let (ts, key) = start().await;
    for id in ["a", "b", "c"] {
        ts.create_lead(&key, &json!({"id": id})).await;
    }
    let t1 = "2020-01-01T00:00:00Z";
    let t2 = "2021-01-01T00:00:00Z";
    let token = first_token(&ts, &key, &updated_since(t1)).await;
    for other in [
        updated_since(t2),
        created_since(t1),
        format!("{}&createdSince={}", updated_since(t1), enc(t1)),
        "/v1/leads/a/events?since=2020-01-01T00%3A00%3A00Z".to_string(),
    ] {
        let r = ts
            .get(&key, &format!("{other}&limit=1&nextToken={}", enc(&token)))
            .await;
        assert_error(&r, 400, "Invalid nextToken");
    }
    // The same query accepts it, with any limit.
    let (rest, end) = page(
        &ts,
        &key,
        &format!("{}&limit=10&nextToken={}", updated_since(t1), enc(&token)),
    )
    .await;
    assert_eq!(ids(&rest), ["b", "c"]);
    assert_eq!(end, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_of_another_org_is_400() {
    let (ts, acme) = start().await;
    let beta = ts.key("beta", "write").await;
    for id in ["a", "b", "c"] {
        ts.create_lead(&acme, &json!({"id": id})).await;
        ts.create_lead(&beta, &json!({"id": format!("beta-{id}")}))
            .await;
    }
    let base = updated_since(EPOCH);
    let token = first_token(&ts, &acme, &base).await;
    let r = ts
        .get(&beta, &format!("{base}&limit=1&nextToken={}", enc(&token)))
        .await;
    assert_error(&r, 400, "Invalid nextToken");
}
