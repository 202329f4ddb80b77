//! Authentication (`x-api-key`), scopes, key revocation and organization isolation.

use hyper::Method;
use serde_json::{json, Value};

use engaged::admin::AdminRequest;

use crate::answers::*;
use crate::requests::*;
use engaged::testkit::{enc, TestServer};

fn listing() -> String {
    format!("/v1/leads?updatedSince={}", enc(EPOCH))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_needs_no_key() {
    let ts = TestServer::start().await;
    let r = ts
        .request(Method::GET, "/healthz", None, None, Vec::new())
        .await;
    assert_eq!(r.status, 200, "{}", text(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_key_is_401_unauthorized() {
    let ts = TestServer::start().await;
    let r = ts
        .request(Method::GET, &listing(), None, None, Vec::new())
        .await;
    assert_error(&r, 401, "Unauthorized");
    let r = ts
        .request(Method::GET, "/v1/leads/x", None, None, Vec::new())
        .await;
    assert_error(&r, 401, "Unauthorized");
    let r = ts
        .request(
            Method::POST,
            "/v1/leads",
            None,
            Some("application/json"),
            b"{}".to_vec(),
        )
        .await;
    assert_error(&r, 401, "Unauthorized");
    let r = ts
        .request(
            Method::PUT,
            "/v1/calls/c1",
            None,
            Some("application/json"),
            b"{}".to_vec(),
        )
        .await;
    assert_error(&r, 401, "Unauthorized");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_key_is_403_forbidden() {
    let ts = TestServer::start().await;
    let _real = ts.key("acme", "write").await;
    let r = ts.get("not-a-key", &listing()).await;
    assert_error(&r, 403, "Forbidden");
    let r = ts.post("not-a-key", "/v1/leads", &json!({})).await;
    assert_error(&r, 403, "Forbidden");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_key_can_get_everything() {
    let ts = TestServer::start().await;
    let write = ts.key("acme", "write").await;
    let read = ts.key("acme", "read").await;
    reachable_lead(&ts, &write, "L1").await;
    post_event(&ts, &write, "L1", &json!({"type": "CUSTOM", "id": "e1"})).await;
    let r = ts
        .put(
            &write,
            "/v1/calls/c1",
            &json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE"}),
        )
        .await;
    expect(&r, 201);

    for path in [
        listing(),
        format!("/v1/leads?createdSince={}", enc(EPOCH)),
        "/v1/leads/L1".to_string(),
        "/v1/leads/L1/events".to_string(),
        "/v1/leads/L1/messages".to_string(),
        "/v1/calls/c1".to_string(),
    ] {
        let r = ts.get(&read, &path).await;
        assert_eq!(r.status, 200, "GET {path} with a read key: {}", text(&r));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_key_cannot_write() {
    let ts = TestServer::start().await;
    let write = ts.key("acme", "write").await;
    let read = ts.key("acme", "read").await;
    reachable_lead(&ts, &write, "L1").await;
    let before = get_lead(&ts, &write, "L1").await;

    let r = ts.post(&read, "/v1/leads", &json!({"id": "L2"})).await;
    assert_error(&r, 403, "Forbidden");
    let r = ts
        .patch(&read, "/v1/leads/L1", &json!({"firstName": "Eve"}))
        .await;
    assert_error(&r, 403, "Forbidden");
    let r = ts.delete(&read, "/v1/leads/L1").await;
    assert_error(&r, 403, "Forbidden");
    let r = ts
        .post(&read, "/v1/leads/L1/events", &json!({"type": "CUSTOM"}))
        .await;
    assert_error(&r, 403, "Forbidden");
    let body = json!({"owner": "lead", "channel": "sms", "content": {"text": "hi"}});
    let r = ts.post(&read, "/v1/leads/L1/messages", &body).await;
    assert_error(&r, 403, "Forbidden");
    let call = json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE"});
    let r = ts.put(&read, "/v1/calls/c1", &call).await;
    assert_error(&r, 403, "Forbidden");

    // Nothing changed.
    assert_eq!(get_lead(&ts, &write, "L1").await, before);
    assert_error(
        &ts.get(&write, "/v1/leads/L2").await,
        404,
        "Resource not found: Lead with id L2",
    );
    assert_eq!(all_events(&ts, &write, "L1").await, Vec::<Value>::new());
    assert_error(&ts.get(&write, "/v1/calls/c1").await, 404, "Call not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_key_can_do_what_write_can() {
    let ts = TestServer::start().await;
    let admin = ts.key("acme", "admin").await;
    ts.create_lead(&admin, &json!({"id": "L1"})).await;
    let r = ts
        .patch(&admin, "/v1/leads/L1", &json!({"firstName": "Ada"}))
        .await;
    expect(&r, 200);
    post_event(&ts, &admin, "L1", &json!({"type": "CUSTOM"})).await;
    let r = ts
        .put(
            &admin,
            "/v1/calls/c1",
            &json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE"}),
        )
        .await;
    expect(&r, 201);
    expect(&ts.get(&admin, "/v1/leads/L1").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_key_is_403_forbidden() {
    let ts = TestServer::start().await;
    let _ = ts
        .admin(AdminRequest::OrgCreate {
            name: "acme".to_string(),
        })
        .await;
    let created = ts
        .admin(AdminRequest::KeyCreate {
            org: "acme".to_string(),
            scope: engaged::store::rows::Scope::Write,
            name: None,
        })
        .await
        .expect("key create");
    let key = str_of(&created["key"]).to_string();
    let id = str_of(&created["id"]).to_string();
    assert_eq!(created["org"], json!("acme"));
    assert_eq!(created["scope"], json!("write"));

    expect(&ts.get(&key, &listing()).await, 200);
    ts.admin(AdminRequest::KeyRevoke { id: id.clone() })
        .await
        .expect("revoke");
    assert_error(&ts.get(&key, &listing()).await, 403, "Forbidden");
    assert_error(
        &ts.post(&key, "/v1/leads", &json!({})).await,
        403,
        "Forbidden",
    );

    // Other keys of the organization still work.
    let other = ts.key("acme", "write").await;
    expect(&ts.get(&other, &listing()).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_list_describes_keys_without_the_secret() {
    let ts = TestServer::start().await;
    let _ = ts
        .admin(AdminRequest::OrgCreate {
            name: "acme".to_string(),
        })
        .await;
    let _ = ts
        .admin(AdminRequest::OrgCreate {
            name: "beta".to_string(),
        })
        .await;
    let a = ts
        .admin(AdminRequest::KeyCreate {
            org: "acme".to_string(),
            scope: engaged::store::rows::Scope::Read,
            name: Some("reporting".to_string()),
        })
        .await
        .expect("key create");
    let b = ts
        .admin(AdminRequest::KeyCreate {
            org: "beta".to_string(),
            scope: engaged::store::rows::Scope::Write,
            name: None,
        })
        .await
        .expect("key create");
    ts.admin(AdminRequest::KeyRevoke {
        id: str_of(&a["id"]).to_string(),
    })
    .await
    .expect("revoke");

    let all = ts
        .admin(AdminRequest::KeyList { org: None })
        .await
        .expect("key list");
    let dump = all.to_string();
    for secret in [str_of(&a["key"]), str_of(&b["key"])] {
        assert!(!dump.contains(secret), "key list shows a key: {dump}");
    }
    let keys = all["keys"].as_array().expect("keys array");
    let find = |id: &Value| {
        keys.iter()
            .find(|k| &k["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} listed"))
    };
    let ka = find(&a["id"]);
    for field in ["id", "org", "scope", "name", "createdAt", "revoked"] {
        assert!(ka.get(field).is_some(), "key entry has {field}: {ka}");
    }
    assert_eq!(ka["org"], json!("acme"));
    assert_eq!(ka["scope"], json!("read"));
    assert_eq!(ka["name"], json!("reporting"));
    assert_eq!(ka["revoked"], json!(true));
    assert_eq!(find(&b["id"])["revoked"], json!(false));

    let acme = ts
        .admin(AdminRequest::KeyList {
            org: Some("acme".to_string()),
        })
        .await
        .expect("key list");
    let acme_keys = acme["keys"].as_array().expect("keys array");
    assert!(acme_keys.iter().any(|k| k["id"] == a["id"]));
    assert!(
        acme_keys.iter().all(|k| k["org"] == json!("acme")),
        "{acme}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_orgs_lead_is_indistinguishable_from_a_missing_one() {
    let ts = TestServer::start().await;
    let acme = ts.key("acme", "write").await;
    let beta = ts.key("beta", "write").await;
    reachable_lead(&ts, &acme, "L1").await;
    post_event(&ts, &acme, "L1", &json!({"type": "CUSTOM", "id": "e1"})).await;
    let before = get_lead(&ts, &acme, "L1").await;

    let missing = "Resource not found: Lead with id L1";
    assert_error(&ts.get(&beta, "/v1/leads/L1").await, 404, missing);
    assert_error(&ts.get(&beta, "/v1/leads/L1/events").await, 404, missing);
    assert_error(&ts.get(&beta, "/v1/leads/L1/messages").await, 404, missing);
    assert_error(
        &ts.patch(&beta, "/v1/leads/L1", &json!({"firstName": "Eve"}))
            .await,
        404,
        missing,
    );
    assert_error(&ts.delete(&beta, "/v1/leads/L1").await, 404, missing);
    assert_error(
        &ts.post(&beta, "/v1/leads/L1/events", &json!({"type": "CUSTOM"}))
            .await,
        404,
        missing,
    );
    let msg = json!({"owner": "lead", "channel": "sms", "content": {"text": "hi"}});
    assert_error(
        &ts.post(&beta, "/v1/leads/L1/messages", &msg).await,
        404,
        missing,
    );
    let call = json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE"});
    assert_error(&ts.put(&beta, "/v1/calls/c9", &call).await, 404, missing);

    assert_eq!(
        get_lead(&ts, &acme, "L1").await,
        before,
        "acme's lead untouched"
    );
    assert_eq!(all_events(&ts, &acme, "L1").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_orgs_leads_never_appear_in_a_listing() {
    let ts = TestServer::start().await;
    let acme = ts.key("acme", "write").await;
    let beta = ts.key("beta", "write").await;
    for i in 0..3 {
        ts.create_lead(&acme, &json!({"id": format!("a{i}")})).await;
        ts.create_lead(&beta, &json!({"id": format!("b{i}")})).await;
    }
    let ids = |leads: Vec<Value>| {
        leads
            .iter()
            .map(|l| str_of(&l["id"]).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(all_leads(&ts, &acme).await), ["a0", "a1", "a2"]);
    assert_eq!(ids(all_leads(&ts, &beta).await), ["b0", "b1", "b2"]);
    let (created, _) = walk(
        &ts,
        &beta,
        &format!("/v1/leads?createdSince={}", enc(EPOCH)),
        "leads",
    )
    .await;
    assert_eq!(ids(created), ["b0", "b1", "b2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_lead_id_in_two_orgs_are_separate_leads() {
    let ts = TestServer::start().await;
    let acme = ts.key("acme", "write").await;
    let beta = ts.key("beta", "write").await;
    ts.create_lead(&acme, &json!({"id": "shared", "firstName": "Acme"}))
        .await;
    // A 409 here would reveal that another organization uses the id.
    ts.create_lead(&beta, &json!({"id": "shared", "firstName": "Beta"}))
        .await;
    assert_eq!(
        get_lead(&ts, &acme, "shared").await["firstName"],
        json!("Acme")
    );
    assert_eq!(
        get_lead(&ts, &beta, "shared").await["firstName"],
        json!("Beta")
    );
    post_event(&ts, &beta, "shared", &json!({"type": "CUSTOM", "id": "e1"})).await;
    assert_eq!(all_events(&ts, &acme, "shared").await.len(), 0);
    assert_eq!(all_events(&ts, &beta, "shared").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_orgs_call_is_not_found() {
    let ts = TestServer::start().await;
    let acme = ts.key("acme", "write").await;
    let beta = ts.key("beta", "write").await;
    let call = json!({"sessionId": "s1", "direction": "INBOUND", "callStatus": "COMPLETE", "durationSeconds": 5});
    expect(&ts.put(&acme, "/v1/calls/c1", &call).await, 201);
    assert_error(&ts.get(&beta, "/v1/calls/c1").await, 404, "Call not found");

    // beta writing the same call id makes beta's own call and leaves acme's alone.
    let other = json!({"sessionId": "s2", "direction": "OUTBOUND", "callStatus": "NO_ANSWER"});
    expect(&ts.put(&beta, "/v1/calls/c1", &other).await, 201);
    let a = expect(&ts.get(&acme, "/v1/calls/c1").await, 200);
    assert_eq!(a["direction"], json!("INBOUND"));
    assert_eq!(a["durationSeconds"], json!(5));
    assert_eq!(a["sessionId"], json!("s1"));
}
