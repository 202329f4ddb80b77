//! Warm transfers, black-box, from the spec's "Warm transfer" steps: the assistant's
//! `transfer` on a profile whose `transfer.mode` is `warm` holds the lead in a
//! conference; the person is rung through the fake Twilio (`Calls.json`), hears the
//! whisper (`<Gather>`), presses a digit, joins; the fake's conferences run every TwiML
//! document engaged answers (each parsed with quick-xml and held to Twilio's documented
//! verbs and attributes) and queue the conference callbacks delivered here, signed.

use serde_json::{json, Value};

use engaged::testkit::twilio_voice::{answered_form, gather_form, parse, status_form};
use engaged::testkit::{poll, WebhookReceiver, WAIT};

use super::*;

const WHISPERED: &str = "Ada from Austin wants a quote for roof panels and asked for a person.";
const HOLD_MUSIC: &str = "https://music.example/hold.mp3";
const CONNECTING: &str = "Connecting you with Ana Ruiz now, one moment.";
const NOBODY: &str = "I'm sorry, no one could take the call right now. I can book a meeting for you, or have someone call you back. What would you prefer?";
const SORRY: &str = "Sorry, no one can take your call right now. We will call you back soon.";

/// A server whose profile `warm` transfers warm to Ana Ruiz (fallback `FALLBACK`, 20 s
/// of ringing, Twilio's hold music replaced), lead L1 on it.
async fn warm_setup() -> (Voice, WebhookReceiver, String) {
    let v = start(true).await;
    let hooks = WebhookReceiver::ok().await;
    let hook = hooks.register(&v.ts, &v.admin).await;
    let mut profile = voice_profile(json!([]));
    profile["transfer"] = json!({"mode": "warm", "name": "Ana Ruiz", "ringSeconds": 20,
        "holdMusicUrl": HOLD_MUSIC});
    let saved = put_profile(&v.ts, &v.admin, "warm", &profile).await;
    assert_eq!(saved["transfer"]["mode"], json!("warm"), "{saved}");
    assert_eq!(saved["transfer"]["number"], json!(TRANSFER), "{saved}");
    assert_eq!(saved["transfer"]["acceptDigit"], json!("1"), "{saved}");
    lead(&v, "L1", "warm").await;
    (v, hooks, hook)
}

/// Delivers every conference callback the fake queued, signed, in order.
async fn deliver(v: &Voice) {
    for cb in v.twilio.conference_callbacks() {
        let path = cb
            .url
            .strip_prefix(PUBLIC_URL)
            .unwrap_or_else(|| panic!("a callback under the public URL: {}", cb.url))
            .to_string();
        let form: Vec<(&str, &str)> = cb
            .form
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let r = twilio_post(v, &path, &form).await;
        assert_eq!(text(&r), "<Response/>");
    }
}

/// Posts `form` to the absolute `url` engaged gave Twilio; returns the TwiML answer.
async fn post_to(v: &Voice, url: &str, form: &[(String, String)]) -> String {
    let path = url
        .strip_prefix(PUBLIC_URL)
        .unwrap_or_else(|| panic!("a URL under the public URL: {url}"));
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    twiml(&twilio_post(v, path, &form).await)
}

/// The call held: the assistant transferred, the lead's call runs the hold document.
/// Returns the call id, the lead's `CallSid` and the document.
async fn held(v: &Voice) -> (String, String, String) {
    held_with(v, Step::text("Ada wants to talk to a person.")).await
}

/// [`held`], the assistant answering the whisper's summary request with `summary`.
async fn held_with(v: &Voice, summary: Step) -> (String, String, String) {
    let (call, sid, handoff) = transferring_call(v).await;
    v.model.push(summary);
    let doc = session_ended(v, &call, &sid, &handoff).await;
    v.twilio.run_twiml(&sid, &doc);
    deliver(v).await;
    (call, sid, doc)
}

/// The person rung at Calls.json request `index`: its `CallSid` and the request.
async fn rung(v: &Voice, index: usize) -> (String, engaged::testkit::twilio::Sent) {
    let sid = dialed_sid(v, index).await;
    (sid, v.twilio.calls()[index].clone())
}

/// The person's leg answered (by `by`); returns the TwiML it gets.
async fn leg_answered(
    v: &Voice,
    ring: &engaged::testkit::twilio::Sent,
    sid: &str,
    by: &str,
) -> String {
    let url = ring.field("Url").expect("a Url").to_string();
    let doc = post_to(v, &url, &answered_form(sid, by)).await;
    v.twilio.run_twiml(sid, &doc);
    doc
}

/// The person presses `digit` (none: silence) in the whisper `whisper`; returns the
/// TwiML their leg gets, after running it.
async fn press(v: &Voice, whisper: &str, sid: &str, digit: Option<&str>) -> String {
    let gather = parse(whisper);
    let action = gather
        .find("Gather")
        .and_then(|g| g.attr("action"))
        .expect("an action")
        .to_string();
    let doc = post_to(v, &action, &gather_form(sid, digit)).await;
    v.twilio.run_twiml(sid, &doc);
    deliver(v).await;
    doc
}

/// A status callback of the person's leg.
async fn leg_status(v: &Voice, ring: &engaged::testkit::twilio::Sent, sid: &str, status: &str) {
    let url = ring
        .field("StatusCallback")
        .expect("a StatusCallback")
        .to_string();
    let r = post_to(v, &url, &status_form(sid, status)).await;
    assert!(r.contains("<Response/>"), "{r}");
}

/// The whisper a person hears: one `<Gather>` of one digit, 10 s, sent back even empty.
#[track_caller]
fn assert_whisper(doc: &str) -> String {
    let twiml = parse(doc);
    let gather = twiml
        .find("Gather")
        .unwrap_or_else(|| panic!("a Gather: {doc}"));
    assert_eq!(gather.attr("numDigits"), Some("1"), "{doc}");
    assert_eq!(gather.attr("timeout"), Some("10"), "{doc}");
    assert_eq!(gather.attr("input"), Some("dtmf"), "{doc}");
    assert_eq!(gather.attr("actionOnEmptyResult"), Some("true"), "{doc}");
    let said: Vec<&str> = gather.all("Say").iter().map(|s| s.text.as_str()).collect();
    assert_eq!(said.last(), Some(&"Press 1 to take the call."), "{doc}");
    said.join(" ")
}

#[track_caller]
fn assert_hangs_up(doc: &str) {
    let twiml = parse(doc);
    assert!(twiml.find("Hangup").is_some(), "{doc}");
    assert!(twiml.find("Conference").is_none(), "{doc}");
}

/// The number of deliveries of `event` once `what` shows on the call.
async fn deliveries(v: &Voice, hook: &str, event: &str) -> usize {
    deliveries_of(v, hook, event).await.len()
}

/// Waits until the fake took the lead's call (`lead_sid`) back with new TwiML; returns it.
async fn taken_back(v: &Voice, lead_sid: &str) -> String {
    poll("the lead's call taken back", WAIT, || async move {
        v.twilio
            .call_updates()
            .iter()
            .find(|u| u.path.ends_with(&format!("/Calls/{lead_sid}.json")))
            .and_then(|u| u.field("Twiml").map(str::to_string))
            .ok_or_else(|| format!("{:?}", v.twilio.call_updates()))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_holds_the_lead_whispers_and_bridges_who_presses_1() {
    let (v, hooks, hook) = warm_setup().await;
    let (call, lead_sid, doc) = held_with(&v, Step::text(WHISPERED)).await;
    let hold = parse(&doc);
    assert_eq!(
        hold.find("Say").map(|s| s.text.as_str()),
        Some(CONNECTING),
        "{doc}"
    );
    let conference = hold.find("Conference").expect("a conference");
    assert_eq!(conference.text, call, "named for the call: {doc}");
    assert_eq!(
        conference.attr("startConferenceOnEnter"),
        Some("false"),
        "{doc}"
    );
    assert_eq!(conference.attr("waitUrl"), Some(HOLD_MUSIC), "{doc}");
    assert_eq!(
        conference.attr("statusCallbackEvent"),
        Some("join leave end"),
        "{doc}"
    );
    assert_eq!(v.twilio.participants(&call), vec![lead_sid.clone()]);
    let pending = get_call(&v, &call).await;
    assert_eq!(
        pending["transferAnswerStatus"],
        json!("pending"),
        "{pending}"
    );
    assert_eq!(pending["transferNumber"], json!(TRANSFER), "{pending}");
    time_of(&pending["transferInitiatedAt"]);
    assert!(pending.get("transferStatus").is_none(), "{pending}");

    let (agent, ring) = rung(&v, 1).await;
    assert_eq!(ring.field("To"), Some(TRANSFER));
    assert_eq!(ring.field("From"), Some(FROM));
    assert_eq!(ring.field("MachineDetection"), Some("Enable"));
    assert_eq!(ring.field("Timeout"), Some("20"));
    assert!(
        ring.field("Url")
            .unwrap()
            .ends_with("/warm?step=answer&attempt=1"),
        "{ring:?}"
    );
    let whisper = leg_answered(&v, &ring, &agent, "human").await;
    let said = assert_whisper(&whisper);
    assert!(
        said.starts_with(WHISPERED),
        "the assistant's summary: {said}"
    );
    let asked = v.model.requests();
    let request = asked.last().expect("the summary was asked").to_string();
    assert!(request.contains("Can I talk to a person?"), "{request}");
    assert!(!request.contains("\"tools\""), "{request}");
    assert!(
        !v.twilio.conference_started(&call),
        "the lead still waits alone"
    );

    let join = press(&v, &whisper, &agent, Some("1")).await;
    let joined = parse(&join);
    let conference = joined.find("Conference").expect("a conference");
    assert_eq!(conference.text, call);
    assert_eq!(
        conference.attr("startConferenceOnEnter"),
        Some("true"),
        "{join}"
    );
    assert!(v.twilio.conference_started(&call));
    assert_eq!(v.twilio.participants(&call).len(), 2);
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("connected"), "{record}");
    assert_eq!(record["agentConnected"], json!(true), "{record}");
    assert_eq!(
        record["transferAnswerStatus"],
        json!("answered"),
        "{record}"
    );
    assert_eq!(record["transferAnsweredBy"], json!("human"), "{record}");
    assert!(record.get("endedBy").is_none(), "still bridged: {record}");
    assert!(record.get("transferFailureCode").is_none(), "{record}");
    let data = hooks.wait_event("call.transfer.connected").await;
    assert_eq!(data["callId"], json!(call), "{data}");

    // The person hangs up first: the conference ends for both.
    v.twilio.hang_up(&agent);
    deliver(&v).await;
    let ended = get_call(&v, &call).await;
    assert_eq!(ended["endedBy"], json!("AGENT"), "{ended}");
    assert!(
        ended["midCallTransferDuration"].as_u64().is_some(),
        "{ended}"
    );
    assert_eq!(deliveries(&v, &hook, "call.transfer.connected").await, 1);
    assert_eq!(deliveries(&v, &hook, "call.transfer.failed").await, 0);
    // A repeated hand-over webhook holds the lead again and rings nobody more.
    let handoff = r#"{"reason":"transfer"}"#;
    let again = session_ended(&v, &call, &lead_sid, handoff).await;
    parse(&again);
    assert_eq!(v.twilio.calls().len(), 2, "nobody rung twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_the_lead_leaves_first_is_ended_by_the_lead() {
    let (v, _hooks, _hook) = warm_setup().await;
    let (call, lead_sid, _) = held(&v).await;
    let (agent, ring) = rung(&v, 1).await;
    let whisper = leg_answered(&v, &ring, &agent, "human").await;
    press(&v, &whisper, &agent, Some("1")).await;
    v.twilio.hang_up(&lead_sid);
    deliver(&v).await;
    let ended = get_call(&v, &call).await;
    assert_eq!(ended["endedBy"], json!("LEAD"), "{ended}");
    assert_eq!(ended["transferStatus"], json!("connected"), "{ended}");
    // The lead's timeline says it in words.
    let password = v.ts.user("acme", "ana@acme.example", "Ana", "viewer").await;
    let viewer = v.ts.sign_in("ana@acme.example", &password).await;
    let page =
        v.ts.console(
            hyper::Method::GET,
            "/console/leads/L1",
            Some(&viewer.cookie),
            None,
            &[],
        )
        .await
        .text();
    assert!(
        page.contains(&format!("Transferred to {TRANSFER} — connected after"))
            && page.contains("the lead hung up first"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_transfer_settings_are_checked_member_by_member() {
    let (v, _hooks, _hook) = warm_setup().await;
    for (transfer, field) in [
        (json!({"mode": "lukewarm"}), "transfer.mode"),
        (
            json!({"mode": "warm", "ringSeconds": 5}),
            "transfer.ringSeconds",
        ),
        (
            json!({"mode": "warm", "ringSeconds": 61}),
            "transfer.ringSeconds",
        ),
        (
            json!({"mode": "warm", "acceptDigit": "*"}),
            "transfer.acceptDigit",
        ),
        (
            json!({"mode": "warm", "holdMusicUrl": "music.mp3"}),
            "transfer.holdMusicUrl",
        ),
        (
            json!({"mode": "warm", "number": "+15550109999"}),
            "transfer.number",
        ),
        (json!("warm"), "transfer"),
    ] {
        let mut body = voice_profile(json!([]));
        body["transfer"] = transfer.clone();
        let r = v.ts.put(&v.admin, "/v1/profiles/warm", &body).await;
        let answer = expect(&r, 400);
        assert!(answer.to_string().contains(field), "{transfer}: {answer}");
    }
    // Warm without any number.
    let body = json!({"transfer": {"mode": "warm"}});
    let answer = expect(&v.ts.put(&v.admin, "/v1/profiles/warm", &body).await, 400);
    assert!(answer.to_string().contains("transfer.number"), "{answer}");
    // Nothing changed.
    let profile = expect(&v.ts.get(&v.admin, "/v1/profiles/warm").await, 200);
    assert_eq!(profile["transfer"]["ringSeconds"], json!(20), "{profile}");
    assert_eq!(
        profile["transfer"]["holdMusicUrl"],
        json!(HOLD_MUSIC),
        "{profile}"
    );
    // The new form alone, and the old one still cold.
    let cold = expect(
        &v.ts
            .put(
                &v.admin,
                "/v1/profiles/cold",
                &json!({"transfer": {"mode": "cold", "number": "+1 555 010 7777"}}),
            )
            .await,
        200,
    );
    assert_eq!(cold["transferNumber"], json!(TRANSFER), "{cold}");
    assert_eq!(cold["transfer"]["ringSeconds"], json!(25), "{cold}");
    let quiet = expect(&v.ts.get(&v.admin, "/v1/profiles/quiet").await, 200);
    assert_eq!(quiet["transfer"], Value::Null, "{quiet}");
}

/// Waits until the fake got an update of call `sid`; returns it.
async fn updated(v: &Voice, sid: &str) -> engaged::testkit::twilio::Sent {
    poll(&format!("an update of {sid}"), WAIT, || async move {
        v.twilio
            .call_updates()
            .into_iter()
            .find(|u| u.path.ends_with(&format!("/Calls/{sid}.json")))
            .ok_or_else(|| format!("{:?}", v.twilio.call_updates()))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_nobody_answers_rings_the_fallback_who_accepts() {
    let (v, hooks, hook) = warm_setup().await;
    // The assistant fails to summarise: the whisper is the template.
    let (call, _lead_sid, _) = held_with(&v, Step::status(500)).await;
    let (first, ring) = rung(&v, 1).await;
    leg_status(&v, &ring, &first, "ringing").await;
    leg_status(&v, &ring, &first, "no-answer").await;
    let (second, fallback) = rung(&v, 2).await;
    assert_eq!(fallback.field("To"), Some(FALLBACK));
    assert!(
        fallback
            .field("Url")
            .unwrap()
            .ends_with("/warm?step=answer&attempt=2"),
        "{fallback:?}"
    );
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
    assert_eq!(
        trying["transferFallbackAnswerStatus"],
        json!("pending"),
        "{trying}"
    );
    // A late status of the first leg changes nothing.
    leg_status(&v, &ring, &first, "completed").await;
    assert_eq!(v.twilio.calls().len(), 3);

    let whisper = leg_answered(&v, &fallback, &second, "human").await;
    let said = assert_whisper(&whisper);
    assert!(said.contains("Ada"), "{said}");
    assert!(said.contains("warm campaign"), "{said}");
    assert!(
        said.contains("Can I talk to a person?"),
        "what the lead asked: {said}"
    );
    let join = press(&v, &whisper, &second, Some("1")).await;
    assert!(parse(&join).find("Conference").is_some(), "{join}");
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("connected"), "{record}");
    assert_eq!(
        record["transferFallbackAnswerStatus"],
        json!("answered"),
        "{record}"
    );
    assert_eq!(
        record["transferFallbackAnsweredBy"],
        json!("human"),
        "{record}"
    );
    assert_eq!(record["agentConnected"], json!(true), "{record}");
    hooks.wait_event("call.transfer.connected").await;
    assert_eq!(deliveries(&v, &hook, "call.transfer.connected").await, 1);
    assert_eq!(deliveries(&v, &hook, "call.transfer.failed").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_a_machine_and_a_busy_line_take_the_lead_back_to_the_assistant() {
    let (v, hooks, hook) = warm_setup().await;
    let (call, lead_sid, _) = held(&v).await;
    let (first, ring) = rung(&v, 1).await;
    let doc = leg_answered(&v, &ring, &first, "machine_start").await;
    assert_hangs_up(&doc);
    assert!(
        parse(&doc).find("Say").is_none(),
        "nothing left on a voicemail: {doc}"
    );
    let (second, fallback) = rung(&v, 2).await;
    let record = get_call(&v, &call).await;
    assert_eq!(
        record["transferAnsweredBy"],
        json!("machine_start"),
        "{record}"
    );
    assert_eq!(
        record["transferAnswerStatus"],
        json!("no_answer"),
        "{record}"
    );
    leg_status(&v, &fallback, &second, "busy").await;

    let back = taken_back(&v, &lead_sid).await;
    let relay = parse(&back);
    let conversation = relay
        .find("ConversationRelay")
        .unwrap_or_else(|| panic!("{back}"));
    assert_eq!(conversation.attr("welcomeGreeting"), Some(NOBODY), "{back}");
    assert!(
        v.twilio.participants(&call).is_empty(),
        "out of the conference"
    );
    deliver(&v).await; // the lead's leave (updated via the API) changes nothing
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("failed"), "{record}");
    assert_eq!(
        record["transferFailureCode"],
        json!("agent_not_connected"),
        "{record}"
    );
    assert_eq!(
        record["transferFallbackAnswerStatus"],
        json!("no_answer"),
        "{record}"
    );
    assert!(
        record["transferWaitDurationSeconds"].as_u64().is_some(),
        "{record}"
    );
    assert!(record.get("endedBy").is_none(), "{record}");
    assert_eq!(record["agentConnected"], json!(false), "{record}");
    let transcript = wait_transcript(&v, &call, 1).await;
    assert!(
        transcript.iter().any(|t| t["text"] == json!(NOBODY)),
        "the assistant's session starts with what happened: {transcript:#?}"
    );
    hooks.wait_event("call.transfer.failed").await;
    // The assistant's second session ends with a hand-off: no second transfer.
    let end = session_ended(&v, &call, &lead_sid, r#"{"reason":"handoff"}"#).await;
    assert_hangs_up(&end);
    assert_eq!(v.twilio.calls().len(), 3, "nobody rung again");
    leg_status(&v, &fallback, &second, "busy").await;
    assert_eq!(deliveries(&v, &hook, "call.transfer.failed").await, 1);
    assert_eq!(deliveries(&v, &hook, "call.transfer.connected").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_a_wrong_digit_and_silence_end_in_an_apology_without_an_assistant() {
    let (v, hooks, _hook) = warm_setup().await;
    let (call, lead_sid, _) = held(&v).await;
    // The assistant is off for the lead from now on: nobody but a person answers it.
    expect(
        &v.ts
            .patch(&v.key, "/v1/leads/L1", &json!({"isAiOn": false}))
            .await,
        200,
    );
    let (first, ring) = rung(&v, 1).await;
    let whisper = leg_answered(&v, &ring, &first, "human").await;
    assert_hangs_up(&press(&v, &whisper, &first, Some("5")).await);
    let (second, fallback) = rung(&v, 2).await;
    let whisper = leg_answered(&v, &fallback, &second, "human").await;
    assert_hangs_up(&press(&v, &whisper, &second, None).await);

    let back = parse(&taken_back(&v, &lead_sid).await);
    assert_eq!(back.find("Say").map(|s| s.text.as_str()), Some(SORRY));
    assert!(back.find("Hangup").is_some());
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("failed"), "{record}");
    assert_eq!(
        record["transferFailureCode"],
        json!("agent_not_connected"),
        "{record}"
    );
    assert_eq!(record["transferAnsweredBy"], json!("human"), "{record}");
    assert_eq!(
        record["transferAnswerStatus"],
        json!("no_answer"),
        "{record}"
    );
    hooks.wait_event("call.transfer.failed").await;
    // The lead waits for a person: "Call back", in Needs attention.
    let password = v.ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = v.ts.sign_in("pat@example.com", &password).await;
    let inbox = poll("the lead needs attention", WAIT, || async {
        let text =
            v.ts.console(
                hyper::Method::GET,
                "/console/inbox?tab=attention",
                Some(&agent.cookie),
                None,
                &[],
            )
            .await
            .text();
        if text.contains("Call back") {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await;
    assert!(inbox.contains("Ada"), "{inbox}");
    // The lead's page asks for the call back; "Called back" ends it, once.
    let page =
        v.ts.console(
            hyper::Method::GET,
            "/console/leads/L1",
            Some(&agent.cookie),
            None,
            &[],
        )
        .await
        .text();
    assert!(page.contains("nobody took the transfer"), "{page}");
    let called = || {
        let agent = &agent;
        let ts = &v.ts;
        async move {
            ts.console_post(
                "/console/leads/L1/called-back",
                &agent.cookie,
                &[("csrf", agent.csrf.as_str())],
            )
            .await
            .text()
        }
    };
    let page = called().await;
    assert!(page.contains("Pat called the lead back"), "{page}");
    let inbox =
        v.ts.console(
            hyper::Method::GET,
            "/console/inbox?tab=attention",
            Some(&agent.cookie),
            None,
            &[],
        )
        .await
        .text();
    assert!(!inbox.contains("Call back"), "{inbox}");
    let again = called().await;
    assert!(
        again.contains("This lead was already called back"),
        "{again}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_the_lead_hangs_up_on_while_held_ends_the_ringing_leg() {
    let (v, hooks, hook) = warm_setup().await;
    let (call, lead_sid, _) = held(&v).await;
    let (first, _ring) = rung(&v, 1).await;
    v.twilio.hang_up(&lead_sid);
    deliver(&v).await;
    let cancel = updated(&v, &first).await;
    assert_eq!(cancel.field("Status"), Some("canceled"), "{cancel:?}");
    let record = get_call(&v, &call).await;
    assert_eq!(record["transferStatus"], json!("failed"), "{record}");
    assert_eq!(
        record["transferFailureCode"],
        json!("lead_disconnected"),
        "{record}"
    );
    assert!(
        record["transferWaitDurationSeconds"].as_u64().is_some(),
        "{record}"
    );
    assert!(record.get("endedBy").is_none(), "{record}");
    hooks.wait_event("call.transfer.failed").await;
    assert_eq!(deliveries(&v, &hook, "call.transfer.failed").await, 1);
    assert_eq!(v.twilio.calls().len(), 2, "no fallback for a lead who left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_the_lead_hangs_up_on_in_the_whisper_tells_the_person() {
    let (v, _hooks, _hook) = warm_setup().await;
    let (call, lead_sid, _) = held(&v).await;
    let (first, ring) = rung(&v, 1).await;
    let whisper = leg_answered(&v, &ring, &first, "human").await;
    v.twilio.hang_up(&lead_sid);
    deliver(&v).await;
    let told = updated(&v, &first).await;
    let doc = parse(told.field("Twiml").expect("new TwiML"));
    assert_eq!(
        doc.find("Say").map(|s| s.text.as_str()),
        Some("The caller hung up.")
    );
    assert!(doc.find("Hangup").is_some());
    // The digit pressed too late joins nobody.
    assert_hangs_up(&press(&v, &whisper, &first, Some("1")).await);
    let record = get_call(&v, &call).await;
    assert_eq!(
        record["transferFailureCode"],
        json!("lead_disconnected"),
        "{record}"
    );
    assert_eq!(record["agentConnected"], json!(false), "{record}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_transfer_ended_without_a_leave_is_ended_by_unknown_and_bad_steps_change_nothing() {
    let (v, _hooks, _hook) = warm_setup().await;
    let (call, _lead_sid, _) = held(&v).await;
    let (agent, ring) = rung(&v, 1).await;
    let whisper = leg_answered(&v, &ring, &agent, "human").await;
    let warm = call_path(&v, &call, "warm");
    let before = get_call(&v, &call).await;
    // Malformed steps: 400, and an unsigned one 403; nothing changes.
    for query in ["", "?step=dance", "?step=digit", "?step=digit&attempt=3"] {
        let path = format!("{warm}{query}");
        let r = post_signed(
            &v,
            &path,
            &[("CallSid", agent.as_str()), ("Digits", "1")],
            TOKEN,
        )
        .await;
        assert_eq!(r.status, 400, "{query}: {}", text(&r));
    }
    let path = format!("{warm}?step=digit&attempt=1");
    let r = post_signed(
        &v,
        &path,
        &[("CallSid", agent.as_str()), ("Digits", "1")],
        WRONG_TOKEN,
    )
    .await;
    assert_eq!(r.status, 403, "{}", text(&r));
    assert_eq!(get_call(&v, &call).await, before);
    press(&v, &whisper, &agent, Some("1")).await;
    // Twilio ends the conference without saying who left first.
    let end = [
        ("AccountSid", SID),
        ("ConferenceSid", "CF00000000000000000000000000000001"),
        ("FriendlyName", call.as_str()),
        ("StatusCallbackEvent", "conference-end"),
        ("ReasonConferenceEnded", "conference-ended-via-api"),
    ];
    let path = format!("{warm}?step=conference");
    twilio_post(&v, &path, &end).await;
    let ended = get_call(&v, &call).await;
    assert_eq!(ended["endedBy"], json!("UNKNOWN"), "{ended}");
    // The leaves that follow change nothing.
    v.twilio.hang_up(&agent);
    deliver(&v).await;
    assert_eq!(get_call(&v, &call).await["endedBy"], json!("UNKNOWN"));
}

/// A person presses "Transfer the call" on the lead's page during a live call: the
/// call is redirected to its transfer webhook (Twilio's Calls API, a `<Redirect>`),
/// which, as the assistant's own transfer would, holds the lead and rings the person.
/// A second press says the transfer is under way; another organization's person
/// cannot reach the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_transfers_a_live_call_from_the_console() {
    let (v, _hooks, _hook) = warm_setup().await;
    let (call, sid, relay) = answered_call(&v, "L1").await;
    let password = v.ts.user("acme", "ana@acme.example", "Ana", "agent").await;
    let agent = v.ts.sign_in("ana@acme.example", &password).await;
    let page =
        v.ts.console(
            hyper::Method::GET,
            "/console/leads/L1",
            Some(&agent.cookie),
            None,
            &[],
        )
        .await
        .text();
    assert!(page.contains("Transfer the call"), "{page}");
    let press = || {
        let (v, agent, call) = (&v, &agent, &call);
        async move {
            v.ts.console_post(
                "/console/leads/L1/transfer-call",
                &agent.cookie,
                &[("csrf", agent.csrf.as_str()), ("call", call.as_str())],
            )
            .await
            .text()
        }
    };
    let after = press().await;
    assert!(after.contains("Transferring the call"), "{after}");
    let update = v
        .twilio
        .call_updates()
        .into_iter()
        .find(|u| u.path.contains(&sid))
        .expect("the lead's call was given new TwiML");
    let doc = parse(update.field("Twiml").expect("Twiml"));
    let url = doc.find("Redirect").expect("a Redirect").text.clone();
    assert!(url.ends_with("/transfer?reason=transfer"), "{url}");
    relay.close().await;

    // Twilio follows the redirect: the lead is held, the person rung.
    let form: Vec<(String, String)> = [
        ("AccountSid", SID),
        ("CallSid", sid.as_str()),
        ("CallStatus", "in-progress"),
        ("From", FROM),
        ("To", PHONE),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let held = post_to(&v, &url, &form).await;
    assert!(held.contains(CONNECTING), "{held}");
    assert!(parse(&held).find("Conference").is_some(), "{held}");
    let (_, ring) = rung(&v, 1).await;
    assert_eq!(
        ring.field("To"),
        Some(TRANSFER),
        "the transfer number is rung"
    );

    let again = press().await;
    assert!(
        again.contains("This call is already being transferred."),
        "{again}"
    );
    let page =
        v.ts.console(
            hyper::Method::GET,
            "/console/leads/L1",
            Some(&agent.cookie),
            None,
            &[],
        )
        .await
        .text();
    assert!(!page.contains("Transfer the call"), "{page}");
}
