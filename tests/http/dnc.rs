//! The Do Not Contact list: registration (idempotent, E.164), paging, removal (admin),
//! isolation between organizations, and its effect on lead imports.

use serde_json::{json, Value};

use engaged::testkit::TestServer;

use crate::answers::{assert_error, expect, time_of};

async fn start() -> (TestServer, String, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    let admin = ts.key("acme", "admin").await;
    (ts, key, admin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dnc_register_is_idempotent_normalised_paged_and_blocks_imports() {
    let (ts, key, admin) = start().await;
    for raw in ["+1 (555) 123-4567", "+15551234567"] {
        let r = ts
            .post(&key, "/v1/dnc/register", &json!({"phone": raw}))
            .await;
        assert_eq!(
            expect(&r, 200),
            json!({"message": "Phone number added to the Do Not Contact list."})
        );
    }
    assert_error(
        &ts.post(&key, "/v1/dnc/register", &json!({"phone": "555-1234"}))
            .await,
        400,
        "Invalid format for field: phone",
    );
    for raw in ["+15550000001", "+15550000002"] {
        expect(
            &ts.post(&key, "/v1/dnc/register", &json!({"phone": raw}))
                .await,
            200,
        );
    }
    let first = expect(&ts.get(&key, "/v1/dnc?limit=2").await, 200);
    assert_eq!(first["numbers"].as_array().map(Vec::len), Some(2));
    let token = first["nextToken"].as_str().unwrap().to_string();
    let second = expect(
        &ts.get(&key, &format!("/v1/dnc?limit=2&nextToken={token}"))
            .await,
        200,
    );
    assert_eq!(second["numbers"][0]["phone"], json!("+15551234567"));
    assert_eq!(second["nextToken"], Value::Null);

    let r = ts
        .post(&key, "/v1/leads", &json!({"phone": "+1 555 123 4567"}))
        .await;
    assert_error(&r, 409, "Phone number is on the Do Not Contact list");

    assert_error(
        &ts.delete(&key, "/v1/dnc/%2B15551234567").await,
        403,
        "Forbidden",
    );
    let r = ts.delete(&admin, "/v1/dnc/%2B15551234567").await;
    assert_eq!(
        expect(&r, 200),
        json!({"message": "Phone number removed from the Do Not Contact list."})
    );
    assert_error(
        &ts.delete(&admin, "/v1/dnc/%2B15551234567").await,
        404,
        "Phone number not found",
    );
    expect(
        &ts.post(&key, "/v1/leads", &json!({"phone": "+15551234567"}))
            .await,
        201,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_is_paged_with_addition_times_and_scoped_by_key() {
    let (ts, key, admin) = start().await;
    let reader = ts.key("acme", "read").await;
    assert_error(
        &ts.post(
            &reader,
            "/v1/dnc/register",
            &json!({"phone": "+15550000001"}),
        )
        .await,
        403,
        "Forbidden",
    );
    let mut registered = Vec::new();
    for i in 0..5 {
        let phone = format!("+1555000000{i}");
        expect(
            &ts.post(&key, "/v1/dnc/register", &json!({"phone": phone}))
                .await,
            200,
        );
        registered.push(phone);
    }
    let first_added = {
        let page = expect(&ts.get(&reader, "/v1/dnc?limit=1").await, 200);
        time_of(&page["numbers"][0]["addedAt"])
    };
    // Registering again keeps the first addition time.
    expect(
        &ts.post(&key, "/v1/dnc/register", &json!({"phone": "+15550000000"}))
            .await,
        200,
    );
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let path = match &token {
            Some(t) => format!("/v1/dnc?limit=2&nextToken={t}"),
            None => "/v1/dnc?limit=2".to_string(),
        };
        let page = expect(&ts.get(&reader, &path).await, 200);
        for n in page["numbers"].as_array().unwrap() {
            assert_eq!(n.as_object().map(|o| o.len()), Some(2), "{n}");
            time_of(&n["addedAt"]);
            seen.push(n["phone"].as_str().unwrap().to_string());
        }
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, registered);
    let page = expect(&ts.get(&reader, "/v1/dnc?limit=1").await, 200);
    assert_eq!(time_of(&page["numbers"][0]["addedAt"]), first_added);

    assert_error(
        &ts.get(&reader, "/v1/dnc?limit=0").await,
        400,
        "limit must be an integer between 1 and 1000",
    );
    assert_error(
        &ts.get(&reader, "/v1/dnc?nextToken=garbage").await,
        400,
        "Invalid nextToken",
    );

    // Another organization has its own list.
    let other = ts.key("globex", "write").await;
    let theirs = expect(&ts.get(&other, "/v1/dnc").await, 200);
    assert_eq!(theirs, json!({"numbers": [], "nextToken": null}));
    let other_admin = ts.key("globex", "admin").await;
    assert_error(
        &ts.delete(&other_admin, "/v1/dnc/%2B15550000000").await,
        404,
        "Phone number not found",
    );
    ts.create_lead(&other, &json!({"phone": "+15550000000"}))
        .await;
    // The removal path normalises what it is given.
    expect(
        &ts.delete(&admin, "/v1/dnc/%2B1%20(555)%20000-0000").await,
        200,
    );
    assert_error(
        &ts.delete(&admin, "/v1/dnc/not-a-number").await,
        400,
        "Invalid format for field: phone",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_validates_its_body_and_guards_lead_updates() {
    let (ts, key, _) = start().await;
    for body in [
        json!({}),
        json!({"phone": 15551234567u64}),
        json!({"phone": ""}),
    ] {
        assert_error(
            &ts.post(&key, "/v1/dnc/register", &body).await,
            400,
            "Invalid format for field: phone",
        );
    }
    assert_error(
        &ts.post(
            &key,
            "/v1/dnc/register",
            &json!({"phone": "+15551234567", "note": "x"}),
        )
        .await,
        400,
        "Unknown field: note",
    );
    ts.create_lead(&key, &json!({"id": "p", "phone": "+15557654321"}))
        .await;
    expect(
        &ts.post(&key, "/v1/dnc/register", &json!({"phone": "+15551234567"}))
            .await,
        200,
    );
    let r = ts
        .patch(&key, "/v1/leads/p", &json!({"phone": "+1-555-123-4567"}))
        .await;
    assert_error(&r, 409, "Phone number is on the Do Not Contact list");
    // Listing a lead's own number leaves the lead alone: the gate stops outreach.
    expect(
        &ts.post(&key, "/v1/dnc/register", &json!({"phone": "+15557654321"}))
            .await,
        200,
    );
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(l["isUnsubscribed"], json!(false));
    assert_eq!(l["deleted"], json!(false));
}
