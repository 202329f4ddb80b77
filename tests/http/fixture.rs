//! Files written by an earlier release keep opening and reading the same.
//!
//! `tests/fixtures/schema-vN.redb` was written by the release whose schema is N (the
//! ignored test below writes one for the current schema) and `schema-vN.json` holds what
//! the server answered then. A later change of a table or a record format must keep
//! these answers identical, by migrating the file at start-up (`store::migrations`), or
//! these tests fail.

use serde_json::{json, Value};

use engaged::testkit::TestServer;

const FIXTURE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// What the fixture's answers are compared on: reads of every kind of record.
async fn snapshot(ts: &TestServer, admin: &str) -> Value {
    let mut out = serde_json::Map::new();
    for (name, path) in [
        ("lead", "/v1/leads/fx-lead"),
        ("deleted", "/v1/leads/fx-gone"),
        ("leads", "/v1/leads?updatedSince=1970-01-01T00%3A00%3A00Z"),
        ("events", "/v1/leads/fx-lead/events"),
        ("messages", "/v1/leads/fx-lead/messages"),
        ("call", "/v1/calls/fx-call"),
        ("webhooks", "/v1/webhooks"),
    ] {
        let r = ts.get(admin, path).await;
        assert_eq!(
            r.status,
            200,
            "{path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        out.insert(name.to_string(), r.json());
    }
    // Tokens are sealed with the file's own secret: a page token must still open.
    let r = ts
        .get(
            admin,
            "/v1/leads?updatedSince=1970-01-01T00%3A00%3A00Z&limit=1",
        )
        .await;
    let token = r.json()["nextToken"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let next = ts
        .get(
            admin,
            &format!("/v1/leads?updatedSince=1970-01-01T00%3A00%3A00Z&limit=1&nextToken={token}"),
        )
        .await;
    assert_eq!(next.status, 200, "{}", String::from_utf8_lossy(&next.body));
    out.insert("secondPage".into(), next.json()["leads"].clone());
    out.insert("token".into(), json!(token));
    Value::Object(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_by_schema_v1_reads_the_same() {
    reads_the_same(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_by_schema_v2_reads_the_same() {
    reads_the_same(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_by_schema_v3_reads_the_same() {
    reads_the_same(3).await;
}

async fn reads_the_same(schema: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        format!("{FIXTURE_DIR}/schema-v{schema}.redb"),
        dir.path().join("engaged.redb"),
    )
    .expect("copy fixture");
    let expected: Value = serde_json::from_slice(
        &std::fs::read(format!("{FIXTURE_DIR}/schema-v{schema}.json")).expect("fixture answers"),
    )
    .expect("json");
    let ts = TestServer::start_in(dir, |_| {}).await;
    let admin = expected["adminKey"].as_str().expect("key");
    let mut got = snapshot(&ts, admin).await;
    got["adminKey"] = json!(admin);
    let mut expected = expected.clone();
    leads_gain_next_meeting_at(&mut expected);
    assert_eq!(got, expected);
    // The migrated file is consistent (its indexes match its records).
    let check = ts
        .admin(engaged::admin::AdminRequest::Check)
        .await
        .expect("check");
    assert_eq!(check["problems"], json!([]), "{check}");
    // And the old file takes writes.
    let r = ts
        .post(
            admin,
            "/v1/leads/fx-lead/events",
            &json!({"type": "CUSTOM", "id": "after-upgrade"}),
        )
        .await;
    assert_eq!(r.status, 200);
}

/// Schema 8: every lead shows `nextMeetingAt` (null for the fixtures' leads).
fn leads_gain_next_meeting_at(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("customerProfile") && map.contains_key("deletedAt") {
                map.entry("nextMeetingAt").or_insert(Value::Null);
            }
            map.values_mut().for_each(leads_gain_next_meeting_at);
        }
        Value::Array(items) => items.iter_mut().for_each(leads_gain_next_meeting_at),
        _ => {}
    }
}

/// Writes the fixture of the current schema: `cargo test --test http fixture --
/// --ignored`, then commit both files and add a test that reads them. Run it once per
/// new schema version; an older version's files are never rewritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn write_the_current_schema_fixture() {
    let schema = engaged::store::SCHEMA_VERSION;
    let ts = TestServer::start().await;
    let admin = ts.key("fixture", "admin").await;
    let lead = json!({
        "id": "fx-lead", "firstName": "Ada", "lastName": "Lovelace", "phone": "+1 (555) 123-4567",
        "email": "ada@example.com", "customerProfile": "default", "additionalInfo": {"plan": "gold", "seats": 3},
        "isHot": true, "tags": [{"id": "t1", "name": "VIP", "condition": "spend > 1000"}],
        "summary": "Interested", "externalLeadId": "crm-1", "secondaryCrmLeadId": "crm2-1", "timeZone": "Europe/London"
    });
    ts.create_lead(&admin, &lead).await;
    ts.create_lead(&admin, &json!({"id": "fx-gone"})).await;
    assert_eq!(ts.delete(&admin, "/v1/leads/fx-gone").await.status, 200);
    let r = ts
        .post(
            &admin,
            "/v1/webhooks",
            &json!({"url": "http://127.0.0.1:9/hook", "events": ["call.completed"]}),
        )
        .await;
    assert_eq!(r.status, 201);
    for body in [
        json!({"type": "CUSTOM", "id": "note-1", "data": {"text": "prefers mornings", "n": [1, 2]}}),
        json!({"type": "TOOL_CALL", "id": "tool-1", "data": {"name": "lookup"}}),
    ] {
        assert_eq!(
            ts.post(&admin, "/v1/leads/fx-lead/events", &body)
                .await
                .status,
            200
        );
    }
    let sms = json!({"owner": "lead", "channel": "sms", "content": {"text": "Hi"}});
    assert_eq!(
        ts.post(&admin, "/v1/leads/fx-lead/messages", &sms)
            .await
            .status,
        201
    );
    let email = json!({"owner": "user", "channel": "email", "content": {"text": "Hello", "subject": "Offer"}});
    assert_eq!(
        ts.post(&admin, "/v1/leads/fx-lead/messages", &email)
            .await
            .status,
        201
    );
    let call = json!({
        "leadId": "fx-lead", "direction": "OUTBOUND", "callStatus": "COMPLETE", "durationSeconds": 95,
        "transcript": [{"speaker": "agent", "text": "Hello"}], "summary": "Booked a demo", "isTransfer": true,
        "transferStatus": "connected", "transferAnsweredBy": "human", "transferInitiatedAt": "2026-11-22T10:00:00Z",
        "isAiInitiated": true, "dispositionId": "d-1", "dispositionName": "Booked"
    });
    assert_eq!(ts.put(&admin, "/v1/calls/fx-call", &call).await.status, 201);
    let mut answers = snapshot(&ts, &admin).await;
    answers["adminKey"] = json!(admin);
    let db = ts.data_dir.join("engaged.redb");
    ts.server.store().shutdown();
    std::fs::create_dir_all(FIXTURE_DIR).expect("fixture dir");
    std::fs::copy(&db, format!("{FIXTURE_DIR}/schema-v{schema}.redb")).expect("write fixture");
    std::fs::write(
        format!("{FIXTURE_DIR}/schema-v{schema}.json"),
        serde_json::to_vec_pretty(&answers).expect("json"),
    )
    .expect("write answers");
}
