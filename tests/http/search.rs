//! GET /v1/leads/search: the console's lead filters for integrators. Each filter
//! narrows, the total counts every page, paging walks them all once, and an unknown or
//! malformed parameter is a 400 that names it.

use serde_json::{json, Value};

use engaged::testkit::TestServer;

use crate::answers::*;

async fn three_leads(ts: &TestServer, key: &str) {
    for body in [
        json!({"id": "s-ana", "firstName": "Ana", "lastName": "Ruiz", "isHot": true, "customerProfile": "solar"}),
        json!({"id": "s-bo", "firstName": "Bo", "lastName": "Chen", "isHot": true, "isQualified": true}),
        json!({"id": "s-cy", "firstName": "Cy", "lastName": "Diaz", "email": "cy@example.com"}),
    ] {
        ts.create_lead(key, &body).await;
    }
}

fn ids(page: &Value) -> Vec<String> {
    let mut ids: Vec<String> = page["leads"]
        .as_array()
        .expect("leads")
        .iter()
        .map(|l| str_of(&l["id"]).to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_filter_narrows_and_the_total_counts_them_all() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "read").await;
    let write = ts.key("acme", "write").await;
    three_leads(&ts, &write).await;

    let all = expect(&ts.get(&key, "/v1/leads/search").await, 200);
    assert_eq!(all["total"], json!(3));
    assert_eq!(all["nextToken"], Value::Null);

    let hot = expect(&ts.get(&key, "/v1/leads/search?hot=true").await, 200);
    assert_eq!(ids(&hot), ["s-ana", "s-bo"]);
    assert_eq!(hot["total"], json!(2));

    let both = expect(
        &ts.get(&key, "/v1/leads/search?hot=true&qualified=false")
            .await,
        200,
    );
    assert_eq!(ids(&both), ["s-ana"]);

    let found = expect(&ts.get(&key, "/v1/leads/search?q=cy%40exa").await, 200);
    assert_eq!(ids(&found), ["s-cy"]);
    let by_name = expect(&ts.get(&key, "/v1/leads/search?q=ruiz").await, 200);
    assert_eq!(ids(&by_name), ["s-ana"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_walk_every_match_once_and_a_deleted_lead_leaves() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    three_leads(&ts, &key).await;
    let mut seen = Vec::new();
    let mut path = "/v1/leads/search?limit=1".to_string();
    loop {
        let page = expect(&ts.get(&key, &path).await, 200);
        assert_eq!(page["total"], json!(3), "every page carries the total");
        seen.extend(ids(&page));
        match page["nextToken"].as_str() {
            Some(token) => path = format!("/v1/leads/search?limit=1&nextToken={token}"),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["s-ana", "s-bo", "s-cy"]);

    expect(&ts.delete(&key, "/v1/leads/s-bo").await, 200);
    let after = expect(&ts.get(&key, "/v1/leads/search?hot=true").await, 200);
    assert_eq!(ids(&after), ["s-ana"]);
    assert_eq!(after["total"], json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_organizations_leads_are_never_found() {
    let ts = TestServer::start().await;
    let acme = ts.key("acme", "write").await;
    let other = ts.key("globex", "read").await;
    three_leads(&ts, &acme).await;
    let page = expect(&ts.get(&other, "/v1/leads/search?q=ana").await, 200);
    assert_eq!(page["total"], json!(0));
    assert_eq!(page["leads"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_or_malformed_parameter_is_named() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "read").await;
    assert_error(
        &ts.get(&key, "/v1/leads/search?isHot=true").await,
        400,
        "Unknown parameter: isHot",
    );
    assert_error(
        &ts.get(&key, "/v1/leads/search?hot=yes").await,
        400,
        "Invalid format for field: hot",
    );
    assert_error(
        &ts.get(&key, "/v1/leads/search?state=sleeping").await,
        400,
        "Invalid format for field: state",
    );
    assert_error(
        &ts.get(&key, "/v1/leads/search?sort=name").await,
        400,
        "Invalid format for field: sort",
    );
    assert_error(
        &ts.get("no-such-key", "/v1/leads/search").await,
        403,
        "Forbidden",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_next_token_is_bound_to_its_filters() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    three_leads(&ts, &key).await;
    let page = expect(
        &ts.get(&key, "/v1/leads/search?hot=true&limit=1").await,
        200,
    );
    let token = str_of(&page["nextToken"]).to_string();
    let other = ts
        .get(
            &key,
            &format!("/v1/leads/search?hot=false&limit=1&nextToken={token}"),
        )
        .await;
    assert_error_status(&other, 400);
}
