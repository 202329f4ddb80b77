//! POST/GET/PATCH/DELETE /v1/leads: shape, defaults, validation and soft deletion.

use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::{enc, TestServer};

use crate::answers::*;
use crate::requests::*;

async fn start() -> (TestServer, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    (ts, key)
}

fn full_body() -> Value {
    json!({
        "id": "crm:Lead-1.a_b",
        "firstName": "Ada",
        "lastName": "Lovelace",
        "phone": "+44 20 7946 0958",
        "email": "ada@example.com",
        "customerProfile": "Solar",
        "additionalInfo": {"source": "web", "score": 7, "nested": {"a": [1, 2]}, "ok": true},
        "isHot": true,
        "isQualified": true,
        "isAiOn": false,
        "tags": [
            {"id": "t1", "name": "VIP", "condition": "score > 5"},
            {"id": "t2", "name": "Web"}
        ],
        "summary": "Interested in panels",
        "externalLeadId": "ext-42",
        "secondaryCrmLeadId": "crm2-7",
        "timeZone": "Europe/London"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_lead_has_every_field_with_defaults() {
    let (ts, key) = start().await;
    let r = ts.post(&key, "/v1/leads", &json!({})).await;
    let lead = expect(&r, 201);
    for field in LEAD_FIELDS {
        assert!(lead.get(*field).is_some(), "lead has {field}: {lead}");
    }
    assert!(!str_of(&lead["id"]).is_empty());
    for field in [
        "firstName",
        "lastName",
        "phone",
        "email",
        "customerProfile",
        "summary",
        "externalLeadId",
        "secondaryCrmLeadId",
        "timeZone",
    ] {
        assert_eq!(lead[field], json!(""), "absent string {field} is \"\"");
    }
    for field in [
        "hasReplied",
        "hasRepliedEmail",
        "hasAiCall",
        "isHot",
        "isQualified",
        "hasTransferCall",
        "deleted",
    ] {
        assert_eq!(lead[field], json!(false), "{field} defaults to false");
    }
    assert_eq!(lead["isUnsubscribed"], json!(false));
    assert_eq!(lead["isAiOn"], json!(true), "isAiOn defaults to true");
    assert_eq!(lead["additionalInfo"], json!({}));
    assert_eq!(lead["tags"], json!([]));
    assert_eq!(lead["deletedAt"], Value::Null);
    assert_eq!(
        lead["subscriptions"],
        json!({"sms": "subscribed", "voice": "subscribed", "email": "subscribed"})
    );
    let created = time_of(&lead["createdAt"]);
    assert!(time_of(&lead["updatedAt"]) >= created);
    assert_eq!(
        lead["lastActivityAt"], lead["createdAt"],
        "lastActivityAt == createdAt until activity"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_fields_round_trip_through_create_and_get() {
    let (ts, key) = start().await;
    let lead = expect(&ts.post(&key, "/v1/leads", &full_body()).await, 201);
    assert_eq!(lead["id"], json!("crm:Lead-1.a_b"));
    assert_eq!(lead["firstName"], json!("Ada"));
    assert_eq!(lead["lastName"], json!("Lovelace"));
    assert_eq!(lead["phone"], json!("+442079460958"));
    assert_eq!(lead["email"], json!("ada@example.com"));
    assert_eq!(lead["customerProfile"], json!("Solar"));
    assert_eq!(lead["additionalInfo"], full_body()["additionalInfo"]);
    assert_eq!(lead["isHot"], json!(true));
    assert_eq!(lead["isQualified"], json!(true));
    assert_eq!(lead["isAiOn"], json!(false));
    assert_eq!(
        lead["tags"],
        json!([
            {"id": "t1", "name": "VIP", "condition": "score > 5"},
            {"id": "t2", "name": "Web", "condition": ""}
        ])
    );
    assert_eq!(lead["summary"], json!("Interested in panels"));
    assert_eq!(lead["externalLeadId"], json!("ext-42"));
    assert_eq!(lead["secondaryCrmLeadId"], json!("crm2-7"));
    assert_eq!(lead["timeZone"], json!("Europe/London"));

    let got = get_lead(&ts, &key, "crm:Lead-1.a_b").await;
    assert_eq!(got, lead, "GET returns what POST returned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamps_are_utc_with_six_fraction_digits() {
    let (ts, key) = start().await;
    let lead = ts.create_lead(&key, &json!({"id": "L1"})).await;
    for field in ["createdAt", "updatedAt", "lastActivityAt"] {
        assert_ts_shape(str_of(&lead[field]));
    }
    let deleted = expect(&ts.delete(&key, "/v1/leads/L1").await, 200);
    for field in ["createdAt", "updatedAt", "lastActivityAt", "deletedAt"] {
        assert_ts_shape(str_of(&deleted[field]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_ids_are_unique_and_readable() {
    let (ts, key) = start().await;
    let a = ts.create_lead(&key, &json!({})).await;
    let b = ts.create_lead(&key, &json!({})).await;
    assert_ne!(a["id"], b["id"]);
    for lead in [a, b] {
        let id = str_of(&lead["id"]);
        assert_eq!(get_lead(&ts, &key, id).await, lead);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_id_must_be_1_to_128_safe_characters() {
    let (ts, key) = start().await;
    let longest = "a".repeat(128);
    for good in ["A", "a.b_c:d-9", longest.as_str()] {
        let lead = ts.create_lead(&key, &json!({"id": good})).await;
        assert_eq!(lead["id"], json!(good));
        assert_eq!(get_lead(&ts, &key, good).await["id"], json!(good));
    }
    let too_long = "a".repeat(129);
    for bad in [
        json!(""),
        json!("a b"),
        json!("a/b"),
        json!("é"),
        json!("a?b"),
        json!(too_long),
        json!(12),
    ] {
        let r = ts.post(&key, "/v1/leads", &json!({"id": bad})).await;
        assert_error(&r, 400, "Invalid format for field: id");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_fields_refuse_control_characters_noncharacters_and_bidi_controls() {
    let (ts, key) = start().await;
    for (field, bad) in [
        ("firstName", "Bob\u{1}\u{b}"),
        ("firstName", "\u{fffe}"),
        ("lastName", "\u{1b}[2J\r\nBcc: spy@evil.example"),
        ("lastName", "Lee\nSmith"),
        ("externalLeadId", "crm\u{0}1"),
        ("summary", "\u{202e}reversed"),
        ("summary", "a\u{2066}b"),
        ("additionalInfo", "x\u{7}"),
    ] {
        let value = if field == "additionalInfo" {
            json!({"note": bad})
        } else {
            json!(bad)
        };
        let r = ts
            .post(&key, "/v1/leads", &json!({"id": "L1", field: value}))
            .await;
        assert_error(&r, 400, &format!("Invalid format for field: {field}"));
    }
    // Nothing was stored.
    assert_error(
        &ts.get(&key, "/v1/leads/L1").await,
        404,
        "Resource not found: Lead with id L1",
    );
    // A multi-line field keeps its tabs and newlines; an update is held to the rule too.
    let lead = ts
        .create_lead(
            &key,
            &json!({"id": "L1", "firstName": "Jörg ☀", "summary": "one\r\n\ttwo",
                "additionalInfo": {"note": "a\nb"}}),
        )
        .await;
    assert_eq!(lead["summary"], json!("one\r\n\ttwo"));
    let r = ts
        .patch(&key, "/v1/leads/L1", &json!({"firstName": "Bob\u{85}"}))
        .await;
    assert_error(&r, 400, "Invalid format for field: firstName");
    assert_eq!(
        get_lead(&ts, &key, "L1").await["firstName"],
        json!("Jörg ☀")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phone_is_normalised_to_e164() {
    let (ts, key) = start().await;
    let lead = ts
        .create_lead(&key, &json!({"phone": "+1 (555) 123-4567"}))
        .await;
    assert_eq!(lead["phone"], json!("+15551234567"));
    assert_eq!(
        get_lead(&ts, &key, str_of(&lead["id"])).await["phone"],
        json!("+15551234567")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_phone_is_400() {
    let (ts, key) = start().await;
    for bad in ["555-1234", "+1abc", "+", "15551234567"] {
        let r = ts
            .post(&key, "/v1/leads", &json!({"id": "L1", "phone": bad}))
            .await;
        assert_error(&r, 400, "Invalid format for field: phone");
    }
    // Nothing was stored.
    assert_error(
        &ts.get(&key, "/v1/leads/L1").await,
        404,
        "Resource not found: Lead with id L1",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_email_is_400() {
    let (ts, key) = start().await;
    for bad in ["nope", "a@", "@example.com"] {
        let r = ts.post(&key, "/v1/leads", &json!({"email": bad})).await;
        assert_error(&r, 400, "Invalid format for field: email");
    }
    let lead = ts
        .create_lead(&key, &json!({"email": "first.last+tag@example.co.uk"}))
        .await;
    assert_eq!(lead["email"], json!("first.last+tag@example.co.uk"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_id_is_409() {
    let (ts, key) = start().await;
    let first = ts
        .create_lead(&key, &json!({"id": "L1", "firstName": "Ada"}))
        .await;
    let r = ts
        .post(&key, "/v1/leads", &json!({"id": "L1", "firstName": "Eve"}))
        .await;
    assert_error(&r, 409, "Lead already exists");
    assert_eq!(
        get_lead(&ts, &key, "L1").await,
        first,
        "the first lead is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_field_is_400() {
    let (ts, key) = start().await;
    let r = ts
        .post(
            &key,
            "/v1/leads",
            &json!({"firstName": "Ada", "favouriteColour": "blue"}),
        )
        .await;
    assert_error(&r, 400, "Unknown field: favouriteColour");
    let r = ts
        .post(&key, "/v1/leads", &json!({"first_name": "Ada"}))
        .await;
    assert_error(&r, 400, "Unknown field: first_name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_fields_are_400_on_create() {
    let (ts, key) = start().await;
    for (field, value) in [
        ("hasReplied", json!(true)),
        ("hasRepliedEmail", json!(true)),
        ("hasAiCall", json!(true)),
        ("hasTransferCall", json!(true)),
        ("isUnsubscribed", json!(true)),
        ("deleted", json!(true)),
        ("deletedAt", json!("2026-01-01T00:00:00Z")),
        ("createdAt", json!("2026-01-01T00:00:00Z")),
        ("updatedAt", json!("2026-01-01T00:00:00Z")),
        ("lastActivityAt", json!("2026-01-01T00:00:00Z")),
    ] {
        let r = ts
            .post(&key, "/v1/leads", &json!({"id": "L1", field: value}))
            .await;
        assert_error(&r, 400, &format!("Field is read-only: {field}"));
    }
    assert_error(
        &ts.get(&key, "/v1/leads/L1").await,
        404,
        "Resource not found: Lead with id L1",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_field_type_is_400_naming_the_field() {
    let (ts, key) = start().await;
    for (field, value) in [
        ("isHot", json!("yes")),
        ("isQualified", json!(1)),
        ("isAiOn", json!("false")),
        ("firstName", json!(5)),
        ("lastName", json!(["x"])),
        ("customerProfile", json!({})),
        ("summary", json!(true)),
        ("externalLeadId", json!(9)),
        ("additionalInfo", json!("x")),
        ("additionalInfo", json!([1])),
        ("tags", json!("vip")),
        ("tags", json!([{"name": 3}])),
        ("phone", json!(15551234567u64)),
        ("email", json!(false)),
    ] {
        let r = ts.post(&key, "/v1/leads", &json!({field: value})).await;
        assert_error(&r, 400, &format!("Invalid format for field: {field}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_that_is_not_an_object_is_400() {
    let (ts, key) = start().await;
    for body in [json!([]), json!("lead"), json!(1), json!(null)] {
        let r = ts.post(&key, "/v1/leads", &body).await;
        assert_error_status(&r, 400);
    }
    ts.create_lead(&key, &json!({"id": "L1"})).await;
    for body in [json!([{"firstName": "a"}]), json!("a"), json!(null)] {
        let r = ts.patch(&key, "/v1/leads/L1", &body).await;
        assert_error_status(&r, 400);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_lead_is_404() {
    let (ts, key) = start().await;
    assert_error(
        &ts.get(&key, "/v1/leads/nope").await,
        404,
        "Resource not found: Lead with id nope",
    );
    let r = ts
        .patch(&key, "/v1/leads/nope", &json!({"firstName": "x"}))
        .await;
    assert_error(&r, 404, "Resource not found: Lead with id nope");
    assert_error(
        &ts.delete(&key, "/v1/leads/nope").await,
        404,
        "Resource not found: Lead with id nope",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_changes_only_the_given_fields() {
    let (ts, key) = start().await;
    let before = expect(&ts.post(&key, "/v1/leads", &full_body()).await, 201);
    let id = "crm:Lead-1.a_b";
    let r = ts
        .patch(
            &key,
            &lead_path(id),
            &json!({"firstName": "Augusta", "isHot": false, "phone": "+1 (555) 000-1111"}),
        )
        .await;
    let after = expect(&r, 200);
    assert_eq!(after["firstName"], json!("Augusta"));
    assert_eq!(after["isHot"], json!(false));
    assert_eq!(
        after["phone"],
        json!("+15550001111"),
        "patched phone is normalised"
    );
    for field in LEAD_FIELDS {
        if ["firstName", "isHot", "phone", "updatedAt"].contains(field) {
            continue;
        }
        assert_eq!(
            after[*field], before[*field],
            "{field} unchanged by the patch"
        );
    }
    assert_eq!(
        get_lead(&ts, &key, id).await,
        after,
        "GET returns the patched lead"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_moves_updated_at_forward_strictly() {
    let (ts, key) = start().await;
    let mut prev = ts.create_lead(&key, &json!({"id": "L1"})).await;
    for i in 0..5 {
        let next = expect(
            &ts.patch(&key, "/v1/leads/L1", &json!({"summary": format!("v{i}")}))
                .await,
            200,
        );
        assert!(
            time_of(&next["updatedAt"]) > time_of(&prev["updatedAt"]),
            "{prev} -> {next}"
        );
        assert_eq!(next["createdAt"], prev["createdAt"]);
        prev = next;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_without_activity_keeps_last_activity_at() {
    let (ts, key) = start().await;
    let lead = ts.create_lead(&key, &json!({"id": "L1"})).await;
    let after = expect(
        &ts.patch(&key, "/v1/leads/L1", &json!({"firstName": "Ada"}))
            .await,
        200,
    );
    assert_eq!(
        after["lastActivityAt"], lead["createdAt"],
        "a profile change is not activity"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_merges_additional_info_and_null_deletes_a_key() {
    let (ts, key) = start().await;
    ts.create_lead(
        &key,
        &json!({"id": "L1", "additionalInfo": {"a": 1, "b": "two", "c": {"x": 1}}}),
    )
    .await;
    let r = ts
        .patch(
            &key,
            "/v1/leads/L1",
            &json!({"additionalInfo": {"b": null, "c": {"y": 2}, "d": [4]}}),
        )
        .await;
    let lead = expect(&r, 200);
    assert_eq!(
        lead["additionalInfo"],
        json!({"a": 1, "c": {"y": 2}, "d": [4]})
    );
    assert_eq!(
        get_lead(&ts, &key, "L1").await["additionalInfo"],
        json!({"a": 1, "c": {"y": 2}, "d": [4]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_null_clears_a_string_field() {
    let (ts, key) = start().await;
    reachable_lead(&ts, &key, "L1").await;
    let r = ts
        .patch(
            &key,
            "/v1/leads/L1",
            &json!({"email": null, "firstName": null}),
        )
        .await;
    let lead = expect(&r, 200);
    assert_eq!(lead["email"], json!(""));
    assert_eq!(lead["firstName"], json!(""));
    assert_eq!(lead["phone"], json!("+15551234567"));
    assert_eq!(get_lead(&ts, &key, "L1").await["email"], json!(""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_cannot_change_id_or_read_only_fields() {
    let (ts, key) = start().await;
    let before = ts.create_lead(&key, &json!({"id": "L1"})).await;
    let r = ts.patch(&key, "/v1/leads/L1", &json!({"id": "L2"})).await;
    assert_error(&r, 400, "Field is read-only: id");
    for field in ["hasReplied", "createdAt", "updatedAt", "deleted"] {
        let value = if field.ends_with("At") {
            json!("2026-01-01T00:00:00Z")
        } else {
            json!(true)
        };
        let r = ts.patch(&key, "/v1/leads/L1", &json!({field: value})).await;
        assert_error(&r, 400, &format!("Field is read-only: {field}"));
    }
    assert_eq!(
        get_lead(&ts, &key, "L1").await,
        before,
        "rejected patches change nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_validates_like_create() {
    let (ts, key) = start().await;
    let before = reachable_lead(&ts, &key, "L1").await;
    let cases = [
        (
            json!({"phone": "555-1234"}),
            "Invalid format for field: phone",
        ),
        (json!({"email": "nope"}), "Invalid format for field: email"),
        (json!({"isHot": "yes"}), "Invalid format for field: isHot"),
        (
            json!({"additionalInfo": 3}),
            "Invalid format for field: additionalInfo",
        ),
        (json!({"nickname": "x"}), "Unknown field: nickname"),
        // One bad field rejects the whole patch.
        (
            json!({"firstName": "Eve", "phone": "+1abc"}),
            "Invalid format for field: phone",
        ),
    ];
    for (body, message) in cases {
        let r = ts.patch(&key, "/v1/leads/L1", &body).await;
        assert_error(&r, 400, message);
    }
    assert_eq!(
        get_lead(&ts, &key, "L1").await,
        before,
        "rejected patches change nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_soft_deletes_and_the_lead_stays_readable() {
    let (ts, key) = start().await;
    let before = ts
        .create_lead(&key, &json!({"id": "L1", "firstName": "Ada"}))
        .await;
    let deleted = expect(&ts.delete(&key, "/v1/leads/L1").await, 200);
    assert_eq!(deleted["deleted"], json!(true));
    assert_eq!(deleted["id"], json!("L1"));
    assert_eq!(deleted["firstName"], json!("Ada"));
    let deleted_at = time_of(&deleted["deletedAt"]);
    assert!(deleted_at >= time_of(&before["createdAt"]));
    assert!(
        time_of(&deleted["updatedAt"]) > time_of(&before["updatedAt"]),
        "deletion is a change to sync"
    );

    assert_eq!(get_lead(&ts, &key, "L1").await, deleted);
    let listed = all_leads(&ts, &key).await;
    assert_eq!(
        listed,
        vec![deleted.clone()],
        "a deleted lead is still listed, deleted: true"
    );
    let since = format!(
        "/v1/leads?updatedSince={}",
        enc(str_of(&deleted["updatedAt"]))
    );
    let (page, _) = walk(&ts, &key, &since, "leads").await;
    assert_eq!(
        page,
        vec![deleted],
        "the deletion reaches an incremental sync"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_a_deleted_lead_is_404() {
    let (ts, key) = start().await;
    reachable_lead(&ts, &key, "L1").await;
    let deleted = expect(&ts.delete(&key, "/v1/leads/L1").await, 200);
    let missing = "Resource not found: Lead with id L1";
    assert_error(
        &ts.patch(&key, "/v1/leads/L1", &json!({"firstName": "x"}))
            .await,
        404,
        missing,
    );
    assert_error(&ts.delete(&key, "/v1/leads/L1").await, 404, missing);
    assert_error(
        &ts.post(&key, "/v1/leads/L1/events", &json!({"type": "CUSTOM"}))
            .await,
        404,
        missing,
    );
    let msg = json!({"owner": "lead", "channel": "sms", "content": {"text": "hi"}});
    assert_error(
        &ts.post(&key, "/v1/leads/L1/messages", &msg).await,
        404,
        missing,
    );
    assert_eq!(get_lead(&ts, &key, "L1").await, deleted, "unchanged");
    // Reading its events and messages still works.
    expect(&ts.get(&key, "/v1/leads/L1/events").await, 200);
    expect(&ts.get(&key, "/v1/leads/L1/messages").await, 200);
    // The id stays taken.
    assert_error(
        &ts.post(&key, "/v1/leads", &json!({"id": "L1"})).await,
        409,
        "Lead already exists",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_json_is_served_as_application_json() {
    let (ts, key) = start().await;
    let r = ts
        .request(
            Method::POST,
            "/v1/leads",
            Some(&key),
            Some("application/json"),
            b"{\"id\":\"L1\"}".to_vec(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    let ct = r
        .headers
        .get("content-type")
        .expect("content-type")
        .to_str()
        .unwrap()
        .to_string();
    assert!(ct.starts_with("application/json"), "{ct}");
    let r = ts.get(&key, "/v1/leads/L1").await;
    let ct = r
        .headers
        .get("content-type")
        .expect("content-type")
        .to_str()
        .unwrap()
        .to_string();
    assert!(ct.starts_with("application/json"), "{ct}");
}

// ---- duplicates ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_leads_phone_and_email_are_its_own_in_the_organization() {
    let (srv, key) = start().await;
    srv.create_lead(
        &key,
        &json!({"id": "a", "phone": "+1 555 123 4567", "email": "Ada@Example.com"}),
    )
    .await;
    for body in [
        json!({"id": "b", "phone": "+15551234567"}),
        json!({"id": "b", "email": "ada@example.COM"}),
        json!({"id": "b", "phone": "+15550000000", "email": "ada@example.com"}),
    ] {
        let r = srv.post(&key, "/v1/leads", &body).await;
        assert_error(&r, 409, "Lead exists: a");
    }
    assert_eq!(srv.get(&key, "/v1/leads/b").await.status, 404);

    srv.create_lead(
        &key,
        &json!({"id": "b", "phone": "+15550000000", "email": "bob@example.com"}),
    )
    .await;
    let before = get_lead(&srv, &key, "b").await;
    for body in [
        json!({"phone": "+15551234567"}),
        json!({"email": "ADA@example.com"}),
    ] {
        let r = srv.patch(&key, "/v1/leads/b", &body).await;
        assert_error(&r, 409, "Lead exists: a");
    }
    assert_eq!(get_lead(&srv, &key, "b").await, before, "nothing changed");

    // A lead's own values are no conflict, nor another organization's leads.
    let r = srv
        .patch(
            &key,
            "/v1/leads/a",
            &json!({"phone": "+15551234567", "email": "ada@example.com", "firstName": "Ada"}),
        )
        .await;
    expect(&r, 200);
    let other = srv.key("globex", "write").await;
    srv.create_lead(
        &other,
        &json!({"id": "a2", "phone": "+15551234567", "email": "ada@example.com"}),
    )
    .await;

    // A deleted lead's phone and email are free again.
    expect(&srv.delete(&key, "/v1/leads/a").await, 200);
    srv.create_lead(
        &key,
        &json!({"id": "c", "phone": "+15551234567", "email": "ada@example.com"}),
    )
    .await;
    let r = srv
        .patch(&key, "/v1/leads/b", &json!({"phone": "+15551234567"}))
        .await;
    assert_error(&r, 409, "Lead exists: c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leads_that_shared_a_value_before_the_rule_keep_it_and_inbound_goes_to_the_latest() {
    let (srv, key) = start().await;
    for id in ["old", "new"] {
        srv.create_lead(&key, &json!({"id": id})).await;
        srv.store_contact_directly("acme", id, "+15551234567", "Ada@example.com")
            .await;
    }
    // Each may still change its other fields.
    let r = srv
        .patch(&key, "/v1/leads/old", &json!({"firstName": "Ada"}))
        .await;
    expect(&r, 200);
    let r = srv
        .patch(&key, "/v1/leads/new", &json!({"lastName": "Lovelace"}))
        .await;
    expect(&r, 200);
    let r = inbound_email(&srv, &key, "ada@EXAMPLE.com", "Hi", "Hello").await;
    assert_eq!(expect(&r, 200)["leadId"], json!("new"));
    let r = srv
        .patch(&key, "/v1/leads/old", &json!({"firstName": "Ada L."}))
        .await;
    expect(&r, 200);
    let answer = inbound_sms(&srv, &key, "+15551234567", "Hello").await;
    assert_eq!(answer["leadId"], json!("old"));
}
