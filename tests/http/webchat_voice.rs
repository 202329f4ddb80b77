//! Calls from the browser (`shared/spec/webchat.md`, "Voice from the browser") over
//! real HTTPS: `providers.voice`'s keys (write-only secret, checked shapes, the secret
//! kept only for its place), a session's Twilio Access Token decoded with the
//! `jsonwebtoken` crate against the API key secret (every claim Twilio documents), each
//! refusal (off, keys missing, a wrong token, a foreign origin), the vendored Voice SDK
//! and its licence, and the voice webhook's `From=client:web_<sessionId>`: a call with
//! `sessionId` and no `leadId`, the session's lead once it has one, another
//! organization's session refused.

use hyper::Method;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};

use engaged::testkit::model::FakeModel;
use engaged::testkit::{Response, TestServer, WebhookReceiver};

use crate::answers::*;
use crate::engagement::*;
use crate::twilio_signing::*;

const SITE: &str = "https://shop.example";
const PUBLIC_URL: &str = "https://engaged.test";
const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
const OTHER_ACCOUNT: &str = "AC0123456789abcdef0123456789abcdee";
const AUTH_TOKEN: &str = "voice-auth-token-secret";
const FROM: &str = "+15550100000";
const API_KEY: &str = "SK0123456789abcdef0123456789abcdef";
const API_SECRET: &str = "api-key-secret-a1b2c3d4e5f6a7b8c9d0";
const APP: &str = "AP0123456789abcdef0123456789abcdef";

struct Site {
    ts: TestServer,
    admin: String,
    key: String,
    org: String,
    _model: FakeModel,
}

fn voice_provider(keys: bool) -> Value {
    let mut voice = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": AUTH_TOKEN,
                           "from": FROM});
    if keys {
        voice["apiKeySid"] = json!(API_KEY);
        voice["apiKeySecret"] = json!(API_SECRET);
        voice["twimlAppSid"] = json!(APP);
    }
    voice
}

/// `acme` with a twilio voice provider (with the browser's keys when `keys`), the fake
/// model as its assistant, and web chat on for [`SITE`] with `voice`.
async fn start(keys: bool, voice: bool) -> Site {
    let model = FakeModel::start().await;
    let ts = TestServer::start_with(|c| c.public_url = Some(PUBLIC_URL.into())).await;
    let admin = ts.key("acme", "admin").await;
    let key = ts.key("acme", "write").await;
    set_business(&ts, &admin).await;
    set_org(&ts, &admin, &model.settings()).await;
    let view = set_org(
        &ts,
        &admin,
        &json!({"providers": {"voice": voice_provider(keys)}, "consentRequired": [],
                "webchat": {"enabled": true, "allowedOrigins": [SITE], "voice": voice}}),
    )
    .await;
    let org = str_of(&view["id"]).to_string();
    Site {
        ts,
        admin,
        key,
        org,
        _model: model,
    }
}

async fn new_session(ts: &TestServer, org: &str) -> (String, String) {
    let r = ts
        .webchat(
            Method::POST,
            &format!("/webchat/{org}/sessions"),
            Some(SITE),
            None,
            None,
        )
        .await;
    let body = expect(&r, 201);
    (
        str_of(&body["sessionId"]).to_string(),
        str_of(&body["token"]).to_string(),
    )
}

async fn voice_token(
    s: &Site,
    session: &str,
    token: Option<&str>,
    origin: Option<&str>,
) -> Response {
    s.ts.webchat(
        Method::POST,
        &format!("/webchat/{}/sessions/{session}/voice-token", s.org),
        origin,
        token,
        None,
    )
    .await
}

/// The claims of `token`, checked as Twilio checks them: HS256 with the API key secret.
fn decode(token: &str, secret: &str) -> jsonwebtoken::errors::Result<Value> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_required_spec_claims(&["exp", "iss", "sub"]);
    validation.set_issuer(&[API_KEY]);
    jsonwebtoken::decode::<Value>(
        token,
        &DecodingKey::from_secret(secret.as_bytes()),
        &validation,
    )
    .map(|data| data.claims)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browsers_keys_are_write_only_checked_and_kept_for_their_place() {
    let s = start(true, true).await;
    let (ts, admin) = (&s.ts, &s.admin);
    let before = expect(&ts.get(admin, "/v1/org").await, 200);
    let voice = &before["providers"]["voice"];
    assert_eq!(voice["apiKeySid"], json!(API_KEY), "{voice}");
    assert_eq!(voice["apiKeySecretSet"], json!(true), "{voice}");
    assert_eq!(voice["twimlAppSid"], json!(APP), "{voice}");
    assert!(voice.get("apiKeySecret").is_none(), "{voice}");
    assert!(!before.to_string().contains(API_SECRET), "write-only");

    // Bad shapes: 400 naming the field, and nothing changes.
    for (member, bad) in [
        ("apiKeySid", json!("SK123")),
        ("apiKeySid", json!(APP)),
        ("apiKeySid", json!(7)),
        ("twimlAppSid", json!(API_KEY)),
        ("twimlAppSid", json!("AP0123456789abcdef0123456789abcdeg")),
        ("apiKeySecret", json!("  ")),
    ] {
        let mut provider = voice_provider(false);
        provider[member] = bad.clone();
        let r = ts
            .patch(admin, "/v1/org", &json!({"providers": {"voice": provider}}))
            .await;
        assert_error(
            &r,
            400,
            &format!("Invalid format for field: providers.voice.{member}"),
        );
    }
    // Only the voice provider has them.
    let r = ts
        .patch(
            admin,
            "/v1/org",
            &json!({"providers": {"voice": voice_provider(false),
                "sms": {"kind": "twilio", "accountSid": ACCOUNT, "authToken": AUTH_TOKEN,
                        "from": FROM, "apiKeySid": API_KEY}}}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", text(&r));
    assert_eq!(expect(&ts.get(admin, "/v1/org").await, 200), before);

    // Left out, they are kept (the console's form and older clients know nothing of
    // them); `null` clears one.
    let view = set_org(
        ts,
        admin,
        &json!({"providers": {"voice": voice_provider(false)}}),
    )
    .await;
    assert_eq!(view["providers"]["voice"], before["providers"]["voice"]);
    let mut cleared = voice_provider(false);
    cleared["twimlAppSid"] = Value::Null;
    let view = set_org(ts, admin, &json!({"providers": {"voice": cleared}})).await;
    assert_eq!(view["providers"]["voice"]["twimlAppSid"], Value::Null);
    assert_eq!(view["providers"]["voice"]["apiKeySecretSet"], json!(true));

    // Another account without the secret again: the secret stays behind.
    let mut moved = voice_provider(false);
    moved["accountSid"] = json!(OTHER_ACCOUNT);
    let view = set_org(ts, admin, &json!({"providers": {"voice": moved}})).await;
    assert_eq!(view["providers"]["voice"]["apiKeySecretSet"], json!(false));
    assert_eq!(view["providers"]["voice"]["apiKeySid"], json!(API_KEY));
    // Given with it, it is kept.
    let mut given = voice_provider(true);
    given["accountSid"] = json!(OTHER_ACCOUNT);
    let view = set_org(ts, admin, &json!({"providers": {"voice": given}})).await;
    assert_eq!(view["providers"]["voice"]["apiKeySecretSet"], json!(true));
    // A voice provider that is not twilio has none; back to twilio, they are gone.
    let view = set_org(
        ts,
        admin,
        &json!({"providers": {"voice": {"kind": "sandbox"}}}),
    )
    .await;
    assert!(view["providers"]["voice"].get("apiKeySid").is_none());
    let view = set_org(
        ts,
        admin,
        &json!({"providers": {"voice": voice_provider(false)}}),
    )
    .await;
    assert_eq!(view["providers"]["voice"]["apiKeySid"], Value::Null);
    assert_eq!(view["providers"]["voice"]["apiKeySecretSet"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_gets_a_twilio_access_token_for_its_call() {
    let s = start(false, true).await;
    let (session, token) = new_session(&s.ts, &s.org).await;

    // Without the keys: 404 in words.
    let r = voice_token(&s, &session, Some(&token), Some(SITE)).await;
    assert_eq!(r.status, 404, "{}", text(&r));
    assert!(text(&r).contains("apiKeySid"), "{}", text(&r));
    assert_eq!(r.headers["access-control-allow-origin"], SITE);

    set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"voice": voice_provider(true)}}),
    )
    .await;
    // A wrong token, none: 401; a foreign origin: 403 without CORS.
    for wrong in [Some(tamper(&token)), None] {
        let r = voice_token(&s, &session, wrong.as_deref(), Some(SITE)).await;
        assert_eq!(r.status, 401, "{}", text(&r));
    }
    let r = voice_token(&s, &session, Some(&token), Some("https://evil.example")).await;
    assert_eq!(r.status, 403, "{}", text(&r));
    assert!(r.headers.get("access-control-allow-origin").is_none());

    let r = voice_token(&s, &session, Some(&token), Some(SITE)).await;
    let body = expect(&r, 200);
    assert_eq!(r.headers["access-control-allow-origin"], SITE);
    assert!(!text(&r).contains(API_SECRET));
    let identity = format!("web_{session}");
    assert_eq!(body["identity"], json!(identity));
    let jwt = str_of(&body["token"]);
    let header = jsonwebtoken::decode_header(jwt).expect("a JWT header");
    assert_eq!(header.alg, Algorithm::HS256);
    assert_eq!(header.typ.as_deref(), Some("JWT"));
    assert_eq!(header.cty.as_deref(), Some("twilio-fpa;v=1"));
    let claims = decode(jwt, API_SECRET).expect("signed with the API key secret");
    assert_eq!(claims["iss"], json!(API_KEY), "{claims}");
    assert_eq!(claims["sub"], json!(ACCOUNT), "{claims}");
    let iat = claims["iat"].as_i64().expect("iat");
    let exp = claims["exp"].as_i64().expect("exp");
    assert_eq!(exp - iat, 600, "ten minutes: {claims}");
    assert_eq!(claims["jti"], json!(format!("{API_KEY}-{iat}")), "{claims}");
    assert_eq!(claims["grants"]["identity"], json!(identity), "{claims}");
    assert_eq!(
        claims["grants"]["voice"]["outgoing"]["application_sid"],
        json!(APP),
        "{claims}"
    );
    assert_eq!(
        claims["grants"]["voice"]["incoming"]["allow"],
        json!(false),
        "{claims}"
    );
    assert_eq!(time_of(&body["expiresAt"]).timestamp(), exp);
    assert!(
        decode(jwt, "another-secret").is_err(),
        "no other secret verifies it"
    );
    let org = expect(&s.ts.get(&s.admin, "/v1/org").await, 200);
    assert!(!org.to_string().contains(API_SECRET), "write-only");

    // The secret stays behind when the account moves: 404 until it is given again.
    let mut moved = voice_provider(false);
    moved["accountSid"] = json!(OTHER_ACCOUNT);
    set_org(&s.ts, &s.admin, &json!({"providers": {"voice": moved}})).await;
    let r = voice_token(&s, &session, Some(&token), Some(SITE)).await;
    assert_eq!(r.status, 404, "{}", text(&r));

    // Web chat's voice off: 404 in words.
    set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"voice": voice_provider(true)},
                                     "webchat": {"voice": false}}),
    )
    .await;
    let r = voice_token(&s, &session, Some(&token), Some(SITE)).await;
    assert_eq!(r.status, 404, "{}", text(&r));
    assert!(text(&r).contains("voice"), "{}", text(&r));
}

/// What Twilio posts to the voice URL for a call placed by client `identity`.
async fn browser_call(s: &Site, call_sid: &str, identity: &str) -> String {
    let path = format!("/v1/providers/twilio/{}/voice/inbound", s.org);
    let from = format!("client:{identity}");
    let params = [
        ("AccountSid", ACCOUNT),
        ("ApplicationSid", APP),
        ("CallSid", call_sid),
        ("From", from.as_str()),
        ("To", ""),
        ("Caller", from.as_str()),
        ("CallStatus", "ringing"),
        ("Direction", "inbound"),
    ];
    text(&signed_post(s, &path, &params).await)
}

/// POSTs `params` to `path` signed as Twilio signs with the auth token; expects 200.
async fn signed_post(s: &Site, path: &str, params: &[(&str, &str)]) -> Response {
    let signature = twilio_signature(AUTH_TOKEN, &format!("{PUBLIC_URL}{path}"), params);
    let body = serde_urlencoded::to_string(params)
        .expect("form")
        .into_bytes();
    let r =
        s.ts.post_with_headers(
            path,
            &[("x-twilio-signature", signature)],
            "application/x-www-form-urlencoded",
            body,
        )
        .await;
    assert_eq!(r.status, 200, "{path}: {}", text(&r));
    r
}

/// The call id in a relay TwiML's `ConversationRelay url`.
fn relay_call(doc: &str, org: &str) -> String {
    let prefix = format!("wss://engaged.test/v1/providers/twilio/{org}/voice/");
    let start = doc
        .find(&prefix)
        .unwrap_or_else(|| panic!("a relay of this org: {doc}"))
        + prefix.len();
    let end = doc[start..].find("/relay").expect("the relay path") + start;
    doc[start..end].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_from_the_browser_is_answered_with_its_session_then_its_lead() {
    let s = start(true, true).await;
    let hooks = WebhookReceiver::ok().await;
    hooks.register(&s.ts, &s.admin).await;
    let (session, token) = new_session(&s.ts, &s.org).await;

    let doc = browser_call(&s, "CAbrowser0001", &format!("web_{session}")).await;
    assert!(doc.contains("<ConversationRelay"), "{doc}");
    assert!(
        doc.contains("Thanks for calling Acme Solar. How can I help?"),
        "the inbound greeting: {doc}"
    );
    let call = relay_call(&doc, &s.org);
    let record = expect(&s.ts.get(&s.key, &format!("/v1/calls/{call}")).await, 200);
    assert_eq!(record["sessionId"], json!(session), "{record}");
    assert!(record.get("leadId").is_none(), "no lead yet: {record}");
    assert_eq!(record["direction"], json!("INBOUND"), "{record}");
    // It ends: `call.completed` names the session, and no lead.
    let status_path = format!("/v1/providers/twilio/{}/voice/{call}/status", s.org);
    signed_post(
        &s,
        &status_path,
        &[
            ("AccountSid", ACCOUNT),
            ("CallSid", "CAbrowser0001"),
            ("CallStatus", "completed"),
            ("CallDuration", "42"),
        ],
    )
    .await;
    let completed = hooks.wait_event("call.completed").await;
    assert_eq!(completed["callId"], json!(call), "{completed}");
    assert_eq!(completed["sessionId"], json!(session), "{completed}");
    assert!(completed.get("leadId").is_none(), "{completed}");

    // The visitor gives a phone: a lead; the next call carries it.
    let r =
        s.ts.webchat(
            Method::POST,
            &format!("/webchat/{}/sessions/{session}/contact", s.org),
            Some(SITE),
            Some(&token),
            Some(&json!({"name": "Dana Reyes", "phone": "+15125550142", "consent": false})),
        )
        .await;
    let lead = str_of(&expect(&r, 200)["leadId"]).to_string();
    let doc = browser_call(&s, "CAbrowser0002", &format!("web_{session}")).await;
    let call = relay_call(&doc, &s.org);
    let record = expect(&s.ts.get(&s.key, &format!("/v1/calls/{call}")).await, 200);
    assert_eq!(record["leadId"], json!(lead), "{record}");
    assert_eq!(record["sessionId"], json!(session), "{record}");

    // Another organization's session, a stranger's client, a made-up session: refused
    // in words, no relay.
    let globex_admin = s.ts.key("globex", "admin").await;
    let globex = s.ts.org_id("globex").await;
    set_org(
        &s.ts,
        &globex_admin,
        &json!({"webchat": {"enabled": true, "allowedOrigins": [SITE], "voice": true}}),
    )
    .await;
    let (theirs, _) = new_session(&s.ts, &globex).await;
    for (sid, identity) in [
        ("CAbrowser0003", format!("web_{theirs}")),
        ("CAbrowser0004", "alice".to_string()),
        ("CAbrowser0005", "web_wcs_nosuchsession".to_string()),
        ("CAbrowser0006", "web_".to_string()),
    ] {
        let doc = browser_call(&s, sid, &identity).await;
        assert!(!doc.contains("ConversationRelay"), "{identity}: {doc}");
        assert!(doc.contains("cannot be taken"), "{identity}: {doc}");
        assert!(doc.contains("<Hangup"), "{identity}: {doc}");
    }

    // Web chat's voice off: this session's calls are refused too.
    set_org(&s.ts, &s.admin, &json!({"webchat": {"voice": false}})).await;
    let doc = browser_call(&s, "CAbrowser0007", &format!("web_{session}")).await;
    assert!(!doc.contains("ConversationRelay"), "{doc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_voice_sdk_is_served_from_the_binary_with_its_licence() {
    let ts = TestServer::start().await;
    let vendored = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/vendor/twilio-voice-sdk/twilio.min.js"
    ))
    .expect("the vendored SDK");
    let path = format!("/webchat/{}", engaged::api::webchat_voice::SDK_FILE);
    assert_eq!(path, "/webchat/twilio-voice-2.18.5.js");
    let r = ts.webchat(Method::GET, &path, None, None, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/javascript; charset=utf-8");
    assert!(r.headers["cache-control"]
        .to_str()
        .unwrap()
        .contains("max-age=31536000"));
    assert_eq!(r.body.len(), vendored.len());
    assert!(r.body.starts_with(&vendored[..4096]) && r.body[..] == vendored[..]);
    let license = r.headers["link"].to_str().unwrap().to_string();
    assert!(
        license.contains("twilio-voice-2.18.5.LICENSE.md"),
        "{license}"
    );

    let r = ts
        .webchat(
            Method::GET,
            "/webchat/twilio-voice-2.18.5.LICENSE.md",
            None,
            None,
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/plain; charset=utf-8");
    assert!(text(&r).contains("Apache License"), "the licence");
    // Another version is no file of ours.
    let r = ts
        .webchat(
            Method::GET,
            "/webchat/twilio-voice-1.0.0.js",
            None,
            None,
            None,
        )
        .await;
    assert_eq!(r.status, 404);
    // The widget knows where to find it.
    let r = ts
        .webchat(Method::GET, "/webchat.js", None, None, None)
        .await;
    assert!(text(&r).contains("twilio-voice-2.18.5.js"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_sets_the_browsers_keys_and_keeps_them_when_left_empty() {
    let s = start(false, true).await;
    let ts = &s.ts;
    let password = ts.user("acme", "boss@example.com", "Bo", "admin").await;
    let boss = ts.sign_in("boss@example.com", &password).await;
    let save = |extra: Vec<(&'static str, &'static str)>| {
        let mut form = vec![
            ("csrf", boss.csrf.clone()),
            ("sms-kind", "sandbox".into()),
            ("voice-kind", "twilio".into()),
            ("voice-accountSid", ACCOUNT.into()),
            ("voice-from", FROM.into()),
            ("email-kind", "sandbox".into()),
        ];
        form.extend(extra.into_iter().map(|(k, v)| (k, v.to_string())));
        form
    };
    let r = providers_form(
        ts,
        &boss.cookie,
        save(vec![
            ("voice-apiKeySid", API_KEY),
            ("voice-apiKeySecret", API_SECRET),
            ("voice-twimlAppSid", APP),
        ]),
    )
    .await;
    assert_eq!(r.status, 303, "{}", text(&r));
    let voice = |view: Value| view["providers"]["voice"].clone();
    let view = voice(expect(&ts.get(&s.admin, "/v1/org").await, 200));
    assert_eq!(view["apiKeySid"], json!(API_KEY), "{view}");
    assert_eq!(view["apiKeySecretSet"], json!(true), "{view}");
    assert_eq!(view["twimlAppSid"], json!(APP), "{view}");
    // The page shows the SIDs, never the secret.
    let page = ts
        .console(
            Method::GET,
            "/console/settings/providers",
            Some(&boss.cookie),
            None,
            &[],
        )
        .await;
    let html = text(&page);
    assert!(
        html.contains(API_KEY) && html.contains(APP),
        "the SIDs shown"
    );
    assert!(!html.contains(API_SECRET), "the secret never shown");
    // Saved again with the fields empty: kept.
    let r = providers_form(ts, &boss.cookie, save(vec![])).await;
    assert_eq!(r.status, 303, "{}", text(&r));
    assert_eq!(voice(expect(&ts.get(&s.admin, "/v1/org").await, 200)), view);
    // A bad SID is refused and changes nothing.
    let r = providers_form(ts, &boss.cookie, save(vec![("voice-apiKeySid", "SK42")])).await;
    assert_eq!(r.status, 303, "back to the page with the refusal");
    assert_eq!(voice(expect(&ts.get(&s.admin, "/v1/org").await, 200)), view);
}

/// POSTs the console's providers form.
async fn providers_form(ts: &TestServer, cookie: &str, form: Vec<(&str, String)>) -> Response {
    let fields: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ts.console(
        Method::POST,
        "/console/settings/providers",
        Some(cookie),
        Some(&ts.origin()),
        &fields,
    )
    .await
}
