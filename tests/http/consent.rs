//! The consent ledger (`consent.md`): entries written through the API and by every
//! change of subscriptions, the current status per channel, the CSV export, and what
//! the ledger refuses, each rule on its own.

use serde_json::{json, Value};

use engaged::testkit::TestServer;

use crate::answers::{assert_error, expect, text};

struct Setup {
    ts: TestServer,
    write: String,
    read: String,
}

async fn start() -> Setup {
    let ts = TestServer::start().await;
    let write = ts.key("acme", "write").await;
    let read = ts.key("acme", "read").await;
    ts.create_lead(
        &write,
        &json!({"id": "L1", "phone": "+15551234567", "email": "ada@example.com"}),
    )
    .await;
    Setup { ts, write, read }
}

async fn ledger(s: &Setup) -> Value {
    expect(&s.ts.get(&s.read, "/v1/leads/L1/consent").await, 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_grant_is_in_the_ledger_its_event_and_the_current_status() {
    let s = start().await;
    assert_eq!(
        ledger(&s).await["current"],
        json!({"sms": "unknown", "voice": "unknown", "email": "unknown"})
    );
    let body = json!({"channel": "voice", "status": "granted", "source": "web_form",
                      "at": "2026-11-20T15:04:05Z",
                      "proof": {"text": "I agree to calls", "url": "https://solar.example/quote",
                                "ip": "203.0.113.7", "userAgent": "Mozilla/5.0"}});
    let entry = expect(
        &s.ts.post(&s.write, "/v1/leads/L1/consent", &body).await,
        201,
    );
    assert_eq!(entry["purpose"], json!("marketing"));
    assert_eq!(entry["at"], json!("2026-11-20T15:04:05.000000Z"));
    assert_eq!(entry["proof"]["text"], json!("I agree to calls"));
    assert!(entry["proof"]["recordedBy"]["keyId"].is_string(), "{entry}");
    let l = ledger(&s).await;
    assert_eq!(l["current"]["voice"], json!("granted"));
    assert_eq!(l["current"]["sms"], json!("unknown"));
    assert_eq!(l["entries"], json!([entry]));
    // The entry is also a CONSENT event, synced like any other.
    let events = expect(
        &s.ts.get(&s.read, "/v1/leads/L1/events?types=CONSENT").await,
        200,
    );
    let items = events["events"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{events}");
    assert_eq!(items[0]["data"], entry);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_dated_before_the_last_revocation_does_not_undo_it() {
    let s = start().await;
    let post = |status: &str, at: &str| json!({"channel": "sms", "status": status, "source": "api", "at": at});
    for (status, at) in [
        ("granted", "2026-01-01T00:00:00Z"),
        ("revoked", "2026-03-01T00:00:00Z"),
    ] {
        expect(
            &s.ts
                .post(&s.write, "/v1/leads/L1/consent", &post(status, at))
                .await,
            201,
        );
    }
    // Over a revocation a grant needs its proof, whenever it is dated.
    let mut late = post("granted", "2026-02-01T00:00:00Z");
    late["proof"] = json!({"text": "Signed the paper form again"});
    expect(
        &s.ts.post(&s.write, "/v1/leads/L1/consent", &late).await,
        201,
    );
    let l = ledger(&s).await;
    assert_eq!(l["current"]["sms"], json!("revoked"));
    let order: Vec<&str> = l["entries"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["at"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        order,
        [
            "2026-01-01T00:00:00.000000Z",
            "2026-02-01T00:00:00.000000Z",
            "2026-03-01T00:00:00.000000Z"
        ],
        "oldest first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_and_a_start_write_their_entries_with_the_leads_words() {
    let s = start().await;
    for text in ["Stop please", "START"] {
        expect(
            &s.ts
                .post(
                    &s.write,
                    "/v1/inbound/sms",
                    &json!({"from": "+15551234567", "text": text}),
                )
                .await,
            200,
        );
    }
    let l = ledger(&s).await;
    let entries = l["entries"].as_array().cloned().unwrap_or_default();
    let sms: Vec<(&str, &str, &str)> = entries
        .iter()
        .filter(|e| e["channel"] == json!("sms"))
        .map(|e| {
            (
                e["status"].as_str().unwrap_or(""),
                e["source"].as_str().unwrap_or(""),
                e["proof"]["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    // Typed through the sandbox's door by a key: the lead's words, recorded by the key,
    // never read as the lead's own keyword.
    assert_eq!(
        sms,
        [
            ("revoked", "api", "Stop please"),
            ("granted", "api", "START")
        ],
        "{l}"
    );
    assert!(
        entries[0]["proof"]["recordedBy"]["keyId"].is_string(),
        "{l}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribing_through_the_api_writes_one_revocation_per_channel_that_changed() {
    let s = start().await;
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/L1/unsubscribe",
            &json!({"channels": ["email"]}),
        )
        .await;
    expect(&r, 200);
    // A second unsubscribe changes nothing and writes nothing.
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads/L1/unsubscribe",
                &json!({"channels": ["email"]}),
            )
            .await,
        200,
    );
    let l = ledger(&s).await;
    let entries = l["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(entries.len(), 1, "{l}");
    assert_eq!(entries[0]["channel"], json!("email"));
    assert_eq!(entries[0]["status"], json!("revoked"));
    assert_eq!(entries[0]["source"], json!("api"));
    assert_eq!(l["current"]["email"], json!("revoked"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_csv_export_lists_every_entry_with_its_proof() {
    let s = start().await;
    let body = json!({"channel": "sms", "status": "granted", "source": "import",
                      "proof": {"text": "=cmd|' /C calc'!A0"}});
    expect(
        &s.ts.post(&s.write, "/v1/leads/L1/consent", &body).await,
        201,
    );
    let r = s.ts.get(&s.read, "/v1/leads/L1/consent?format=csv").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/csv; charset=utf-8")
    );
    let csv = text(&r);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("leadId,id,at,channel,status,purpose,source,proofText,proofUrl,proofIp,proofUserAgent,recordedBy")
    );
    let row = lines.next().unwrap_or_default();
    assert!(row.starts_with("L1,cns_"), "{row}");
    assert!(row.contains(",sms,granted,marketing,import,"), "{row}");
    assert!(row.contains("'=cmd"), "a formula is neutralized: {row}");
    assert_eq!(lines.next(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_entries_are_400_and_change_nothing() {
    let s = start().await;
    let cases = [
        (
            json!({"status": "granted", "source": "api"}),
            "Missing required field: channel",
        ),
        (
            json!({"channel": "fax", "status": "granted", "source": "api"}),
            "Invalid format for field: channel",
        ),
        (
            json!({"channel": "sms", "status": "granted", "source": "gossip"}),
            "Invalid format for field: source",
        ),
        (
            json!({"channel": "sms", "status": "granted", "source": "api", "at": "2999-01-01T00:00:00Z"}),
            "Consent cannot be given in the future: at",
        ),
        (
            json!({"channel": "sms", "status": "granted", "source": "api", "proof": {"recordedBy": {"keyId": "x"}}}),
            "Field is read-only: proof.recordedBy",
        ),
        (
            json!({"channel": "sms", "status": "granted", "source": "api", "nope": 1}),
            "Unknown field: nope",
        ),
    ];
    for (body, message) in cases {
        assert_error(
            &s.ts.post(&s.write, "/v1/leads/L1/consent", &body).await,
            400,
            message,
        );
    }
    assert_eq!(ledger(&s).await["entries"], json!([]));
    let ok = json!({"channel": "sms", "status": "granted", "source": "api"});
    assert_error(
        &s.ts.post(&s.read, "/v1/leads/L1/consent", &ok).await,
        403,
        "Forbidden",
    );
    assert_error(
        &s.ts.post(&s.write, "/v1/leads/nobody/consent", &ok).await,
        404,
        "Resource not found: Lead with id nobody",
    );
    assert_error(
        &s.ts.get(&s.read, "/v1/leads/L1/consent?format=pdf").await,
        400,
        "Invalid format for field: format",
    );
    // The ledger is append-only: the events API cannot write or overwrite an entry.
    assert_error(
        &s.ts
            .post(
                &s.write,
                "/v1/leads/L1/events",
                &json!({"type": "CONSENT", "id": "x"}),
            )
            .await,
        400,
        "CONSENT events are written through POST /v1/leads/{id}/consent",
    );
    // Another organization's key sees no such lead.
    let other = s.ts.key("other", "read").await;
    assert_error(
        &s.ts.get(&other, "/v1/leads/L1/consent").await,
        404,
        "Resource not found: Lead with id L1",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_outlives_the_leads_soft_deletion() {
    let s = start().await;
    let body = json!({"channel": "email", "status": "granted", "source": "api"});
    expect(
        &s.ts.post(&s.write, "/v1/leads/L1/consent", &body).await,
        201,
    );
    expect(&s.ts.delete(&s.write, "/v1/leads/L1").await, 200);
    let l = ledger(&s).await;
    assert_eq!(l["entries"].as_array().map(Vec::len), Some(1));
    assert_eq!(l["current"]["email"], json!("granted"));
}
