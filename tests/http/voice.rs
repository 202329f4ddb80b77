//! Voice over a Twilio-compatible provider, black-box, from docs/providers-and-calls.md's "Calls" section:
//! calls placed through a fake Twilio (`fake_twilio`), the TwiML the server answers, the
//! ConversationRelay WebSocket (`relay_client`) with a scripted model (`fake_model`),
//! transfers, status callbacks, recordings fetched from the fake, post-call summary and
//! disposition, and every voice webhook's signature (signed here with Twilio's published
//! algorithm, `util::twilio_signature`, not with the server's code).

use std::time::Duration;

use serde_json::{json, Value};

use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::relay::{self as relay_client, RelayClient, FRAME_WAIT};
use engaged::testkit::twilio::FakeTwilio;
use engaged::testkit::{poll, WebhookReceiver, WAIT};
use engaged::testkit::{Response, TestServer};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;
use crate::twilio_signing::*;

const PUBLIC_URL: &str = "https://engaged.test";
const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "voice-auth-token-secret";
const WRONG_TOKEN: &str = "not-the-auth-token";
const FROM: &str = "+15550100000";
const PHONE: &str = "+15551230001";
const TRANSFER: &str = "+15550107777";
const FALLBACK: &str = "+15550108888";
const GREETING: &str = "Hi {{firstName}}, this is Sam from {{business.name}}.";
const GREETING_ADA: &str = "Hi Ada, this is Sam from Acme Solar.";
/// What an outbound relay call's greeting ends with, by default (`voiceOptOutSentence`).
const OPT_OUT_SENTENCE: &str = "To stop these calls, press 9 or say stop.";
/// The greeting an outbound relay call to Ada opens with.
const GREETED_ADA: &str =
    "Hi Ada, this is Sam from Acme Solar. To stop these calls, press 9 or say stop.";
const GOODBYE: &str = "You won't receive more calls from us. Goodbye.";
const STEP_TEXT: &str = "Hi {{firstName}}, Sam from {{business.name}} about your solar quote.";
const STEP_TEXT_ADA: &str = "Hi Ada, Sam from Acme Solar about your solar quote.";
const SUMMARY: &str = "Ada wants a quote and booked a visit on Friday.";

/// A server with `public_url` https://engaged.test, organization `acme` whose voice
/// provider is the fake Twilio (and, when asked, whose assistant is the fake model),
/// profiles `solar` (one voice step at 0 s) and `quiet` (no cadence), both with a
/// greeting, transfer numbers and dispositions `booked` and `not-interested`.
struct Voice {
    ts: TestServer,
    key: String,
    admin: String,
    org: String,
    twilio: FakeTwilio,
    model: FakeModel,
}

fn voice_profile(cadence: Value) -> Value {
    json!({
        "instructions": "You are Sam from Acme Solar. Be brief and friendly.",
        "cadence": cadence,
        "voiceGreeting": GREETING,
        "transferNumber": TRANSFER,
        "fallbackTransferNumber": FALLBACK,
        "dispositions": [
            {"id": "booked", "name": "Appointment booked", "description": "A visit was booked."},
            {"id": "not-interested", "name": "Not interested", "description": "The lead declined."},
        ],
    })
}

fn voice_step(after: &str, text: &str) -> Value {
    json!({"after": after, "channel": "voice", "text": text})
}

async fn start(assistant: bool) -> Voice {
    start_with_cadence(assistant, json!([voice_step("0s", STEP_TEXT)])).await
}

async fn start_with_cadence(assistant: bool, solar_cadence: Value) -> Voice {
    let twilio = FakeTwilio::start().await;
    twilio.expect_credentials(SID, TOKEN);
    let model = FakeModel::start().await;
    let ts = TestServer::start_with(|c| c.public_url = Some(PUBLIC_URL.into())).await;
    let key = ts.key("acme", "write").await;
    let admin = ts.key("acme", "admin").await;
    set_business(&ts, &admin).await;
    let settings = set_org(
        &ts,
        &admin,
        // The consent policy (`policy.rs`) is off: these tests hold the calls themselves.
        &json!({"providers": {"voice": {"kind": "twilio", "accountSid": SID, "authToken": TOKEN,
            "from": FROM, "baseUrl": twilio.base_url}}, "consentRequired": []}),
    )
    .await;
    assert!(
        !settings.to_string().contains(TOKEN),
        "the token is write-only"
    );
    if assistant {
        set_org(&ts, &admin, &model.settings()).await;
    }
    let org = str_of(&settings["id"]).to_string();
    put_profile(&ts, &admin, "solar", &voice_profile(solar_cadence)).await;
    put_profile(&ts, &admin, "quiet", &voice_profile(json!([]))).await;
    Voice {
        ts,
        key,
        admin,
        org,
        twilio,
        model,
    }
}

/// Creates lead `id` (first name Ada unless `first_name` says otherwise) on `profile`.
async fn lead_named(v: &Voice, id: &str, first_name: &str, profile: &str) {
    v.ts.create_lead(
        &v.key,
        &json!({"id": id, "firstName": first_name, "phone": PHONE, "customerProfile": profile}),
    )
    .await;
}

async fn lead(v: &Voice, id: &str, profile: &str) {
    lead_named(v, id, "Ada", profile).await;
}

/// `/v1/providers/twilio/{org}/voice/{rest}`.
fn voice_path(v: &Voice, rest: &str) -> String {
    format!("/v1/providers/twilio/{}/voice/{rest}", v.org)
}

fn call_path(v: &Voice, call: &str, hook: &str) -> String {
    voice_path(v, &format!("{call}/{hook}"))
}

/// The absolute URL Twilio is given for a path (and what it signs).
fn public(path: &str) -> String {
    format!("{PUBLIC_URL}{path}")
}

/// POSTs `params` as a form to `path_and_query`, signed as Twilio does with `token`.
async fn post_signed(
    v: &Voice,
    path_and_query: &str,
    params: &[(&str, &str)],
    token: &str,
) -> Response {
    let signature = twilio_signature(token, &public(path_and_query), params);
    let body = serde_urlencoded::to_string(params).unwrap().into_bytes();
    v.ts.post_with_headers(
        path_and_query,
        &[("x-twilio-signature", signature)],
        "application/x-www-form-urlencoded",
        body,
    )
    .await
}

/// A correctly signed Twilio webhook that must answer 200; returns the answer.
async fn twilio_post(v: &Voice, path_and_query: &str, params: &[(&str, &str)]) -> Response {
    let r = post_signed(v, path_and_query, params, TOKEN).await;
    assert_eq!(r.status, 200, "{path_and_query}: {}", text(&r));
    r
}

/// A TwiML answer: 200, `text/xml`; returns the document.
fn twiml(r: &Response) -> String {
    assert_eq!(r.status, 200, "{}", text(r));
    let content_type = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        content_type.starts_with("text/xml"),
        "TwiML is text/xml, got {content_type:?}"
    );
    let body = text(r);
    assert!(body.contains("<Response"), "a TwiML document: {body}");
    body
}

/// The opening tag `<name ...>` of the first `name` element in `xml`.
fn tag<'a>(xml: &'a str, name: &str) -> &'a str {
    let open = format!("<{name}");
    let start = xml
        .match_indices(&open)
        .find(|(i, _)| {
            matches!(
                xml.as_bytes().get(i + open.len()).copied(),
                Some(b' ' | b'>' | b'/' | b'\n' | b'\t' | b'\r')
            )
        })
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no <{name}> in {xml}"));
    let end = xml[start..].find('>').expect("a closed tag") + start;
    &xml[start..=end]
}

/// The value of attribute `attr` of the first `name` element.
fn attr(xml: &str, name: &str, attr: &str) -> String {
    let tag = tag(xml, name);
    let needle = format!(" {attr}=\"");
    let start = tag
        .find(&needle)
        .unwrap_or_else(|| panic!("no {attr} in {tag}"))
        + needle.len();
    let end = tag[start..].find('"').expect("a closed attribute") + start;
    tag[start..end].to_string()
}

/// The text between `<name ...>` and `</name>`.
fn element_text(xml: &str, name: &str) -> String {
    let open = tag(xml, name);
    let start = xml.find(open).unwrap() + open.len();
    let end = xml[start..]
        .find(&format!("</{name}>"))
        .unwrap_or_else(|| panic!("no </{name}> in {xml}"))
        + start;
    xml[start..end].trim().to_string()
}

/// `GET /v1/calls/{id}`.
async fn get_call(v: &Voice, call: &str) -> Value {
    expect(&v.ts.get(&v.key, &format!("/v1/calls/{call}")).await, 200)
}

/// Waits until call `call` satisfies `ok`; returns it.
async fn wait_call(v: &Voice, call: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let ok = &ok;
    poll(what, WAIT, || async move {
        let c = get_call(v, call).await;
        if ok(&c) {
            Ok(c)
        } else {
            Err(c.to_string())
        }
    })
    .await
}

/// Waits until call `call` has at least `n` transcript turns; returns them.
async fn wait_transcript(v: &Voice, call: &str, n: usize) -> Vec<Value> {
    let c = wait_call(v, call, &format!("{n} transcript turns"), |c| {
        c["transcript"].as_array().is_some_and(|t| t.len() >= n)
    })
    .await;
    c["transcript"].as_array().unwrap().clone()
}

/// The id of the first call on `lead` (from its `CALL` event), waiting for it.
async fn call_of(v: &Voice, lead: &str) -> String {
    poll(&format!("a CALL event on {lead}"), WAIT, || async move {
        let calls = events_of_type(&v.ts, &v.key, lead, "CALL").await;
        match calls.first() {
            Some(event) => Ok(str_of(&event["id"]).to_string()),
            None => Err("no CALL event".to_string()),
        }
    })
    .await
}

/// Waits until the fake got at least `n` Calls.json requests; returns them.
async fn wait_dialed(v: &Voice, n: usize) -> Vec<engaged::testkit::twilio::Sent> {
    poll(&format!("{n} Calls.json request(s)"), WAIT, || async move {
        let calls = v.twilio.calls();
        if calls.len() >= n {
            Ok(calls)
        } else {
            Err(format!("{calls:?}"))
        }
    })
    .await
}

/// `POST /v1/leads/{lead}/calls` `{"direction": "OUTBOUND"}`; returns the call's id.
async fn request_call(v: &Voice, lead: &str) -> String {
    let r =
        v.ts.post(
            &v.key,
            &format!("/v1/leads/{lead}/calls"),
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    let answer = expect(&r, 201);
    assert_eq!(answer["outcome"], json!("sent"), "{answer}");
    str_of(&answer["call"]["id"]).to_string()
}

/// The `CallSid` the fake gave its `index`-th call request, once it answered (the fake
/// logs a request before it answers).
async fn dialed_sid(v: &Voice, index: usize) -> String {
    wait_dialed(v, index + 1).await;
    poll("the fake accepted the call", WAIT, || async move {
        v.twilio.calls()[index]
            .sid
            .clone()
            .ok_or_else(|| "no sid yet".to_string())
    })
    .await
}

/// Places a call to `lead` through the API and waits until Twilio was asked; returns the
/// call's id and the `CallSid` the fake gave it.
async fn placed_call(v: &Voice, lead: &str) -> (String, String) {
    let before = v.twilio.calls().len();
    let call = request_call(v, lead).await;
    let sid = dialed_sid(v, before).await;
    (call, sid)
}

/// What Twilio posts to the twiml URL once an outbound call is answered.
async fn fetch_twiml(v: &Voice, call: &str, call_sid: &str) -> String {
    let r = twilio_post(
        v,
        &call_path(v, call, "twiml"),
        &[
            ("AccountSid", SID),
            ("CallSid", call_sid),
            ("From", FROM),
            ("To", PHONE),
            ("CallStatus", "in-progress"),
            ("Direction", "outbound-api"),
        ],
    )
    .await;
    twiml(&r)
}

/// A status callback for `call`, with extra parameters.
async fn status(v: &Voice, call: &str, call_sid: &str, status: &str, extra: &[(&str, &str)]) {
    let mut params = vec![
        ("AccountSid", SID),
        ("CallSid", call_sid),
        ("CallStatus", status),
        ("From", FROM),
        ("To", PHONE),
        ("Direction", "outbound-api"),
    ];
    params.extend_from_slice(extra);
    twilio_post(v, &call_path(v, call, "status"), &params).await;
}

/// Opens the relay of `call` signed as Twilio signs it.
async fn open_relay(v: &Voice, call: &str) -> RelayClient {
    let url = relay_client::relay_url(PUBLIC_URL, &v.org, call);
    let signature = twilio_signature(TOKEN, &url, &[]);
    match relay_client::connect(&v.ts, &v.org, call, &signature).await {
        Ok(client) => client,
        Err(status) => panic!("the relay handshake was refused with {status}"),
    }
}

/// Places a call to `lead` and answers it as Twilio does with an assistant: the TwiML
/// fetched, the call in progress, the relay opened and set up. Returns the call's id,
/// its `CallSid` and the relay.
async fn answered_call(v: &Voice, lead: &str) -> (String, String, RelayClient) {
    let (call, sid) = placed_call(v, lead).await;
    let doc = fetch_twiml(v, &call, &sid).await;
    assert!(doc.contains("<ConversationRelay"), "{doc}");
    status(v, &call, &sid, "in-progress", &[]).await;
    let mut relay = open_relay(v, &call).await;
    relay.setup(&sid).await;
    (call, sid, relay)
}

/// The lead says `prompt`; asserts the agent's answer frame carries `answer`.
async fn turn(relay: &mut RelayClient, prompt: &str, answer: &str) {
    relay.prompt(prompt).await;
    let frame = relay.frame_of_type("text", FRAME_WAIT).await;
    assert_eq!(frame["token"], json!(answer), "{frame}");
    assert_eq!(frame["last"], json!(true), "{frame}");
}

/// Every delivery of `event` in the deliveries log of endpoint `hook` (written in the
/// same transaction as the change, so complete once the change is visible).
async fn deliveries_of(v: &Voice, hook: &str, event: &str) -> Vec<Value> {
    walk(
        &v.ts,
        &v.admin,
        &format!("/v1/webhooks/{hook}/deliveries?limit=1000"),
        "deliveries",
    )
    .await
    .0
    .into_iter()
    .filter(|d| d["event"] == json!(event))
    .collect()
}

/// Asserts a transcript turn's role and text and that `at` is a timestamp.
#[track_caller]
fn assert_turn(turn: &Value, role: &str, text: &str) {
    assert_eq!(turn["role"], json!(role), "{turn}");
    assert_eq!(turn["text"], json!(text), "{turn}");
    time_of(&turn["at"]);
}

/// The callId named in a TwiML answer's relay URL.
fn call_id_in(doc: &str, org: &str) -> String {
    let url = attr(doc, "ConversationRelay", "url");
    let prefix = format!("wss://engaged.test/v1/providers/twilio/{org}/voice/");
    url.strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix("/relay"))
        .unwrap_or_else(|| panic!("a relay URL of this org: {url}"))
        .to_string()
}

// ---------------------------------------------------------------------------------------
// The signer itself
// ---------------------------------------------------------------------------------------

#[test]
fn twilio_signature_matches_twilios_published_vector() {
    let signature = twilio_signature(
        "12345",
        "https://mycompany.com/myapp.php?foo=1&bar=2",
        &[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+14158675310"),
            ("Digits", "1234"),
            ("From", "+14158675310"),
            ("To", "+18005551212"),
        ],
    );
    assert_eq!(signature, "GvWf1cFY/Q7PnoempGyD5oXAezc=");
}

// ---------------------------------------------------------------------------------------
// Placing calls
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cadence_voice_step_places_a_call_through_twilio_with_every_callback() {
    let v = start(false).await;
    lead(&v, "L1", "solar").await;
    let call = call_of(&v, "L1").await;
    let record = get_call(&v, &call).await;
    assert_eq!(record["direction"], json!("OUTBOUND"), "{record}");
    assert_eq!(record["leadId"], json!("L1"), "{record}");
    assert_eq!(record["isAiInitiated"], json!(true), "{record}");
    assert_eq!(record["isFollowUp"], json!(false), "step 1: {record}");
    assert_eq!(record["transcript"], json!([]), "{record}");

    let dialed = wait_dialed(&v, 1).await;
    assert_eq!(dialed.len(), 1, "{dialed:?}");
    let request = &dialed[0];
    assert_eq!(
        request.path,
        format!("/2010-04-01/Accounts/{SID}/Calls.json")
    );
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{SID}:{TOKEN}"));
    assert_eq!(request.authorization, format!("Basic {basic}"));
    assert_eq!(request.field("To"), Some(PHONE));
    assert_eq!(request.field("From"), Some(FROM));
    let url = |hook: &str| public(&call_path(&v, &call, hook));
    assert_eq!(request.field("Url"), Some(url("twiml").as_str()));
    assert_eq!(
        request.field("StatusCallback"),
        Some(url("status").as_str())
    );
    // Repeated, as Twilio's libraries send it (or space-separated in one value).
    let mut events: Vec<&str> = request
        .fields("StatusCallbackEvent")
        .into_iter()
        .flat_map(str::split_whitespace)
        .collect();
    events.sort();
    assert_eq!(events, ["answered", "completed", "initiated", "ringing"]);
    assert_eq!(request.field("MachineDetection"), Some("DetectMessageEnd"));
    assert_eq!(request.field("AsyncAmd"), Some("true"));
    assert_eq!(
        request.field("AsyncAmdStatusCallback"),
        Some(url("status").as_str()),
        "the answering machine's result comes to the status path"
    );
    assert_eq!(request.field("Record"), Some("true"));
    assert_eq!(
        request.field("RecordingStatusCallback"),
        Some(url("recording").as_str())
    );
    // The fake answered `queued`: the call stays QUEUED until a status callback.
    let record = get_call(&v, &call).await;
    assert_eq!(record["callStatus"], json!("QUEUED"), "{record}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_cadence_voice_step_is_a_follow_up() {
    let v = start_with_cadence(
        false,
        json!([
            voice_step("0s", STEP_TEXT),
            voice_step("1s", "Calling again, {{firstName}}.")
        ]),
    )
    .await;
    lead(&v, "L1", "solar").await;
    let calls = poll("two CALL events on L1", WAIT, || async {
        let calls = events_of_type(&v.ts, &v.key, "L1", "CALL").await;
        if calls.len() >= 2 {
            Ok(calls)
        } else {
            Err(format!("{calls:?}"))
        }
    })
    .await;
    let mut follow_ups = Vec::new();
    for event in &calls {
        let record = get_call(&v, str_of(&event["id"])).await;
        assert_eq!(record["isAiInitiated"], json!(true), "{record}");
        follow_ups.push(record["isFollowUp"].as_bool().unwrap_or(false));
    }
    follow_ups.sort();
    assert_eq!(
        follow_ups,
        [false, true],
        "step 1 is not a follow-up, step 2 is"
    );
    wait_dialed(&v, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_requested_through_the_api_is_queued_and_dialled() {
    let v = start(false).await;
    lead(&v, "L1", "quiet").await;
    let r =
        v.ts.post(
            &v.key,
            "/v1/leads/L1/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    let answer = expect(&r, 201);
    assert_eq!(answer["outcome"], json!("sent"), "{answer}");
    let call = str_of(&answer["call"]["id"]).to_string();
    assert_eq!(answer["call"]["direction"], json!("OUTBOUND"), "{answer}");
    assert_eq!(answer["call"]["leadId"], json!("L1"), "{answer}");
    let dialed = wait_dialed(&v, 1).await;
    assert_eq!(dialed[0].field("To"), Some(PHONE));
    assert_eq!(
        dialed[0].field("Url"),
        Some(public(&call_path(&v, &call, "twiml")).as_str())
    );
    let record = get_call(&v, &call).await;
    assert_eq!(record["isAiInitiated"], json!(true), "{record}");
    assert_eq!(record["callStatus"], json!("QUEUED"), "{record}");
    let events = events_of_type(&v.ts, &v.key, "L1", "CALL").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], json!(call));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_twilio_refuses_fails_and_is_not_retried() {
    let v = start(false).await;
    v.twilio.refuse_next_call();
    lead(&v, "L1", "quiet").await;
    let call = request_call(&v, "L1").await;
    let record = wait_call(&v, &call, "the refused call is FAILED", |c| {
        c["callStatus"] == json!("FAILED")
    })
    .await;
    assert_eq!(record["leadId"], json!("L1"), "{record}");
    assert_eq!(v.twilio.calls().len(), 1, "a refusal is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_to_calls_json_never_completes_a_call() {
    let v = start(false).await;
    v.twilio.answer_calls_with("completed");
    lead(&v, "L1", "quiet").await;
    let call = request_call(&v, "L1").await;
    let sid = dialed_sid(&v, 0).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let record = get_call(&v, &call).await;
    assert_ne!(record["callStatus"], json!("COMPLETE"), "{record}");
    // Only a status callback completes it.
    status(&v, &call, &sid, "completed", &[("CallDuration", "12")]).await;
    wait_call(&v, &call, "the callback completes the call", |c| {
        c["callStatus"] == json!("COMPLETE")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_twilio_did_not_take_is_tried_again_and_placed_once() {
    let v = start(false).await;
    v.twilio.script(&[(429, Some(1))]);
    lead(&v, "L1", "quiet").await;
    let call = request_call(&v, "L1").await;
    dialed_sid(&v, 1).await;
    assert_eq!(v.twilio.calls()[0].sid, None, "the 429");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(v.twilio.calls().len(), 2, "placed once");
    assert_ne!(get_call(&v, &call).await["callStatus"], json!("FAILED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_twilio_answered_500_is_never_dialled_again() {
    let v = start(false).await;
    v.twilio.script(&[(500, None)]);
    lead(&v, "L1", "quiet").await;
    let call = request_call(&v, "L1").await;
    wait_dialed(&v, 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(v.twilio.calls().len(), 1, "at most once");
    assert_eq!(get_call(&v, &call).await["callStatus"], json!("QUEUED"));
}

// ---------------------------------------------------------------------------------------
// TwiML
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twiml_with_an_assistant_connects_the_relay_with_the_rendered_greeting() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let (call, sid) = placed_call(&v, "L1").await;
    let doc = fetch_twiml(&v, &call, &sid).await;
    assert_eq!(
        attr(&doc, "Connect", "action"),
        public(&call_path(&v, &call, "transfer")),
        "{doc}"
    );
    assert_eq!(
        attr(&doc, "ConversationRelay", "url"),
        relay_client::relay_url(PUBLIC_URL, &v.org, &call),
        "{doc}"
    );
    assert_eq!(
        attr(&doc, "ConversationRelay", "welcomeGreeting"),
        GREETED_ADA,
        "the greeting says how to opt out: {doc}"
    );
    assert_eq!(
        attr(&doc, "ConversationRelay", "dtmfDetection"),
        "true",
        "keypad digits reach the relay only when asked for: {doc}"
    );
    assert!(
        doc.find("<Connect").unwrap() < doc.find("<ConversationRelay").unwrap(),
        "the relay is inside Connect: {doc}"
    );
    assert!(!doc.contains("<Say"), "{doc}");
    assert!(
        !doc.contains("<Recording"),
        "an outbound call is recorded by its Calls.json request: {doc}"
    );
}

/// Whether every character of `doc` is one XML 1.0 allows (its `Char` production).
fn is_xml_document_text(doc: &str) -> bool {
    doc.chars().all(|c| {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_stored_with_control_characters_is_spoken_clean_in_a_well_formed_twiml() {
    let v = start(true).await;
    lead_named(&v, "L1", "Bob", "quiet").await;
    // Stored before the character rule (the API refuses it now).
    v.ts.change_lead_directly("acme", "L1", |lead| {
        lead.first_name = "Bob\u{1}\u{b}\u{fffe}".into();
    })
    .await;
    let (call, sid) = placed_call(&v, "L1").await;
    let doc = fetch_twiml(&v, &call, &sid).await;
    assert!(is_xml_document_text(&doc), "{doc:?}");
    assert_eq!(
        attr(&doc, "ConversationRelay", "welcomeGreeting"),
        format!("Hi Bob, this is Sam from Acme Solar. {OPT_OUT_SENTENCE}"),
        "{doc:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twiml_without_an_assistant_says_the_step_text_then_hangs_up() {
    let v = start(false).await;
    lead(&v, "L1", "solar").await;
    let call = call_of(&v, "L1").await;
    let sid = dialed_sid(&v, 0).await;
    let doc = fetch_twiml(&v, &call, &sid).await;
    assert_eq!(element_text(&doc, "Say"), STEP_TEXT_ADA, "{doc}");
    let hangup = doc
        .find("<Hangup")
        .unwrap_or_else(|| panic!("a Hangup: {doc}"));
    assert!(
        doc.find("<Say").unwrap() < hangup,
        "Say, then Hangup: {doc}"
    );
    assert!(!doc.contains("<Connect"), "{doc}");
    assert!(!doc.contains("<ConversationRelay"), "{doc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twiml_escapes_what_a_lead_put_in_its_name() {
    let v = start(false).await;
    let injection = "</Say><Dial>+19005550000</Dial><Say>";
    lead_named(&v, "L1", injection, "solar").await;
    let call = call_of(&v, "L1").await;
    let sid = dialed_sid(&v, 0).await;
    let doc = fetch_twiml(&v, &call, &sid).await;
    assert!(!doc.contains("<Dial"), "the name is not markup: {doc}");
    assert!(doc.contains("&lt;Dial&gt;"), "the name is escaped: {doc}");
    assert_eq!(doc.matches("<Say").count(), 1, "{doc}");
    assert!(doc.contains("<Hangup"), "{doc}");
}

// ---------------------------------------------------------------------------------------
// Inbound calls
// ---------------------------------------------------------------------------------------

/// What Twilio posts when someone calls the number.
async fn inbound(v: &Voice, call_sid: &str, from: &str) -> String {
    let r = twilio_post(
        v,
        &voice_path(v, "inbound"),
        &[
            ("AccountSid", SID),
            ("CallSid", call_sid),
            ("From", from),
            ("To", FROM),
            ("CallStatus", "ringing"),
            ("Direction", "inbound"),
        ],
    )
    .await;
    twiml(&r)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_call_from_a_lead_is_its_call_once_per_call_sid() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let doc = inbound(&v, "CAinbound0001", PHONE).await;
    let call = call_id_in(&doc, &v.org);
    assert_eq!(
        attr(&doc, "Connect", "action"),
        public(&call_path(&v, &call, "transfer")),
        "{doc}"
    );
    // Recorded as an outbound call is: from the start, reported to the call's
    // recording path, before the relay.
    assert_eq!(
        attr(&doc, "Recording", "recordingStatusCallback"),
        public(&call_path(&v, &call, "recording")),
        "{doc}"
    );
    assert_eq!(
        attr(&doc, "Recording", "recordingStatusCallbackEvent"),
        "completed"
    );
    assert!(
        doc.find("<Start").unwrap() < doc.find("<Recording").unwrap()
            && doc.find("<Recording").unwrap() < doc.find("<Connect").unwrap(),
        "Start/Recording, then Connect: {doc}"
    );
    assert_eq!(attr(&doc, "ConversationRelay", "dtmfDetection"), "true");
    let record = get_call(&v, &call).await;
    assert_eq!(record["direction"], json!("INBOUND"), "{record}");
    assert_eq!(record["leadId"], json!("L1"), "{record}");
    let events = events_of_type(&v.ts, &v.key, "L1", "CALL").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], json!(call));

    // Twilio repeats the request: the same call, no second one.
    let again = inbound(&v, "CAinbound0001", PHONE).await;
    assert_eq!(call_id_in(&again, &v.org), call, "{again}");
    let events = events_of_type(&v.ts, &v.key, "L1", "CALL").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(v.twilio.calls().is_empty(), "an inbound call dials nothing");
}

/// What Twilio posts for a call another number forwarded (`ForwardedFrom`).
async fn forwarded(v: &Voice, call_sid: &str, forwarded_from: &str) -> String {
    let r = twilio_post(
        v,
        &voice_path(v, "inbound"),
        &[
            ("AccountSid", SID),
            ("CallSid", call_sid),
            ("From", PHONE),
            ("To", FROM),
            ("ForwardedFrom", forwarded_from),
            ("CallStatus", "ringing"),
            ("Direction", "inbound"),
        ],
    )
    .await;
    twiml(&r)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_call_is_marked_is_forward_and_matched_by_its_caller() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let doc = forwarded(&v, "CAforward0001", "+15125550999").await;
    let record = get_call(&v, &call_id_in(&doc, &v.org)).await;
    assert_eq!(record["isForward"], json!(true), "{record}");
    assert_eq!(record["leadId"], json!("L1"), "matched by From: {record}");
    // Without the parameter (or empty), a call is not a forwarded one.
    let doc = forwarded(&v, "CAforward0002", "").await;
    let record = get_call(&v, &call_id_in(&doc, &v.org)).await;
    assert_eq!(record["isForward"], json!(false), "{record}");
    let doc = inbound(&v, "CAforward0003", PHONE).await;
    let record = get_call(&v, &call_id_in(&doc, &v.org)).await;
    assert_eq!(record["isForward"], json!(false), "{record}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_caller_gets_the_assistant_on_a_call_without_a_lead() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let doc = inbound(&v, "CAinbound0002", "+15559990000").await;
    let call = call_id_in(&doc, &v.org);
    assert_eq!(
        attr(&doc, "ConversationRelay", "welcomeGreeting"),
        "Thanks for calling Acme Solar. How can I help?",
        "the inbound default greeting (no `default` profile): {doc}"
    );
    let record = get_call(&v, &call).await;
    assert_eq!(record["direction"], json!("INBOUND"), "{record}");
    assert!(record.get("leadId").is_none(), "no leadId: {record}");
    assert!(events_of_type(&v.ts, &v.key, "L1", "CALL").await.is_empty());
}

// ---------------------------------------------------------------------------------------
// Voicemail
// ---------------------------------------------------------------------------------------

/// The TwiML a call gets to hang up.
const HANG_UP: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>"#;

/// Twilio's answering-machine verdict for `call` (AsyncAmd, on the status path).
async fn amd(v: &Voice, call: &str, sid: &str, answered_by: &str) {
    let params = [
        ("AccountSid", SID),
        ("CallSid", sid),
        ("AnsweredBy", answered_by),
        ("MachineDetectionDuration", "4200"),
    ];
    twilio_post(v, &call_path(v, call, "status"), &params).await;
}

/// A profile `name` whose calls answered by a machine do what `voicemail` says.
async fn voicemail_profile(v: &Voice, name: &str, voicemail: Value) {
    let mut profile = voice_profile(json!([]));
    profile["voicemail"] = voicemail;
    put_profile(&v.ts, &v.admin, name, &profile).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_gets_the_profiles_voicemail_once_after_the_beep() {
    let v = start(true).await;
    voicemail_profile(
        &v,
        "vm",
        json!({"text": "Hi {{firstName}}, Sam from {{business.name}} about your quote. Call us back at 512 555 0100."}),
    )
    .await;
    let saved = expect(&v.ts.get(&v.key, "/v1/profiles/vm").await, 200);
    assert_eq!(saved["voicemail"]["onMachine"], json!("leave"), "{saved}");
    lead(&v, "L1", "vm").await;
    let (call, sid, relay) = answered_call(&v, "L1").await;
    amd(&v, &call, &sid, "machine_end_beep").await;
    let record = wait_call(&v, &call, "hasVoicemail", |c| {
        c["hasVoicemail"] == json!(true)
    })
    .await;
    assert_eq!(record["hasVoicemail"], json!(true), "{record}");
    let updates = v.twilio.call_updates();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert!(
        updates[0].path.ends_with(&format!("/Calls/{sid}.json")),
        "{updates:?}"
    );
    let twiml = updates[0].field("Twiml").expect("Twiml").to_string();
    assert!(is_xml_document_text(&twiml), "{twiml}");
    assert_eq!(
        element_text(&twiml, "Say"),
        "Hi Ada, Sam from Acme Solar about your quote. Call us back at 512 555 0100."
    );
    assert!(twiml.contains("<Hangup/>"), "{twiml}");
    // Twilio repeats the callback: nothing twice.
    amd(&v, &call, &sid, "machine_end_beep").await;
    assert_eq!(v.twilio.call_updates().len(), 1);
    relay.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hang_up_leaves_nothing_and_a_person_or_a_fax_gets_no_voicemail() {
    let v = start(true).await;
    voicemail_profile(
        &v,
        "hangs",
        json!({"text": "Hi {{firstName}}", "onMachine": "hang_up"}),
    )
    .await;
    voicemail_profile(&v, "vm", json!({"text": "Hi {{firstName}}"})).await;
    lead(&v, "L1", "hangs").await;
    let (call, sid) = placed_call(&v, "L1").await;
    amd(&v, &call, &sid, "machine_end_silence").await;
    assert_eq!(get_call(&v, &call).await["hasVoicemail"], json!(false));
    let updates = v.twilio.call_updates();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].field("Twiml"), Some(HANG_UP));

    // A person: no update, no voicemail.
    v.ts.create_lead(
        &v.key,
        &json!({"id": "L2", "firstName": "Bo", "phone": "+15551230002", "customerProfile": "vm"}),
    )
    .await;
    let (call, sid) = placed_call(&v, "L2").await;
    amd(&v, &call, &sid, "human").await;
    assert_eq!(get_call(&v, &call).await["hasVoicemail"], json!(false));
    assert_eq!(
        v.twilio.call_updates().len(),
        1,
        "nothing sent for a person"
    );

    // A fax: hung up, never a voicemail.
    v.ts.create_lead(
        &v.key,
        &json!({"id": "L3", "firstName": "Cy", "phone": "+15551230003", "customerProfile": "vm"}),
    )
    .await;
    let (call, sid) = placed_call(&v, "L3").await;
    amd(&v, &call, &sid, "fax").await;
    let updates = v.twilio.call_updates();
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(updates[1].field("Twiml"), Some(HANG_UP));
    assert_eq!(get_call(&v, &call).await["hasVoicemail"], json!(false));
}

/// A machine whose greeting never ends (`machine_start`, no `machine_end_*`) is hung
/// up on 30 s later (`voice::MACHINE_END_WAIT`), with no voicemail; one whose end comes
/// in time gets its voicemail and no hang-up from the wait. Waits out the 30 s once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_greeting_that_never_ends_is_hung_up_on_after_thirty_seconds() {
    let v = start(true).await;
    voicemail_profile(&v, "vm", json!({"text": "Hi {{firstName}}"})).await;
    lead(&v, "L1", "vm").await;
    v.ts.create_lead(
        &v.key,
        &json!({"id": "L2", "firstName": "Bo", "phone": "+15551230002", "customerProfile": "vm"}),
    )
    .await;
    let (endless, endless_sid) = placed_call(&v, "L1").await;
    status(&v, &endless, &endless_sid, "in-progress", &[]).await;
    amd(&v, &endless, &endless_sid, "machine_start").await;
    let (ended, ended_sid) = placed_call(&v, "L2").await;
    status(&v, &ended, &ended_sid, "in-progress", &[]).await;
    amd(&v, &ended, &ended_sid, "machine_start").await;
    amd(&v, &ended, &ended_sid, "machine_end_beep").await;
    assert!(
        get_call(&v, &endless).await.get("hasVoicemail").is_none(),
        "no verdict before the wait"
    );
    // The end's voicemail goes at once; the endless greeting's hang-up after the wait.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let hung_up = loop {
        let updates = v.twilio.call_updates();
        if let Some(update) = updates
            .iter()
            .find(|u| u.path.ends_with(&format!("/Calls/{endless_sid}.json")))
        {
            break update.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the endless greeting was never hung up on: {updates:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(hung_up.field("Twiml"), Some(HANG_UP));
    assert_eq!(get_call(&v, &endless).await["hasVoicemail"], json!(false));
    let to_ended: Vec<_> = v
        .twilio
        .call_updates()
        .into_iter()
        .filter(|u| u.path.ends_with(&format!("/Calls/{ended_sid}.json")))
        .collect();
    assert_eq!(to_ended.len(), 1, "its voicemail only: {to_ended:?}");
    assert!(
        to_ended[0]
            .field("Twiml")
            .is_some_and(|t| t.contains("<Say>")),
        "{to_ended:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profiles_voicemail_is_checked_member_by_member() {
    let v = start(false).await;
    let mut profile = voice_profile(json!([]));
    for (voicemail, message) in [
        (
            json!({"onMachine": "leave"}),
            "Invalid format for field: voicemail.text",
        ),
        (
            json!({"text": "  "}),
            "Invalid format for field: voicemail.text",
        ),
        (
            json!({"text": "Hi", "onMachine": "maybe"}),
            "Invalid format for field: voicemail.onMachine",
        ),
        (
            json!({"text": "Hi", "beep": true}),
            "Unknown field: voicemail.beep",
        ),
        (json!("Hi"), "Invalid format for field: voicemail"),
        (
            json!({"text": "Hi {{nickname}}"}),
            "Unknown placeholder: {{nickname}}",
        ),
        (
            json!({"text": "x".repeat(2_001)}),
            "Field too long: voicemail.text (at most 2000)",
        ),
    ] {
        profile["voicemail"] = voicemail;
        let r = v.ts.put(&v.admin, "/v1/profiles/vm", &profile).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["message"], json!(message), "{}", r.text());
    }
    assert_eq!(
        v.ts.get(&v.key, "/v1/profiles/vm").await.status,
        404,
        "nothing stored"
    );
    profile["voicemail"] = Value::Null;
    let saved = put_profile(&v.ts, &v.admin, "vm", &profile).await;
    assert_eq!(saved["voicemail"], Value::Null);
}

// ---------------------------------------------------------------------------------------
// Call screeners
// ---------------------------------------------------------------------------------------

/// What Google's Call Screen says when it answers for the person called.
const GOOGLE_SCREENER: &str = "Hi, the person you're calling is using a screening service from Google, and will get a copy of this conversation. Go ahead and say your name, and why you're calling.";
/// The default reply to a screener, rendered for Ada.
const SCREENING_REPLY_ADA: &str =
    "Hi, this is Acme Solar calling for Ada, following up on their request.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screener_hears_who_calls_and_why_once_and_the_person_after_it_gets_the_assistant() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    v.model
        .push(Step::text("Hi Ada! It's about your solar quote."));
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    // The screener hears the reply without the model.
    turn(&mut relay, GOOGLE_SCREENER, SCREENING_REPLY_ADA).await;
    let record = wait_call(&v, &call, "hitCallScreening", |c| {
        c["hitCallScreening"] == json!(true)
    })
    .await;
    assert!(
        record.get("reachedHumanAfterScreening").is_none()
            || record["reachedHumanAfterScreening"].is_null(),
        "{record}"
    );
    // The screener again: nothing is said. Then the person: the assistant answers.
    relay.prompt("Thanks, please stay on the line.").await;
    turn(
        &mut relay,
        "Hello? This is Ada.",
        "Hi Ada! It's about your solar quote.",
    )
    .await;
    wait_call(&v, &call, "reachedHumanAfterScreening", |c| {
        c["reachedHumanAfterScreening"] == json!(true)
    })
    .await;
    let requests = v.model.wait_requests(1, WAIT).await;
    assert_eq!(requests.len(), 1, "the model answered the person only");
    let transcript = wait_transcript(&v, &call, 6).await;
    assert_turn(&transcript[1], "lead", GOOGLE_SCREENER);
    assert_turn(&transcript[2], "agent", SCREENING_REPLY_ADA);
    assert_turn(&transcript[3], "lead", "Thanks, please stay on the line.");
    assert_turn(&transcript[4], "lead", "Hello? This is Ada.");
    relay.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_profiles_screening_reply_is_spoken_and_a_hang_up_after_it_is_no_person() {
    let v = start(true).await;
    let mut profile = voice_profile(json!([]));
    profile["screeningReply"] =
        json!("This is Sam from {{business.name}} for {{firstName}}, about the solar quote.");
    put_profile(&v.ts, &v.admin, "screened", &profile).await;
    let saved = expect(&v.ts.get(&v.key, "/v1/profiles/screened").await, 200);
    assert_eq!(
        saved["screeningReply"],
        json!("This is Sam from {{business.name}} for {{firstName}}, about the solar quote.")
    );
    lead(&v, "L1", "screened").await;
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    turn(
        &mut relay,
        "Hi, if you record your name and reason for calling, I'll see if this person is available.",
        "This is Sam from Acme Solar for Ada, about the solar quote.",
    )
    .await;
    relay.close().await;
    let record = wait_call(&v, &call, "reachedHumanAfterScreening", |c| {
        c["reachedHumanAfterScreening"] == json!(false)
    })
    .await;
    assert_eq!(record["hitCallScreening"], json!(true), "{record}");
    assert!(
        v.model.requests().is_empty(),
        "the model never spoke to the screener"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silence_after_the_reply_to_a_screener_ends_the_call() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    turn(
        &mut relay,
        "Please state your name and the reason for your call.",
        SCREENING_REPLY_ADA,
    )
    .await;
    // 20 s of silence: the session ends with nobody reached.
    let end = relay
        .frame_of_type("end", Duration::from_secs(screening_silence() + 15))
        .await;
    assert!(str_of(&end["handoffData"]).contains("screening"), "{end}");
    wait_call(&v, &call, "reachedHumanAfterScreening", |c| {
        c["reachedHumanAfterScreening"] == json!(false)
    })
    .await;
    relay.close().await;
}

/// Seconds of silence after the reply to a screener that end the call.
fn screening_silence() -> u64 {
    engaged::domain::voice::screening::SILENCE_SECONDS
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_who_answers_is_no_screener_and_a_screening_reply_is_bounded() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    v.model.push(Step::text("Hi Ada, Sam from Acme Solar."));
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    turn(
        &mut relay,
        "Hello, who is this?",
        "Hi Ada, Sam from Acme Solar.",
    )
    .await;
    let record = get_call(&v, &call).await;
    assert!(
        record.get("hitCallScreening").is_none() || record["hitCallScreening"].is_null(),
        "{record}"
    );
    relay.close().await;
    // A reply out of bounds or with an unknown placeholder is refused, naming the field.
    let mut profile = voice_profile(json!([]));
    profile["screeningReply"] = json!("x".repeat(2_001));
    let r = v.ts.put(&v.admin, "/v1/profiles/long", &profile).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        json!("Field too long: screeningReply (at most 2000)")
    );
    profile["screeningReply"] = json!("Hi {{nickname}}");
    let r = v.ts.put(&v.admin, "/v1/profiles/long", &profile).await;
    assert_eq!(r.status, 400, "{}", r.text());
}

// ---------------------------------------------------------------------------------------
// The conversation
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_turn_conversation_is_answered_and_transcribed_in_order() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    v.model.push(Step::text("Sam from Acme Solar."));
    v.model.push(Step::text("A visit takes an hour."));
    v.model.push(Step::text("Friday at ten, then."));
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    turn(&mut relay, "Who is this?", "Sam from Acme Solar.").await;
    turn(&mut relay, "How long is a visit?", "A visit takes an hour.").await;
    turn(&mut relay, "Friday works for me.", "Friday at ten, then.").await;

    let transcript = wait_transcript(&v, &call, 7).await;
    assert_eq!(transcript.len(), 7, "{transcript:#?}");
    assert_turn(&transcript[0], "agent", GREETED_ADA);
    assert_turn(&transcript[1], "lead", "Who is this?");
    assert_turn(&transcript[2], "agent", "Sam from Acme Solar.");
    assert_turn(&transcript[3], "lead", "How long is a visit?");
    assert_turn(&transcript[4], "agent", "A visit takes an hour.");
    assert_turn(&transcript[5], "lead", "Friday works for me.");
    assert_turn(&transcript[6], "agent", "Friday at ten, then.");
    let times: Vec<_> = transcript.iter().map(|t| time_of(&t["at"])).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "in order: {transcript:#?}"
    );

    // The model saw the conversation so far, with the voice tools.
    let requests = v.model.wait_requests(3, WAIT).await;
    let third = requests[2].to_string();
    let order: Vec<usize> = [
        "Who is this?",
        "How long is a visit?",
        "Friday works for me.",
    ]
    .iter()
    .map(|p| third.find(p).unwrap_or_else(|| panic!("{p} in {third}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{third}");
    let tools: Vec<&str> = requests[2]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"transfer"), "{tools:?}");
    relay.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interruption_truncates_the_agent_turn_and_keypad_digits_are_turns() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    v.model.push(Step::text(
        "We install panels on most roofs. A visit takes an hour and is free.",
    ));
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    turn(
        &mut relay,
        "Tell me about it.",
        "We install panels on most roofs. A visit takes an hour and is free.",
    )
    .await;
    // As Twilio's published example sends it: the duration as a string.
    relay
        .send(
            json!({"type": "interrupt", "utteranceUntilInterrupt": "We install panels",
            "durationUntilInterruptMs": "900"}),
        )
        .await;
    let transcript = wait_call(&v, &call, "the agent turn is interrupted", |c| {
        c["transcript"]
            .as_array()
            .is_some_and(|t| t.iter().any(|turn| turn["interrupted"] == json!(true)))
    })
    .await["transcript"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(transcript.len(), 3, "{transcript:#?}");
    assert_turn(&transcript[1], "lead", "Tell me about it.");
    assert_turn(&transcript[2], "agent", "We install panels");
    assert_eq!(transcript[2]["interrupted"], json!(true));
    assert!(
        transcript[0].get("interrupted").is_none() || transcript[0]["interrupted"] == json!(false),
        "{transcript:#?}"
    );

    relay.dtmf("5").await;
    let transcript = wait_call(&v, &call, "a keypad turn", |c| {
        c["transcript"]
            .as_array()
            .is_some_and(|t| t.iter().any(|turn| turn["dtmf"] == json!("5")))
    })
    .await["transcript"]
        .as_array()
        .unwrap()
        .clone();
    let digit = transcript
        .iter()
        .position(|t| t["dtmf"] == json!("5"))
        .unwrap();
    assert!(digit > 2, "after the interrupted turn: {transcript:#?}");
    assert_turn(&transcript[digit], "lead", "");
    relay.close().await;
}

// ---------------------------------------------------------------------------------------
// The call opt-out
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_greeting_says_the_organizations_digit_and_may_be_turned_off() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let set = set_org(&v.ts, &v.admin, &json!({"voiceOptOutDigit": "7"})).await;
    assert_eq!(set["voiceOptOutDigit"], json!("7"));
    assert_eq!(set["voiceOptOutSentence"], json!(true));
    let (call, sid) = placed_call(&v, "L1").await;
    let doc = fetch_twiml(&v, &call, &sid).await;
    assert_eq!(
        attr(&doc, "ConversationRelay", "welcomeGreeting"),
        format!("{GREETING_ADA} To stop these calls, press 7 or say stop."),
        "{doc}"
    );
    let set = set_org(&v.ts, &v.admin, &json!({"voiceOptOutSentence": false})).await;
    assert_eq!(set["voiceOptOutSentence"], json!(false));
    let (call, sid) = placed_call(&v, "L1").await;
    let doc = fetch_twiml(&v, &call, &sid).await;
    assert_eq!(
        attr(&doc, "ConversationRelay", "welcomeGreeting"),
        GREETING_ADA,
        "{doc}"
    );
    assert!(!doc.contains(OPT_OUT_SENTENCE), "{doc}");
    assert_eq!(
        attr(&doc, "ConversationRelay", "dtmfDetection"),
        "true",
        "the digit still works: {doc}"
    );
    let back = set_org(&v.ts, &v.admin, &json!({"voiceOptOutDigit": null})).await;
    assert_eq!(back["voiceOptOutDigit"], json!("9"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_voice_opt_out_settings_refuse_what_is_not_a_digit_or_a_boolean() {
    let v = start(false).await;
    for bad in [
        json!("10"),
        json!("*"),
        json!(""),
        json!(9),
        json!(true),
        json!("nine"),
    ] {
        let r =
            v.ts.patch(&v.admin, "/v1/org", &json!({"voiceOptOutDigit": bad}))
                .await;
        assert_error(&r, 400, "Invalid format for field: voiceOptOutDigit");
    }
    let r =
        v.ts.patch(&v.admin, "/v1/org", &json!({"voiceOptOutSentence": "no"}))
            .await;
    assert_error(&r, 400, "Invalid format for field: voiceOptOutSentence");
    let r =
        v.ts.patch(
            &v.admin,
            "/v1/org",
            &json!({"voiceOptOutSentence": false, "voiceOptOutDigit": "#"}),
        )
        .await;
    assert_error(&r, 400, "Invalid format for field: voiceOptOutDigit");
    let org = expect(&v.ts.get(&v.admin, "/v1/org").await, 200);
    assert_eq!(
        org["voiceOptOutDigit"],
        json!("9"),
        "nothing changed: {org}"
    );
    assert_eq!(
        org["voiceOptOutSentence"],
        json!(true),
        "nothing changed: {org}"
    );
}

/// Asserts `lead` was opted out of voice on `call` by the lead's own `proof`: the
/// goodbye then `end` on the relay, the subscription, the ledger entry of source `call`,
/// both webhooks, and the transcript (the lead's turn, then the goodbye). Answers the
/// `end` frame's `handoffData`.
async fn assert_opted_out_on_call(
    v: &Voice,
    hook: &str,
    relay: &mut RelayClient,
    call: &str,
    proof: &str,
) -> String {
    let said = relay.frame_of_type("text", FRAME_WAIT).await;
    assert_eq!(said["token"], json!(GOODBYE), "{said}");
    let end = relay.frame_of_type("end", FRAME_WAIT).await;
    let data: Value = serde_json::from_str(str_of(&end["handoffData"])).expect("JSON handoffData");
    assert_eq!(data["reason"], json!("opt_out"), "{end}");
    let transcript = wait_call(v, call, "the goodbye in the transcript", |c| {
        c["transcript"]
            .as_array()
            .is_some_and(|t| t.iter().any(|turn| turn["text"] == json!(GOODBYE)))
    })
    .await["transcript"]
        .as_array()
        .unwrap()
        .clone();
    let goodbye = transcript
        .iter()
        .position(|t| t["text"] == json!(GOODBYE))
        .unwrap();
    assert_eq!(
        goodbye,
        transcript.len() - 1,
        "the goodbye is last: {transcript:#?}"
    );
    assert_eq!(transcript[goodbye]["role"], json!("agent"));
    assert_eq!(
        transcript[goodbye - 1]["role"],
        json!("lead"),
        "{transcript:#?}"
    );

    let lead = poll("the lead opted out of voice", WAIT, || async move {
        let l = expect(&v.ts.get(&v.key, "/v1/leads/L1").await, 200);
        if l["subscriptions"]["voice"] == json!("unsubscribed") {
            Ok(l)
        } else {
            Err(l.to_string())
        }
    })
    .await;
    assert_eq!(
        lead["subscriptions"]["email"],
        json!("subscribed"),
        "{lead}"
    );
    let ledger = expect(&v.ts.get(&v.key, "/v1/leads/L1/consent").await, 200);
    assert_eq!(ledger["current"]["voice"], json!("revoked"), "{ledger}");
    let entries = ledger["entries"].as_array().cloned().unwrap_or_default();
    let voice: Vec<&Value> = entries
        .iter()
        .filter(|e| e["channel"] == json!("voice"))
        .collect();
    assert_eq!(voice.len(), 1, "{ledger}");
    assert_eq!(voice[0]["status"], json!("revoked"));
    assert_eq!(voice[0]["source"], json!("call"));
    assert_eq!(voice[0]["proof"]["text"], json!(proof), "{ledger}");

    let opted = deliveries_of(v, hook, "lead.opted_out").await;
    assert_eq!(opted.len(), 1, "{opted:#?}");
    assert_eq!(opted[0]["data"]["channel"], json!("voice"), "{opted:#?}");
    assert_eq!(opted[0]["data"]["leadId"], json!("L1"), "{opted:#?}");
    let changed = deliveries_of(v, hook, "lead.consent_changed").await;
    assert_eq!(changed.len(), 1, "{changed:#?}");
    assert_eq!(changed[0]["data"]["channel"], json!("voice"));
    assert_eq!(changed[0]["data"]["status"], json!("revoked"));
    assert_eq!(changed[0]["data"]["source"], json!("call"));
    str_of(&end["handoffData"]).to_string()
}

async fn opt_out_setup() -> (Voice, String) {
    let v = start(true).await;
    let hooks = WebhookReceiver::ok().await;
    let hook = hooks.register(&v.ts, &v.admin).await;
    v.ts.create_lead(
        &v.key,
        &json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "email": "ada@example.com",
                "customerProfile": "quiet"}),
    )
    .await;
    (v, hook)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keypad_9_on_a_relay_call_opts_the_lead_out_of_voice_and_ends_the_call() {
    let (v, hook) = opt_out_setup().await;
    let (call, sid, mut relay) = answered_call(&v, "L1").await;
    relay.dtmf("9").await;
    let handoff = assert_opted_out_on_call(&v, &hook, &mut relay, &call, "pressed 9").await;
    let transcript = get_call(&v, &call).await["transcript"].clone();
    assert!(
        transcript
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["dtmf"] == json!("9")),
        "the digit is a turn: {transcript:#}"
    );
    assert!(v.model.requests().is_empty(), "the model was not asked");
    // Twilio asks the action URL next: the call hangs up.
    let doc = session_ended(&v, &call, &sid, &handoff).await;
    assert!(doc.contains("<Hangup"), "{doc}");
    // A second press after the end changes nothing more.
    relay.dtmf("9").await;
    relay.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoken_definite_opt_out_ends_the_call_and_opts_out_of_voice() {
    let (v, hook) = opt_out_setup().await;
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    relay.prompt("Stop calling me please").await;
    assert_opted_out_on_call(&v, &hook, &mut relay, &call, "Stop calling me please").await;
    assert!(v.model.requests().is_empty(), "the model was not asked");
    relay.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_organizations_digit_on_an_inbound_call_opts_out_of_voice_and_sms_when_coupled() {
    let (v, _hook) = opt_out_setup().await;
    set_org(
        &v.ts,
        &v.admin,
        &json!({"voiceOptOutDigit": "3", "smsVoiceOptOutCoupled": true}),
    )
    .await;
    let doc = inbound(&v, "CAinbound0003", PHONE).await;
    let call = call_id_in(&doc, &v.org);
    assert!(
        !attr(&doc, "ConversationRelay", "welcomeGreeting").contains("To stop these calls"),
        "the lead called: no opt-out sentence on an inbound call: {doc}"
    );
    let mut relay = open_relay(&v, &call).await;
    relay.setup("CAinbound0003").await;
    relay.dtmf("9").await;
    relay.dtmf("3").await;
    let said = relay.frame_of_type("text", FRAME_WAIT).await;
    assert_eq!(said["token"], json!(GOODBYE), "{said}");
    relay.frame_of_type("end", FRAME_WAIT).await;
    let lead = poll("the lead opted out", WAIT, || async {
        let l = expect(&v.ts.get(&v.key, "/v1/leads/L1").await, 200);
        if l["subscriptions"]["voice"] == json!("unsubscribed") {
            Ok(l)
        } else {
            Err(l.to_string())
        }
    })
    .await;
    assert_eq!(
        lead["subscriptions"],
        json!({"sms": "unsubscribed", "voice": "unsubscribed", "email": "subscribed"}),
        "{lead}"
    );
    let ledger = expect(&v.ts.get(&v.key, "/v1/leads/L1/consent").await, 200);
    let entries = ledger["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(entries.len(), 2, "{ledger}");
    assert!(
        entries
            .iter()
            .all(|e| e["source"] == json!("call") && e["proof"]["text"] == json!("pressed 3")),
        "{ledger}"
    );
    relay.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_digit_or_a_possible_opt_out_on_a_call_changes_nothing() {
    let (v, _hook) = opt_out_setup().await;
    v.model
        .push(Step::text("Sure, what would you like to know?"));
    let (call, _, mut relay) = answered_call(&v, "L1").await;
    relay.dtmf("5").await;
    turn(
        &mut relay,
        "Can we end this quickly, I have a question",
        "Sure, what would you like to know?",
    )
    .await;
    let transcript = wait_transcript(&v, &call, 4).await;
    assert!(
        transcript.iter().any(|t| t["dtmf"] == json!("5")),
        "{transcript:#?}"
    );
    assert!(
        !transcript.iter().any(|t| t["text"] == json!(GOODBYE)),
        "{transcript:#?}"
    );
    let lead = expect(&v.ts.get(&v.key, "/v1/leads/L1").await, 200);
    assert_eq!(
        lead["subscriptions"]["voice"],
        json!("subscribed"),
        "{lead}"
    );
    let ledger = expect(&v.ts.get(&v.key, "/v1/leads/L1/consent").await, 200);
    assert_eq!(ledger["entries"], json!([]), "{ledger}");
    relay.close().await;
}

// ---------------------------------------------------------------------------------------
// Transfers
// ---------------------------------------------------------------------------------------

/// An answered call whose assistant transfers at the lead's first words; returns the
/// call's id and `CallSid` once the relay said `end` with the reason `transfer`, and the
/// `HandoffData` it carried.
async fn transferring_call(v: &Voice) -> (String, String, String) {
    v.model
        .push(Step::tool("call_transfer", "transfer", json!({})));
    v.model.set_default(Step::text("Transferring you now."));
    let (call, sid, mut relay) = answered_call(v, "L1").await;
    relay.prompt("Can I talk to a person?").await;
    let end = relay.frame_of_type("end", FRAME_WAIT).await;
    let handoff = str_of(&end["handoffData"]).to_string();
    let parsed: Value = serde_json::from_str(&handoff)
        .unwrap_or_else(|e| panic!("handoffData is JSON ({e}): {handoff}"));
    assert_eq!(parsed["reason"], json!("transfer"), "{parsed}");
    relay.close().await;
    (call, sid, handoff)
}

/// What Twilio posts to the Connect action once the relay session ended.
async fn session_ended(v: &Voice, call: &str, sid: &str, handoff: &str) -> String {
    let r = twilio_post(
        v,
        &call_path(v, call, "transfer"),
        &[
            ("AccountSid", SID),
            ("CallSid", sid),
            ("CallStatus", "in-progress"),
            ("From", FROM),
            ("To", PHONE),
            ("SessionId", "VXsession"),
            ("SessionStatus", "ended"),
            ("HandoffData", handoff),
        ],
    )
    .await;
    twiml(&r)
}

/// What Twilio posts to a Dial's action when the dialled leg ends.
async fn dial_ended(
    v: &Voice,
    call: &str,
    sid: &str,
    attempt: u32,
    dial_status: &str,
    duration: Option<&str>,
) -> String {
    let mut params = vec![
        ("AccountSid", SID),
        ("CallSid", sid),
        ("CallStatus", "in-progress"),
        ("DialCallSid", "CAdialed"),
        ("DialCallStatus", dial_status),
    ];
    if let Some(d) = duration {
        params.push(("DialCallDuration", d));
    }
    let path = format!("{}?attempt={attempt}", call_path(v, call, "transfer"));
    twiml(&twilio_post(v, &path, &params).await)
}

/// Asserts `doc` dials `number` with the action of `attempt`.
#[track_caller]
fn assert_dials(v: &Voice, doc: &str, call: &str, attempt: u32, number: &str) {
    let action = format!(
        "{}?attempt={attempt}",
        public(&call_path(v, call, "transfer"))
    );
    assert_eq!(attr(doc, "Dial", "action"), action, "{doc}");
    assert_eq!(attr(doc, "Dial", "timeout"), "20", "{doc}");
    assert_eq!(element_text(doc, "Number"), number, "{doc}");
}

async fn transfer_setup() -> (Voice, WebhookReceiver, String) {
    let v = start(true).await;
    let hooks = WebhookReceiver::ok().await;
    let hook = hooks.register(&v.ts, &v.admin).await;
    lead(&v, "L1", "quiet").await;
    (v, hooks, hook)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_dials_the_transfer_number_and_connects() {
    let (v, hooks, hook) = transfer_setup().await;
    let (call, sid, handoff) = transferring_call(&v).await;
    let doc = session_ended(&v, &call, &sid, &handoff).await;
    assert_dials(&v, &doc, &call, 1, TRANSFER);
    let pending = get_call(&v, &call).await;
    assert_eq!(
        pending["transferAnswerStatus"],
        json!("pending"),
        "{pending}"
    );
    assert_eq!(pending["transferNumber"], json!(TRANSFER), "{pending}");
    time_of(&pending["transferInitiatedAt"]);
    assert!(pending.get("transferStatus").is_none(), "{pending}");

    dial_ended(&v, &call, &sid, 1, "completed", Some("42")).await;
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("connected"), "{record}");
    assert_eq!(
        record["transferAnswerStatus"],
        json!("answered"),
        "{record}"
    );
    assert_eq!(record["isTransfer"], json!(true), "{record}");
    assert_eq!(record["midCallTransfer"], json!(true), "{record}");
    assert_eq!(record["midCallTransferDuration"], json!(42), "{record}");
    assert_eq!(record["agentConnected"], json!(true), "{record}");
    assert!(record.get("transferFailureCode").is_none(), "{record}");
    assert!(record.get("endedBy").is_none(), "a cold transfer: {record}");
    assert_eq!(
        get_lead(&v.ts, &v.key, "L1").await["hasTransferCall"],
        json!(true)
    );
    let data = hooks.wait_event("call.transfer.connected").await;
    assert_eq!(data["callId"], json!(call), "{data}");
    assert_eq!(
        deliveries_of(&v, &hook, "call.transfer.connected")
            .await
            .len(),
        1
    );
    assert!(deliveries_of(&v, &hook, "call.transfer.failed")
        .await
        .is_empty());
    let tool_calls = events_of_type(&v.ts, &v.key, "L1", "TOOL_CALL").await;
    assert!(
        tool_calls
            .iter()
            .any(|e| e["data"]["name"] == json!("transfer")
                && e["data"]["channel"] == json!("voice")),
        "{tool_calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_transfer_dials_the_fallback_which_connects() {
    let (v, hooks, hook) = transfer_setup().await;
    let (call, sid, handoff) = transferring_call(&v).await;
    let doc = session_ended(&v, &call, &sid, &handoff).await;
    assert_dials(&v, &doc, &call, 1, TRANSFER);
    let doc = dial_ended(&v, &call, &sid, 1, "no-answer", None).await;
    assert_dials(&v, &doc, &call, 2, FALLBACK);
    let trying = get_call(&v, &call).await;
    assert_eq!(
        trying["transferAnswerStatus"],
        json!("no_answer"),
        "{trying}"
    );
    assert_eq!(trying["transferFallbackAttempted"], json!(true), "{trying}");
    assert_eq!(
        trying["fallbackTransferNumber"],
        json!(FALLBACK),
        "{trying}"
    );
    assert!(trying.get("transferStatus").is_none(), "{trying}");

    dial_ended(&v, &call, &sid, 2, "completed", Some("30")).await;
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("connected"), "{record}");
    assert_eq!(
        record["transferFallbackAnswerStatus"],
        json!("answered"),
        "{record}"
    );
    assert_eq!(record["midCallTransferDuration"], json!(30), "{record}");
    hooks.wait_event("call.transfer.connected").await;
    assert_eq!(
        deliveries_of(&v, &hook, "call.transfer.connected")
            .await
            .len(),
        1
    );
    assert!(deliveries_of(&v, &hook, "call.transfer.failed")
        .await
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_nobody_answers_fails_once_with_an_apology() {
    let (v, hooks, hook) = transfer_setup().await;
    let (call, sid, handoff) = transferring_call(&v).await;
    session_ended(&v, &call, &sid, &handoff).await;
    dial_ended(&v, &call, &sid, 1, "no-answer", None).await;
    let doc = dial_ended(&v, &call, &sid, 2, "no-answer", None).await;
    assert!(!doc.contains("<Dial"), "nothing more to dial: {doc}");
    assert!(doc.contains("<Say"), "an apology: {doc}");
    assert!(doc.contains("<Hangup"), "the call ends: {doc}");
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("failed"), "{record}");
    assert_eq!(
        record["transferFailureCode"],
        json!("agent_not_connected"),
        "{record}"
    );
    assert_eq!(
        record["transferAnswerStatus"],
        json!("no_answer"),
        "{record}"
    );
    assert_eq!(
        record["transferFallbackAnswerStatus"],
        json!("no_answer"),
        "{record}"
    );
    assert!(record.get("midCallTransferDuration").is_none(), "{record}");
    let data = hooks.wait_event("call.transfer.failed").await;
    assert_eq!(data["callId"], json!(call), "{data}");
    // A repeated callback changes nothing.
    dial_ended(&v, &call, &sid, 2, "no-answer", None).await;
    assert_eq!(
        deliveries_of(&v, &hook, "call.transfer.failed").await.len(),
        1
    );
    assert!(deliveries_of(&v, &hook, "call.transfer.connected")
        .await
        .is_empty());
    assert_eq!(
        get_lead(&v.ts, &v.key, "L1").await["hasTransferCall"],
        json!(true)
    );
}

// ---------------------------------------------------------------------------------------
// Status callbacks
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_callbacks_move_the_call_forward_only_and_complete_it_once() {
    let v = start(false).await;
    let hooks = WebhookReceiver::ok().await;
    let hook = hooks.register(&v.ts, &v.admin).await;
    lead(&v, "L1", "quiet").await;
    let (call, sid) = placed_call(&v, "L1").await;

    status(&v, &call, &sid, "ringing", &[]).await;
    assert_eq!(get_call(&v, &call).await["callStatus"], json!("RINGING"));
    status(&v, &call, &sid, "in-progress", &[]).await;
    assert_eq!(
        get_call(&v, &call).await["callStatus"],
        json!("IN_PROGRESS")
    );
    // The answering machine's verdict (AsyncAmd) on the status path.
    let amd = [
        ("AccountSid", SID),
        ("CallSid", sid.as_str()),
        ("AnsweredBy", "machine_end_beep"),
        ("MachineDetectionDuration", "4200"),
    ];
    twilio_post(&v, &call_path(&v, &call, "status"), &amd).await;
    // The profile leaves no voicemail: the machine gets a hang-up, no message.
    assert_eq!(get_call(&v, &call).await["hasVoicemail"], json!(false));
    let updates = v.twilio.call_updates();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert!(
        updates[0].path.ends_with(&format!("/Calls/{sid}.json")),
        "{updates:?}"
    );
    assert_eq!(updates[0].field("Twiml"), Some(HANG_UP));

    status(&v, &call, &sid, "completed", &[("CallDuration", "73")]).await;
    let done = wait_call(&v, &call, "aiCallWithoutHumanResponse is set", |c| {
        c["aiCallWithoutHumanResponse"].is_boolean()
    })
    .await;
    assert_eq!(done["callStatus"], json!("COMPLETE"), "{done}");
    assert_eq!(done["durationSeconds"], json!(73), "{done}");
    assert_eq!(done["aiCallWithoutHumanResponse"], json!(true), "{done}");
    // Repeated and late callbacks change nothing.
    status(&v, &call, &sid, "completed", &[("CallDuration", "73")]).await;
    status(&v, &call, &sid, "ringing", &[]).await;
    let after = get_call(&v, &call).await;
    assert_eq!(after["callStatus"], json!("COMPLETE"), "{after}");
    assert_eq!(after["durationSeconds"], json!(73), "{after}");

    let data = hooks.wait_event("call.completed").await;
    assert_eq!(data["callId"], json!(call), "{data}");
    assert_eq!(deliveries_of(&v, &hook, "call.completed").await.len(), 1);
    let lead = get_lead(&v.ts, &v.key, "L1").await;
    assert_eq!(lead["hasAiCall"], json!(true), "{lead}");
    assert_eq!(lead["hasTransferCall"], json!(false), "{lead}");
    let event = &events_of_type(&v.ts, &v.key, "L1", "CALL").await[0];
    assert_eq!(event["data"]["callStatus"], json!("COMPLETE"), "{event}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_and_no_answer_are_no_answer_and_final() {
    let v = start(false).await;
    lead(&v, "L1", "quiet").await;
    let (call, sid) = placed_call(&v, "L1").await;
    status(&v, &call, &sid, "busy", &[("CallDuration", "0")]).await;
    assert_eq!(get_call(&v, &call).await["callStatus"], json!("NO_ANSWER"));
    status(&v, &call, &sid, "in-progress", &[]).await;
    assert_eq!(get_call(&v, &call).await["callStatus"], json!("NO_ANSWER"));
    let (other, other_sid) = placed_call(&v, "L1").await;
    status(&v, &other, &other_sid, "canceled", &[]).await;
    assert_eq!(get_call(&v, &other).await["callStatus"], json!("FAILED"));
}

// ---------------------------------------------------------------------------------------
// Recordings
// ---------------------------------------------------------------------------------------

/// What Twilio posts to the recording callback.
async fn recording_ready(v: &Voice, call: &str, sid: &str, recording_url: &str, rec: &str) {
    twilio_post(
        v,
        &call_path(v, call, "recording"),
        &[
            ("AccountSid", SID),
            ("CallSid", sid),
            ("RecordingSid", rec),
            ("RecordingUrl", recording_url),
            ("RecordingStatus", "completed"),
            ("RecordingDuration", "73"),
            ("RecordingChannels", "1"),
            ("RecordingSource", "OutboundAPI"),
        ],
    )
    .await;
}

fn recording_url(base: &str, rec: &str) -> String {
    format!("{base}/2010-04-01/Accounts/{SID}/Recordings/{rec}")
}

/// Waits until `GET /v1/calls/{call}/recording` gives a link; returns it.
async fn wait_recording_link(v: &Voice, call: &str) -> Value {
    let path = format!("/v1/calls/{call}/recording");
    let path = &path;
    poll("the recording is available", WAIT, || async move {
        let r = v.ts.get(&v.key, path).await;
        if r.status == 200 {
            Ok(r.json())
        } else {
            Err(format!("{} {}", r.status, text(&r)))
        }
    })
    .await
}

/// Downloads a recording link (no key; the link's host is `public_url`).
async fn download(v: &Voice, link: &Value) -> Vec<u8> {
    let url = str_of(&link["url"]);
    let path = url
        .strip_prefix(PUBLIC_URL)
        .unwrap_or_else(|| panic!("a link under public_url: {url}"));
    let r =
        v.ts.request(hyper::Method::GET, path, None, None, Vec::new())
            .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    r.body.to_vec()
}

fn audio(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_recording_is_fetched_with_the_credentials_and_served() {
    let v = start(false).await;
    lead(&v, "L1", "quiet").await;
    let (call, sid) = placed_call(&v, "L1").await;
    let bytes = audio(70_000);
    v.twilio.serve_recording("RE1", bytes.clone());
    let missing =
        v.ts.get(&v.key, &format!("/v1/calls/{call}/recording"))
            .await;
    assert_eq!(missing.status, 404, "{}", text(&missing));
    recording_ready(
        &v,
        &call,
        &sid,
        &recording_url(&v.twilio.base_url, "RE1"),
        "RE1",
    )
    .await;
    let link = wait_recording_link(&v, &call).await;
    assert_eq!(link["sizeBytes"], json!(bytes.len()), "{link}");
    assert_eq!(link["contentType"], json!("audio/mpeg"), "{link}");
    assert_eq!(download(&v, &link).await, bytes);
    let requests = v.twilio.recording_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0].path,
        format!("/2010-04-01/Accounts/{SID}/Recordings/RE1.mp3")
    );
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{SID}:{TOKEN}"));
    assert_eq!(requests[0].authorization, format!("Basic {basic}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_download_that_fails_is_retried() {
    let v = start(false).await;
    lead(&v, "L1", "quiet").await;
    let (call, sid) = placed_call(&v, "L1").await;
    let bytes = audio(5_000);
    v.twilio.serve_recording("RE1", bytes.clone());
    v.twilio.fail_recordings(1);
    recording_ready(
        &v,
        &call,
        &sid,
        &recording_url(&v.twilio.base_url, "RE1"),
        "RE1",
    )
    .await;
    let link = wait_recording_link(&v, &call).await;
    assert_eq!(download(&v, &link).await, bytes);
    assert_eq!(v.twilio.recording_count(), 2, "one 500, then the retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_url_on_another_host_is_never_fetched() {
    let v = start(false).await;
    let elsewhere = FakeTwilio::start().await;
    elsewhere.expect_credentials(SID, TOKEN);
    elsewhere.serve_recording("RE9", audio(100));
    lead(&v, "L1", "quiet").await;
    let (call, sid) = placed_call(&v, "L1").await;
    let foreign = recording_url(&elsewhere.base_url, "RE9");
    let r = post_signed(
        &v,
        &call_path(&v, &call, "recording"),
        &[
            ("AccountSid", SID),
            ("CallSid", sid.as_str()),
            ("RecordingSid", "RE9"),
            ("RecordingUrl", foreign.as_str()),
            ("RecordingStatus", "completed"),
        ],
        TOKEN,
    )
    .await;
    assert!(r.status < 500, "{} {}", r.status, text(&r));
    // Then the provider's own recording: once it is in, the foreign one was long decided.
    let bytes = audio(300);
    v.twilio.serve_recording("RE1", bytes.clone());
    recording_ready(
        &v,
        &call,
        &sid,
        &recording_url(&v.twilio.base_url, "RE1"),
        "RE1",
    )
    .await;
    let link = wait_recording_link(&v, &call).await;
    assert_eq!(download(&v, &link).await, bytes);
    assert_eq!(
        elsewhere.recording_count(),
        0,
        "another host is never asked"
    );
}

// ---------------------------------------------------------------------------------------
// Summary and disposition
// ---------------------------------------------------------------------------------------

/// An answered call with a two-turn conversation, then `completed`; returns the call's
/// id. The model's first two answers are the conversation's; queue the classification
/// after calling this only if it may come late (it is asked once the call completes).
async fn two_turn_call(v: &Voice) -> String {
    let (call, sid, mut relay) = answered_call(v, "L1").await;
    turn(
        &mut relay,
        "Hi, I want a quote.",
        "Happy to help. When suits you?",
    )
    .await;
    turn(&mut relay, "Friday morning.", "Booked for Friday at ten.").await;
    wait_transcript(v, &call, 5).await;
    relay.close().await;
    status(v, &call, &sid, "completed", &[("CallDuration", "95")]).await;
    call
}

fn conversation_steps(model: &FakeModel) {
    model.push(Step::text("Happy to help. When suits you?"));
    model.push(Step::text("Booked for Friday at ten."));
}

async fn dispositioned(v: &Voice, call: &str) -> Value {
    wait_call(v, call, "the call is dispositioned", |c| {
        c["dispositionId"].is_string()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_conversation_gets_a_summary_and_a_disposition_once() {
    let v = start(true).await;
    let hooks = WebhookReceiver::ok().await;
    let hook = hooks.register(&v.ts, &v.admin).await;
    lead(&v, "L1", "quiet").await;
    conversation_steps(&v.model);
    // The classification answers late (within the assistant's 1 s timeout), so the
    // call is seen without it first.
    v.model.push(
        Step::text(json!({"summary": SUMMARY, "dispositionId": "booked"}).to_string())
            .delayed(Duration::from_millis(600)),
    );
    let call = two_turn_call(&v).await;
    v.model.wait_requests(3, WAIT).await;
    let before = get_call(&v, &call).await;
    assert!(before.get("summary").is_none(), "no summary yet: {before}");
    assert!(before.get("dispositionId").is_none(), "{before}");

    let record = dispositioned(&v, &call).await;
    assert_eq!(record["summary"], json!(SUMMARY), "{record}");
    assert_eq!(record["dispositionId"], json!("booked"), "{record}");
    assert_eq!(
        record["dispositionName"],
        json!("Appointment booked"),
        "{record}"
    );
    time_of(&record["dispositionClassifiedAt"]);
    assert_eq!(
        record["aiCallWithoutHumanResponse"],
        json!(false),
        "{record}"
    );

    let requests = v.model.requests();
    assert_eq!(requests.len(), 3, "two turns and one classification");
    let ask = &requests[2];
    assert_eq!(
        ask["response_format"]["type"],
        json!("json_schema"),
        "{ask}"
    );
    let asked = ask.to_string();
    assert!(
        asked.contains("booked") && asked.contains("not-interested"),
        "{asked}"
    );
    assert!(
        asked.contains("Friday morning."),
        "the transcript is given: {asked}"
    );

    let data = hooks.wait_event("call.dispositioned").await;
    assert_eq!(data["callId"], json!(call), "{data}");
    assert_eq!(data["leadId"], json!("L1"), "{data}");
    assert_eq!(data["phone"], json!(PHONE), "{data}");
    assert_eq!(data["profile"], json!("quiet"), "{data}");
    assert_eq!(data["direction"], json!("OUTBOUND"), "{data}");
    assert_eq!(data["durationSeconds"], json!(95), "{data}");
    assert_eq!(data["summary"], json!(SUMMARY), "{data}");
    assert_eq!(data["dispositionId"], json!("booked"), "{data}");
    assert_eq!(
        data["dispositionName"],
        json!("Appointment booked"),
        "{data}"
    );
    assert_eq!(
        data["dispositionClassifiedAt"],
        record["dispositionClassifiedAt"]
    );
    assert_eq!(
        deliveries_of(&v, &hook, "call.dispositioned").await.len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_disposition_is_asked_once_more_then_left_with_last_error() {
    let v = start(true).await;
    let hooks = WebhookReceiver::ok().await;
    let hook = hooks.register(&v.ts, &v.admin).await;
    lead(&v, "L1", "quiet").await;
    conversation_steps(&v.model);
    let unknown = json!({"summary": SUMMARY, "dispositionId": "made-up-outcome"}).to_string();
    v.model.push(Step::text(unknown.clone()));
    v.model.push(Step::text(unknown));
    let call = two_turn_call(&v).await;
    let view = wait_engagement(&v.ts, &v.key, "L1", "lastError is set", |e| {
        e["lastError"].as_str().is_some_and(|s| !s.is_empty())
    })
    .await;
    let error = str_of(&view["lastError"]);
    assert!(
        error.contains("made-up-outcome") || error.to_lowercase().contains("disposition"),
        "lastError says why: {error}"
    );
    assert_eq!(v.model.count(), 4, "two turns, then asked twice");
    let record = wait_call(&v, &call, "the summary is kept", |c| {
        c["summary"].is_string()
    })
    .await;
    assert_eq!(record["summary"], json!(SUMMARY), "{record}");
    assert!(record.get("dispositionId").is_none(), "{record}");
    assert!(record.get("dispositionName").is_none(), "{record}");
    assert!(deliveries_of(&v, &hook, "call.dispositioned")
        .await
        .is_empty());
    assert!(hooks
        .envelopes()
        .iter()
        .all(|e| e["event"] != json!("call.dispositioned")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_lead_never_spoke_on_is_not_classified() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let (call, sid, relay) = answered_call(&v, "L1").await;
    relay.close().await;
    status(&v, &call, &sid, "completed", &[("CallDuration", "12")]).await;
    let record = wait_call(&v, &call, "aiCallWithoutHumanResponse is set", |c| {
        c["aiCallWithoutHumanResponse"].is_boolean()
    })
    .await;
    assert_eq!(record["callStatus"], json!("COMPLETE"), "{record}");
    assert_eq!(
        record["aiCallWithoutHumanResponse"],
        json!(true),
        "{record}"
    );
    // A second call that is classified shows the job ran after the first one's completion.
    conversation_steps(&v.model);
    v.model.push(Step::text(
        json!({"summary": SUMMARY, "dispositionId": "booked"}).to_string(),
    ));
    let second = two_turn_call(&v).await;
    dispositioned(&v, &second).await;
    assert_eq!(v.model.count(), 3, "only the second call went to the model");
    let first = get_call(&v, &call).await;
    assert!(first.get("summary").is_none(), "{first}");
    assert!(first.get("dispositionId").is_none(), "{first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_refusing_json_schema_is_asked_for_a_forced_tool_call() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    conversation_steps(&v.model);
    v.model.push(Step::status(400));
    v.model.push(Step::forced_tool(
        "call_classify",
        json!({"summary": SUMMARY, "dispositionId": "not-interested"}),
    ));
    let call = two_turn_call(&v).await;
    let record = dispositioned(&v, &call).await;
    assert_eq!(record["dispositionId"], json!("not-interested"), "{record}");
    assert_eq!(
        record["dispositionName"],
        json!("Not interested"),
        "{record}"
    );
    assert_eq!(record["summary"], json!(SUMMARY), "{record}");
    let requests = v.model.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    assert_eq!(requests[2]["response_format"]["type"], json!("json_schema"));
    let forced = &requests[3];
    assert!(forced.get("response_format").is_none(), "{forced}");
    assert_eq!(forced["tool_choice"]["type"], json!("function"), "{forced}");
    let name = &forced["tool_choice"]["function"]["name"];
    assert!(
        forced["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| &t["function"]["name"] == name)),
        "the forced tool is offered: {forced}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_answering_json_schema_with_500_is_asked_for_a_forced_tool_call() {
    // llama.cpp's server: 500 `Input should be 'text' or 'json_object'` to json_schema.
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    conversation_steps(&v.model);
    v.model.refuse_json_schema(500);
    v.model.push(Step::forced_tool(
        "call_classify",
        json!({"summary": SUMMARY, "dispositionId": "booked"}),
    ));
    let call = two_turn_call(&v).await;
    let record = dispositioned(&v, &call).await;
    assert_eq!(record["summary"], json!(SUMMARY), "{record}");
    assert_eq!(record["dispositionId"], json!("booked"), "{record}");
    assert_eq!(
        record["dispositionName"],
        json!("Appointment booked"),
        "{record}"
    );
    let requests = v.model.requests();
    assert_eq!(
        requests.len(),
        4,
        "the 500 is not asked again: {requests:#?}"
    );
    assert_eq!(requests[2]["response_format"]["type"], json!("json_schema"));
    let forced = &requests[3];
    assert!(forced.get("response_format").is_none(), "{forced}");
    assert_eq!(forced["tool_choice"]["type"], json!("function"), "{forced}");
    let view = engagement(&v.ts, &v.key, "L1").await;
    let last_error = view["lastError"].as_str().unwrap_or_default();
    assert!(!last_error.contains("post-call"), "{view}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_down_for_both_requests_leaves_last_error_and_no_summary() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    conversation_steps(&v.model);
    v.model.set_default(Step::status(500));
    let call = two_turn_call(&v).await;
    let view = wait_engagement(&v.ts, &v.key, "L1", "lastError is set", |e| {
        e["lastError"]
            .as_str()
            .is_some_and(|s| s.starts_with("post-call"))
    })
    .await;
    assert_eq!(
        view["lastError"],
        json!("post-call: assistant: status 500 (with a forced tool call; response_format: status 500)"),
        "{view}"
    );
    // One json_schema request, then the forced tool call's three attempts.
    let requests = v.model.requests();
    let modes: Vec<bool> = requests[2..]
        .iter()
        .map(|r| r.get("response_format").is_some())
        .collect();
    assert_eq!(modes, [true, false, false, false], "{requests:#?}");
    let record = get_call(&v, &call).await;
    assert!(record.get("summary").is_none(), "{record}");
    assert!(record.get("dispositionId").is_none(), "{record}");
}

// ---------------------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_signatures_are_403_on_every_voice_path_and_change_nothing() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    v.twilio.serve_recording("RE1", audio(100));
    let (call, sid) = placed_call(&v, "L1").await;
    let handoff = json!({"reason": "transfer"}).to_string();
    let rec_url = recording_url(&v.twilio.base_url, "RE1");
    let attempts: Vec<(String, Vec<(&str, &str)>)> = vec![
        (
            voice_path(&v, "inbound"),
            vec![
                ("CallSid", "CAforged"),
                ("From", PHONE),
                ("To", FROM),
                ("CallStatus", "ringing"),
            ],
        ),
        (
            call_path(&v, &call, "twiml"),
            vec![
                ("CallSid", sid.as_str()),
                ("From", FROM),
                ("To", PHONE),
                ("CallStatus", "in-progress"),
            ],
        ),
        (
            call_path(&v, &call, "status"),
            vec![
                ("CallSid", sid.as_str()),
                ("CallStatus", "completed"),
                ("CallDuration", "73"),
                ("AnsweredBy", "machine_end_beep"),
            ],
        ),
        (
            call_path(&v, &call, "recording"),
            vec![
                ("CallSid", sid.as_str()),
                ("RecordingSid", "RE1"),
                ("RecordingUrl", rec_url.as_str()),
                ("RecordingStatus", "completed"),
            ],
        ),
        (
            call_path(&v, &call, "transfer"),
            vec![
                ("CallSid", sid.as_str()),
                ("SessionStatus", "ended"),
                ("HandoffData", handoff.as_str()),
            ],
        ),
        (
            format!("{}?attempt=1", call_path(&v, &call, "transfer")),
            vec![
                ("CallSid", sid.as_str()),
                ("DialCallStatus", "completed"),
                ("DialCallDuration", "42"),
            ],
        ),
    ];
    for (path, params) in &attempts {
        let forged = post_signed(&v, path, params, WRONG_TOKEN).await;
        assert_error(&forged, 403, "Forbidden");
        let body = serde_urlencoded::to_string(params).unwrap().into_bytes();
        let unsigned =
            v.ts.post_with_headers(path, &[], "application/x-www-form-urlencoded", body)
                .await;
        assert_error(&unsigned, 403, "Forbidden");
    }
    let after = get_call(&v, &call).await;
    assert_eq!(after["callStatus"], json!("QUEUED"), "{after}");
    assert_eq!(after["durationSeconds"], json!(0), "{after}");
    assert_eq!(after["transcript"], json!([]), "{after}");
    for field in [
        "hasVoicemail",
        "isTransfer",
        "transferStatus",
        "transferInitiatedAt",
        "transferAnswerStatus",
        "aiCallWithoutHumanResponse",
    ] {
        assert!(
            after.get(field).is_none() || after[field] == json!(false),
            "{field}: {after}"
        );
    }
    let events = events_of_type(&v.ts, &v.key, "L1", "CALL").await;
    assert_eq!(events.len(), 1, "no inbound call: {events:?}");
    let recording =
        v.ts.get(&v.key, &format!("/v1/calls/{call}/recording"))
            .await;
    assert_eq!(recording.status, 404, "{}", text(&recording));
    assert_eq!(v.twilio.recording_count(), 0);
    assert_eq!(v.twilio.calls().len(), 1, "nothing dialled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_handshake_with_a_forged_signature_is_refused() {
    let v = start(true).await;
    lead(&v, "L1", "quiet").await;
    let (call, _) = placed_call(&v, "L1").await;
    let url = relay_client::relay_url(PUBLIC_URL, &v.org, &call);
    let forged = twilio_signature(WRONG_TOKEN, &url, &[]);
    let refused = relay_client::connect(&v.ts, &v.org, &call, &forged).await;
    assert_eq!(refused.err(), Some(403), "a forged signature is refused");
    // Signed over the wss:// URL with its default port, as Twilio's validators accept.
    let with_port = url.replacen("wss://engaged.test", "wss://engaged.test:443", 1);
    assert_ne!(with_port, url);
    let signature = twilio_signature(TOKEN, &with_port, &[]);
    match relay_client::connect(&v.ts, &v.org, &call, &signature).await {
        Ok(client) => client.close().await,
        Err(status) => panic!("a signature over {with_port} was refused with {status}"),
    }
    let other_port = url.replacen("wss://engaged.test", "wss://engaged.test:8443", 1);
    let signature = twilio_signature(TOKEN, &other_port, &[]);
    let refused = relay_client::connect(&v.ts, &v.org, &call, &signature).await;
    assert_eq!(refused.err(), Some(403), "another port is another URL");
    // The right signature opens it.
    open_relay(&v, &call).await.close().await;
    assert_eq!(get_call(&v, &call).await["transcript"], json!([]));
}

// Warm transfers: their own file.
mod warm;
