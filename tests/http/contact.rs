//! The contact controls: unsubscribe, resubscribe, the assistant switch, tags, the DNC
//! list, inbound SMS keywords and organization settings, each rule on its own.

use serde_json::{json, Value};

use engaged::testkit::{TestServer, WebhookReceiver};

use crate::answers::{assert_error, expect};

const CHANNELS_MESSAGE: &str = "channels must include at least one of: sms, voice, email";

async fn start() -> (TestServer, String, String) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    let admin = ts.key("acme", "admin").await;
    (ts, key, admin)
}

async fn lead(ts: &TestServer, key: &str, body: Value) -> Value {
    ts.create_lead(key, &body).await
}

async fn unsubscribe(
    ts: &TestServer,
    key: &str,
    id: &str,
    body: Option<Value>,
) -> engaged::testkit::Response {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    ts.request(
        hyper::Method::POST,
        &format!("/v1/leads/{id}/unsubscribe"),
        Some(key),
        Some("application/json"),
        bytes,
    )
    .await
}

/// A webhook endpoint nobody listens on: its deliveries log shows what was emitted.
async fn webhook(ts: &TestServer, admin: &str) -> String {
    let r = ts
        .post(
            admin,
            "/v1/webhooks",
            &json!({"url": "http://127.0.0.1:9/hooks", "events": ["lead.opted_out"]}),
        )
        .await;
    expect(&r, 201)["id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn opted_out(ts: &TestServer, admin: &str, hook: &str) -> Vec<(String, String, String)> {
    let r = ts
        .get(admin, &format!("/v1/webhooks/{hook}/deliveries?limit=1000"))
        .await;
    let mut out: Vec<(String, String, String)> = expect(&r, 200)["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let data = &d["data"];
            (
                data["leadId"].as_str().unwrap().into(),
                data["channel"].as_str().unwrap().into(),
                data["source"].as_str().unwrap().into(),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_body_unsubscribes_every_reachable_channel_example_phone_no_email() {
    let (ts, key, _) = start().await;
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    for body in [None, Some(json!({}))] {
        let r = unsubscribe(&ts, &key, "p", body).await;
        assert_eq!(
            expect(&r, 200),
            json!({"message": "Lead unsubscribed successfully.", "channels": ["sms", "voice"]})
        );
    }
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(
        l["subscriptions"],
        json!({"sms": "unsubscribed", "voice": "unsubscribed", "email": "subscribed"})
    );
    assert_eq!(l["isUnsubscribed"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_channels_apply_only_where_reachable() {
    let (ts, key, _) = start().await;
    lead(&ts, &key, json!({"id": "e", "email": "a@example.com"})).await;
    let r = unsubscribe(&ts, &key, "e", Some(json!({"channels": ["sms", "email"]}))).await;
    assert_eq!(expect(&r, 200)["channels"], json!(["email"]));
    let l = expect(&ts.get(&key, "/v1/leads/e").await, 200);
    assert_eq!(l["subscriptions"]["sms"], json!("subscribed"));
    assert_eq!(l["isUnsubscribed"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reachable_requested_channel_names_the_missing_target() {
    let (ts, key, _) = start().await;
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    lead(&ts, &key, json!({"id": "e", "email": "a@example.com"})).await;
    lead(&ts, &key, json!({"id": "none"})).await;
    assert_error(
        &unsubscribe(&ts, &key, "p", Some(json!({"channels": ["email"]}))).await,
        400,
        "Lead has no email",
    );
    assert_error(
        &unsubscribe(&ts, &key, "e", Some(json!({"channels": ["voice", "sms"]}))).await,
        400,
        "Lead has no phone",
    );
    assert_error(
        &unsubscribe(&ts, &key, "none", None).await,
        400,
        "Lead has no phone or email",
    );
    // Nothing changed.
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(l["isUnsubscribed"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_bodies_get_the_channels_message() {
    let (ts, key, _) = start().await;
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    for raw in [
        &b"{"[..],
        b"[]",
        b"\"sms\"",
        br#"{"channels": []}"#,
        br#"{"channels": ["fax"]}"#,
        br#"{"channels": "sms"}"#,
        br#"{"channels": [1]}"#,
        br#"{"colour": "red"}"#,
    ] {
        let r = ts
            .request(
                hyper::Method::POST,
                "/v1/leads/p/unsubscribe",
                Some(&key),
                Some("application/json"),
                raw.to_vec(),
            )
            .await;
        assert_error(&r, 400, CHANNELS_MESSAGE);
    }
    assert_eq!(
        expect(&ts.get(&key, "/v1/leads/p").await, 200)["isUnsubscribed"],
        json!(false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_lead_is_404() {
    let (ts, key, _) = start().await;
    assert_error(
        &unsubscribe(&ts, &key, "ghost", None).await,
        404,
        "Resource not found: Lead with id ghost",
    );
    let r = ts
        .post(&key, "/v1/leads/ghost/resubscribe", &json!({}))
        .await;
    assert_error(&r, 404, "Resource not found: Lead with id ghost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_requests_converge_with_one_webhook_per_changed_channel() {
    let (ts, key, admin) = start().await;
    let hook = webhook(&ts, &admin).await;
    lead(
        &ts,
        &key,
        json!({"id": "b", "phone": "+15551234567", "email": "b@example.com"}),
    )
    .await;
    expect(
        &unsubscribe(&ts, &key, "b", Some(json!({"channels": ["sms"]}))).await,
        200,
    );
    for _ in 0..3 {
        let r = unsubscribe(&ts, &key, "b", None).await;
        assert_eq!(
            expect(&r, 200)["channels"],
            json!(["sms", "voice", "email"])
        );
    }
    let expected: Vec<(String, String, String)> = ["email", "sms", "voice"]
        .iter()
        .map(|c| ("b".into(), c.to_string(), "api".into()))
        .collect();
    assert_eq!(opted_out(&ts, &admin, &hook).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribing_leaves_the_assistant_and_the_dnc_list_alone() {
    let (ts, key, _) = start().await;
    lead(
        &ts,
        &key,
        json!({"id": "p", "phone": "+15551234567", "isAiOn": true}),
    )
    .await;
    expect(&unsubscribe(&ts, &key, "p", None).await, 200);
    assert_eq!(
        expect(&ts.get(&key, "/v1/leads/p").await, 200)["isAiOn"],
        json!(true)
    );
    let numbers = expect(&ts.get(&key, "/v1/dnc").await, 200);
    assert_eq!(numbers["numbers"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coupled_settings_unsubscribe_sms_and_voice_together() {
    let (ts, key, admin) = start().await;
    let hook = webhook(&ts, &admin).await;
    let r = ts
        .patch(&admin, "/v1/org", &json!({"smsVoiceOptOutCoupled": true}))
        .await;
    assert_eq!(expect(&r, 200)["smsVoiceOptOutCoupled"], json!(true));
    lead(
        &ts,
        &key,
        json!({"id": "p", "phone": "+15551234567", "email": "p@example.com"}),
    )
    .await;
    let r = unsubscribe(&ts, &key, "p", Some(json!({"channels": ["voice"]}))).await;
    assert_eq!(expect(&r, 200)["channels"], json!(["sms", "voice"]));
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(
        l["subscriptions"],
        json!({"sms": "unsubscribed", "voice": "unsubscribed", "email": "subscribed"})
    );
    assert_eq!(
        opted_out(&ts, &admin, &hook).await,
        vec![
            ("p".into(), "sms".into(), "api".into()),
            ("p".into(), "voice".into(), "api".into())
        ]
    );
    // Resubscribing either brings both back.
    let r = ts
        .post(
            &key,
            "/v1/leads/p/resubscribe",
            &json!({"channels": ["sms"], "proof": {"url": "https://acme.example/forms/p-2026"}}),
        )
        .await;
    assert_eq!(expect(&r, 200)["channels"], json!(["sms", "voice"]));
    // Without coupling, a channel changes alone.
    expect(
        &ts.patch(&admin, "/v1/org", &json!({"smsVoiceOptOutCoupled": false}))
            .await,
        200,
    );
    let r = unsubscribe(&ts, &key, "p", Some(json!({"channels": ["voice"]}))).await;
    assert_eq!(expect(&r, 200)["channels"], json!(["voice"]));
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(l["subscriptions"]["sms"], json!("subscribed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coupled_keyword_opt_out_holds_sms_and_voice_until_start() {
    let (ts, key, admin) = start().await;
    let hook = webhook(&ts, &admin).await;
    expect(
        &ts.patch(&admin, "/v1/org", &json!({"smsVoiceOptOutCoupled": true}))
            .await,
        200,
    );
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    let stop = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": "Quit"}),
        )
        .await;
    assert_eq!(expect(&stop, 200)["optOut"], json!(true));
    assert_eq!(
        opted_out(&ts, &admin, &hook).await,
        vec![
            ("p".into(), "sms".into(), "keyword".into()),
            ("p".into(), "voice".into(), "keyword".into())
        ]
    );
    // The API cannot lift the lead's own opt-out, on either coupled channel.
    let r = ts.post(&key, "/v1/leads/p/resubscribe", &json!({})).await;
    assert_eq!(
        expect(&r, 200),
        json!({"message": "Lead resubscribed successfully.", "channels": []})
    );
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(
        (
            l["subscriptions"]["sms"].clone(),
            l["subscriptions"]["voice"].clone()
        ),
        (json!("unsubscribed"), json!("unsubscribed"))
    );
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": " unstop"}),
        )
        .await;
    assert_eq!(expect(&r, 200)["optIn"], json!(true));
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(
        (
            l["subscriptions"]["sms"].clone(),
            l["subscriptions"]["voice"].clone()
        ),
        (json!("subscribed"), json!("subscribed"))
    );
    // After START, the API controls the channels again, with the proof a revocation
    // asks for.
    expect(&unsubscribe(&ts, &key, "p", None).await, 200);
    let r = ts
        .post(
            &key,
            "/v1/leads/p/resubscribe",
            &json!({"proof": {"text": "Yes, text me again"}}),
        )
        .await;
    assert_eq!(expect(&r, 200)["channels"], json!(["sms", "voice"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_keyword_of_the_lists_works_and_only_alone() {
    let (ts, key, _) = start().await;
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    let send = |text: &'static str| {
        let (ts, key) = (&ts, &key);
        async move {
            let r = ts
                .post(
                    key,
                    "/v1/inbound/sms",
                    &json!({"from": "+15551234567", "text": text}),
                )
                .await;
            let a = expect(&r, 200);
            (a["optOut"] == json!(true), a["optIn"] == json!(true))
        }
    };
    for word in [
        "STOP",
        "stopall",
        "Unsubscribe",
        "CANCEL",
        "end",
        "QUIT",
        "OptOut",
        "revoke",
        // Read as `consent.md` has it: punctuation and case do not matter, nor letters
        // spelled out one by one.
        "STOP!",
        "S T O P",
    ] {
        assert_eq!(send(word).await, (true, false), "{word}");
    }
    for word in ["START", "yes", "Unstop"] {
        assert_eq!(send(word).await, (false, true), "{word}");
    }
    for text in ["yes please", "START NOW", ""] {
        assert_eq!(send(text).await, (false, false), "{text:?}");
    }
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(l["subscriptions"]["sms"], json!("subscribed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_sms_goes_to_the_most_recently_updated_live_lead() {
    let (ts, key, _) = start().await;
    // Leads that share a phone from before duplicates were refused.
    for id in ["old", "new", "gone"] {
        lead(&ts, &key, json!({"id": id})).await;
        ts.store_contact_directly("acme", id, "+15551234567", "")
            .await;
    }
    expect(&ts.delete(&key, "/v1/leads/gone").await, 200);
    expect(
        &ts.patch(&key, "/v1/leads/new", &json!({"firstName": "Ada"}))
            .await,
        200,
    );
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": "STOP"}),
        )
        .await;
    assert_eq!(expect(&r, 200)["leadId"], json!("new"));
    let sms = |l: Value| l["subscriptions"]["sms"].clone();
    assert_eq!(
        sms(expect(&ts.get(&key, "/v1/leads/new").await, 200)),
        json!("unsubscribed")
    );
    assert_eq!(
        sms(expect(&ts.get(&key, "/v1/leads/old").await, 200)),
        json!("subscribed")
    );
    for (body, field) in [
        (json!({"text": "hi"}), "from"),
        (json!({"from": "+15551234567"}), "text"),
        (json!({"from": "+15551234567", "text": 5}), "text"),
    ] {
        let r = ts.post(&key, "/v1/inbound/sms", &body).await;
        assert_error(&r, 400, &format!("Invalid format for field: {field}"));
    }
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": "hi", "to": "x"}),
        )
        .await;
    assert_error(&r, 400, "Unknown field: to");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_leads_and_small_keys_are_refused() {
    let (ts, key, _) = start().await;
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    let reader = ts.key("acme", "read").await;
    assert_error(
        &unsubscribe(&ts, &reader, "p", None).await,
        403,
        "Forbidden",
    );
    expect(&ts.delete(&key, "/v1/leads/p").await, 200);
    for path in [
        "unsubscribe",
        "resubscribe",
        "turn-off",
        "turn-on",
        "tags/add",
    ] {
        let body = if path == "tags/add" {
            json!({"tags": []})
        } else {
            json!({})
        };
        let r = ts.post(&key, &format!("/v1/leads/p/{path}"), &body).await;
        assert_error(&r, 404, "Resource not found: Lead with id p");
    }
    let r = ts
        .post(&key, "/v1/leads/p/tags/remove", &json!({"tagIds": []}))
        .await;
    assert_error(&r, 404, "Lead not found");
    // Another organization's lead is missing, too.
    let other = ts.key("globex", "write").await;
    lead(&ts, &key, json!({"id": "q", "phone": "+15551234568"})).await;
    assert_error(
        &unsubscribe(&ts, &other, "q", None).await,
        404,
        "Resource not found: Lead with id q",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_gets_one_opted_out_per_channel_that_changed() {
    let (ts, key, admin) = start().await;
    let receiver = WebhookReceiver::ok().await;
    let url = receiver.url.clone();
    expect(
        &ts.post(
            &admin,
            "/v1/webhooks",
            &json!({"url": url, "events": ["lead.opted_out"]}),
        )
        .await,
        201,
    );
    lead(
        &ts,
        &key,
        json!({"id": "r", "phone": "+15551234567", "email": "r@example.com"}),
    )
    .await;
    for body in [
        Some(json!({"channels": ["email"]})),
        None,
        None,
        Some(json!({"channels": ["sms", "voice", "email"]})),
    ] {
        expect(&unsubscribe(&ts, &key, "r", body).await, 200);
    }
    // STOP on a number already unsubscribed changes nothing that a webhook reports.
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": "STOP"}),
        )
        .await;
    expect(&r, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while receiver.count() < 3 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Give a duplicate the chance to show up.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let mut got: Vec<(String, String, String)> = receiver
        .envelopes()
        .iter()
        .map(|b| {
            assert_eq!(b["event"], json!("lead.opted_out"), "{b}");
            let d = &b["data"];
            (
                d["leadId"].as_str().unwrap_or_default().to_string(),
                d["channel"].as_str().unwrap_or_default().to_string(),
                d["source"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    got.sort();
    let expected: Vec<(String, String, String)> = ["email", "sms", "voice"]
        .iter()
        .map(|c| ("r".to_string(), c.to_string(), "api".to_string()))
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribing_moves_updated_at_for_syncing_clients() {
    let (ts, key, _) = start().await;
    let before = lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    expect(&unsubscribe(&ts, &key, "p", None).await, 200);
    let after = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert!(after["updatedAt"].as_str() > before["updatedAt"].as_str());
    // The unsubscribe writes its `CONSENT` events (the consent ledger): `lastActivityAt`
    // moves so that a syncing client fetches them, as for any new event.
    assert!(after["lastActivityAt"].as_str() > before["lastActivityAt"].as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resubscribe_restores_channels_but_not_a_keyword_opt_out() {
    let (ts, key, _) = start().await;
    lead(
        &ts,
        &key,
        json!({"id": "p", "phone": "+15551234567", "email": "p@example.com"}),
    )
    .await;
    expect(&unsubscribe(&ts, &key, "p", None).await, 200);
    let proof = json!({"text": "On the phone: please email me again"});
    let r = ts
        .post(
            &key,
            "/v1/leads/p/resubscribe",
            &json!({"channels": ["email"], "proof": proof}),
        )
        .await;
    assert_eq!(
        expect(&r, 200),
        json!({"message": "Lead resubscribed successfully.", "channels": ["email"]})
    );

    // STOP from the lead, then an API resubscribe: SMS stays unsubscribed.
    let stop = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+1 555 123 4567", "text": "  stop "}),
        )
        .await;
    assert_eq!(expect(&stop, 200)["optOut"], json!(true));
    let r = ts
        .post(&key, "/v1/leads/p/resubscribe", &json!({"proof": proof}))
        .await;
    assert_eq!(expect(&r, 200)["channels"], json!(["voice", "email"]));
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(l["subscriptions"]["sms"], json!("unsubscribed"));

    // Only the lead's own START clears it.
    let start = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": "START"}),
        )
        .await;
    assert_eq!(expect(&start, 200)["optIn"], json!(true));
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(l["subscriptions"]["sms"], json!("subscribed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_sms_records_the_lead_message_and_keywords_emit_one_webhook() {
    let (ts, key, admin) = start().await;
    let hook = webhook(&ts, &admin).await;
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": "Is this still on?"}),
        )
        .await;
    let answer = expect(&r, 200);
    assert_eq!(
        (answer["optOut"].clone(), answer["optIn"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(answer["message"]["owner"], json!("lead"));
    assert_eq!(
        expect(&ts.get(&key, "/v1/leads/p").await, 200)["hasReplied"],
        json!(true)
    );
    // A keyword inside a sentence is not a keyword (`please stop calling` is an opt-out
    // of calls: `revocation`).
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15551234567", "text": "can we end this"}),
        )
        .await;
    assert_eq!(expect(&r, 200)["optOut"], json!(false));
    for word in ["STOP", "unsubscribe"] {
        let r = ts
            .post(
                &key,
                "/v1/inbound/sms",
                &json!({"from": "+15551234567", "text": word}),
            )
            .await;
        assert_eq!(expect(&r, 200)["optOut"], json!(true));
    }
    // `revocationScope` `all` (the default): every channel the lead can be reached on.
    assert_eq!(
        opted_out(&ts, &admin, &hook).await,
        vec![
            ("p".into(), "sms".into(), "keyword".into()),
            ("p".into(), "voice".into(), "keyword".into())
        ]
    );
    let messages = expect(&ts.get(&key, "/v1/leads/p/messages").await, 200);
    // The lead's own messages; the engine answers opt-outs with confirmations of its own.
    let from_lead = messages["messages"]
        .as_array()
        .map(|all| all.iter().filter(|m| m["owner"] == json!("lead")).count());
    assert_eq!(from_lead, Some(4));
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15550000000", "text": "hi"}),
        )
        .await;
    assert_error(&r, 404, "Resource not found: Lead with phone +15550000000");
    let r = ts
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": "555", "text": "hi"}),
        )
        .await;
    assert_error(&r, 400, "Invalid format for field: from");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turning_off_pauses_the_assistant_only() {
    let (ts, key, _) = start().await;
    lead(&ts, &key, json!({"id": "p", "phone": "+15551234567"})).await;
    let r = ts.post(&key, "/v1/leads/p/turn-off", &json!({})).await;
    assert_eq!(
        expect(&r, 200),
        json!({"message": "Lead turned off successfully.", "isAiOn": false})
    );
    let l = expect(&ts.get(&key, "/v1/leads/p").await, 200);
    assert_eq!(
        (l["isAiOn"].clone(), l["isUnsubscribed"].clone()),
        (json!(false), json!(false))
    );
    let r = ts.post(&key, "/v1/leads/p/turn-on", &json!({})).await;
    assert_eq!(
        expect(&r, 200),
        json!({"message": "Lead turned on successfully.", "isAiOn": true})
    );
    assert_error(
        &ts.post(&key, "/v1/leads/ghost/turn-off", &json!({})).await,
        404,
        "Resource not found: Lead with id ghost",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_added_and_removed_with_the_interface_shapes() {
    let (ts, key, _) = start().await;
    lead(
        &ts,
        &key,
        json!({"id": "t", "tags": [{"id": "a", "name": "A", "condition": "x > 1"}]}),
    )
    .await;
    let r = ts
        .post(
            &key,
            "/v1/leads/t/tags/add",
            &json!({"tags": [{"id": "b", "name": "B"}]}),
        )
        .await;
    assert_eq!(
        expect(&r, 200)["tags"],
        json!([{"id": "a", "name": "A", "condition": "x > 1"}, {"id": "b", "name": "B", "condition": ""}])
    );
    let r = ts
        .post(
            &key,
            "/v1/leads/t/tags/remove",
            &json!({"tagIds": ["b", "not-on-the-lead"]}),
        )
        .await;
    assert_eq!(expect(&r, 200), json!({"tags": [{"id": "a", "name": "A"}]}));
    assert_error(
        &ts.post(
            &key,
            "/v1/leads/ghost/tags/remove",
            &json!({"tagIds": ["a"]}),
        )
        .await,
        404,
        "Lead not found",
    );
    let too_many: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    assert_error(
        &ts.post(
            &key,
            "/v1/leads/t/tags/remove",
            &json!({"tagIds": too_many}),
        )
        .await,
        400,
        "Too many: tagIds (at most 100)",
    );
    for body in [
        json!({"tagIds": "a"}),
        json!({"tagIds": [1]}),
        json!({}),
        json!({"ids": ["a"]}),
    ] {
        assert_error(
            &ts.post(&key, "/v1/leads/t/tags/remove", &body).await,
            400,
            "Invalid format for field: tagIds",
        );
    }
    assert_error(
        &ts.post(
            &key,
            "/v1/leads/t/tags/remove",
            &json!({"tagIds": ["a"], "all": true}),
        )
        .await,
        400,
        "Unknown field: all",
    );
    // Exactly 100 is allowed.
    let hundred: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
    expect(
        &ts.post(&key, "/v1/leads/t/tags/remove", &json!({"tagIds": hundred}))
            .await,
        200,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_add_replaces_by_id_caps_and_validates() {
    let (ts, key, _) = start().await;
    let before = lead(&ts, &key, json!({"id": "t"})).await;
    let r = ts
        .post(
            &key,
            "/v1/leads/t/tags/add",
            &json!({"tags": [{"id": "a", "name": "A"}, {"id": "b", "name": "B", "condition": "c1"}]}),
        )
        .await;
    expect(&r, 200);
    let r = ts
        .post(
            &key,
            "/v1/leads/t/tags/add",
            &json!({"tags": [{"id": "b", "name": "Bee", "condition": "c2"}]}),
        )
        .await;
    assert_eq!(
        expect(&r, 200),
        json!({"tags": [{"id": "a", "name": "A", "condition": ""}, {"id": "b", "name": "Bee", "condition": "c2"}]})
    );
    let l = expect(&ts.get(&key, "/v1/leads/t").await, 200);
    assert_eq!(l["tags"][1]["condition"], json!("c2"));
    assert!(l["updatedAt"].as_str() > before["updatedAt"].as_str());

    let too_many: Vec<Value> = (0..101)
        .map(|i| json!({"id": format!("t{i}"), "name": "x"}))
        .collect();
    assert_error(
        &ts.post(&key, "/v1/leads/t/tags/add", &json!({"tags": too_many}))
            .await,
        400,
        "Too many: tags (at most 100)",
    );
    for body in [
        json!({}),
        json!({"tags": "a"}),
        json!({"tags": [{"name": "no id"}]}),
        json!({"tags": [5]}),
    ] {
        assert_error(
            &ts.post(&key, "/v1/leads/t/tags/add", &body).await,
            400,
            "Invalid format for field: tags",
        );
    }
    assert_error(
        &ts.post(
            &key,
            "/v1/leads/ghost/tags/add",
            &json!({"tags": [{"id": "a", "name": "A"}]}),
        )
        .await,
        404,
        "Resource not found: Lead with id ghost",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organization_settings_are_admin_only_and_validated() {
    let (ts, key, admin) = start().await;
    assert_error(&ts.get(&key, "/v1/org").await, 403, "Forbidden");
    let org = expect(&ts.get(&admin, "/v1/org").await, 200);
    assert_eq!(org["smsVoiceOptOutCoupled"], json!(false));
    assert_eq!(org["complianceTimeoutMs"], json!(3000));
    assert_eq!(org["quietHours"], Value::Null);
    let r = ts
        .patch(&admin, "/v1/org", &json!({"complianceUrl": "https://compliance.example.com/check", "complianceChannels": ["sms"], "complianceTimeoutMs": 500, "quietHours": {"start": "21:00", "end": "08:00"}}))
        .await;
    let org = expect(&r, 200);
    assert_eq!(org["quietHours"], json!({"start": "21:00", "end": "08:00"}));
    assert_eq!(org["complianceChannels"], json!(["sms"]));
    for (field, value) in [
        ("complianceUrl", json!("not a url")),
        ("complianceChannels", json!(["fax"])),
        ("complianceTimeoutMs", json!(0)),
        ("quietHours", json!({"start": "25:00", "end": "08:00"})),
        ("smsVoiceOptOutCoupled", json!("yes")),
    ] {
        let r = ts.patch(&admin, "/v1/org", &json!({ field: value })).await;
        assert_error(&r, 400, &format!("Invalid format for field: {field}"));
    }
    let cleared = expect(
        &ts.patch(
            &admin,
            "/v1/org",
            &json!({"complianceUrl": null, "quietHours": null}),
        )
        .await,
        200,
    );
    assert_eq!(
        (
            cleared["complianceUrl"].clone(),
            cleared["quietHours"].clone()
        ),
        (Value::Null, Value::Null)
    );
}

/// `POST /v1/inbound/sms` reads a `from` without `+` in the organization's
/// `defaultCountry`, as the import and the console do; without a country it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_sms_from_a_local_number_is_read_in_the_default_country() {
    let (ts, key, admin) = start().await;
    lead(&ts, &key, json!({"id": "local", "phone": "+15125550100"})).await;
    let body = json!({"from": "(512) 555-0100", "text": "Who is this?"});
    assert_error(
        &ts.post(&key, "/v1/inbound/sms", &body).await,
        400,
        "Invalid format for field: from",
    );
    expect(
        &ts.patch(&admin, "/v1/org", &json!({"defaultCountry": "US"}))
            .await,
        200,
    );
    let answer = ts.post(&key, "/v1/inbound/sms", &body).await;
    assert_eq!(expect(&answer, 200)["leadId"], json!("local"));
}
