//! Revocation read like a person (`consent.md`, `domain::contact::revocation`): a
//! disguised STOP opts out, a refusal of calls revokes voice alone (SMS still sends), a
//! booking confirmation's `C` cancels the meeting instead of opting out, and an email is
//! read without what it quotes (a quoted `> unsubscribe` is nothing, a STOP written below
//! the quote opts out).

use chrono::{Duration, DurationRound, Utc};
use serde_json::{json, Value};

use engaged::testkit::{Org, TestServer};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;

const PHONE: &str = "+15551234567";

/// An organization with its business name, no consent policy (the gate's other steps
/// are what these tests hold), and lead `p` with a phone and an email.
async fn start() -> Org {
    let org = Org::start().await;
    set_business(&org.ts, &org.admin).await;
    let none = json!({"consentRequired": []});
    expect(&org.ts.patch(&org.admin, "/v1/org", &none).await, 200);
    org.ts
        .create_lead(
            &org.write,
            &json!({"id": "p", "phone": PHONE, "email": "p@example.com"}),
        )
        .await;
    org
}

async fn subscriptions(ts: &TestServer, key: &str) -> Value {
    get_lead(ts, key, "p").await["subscriptions"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disguised_stop_opts_out() {
    let org = start().await;
    let (ts, key) = (&org.ts, org.write.as_str());
    for text in [
        "S.T.O.P",
        "st0p",
        "\u{0405}\u{0422}\u{041e}\u{0420}",
        "S\u{0336}T\u{0336}O\u{0336}P\u{0336}",
        "🇸🇹🇴🇵",
        "Hi, please remove me from your list",
        "ALTO",
    ] {
        let answer = inbound_sms(ts, key, PHONE, text).await;
        assert_eq!(answer["optOut"], json!(true), "{text:?}: {answer}");
        assert_eq!(
            subscriptions(ts, key).await["sms"],
            json!("unsubscribed"),
            "{text:?}"
        );
        let answer = inbound_sms(ts, key, PHONE, "START").await;
        assert_eq!(answer["optIn"], json!(true), "{answer}");
    }
    // The lead's own words are the ledger's proof.
    let ledger = expect(&ts.get(key, "/v1/leads/p/consent").await, 200);
    let proofs: Vec<&str> = ledger["entries"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|e| e["channel"] == json!("sms") && e["status"] == json!("revoked"))
                .filter_map(|e| e["proof"]["text"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(proofs.first(), Some(&"S.T.O.P"), "{ledger}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dont_call_me_text_me_revokes_voice_only_and_sms_still_sends() {
    let org = start().await;
    let (ts, key) = (&org.ts, org.write.as_str());
    // Coupled SMS and voice and `revocationScope` `all` still leave SMS alone: the lead
    // said which channel.
    let coupled = json!({"smsVoiceOptOutCoupled": true, "revocationScope": "all"});
    expect(&ts.patch(&org.admin, "/v1/org", &coupled).await, 200);
    let answer = inbound_sms(ts, key, PHONE, "Don't call me, text me").await;
    assert_eq!(answer["optOut"], json!(true), "{answer}");
    assert_eq!(
        subscriptions(ts, key).await,
        json!({"sms": "subscribed", "voice": "unsubscribed", "email": "subscribed"})
    );
    let sent = wait_outbound(ts, key, "p", 1).await;
    assert_eq!(
        texts(&sent),
        vec![format!("{BUSINESS_NAME}: You will receive no more calls.")]
    );
    // A text still goes out; a call is blocked.
    let r = ts
        .post(
            key,
            "/v1/leads/p/messages",
            &json!({"owner": "user", "channel": "sms", "content": {"text": "Here is the quote."}}),
        )
        .await;
    let message = expect(&r, 201);
    let settled = wait_settled(ts, key, "p", &message["id"]).await;
    assert_sandbox_delivered(&settled, "api");
    let call = expect(
        &ts.post(key, "/v1/leads/p/calls", &json!({"direction": "OUTBOUND"}))
            .await,
        200,
    );
    assert_eq!(
        call["event"]["data"],
        json!({"reason": "UNSUBSCRIBED", "source": "configuration", "channel": "voice"})
    );
    // The voice entry of the ledger has the lead's words.
    let ledger = expect(&ts.get(key, "/v1/leads/p/consent").await, 200);
    let revoked: Vec<(&str, &str)> = ledger["entries"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|e| e["status"] == json!("revoked"))
                .map(|e| {
                    (
                        e["channel"].as_str().unwrap_or_default(),
                        e["proof"]["text"].as_str().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(revoked, vec![("voice", "Don't call me, text me")]);
}

/// Every day, all day, in UTC, no notice.
fn calendar() -> Value {
    let day = json!([["00:00", "24:00"]]);
    json!({"timeZone": "UTC",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": day, "sun": day},
        "meetingMinutes": 30, "bufferMinutes": 0, "minNoticeMinutes": 0, "daysAhead": 14,
        "location": "Phone call", "reminders": []})
}

async fn meeting_status(ts: &TestServer, key: &str, id: &str) -> Value {
    expect(&ts.get(key, &format!("/v1/meetings/{id}")).await, 200)["status"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmations_c_cancels_the_meeting_and_does_not_opt_out() {
    let org = start().await;
    let (ts, key) = (&org.ts, org.write.as_str());
    expect(
        &ts.put(&org.admin, "/v1/calendars/sales", &calendar()).await,
        200,
    );
    let at = (Utc::now() + Duration::hours(49))
        .duration_trunc(Duration::minutes(30))
        .unwrap_or_else(|_| Utc::now() + Duration::hours(49));
    let start = at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let booked = expect(
        &ts.post(
            key,
            "/v1/leads/p/meetings",
            &json!({"calendar": "sales", "start": start}),
        )
        .await,
        201,
    );
    let id = str_of(&booked["id"]).to_string();
    let sent = wait_outbound(ts, key, "p", 1).await;
    assert!(
        texts(&sent)[0].ends_with("Reply R to reschedule or C to cancel."),
        "{:?}",
        texts(&sent)
    );
    let answer = inbound_sms(ts, key, PHONE, "C").await;
    assert_eq!(answer["optOut"], json!(false), "{answer}");
    assert_eq!(meeting_status(ts, key, &id).await, json!("canceled"));
    assert_eq!(
        subscriptions(ts, key).await,
        json!({"sms": "subscribed", "voice": "subscribed", "email": "subscribed"})
    );
    // The cancellation's confirmation answers the lead, and nothing else does.
    let sent = wait_outbound(ts, key, "p", 2).await;
    assert!(
        texts(&sent)[1].ends_with("is canceled."),
        "{:?}",
        texts(&sent)
    );
    assert!(
        !texts(&sent).iter().any(|t| t.contains("unsubscribed")),
        "{:?}",
        texts(&sent)
    );
    // With no meeting to answer, `Cancel` is the per-se opt-out it always was.
    let answer = inbound_sms(ts, key, PHONE, "Cancel").await;
    assert_eq!(answer["optOut"], json!(true), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_quoting_unsubscribe_does_not_opt_out_while_a_stop_below_the_quote_does() {
    let org = start().await;
    let (ts, key) = (&org.ts, org.write.as_str());
    let quoted = "> unsubscribe\n\nThanks, see you Tuesday.\n\nOn Mon, Nov 2, 2026 at 9:00 AM Acme Solar <sam@acme.example> wrote:\n> Hi, still interested? Reply STOP to opt out.";
    let answer = expect(
        &inbound_email(ts, key, "p@example.com", "Re: your quote", quoted).await,
        200,
    );
    assert_eq!(answer["optOut"], json!(false), "{answer}");
    assert_eq!(subscriptions(ts, key).await["email"], json!("subscribed"));
    let below = "On Mon, Nov 2, 2026 at 9:00 AM Acme Solar <sam@acme.example>\nwrote:\n> Hi, still interested in a quote?\n>\n\nSTOP";
    let answer = expect(
        &inbound_email(ts, key, "p@example.com", "Re: your quote", below).await,
        200,
    );
    assert_eq!(answer["optOut"], json!(true), "{answer}");
    assert_eq!(subscriptions(ts, key).await["email"], json!("unsubscribed"));
    // A removal written in the body's second paragraph counts too.
    let org = start().await;
    let answer = expect(
        &inbound_email(
            &org.ts,
            &org.write,
            "p@example.com",
            "Re: your quote",
            "Hi Sam,\n\nPlease remove me from your list.",
        )
        .await,
        200,
    );
    assert_eq!(answer["optOut"], json!(true), "{answer}");
}
