//! Profiles: `PUT`/`GET`/`DELETE /v1/profiles/{name}` and `GET /v1/profiles`. The
//! answer's shape and defaults, whole replacement, the scopes (admin writes, read
//! reads), the organization boundary, and every validation rule with its exact message;
//! a refused PUT changes nothing.

use serde_json::{json, Value};

use engaged::testkit::Org;

use crate::answers::*;
use crate::engagement::*;

type Setup = Org;

async fn start() -> Setup {
    Org::start().await
}

/// A profile that uses every member.
fn full() -> Value {
    json!({
        "instructions": "You are Sam, a friendly assistant for Acme Solar. Qualify the lead.",
        "cadence": [
            sms_step("0s", "Hi {{firstName}}, Sam from {{business.name}} here. Still interested?"),
            email_step("1d", "Your solar quote, {{firstName}}", "Hi {{firstName}} {{lastName}}, ..."),
            {"after": "2d", "channel": "voice", "text": "Hi {{firstName}}, this is Sam calling."},
        ],
        "replyDelay": "10s",
        "dispositions": [{"id": "interested", "name": "Interested", "description": "wants a quote or a visit"}],
        "transferNumber": "+15550100001",
        "fallbackTransferNumber": "+15550100002",
        "voiceGreeting": "Hi, this is Sam from Acme Solar.",
    })
}

/// `full()` with `member` replaced by `value` (or removed when `value` is null).
fn full_with(member: &str, value: Value) -> Value {
    let mut body = full();
    if value.is_null() {
        body.as_object_mut().unwrap().remove(member);
    } else {
        body[member] = value;
    }
    body
}

/// Asserts a refused PUT's 400: the first refusal's exact `message`, and `errors`
/// listing every refusal, the same one first.
fn assert_put_refused(r: &engaged::testkit::Response, message: &str) -> Value {
    let body = expect(r, 400);
    assert_eq!(body["message"], json!(message), "{body}");
    assert_eq!(body["errors"][0]["message"], json!(message), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "{body}");
    body
}

/// PUTs `body` to a fresh profile name and asserts the exact 400 message.
async fn assert_refused(s: &Setup, body: &Value, message: &str) {
    let r = s.ts.put(&s.admin, &profile_path("refused"), body).await;
    assert_put_refused(&r, message);
    assert_error(
        &s.ts.get(&s.read, &profile_path("refused")).await,
        404,
        "Profile not found",
    );
}

/// A cadence whose step `index` (0-based) is `step`, after valid sms steps.
fn cadence_with(index: usize, step: Value) -> Value {
    let mut steps: Vec<Value> = (0..index).map(|_| sms_step("1h", "ok")).collect();
    steps.push(step);
    json!({"instructions": "x", "cadence": steps})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_answers_the_whole_profile() {
    let s = start().await;
    let profile = put_profile(&s.ts, &s.admin, "solar", &full()).await;
    let mut expected = full();
    expected["name"] = json!("solar");
    expected["displayName"] = json!("solar");
    expected["calendar"] = Value::Null;
    expected["screeningReply"] = Value::Null;
    expected["voicemail"] = Value::Null;
    expected["transfer"] = Value::Null;
    expected["tests"] = json!([]);
    expected["requireTestsPass"] = json!(false);
    for field in ["createdAt", "updatedAt"] {
        time_of(&profile[field]);
        expected[field] = profile[field].clone();
    }
    assert_eq!(profile, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_without_a_body_is_400_and_leaves_the_profile_whole() {
    let s = start().await;
    let before = put_profile(&s.ts, &s.admin, "solar", &full()).await;
    let r =
        s.ts.request(
            hyper::Method::PUT,
            &profile_path("solar"),
            Some(&s.admin),
            Some("application/json"),
            Vec::new(),
        )
        .await;
    assert_error(&r, 400, "Request body must be a JSON object");
    let after = s.ts.get(&s.read, &profile_path("solar")).await.json();
    assert_eq!(after, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omitted_members_take_their_defaults() {
    let s = start().await;
    let profile = put_profile(
        &s.ts,
        &s.admin,
        "bare",
        &json!({"instructions": "Be brief.", "cadence": [sms_step("0s", "Hi")]}),
    )
    .await;
    assert_eq!(profile["name"], json!("bare"));
    assert_eq!(profile["replyDelay"], json!("5s"));
    assert_eq!(profile["dispositions"], json!([]));
    for optional in ["transferNumber", "fallbackTransferNumber", "voiceGreeting"] {
        assert!(
            profile.get(optional).is_none_or(Value::is_null),
            "{optional} is absent or null when not given: {profile}"
        );
    }
    assert_eq!(
        profile["cadence"],
        json!([{"after": "0s", "channel": "sms", "text": "Hi"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_returns_what_put_answered() {
    let s = start().await;
    let put = put_profile(&s.ts, &s.admin, "solar", &full()).await;
    let got = expect(&s.ts.get(&s.read, &profile_path("solar")).await, 200);
    assert_eq!(got, put);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_replaces_the_whole_profile() {
    let s = start().await;
    let first = put_profile(&s.ts, &s.admin, "solar", &full()).await;
    let second = put_profile(
        &s.ts,
        &s.admin,
        "solar",
        &json!({"instructions": "Shorter.", "cadence": [sms_step("5m", "Only step")]}),
    )
    .await;
    assert_eq!(second["instructions"], json!("Shorter."));
    assert_eq!(
        second["cadence"],
        json!([{"after": "5m", "channel": "sms", "text": "Only step"}])
    );
    assert_eq!(
        second["replyDelay"],
        json!("5s"),
        "an omitted member is reset, not kept"
    );
    assert_eq!(second["dispositions"], json!([]));
    for dropped in ["transferNumber", "fallbackTransferNumber", "voiceGreeting"] {
        assert!(
            second.get(dropped).is_none_or(Value::is_null),
            "{dropped} is gone: {second}"
        );
    }
    assert_eq!(second["createdAt"], first["createdAt"], "createdAt is kept");
    assert!(time_of(&second["updatedAt"]) >= time_of(&first["updatedAt"]));
    assert_eq!(
        expect(&s.ts.get(&s.read, &profile_path("solar")).await, 200),
        second
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_profile_is_404() {
    let s = start().await;
    assert_error(
        &s.ts.get(&s.read, &profile_path("ghost")).await,
        404,
        "Profile not found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_display_name_is_kept_until_changed_and_goes_with_the_profile() {
    let s = start().await;
    let named = full_with("displayName", json!("  Spring Solar Push "));
    let profile = put_profile(&s.ts, &s.admin, "solar", &named).await;
    assert_eq!(
        profile["displayName"],
        json!("Spring Solar Push"),
        "trimmed"
    );
    // A PUT that leaves it out keeps it; the list shows it too.
    let again = put_profile(&s.ts, &s.admin, "solar", &full()).await;
    assert_eq!(again["displayName"], json!("Spring Solar Push"));
    let listed = expect(&s.ts.get(&s.read, "/v1/profiles").await, 200);
    assert_eq!(
        listed["profiles"][0]["displayName"],
        json!("Spring Solar Push")
    );
    // Too long or a control character: refused, nothing changed.
    for bad in [json!("x".repeat(81)), json!("Spring\nSolar"), json!(5)] {
        let r =
            s.ts.put(
                &s.admin,
                &profile_path("solar"),
                &full_with("displayName", bad),
            )
            .await;
        assert_put_refused(&r, "Invalid format for field: displayName");
    }
    let kept = expect(&s.ts.get(&s.read, &profile_path("solar")).await, 200);
    assert_eq!(kept["displayName"], json!("Spring Solar Push"));
    // Blank: named by its id again.
    let cleared = put_profile(
        &s.ts,
        &s.admin,
        "solar",
        &full_with("displayName", json!("")),
    )
    .await;
    assert_eq!(cleared["displayName"], json!("solar"));
    // Deleted and made again: the old name does not come back.
    put_profile(&s.ts, &s.admin, "solar", &named).await;
    s.ts.delete(&s.admin, &profile_path("solar")).await;
    let fresh = put_profile(&s.ts, &s.admin, "solar", &full()).await;
    assert_eq!(fresh["displayName"], json!("solar"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_answers_its_message_then_the_profile_is_gone() {
    let s = start().await;
    put_profile(&s.ts, &s.admin, "solar", &full()).await;
    let r = s.ts.delete(&s.admin, &profile_path("solar")).await;
    assert_eq!(
        expect(&r, 200),
        json!({"message": "Profile deleted successfully."})
    );
    assert_error(
        &s.ts.get(&s.read, &profile_path("solar")).await,
        404,
        "Profile not found",
    );
    assert_error(
        &s.ts.delete(&s.admin, &profile_path("solar")).await,
        404,
        "Profile not found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_holds_every_profile_sorted_by_name() {
    let s = start().await;
    assert_eq!(
        expect(&s.ts.get(&s.read, "/v1/profiles").await, 200),
        json!({"profiles": [], "nextToken": null})
    );
    let mut put = Vec::new();
    for name in ["roofing", "hvac", "solar"] {
        put.push(put_profile(&s.ts, &s.admin, name, &full()).await);
    }
    let listed = expect(&s.ts.get(&s.read, "/v1/profiles").await, 200);
    put.sort_by(|a, b| str_of(&a["name"]).cmp(str_of(&b["name"])));
    assert_eq!(listed, json!({ "profiles": put, "nextToken": null }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_and_delete_need_an_admin_key_and_get_a_read_key() {
    let s = start().await;
    assert_error(
        &s.ts.put(&s.write, &profile_path("solar"), &full()).await,
        403,
        "Forbidden",
    );
    put_profile(&s.ts, &s.admin, "solar", &full()).await;
    assert_error(
        &s.ts.delete(&s.write, &profile_path("solar")).await,
        403,
        "Forbidden",
    );
    expect(&s.ts.get(&s.read, &profile_path("solar")).await, 200);
    expect(&s.ts.get(&s.read, "/v1/profiles").await, 200);
    let anonymous =
        s.ts.request(
            hyper::Method::GET,
            &profile_path("solar"),
            None,
            None,
            Vec::new(),
        )
        .await;
    assert_error(&anonymous, 401, "Unauthorized");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_belong_to_one_organization() {
    let s = start().await;
    put_profile(&s.ts, &s.admin, "solar", &full()).await;
    let other_admin = s.ts.key("globex", "admin").await;
    assert_error(
        &s.ts.get(&other_admin, &profile_path("solar")).await,
        404,
        "Profile not found",
    );
    assert_eq!(
        expect(&s.ts.get(&other_admin, "/v1/profiles").await, 200),
        json!({"profiles": [], "nextToken": null})
    );
    assert_error(
        &s.ts.delete(&other_admin, &profile_path("solar")).await,
        404,
        "Profile not found",
    );
    // The same name in the other organization is another profile.
    put_profile(
        &s.ts,
        &other_admin,
        "solar",
        &json!({"instructions": "Globex.", "cadence": []}),
    )
    .await;
    let ours = expect(&s.ts.get(&s.read, &profile_path("solar")).await, 200);
    assert_eq!(ours["instructions"], full()["instructions"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_duration_names_the_step() {
    let s = start().await;
    for after in [json!("5"), json!("soon"), json!("-1s"), json!(""), json!(5)] {
        let body = cadence_with(0, json!({"after": after, "channel": "sms", "text": "Hi"}));
        assert_refused(&s, &body, "Invalid format for field: cadence[0].after").await;
    }
    let body = cadence_with(2, json!({"after": "1.5h", "channel": "sms", "text": "Hi"}));
    assert_refused(&s, &body, "Invalid format for field: cadence[2].after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_needs_a_text() {
    let s = start().await;
    for step in [
        json!({"after": "1h", "channel": "sms"}),
        json!({"after": "1h", "channel": "sms", "text": 7}),
        json!({"after": "1h", "channel": "sms", "text": null}),
    ] {
        let body = cadence_with(1, step);
        assert_refused(&s, &body, "Invalid format for field: cadence[1].text").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_channel_is_sms_email_or_voice() {
    let s = start().await;
    for channel in [json!("fax"), json!(1), json!(null)] {
        let body = cadence_with(
            0,
            json!({"after": "0s", "channel": channel, "text": "Hi", "subject": "S"}),
        );
        assert_refused(&s, &body, "Invalid format for field: cadence[0].channel").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_step_needs_a_subject() {
    let s = start().await;
    let body = cadence_with(0, json!({"after": "0s", "channel": "email", "text": "Hi"}));
    assert_refused(&s, &body, "Invalid format for field: cadence[0].subject").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cadence_holds_at_most_20_steps() {
    let s = start().await;
    let steps = |n: usize| -> Value {
        json!({"instructions": "x", "cadence": (0..n).map(|i| sms_step("1h", &format!("step {i}"))).collect::<Vec<_>>()})
    };
    let twenty = put_profile(&s.ts, &s.admin, "twenty", &steps(20)).await;
    assert_eq!(twenty["cadence"].as_array().map(Vec::len), Some(20));
    assert_refused(&s, &steps(21), "cadence must hold at most 20 steps").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_placeholder_is_refused_in_a_text_or_a_subject() {
    let s = start().await;
    let in_text = cadence_with(0, sms_step("0s", "Hi {{nickname}}!"));
    assert_refused(&s, &in_text, "Unknown placeholder: {{nickname}}").await;
    let in_subject = cadence_with(0, email_step("0s", "For {{nickname}}", "Hi"));
    assert_refused(&s, &in_subject, "Unknown placeholder: {{nickname}}").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_placeholder_is_accepted() {
    let s = start().await;
    let text = "{{firstName}} {{lastName}} {{phone}} {{email}} {{business.name}} \
                {{additionalInfo.city}} {{additionalInfo.anything_at_all}}";
    let body = json!({"instructions": "x", "cadence": [
        sms_step("0s", text),
        email_step("1h", "{{firstName}} in {{additionalInfo.city}}", text),
    ]});
    let profile = put_profile(&s.ts, &s.admin, "placeholders", &body).await;
    assert_eq!(
        profile["cadence"][0]["text"],
        json!(text),
        "stored unrendered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposition_ids_are_unique() {
    let s = start().await;
    let body = full_with(
        "dispositions",
        json!([
            {"id": "interested", "name": "Interested", "description": "wants a quote"},
            {"id": "interested", "name": "Very interested", "description": "wants it now"},
        ]),
    );
    assert_refused(&s, &body, "Duplicate disposition id: interested").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_transfer_number_is_refused() {
    let s = start().await;
    for number in [json!("call me"), json!("+1"), json!(15550100001u64)] {
        let body = full_with("transferNumber", number);
        assert_refused(&s, &body, "Invalid format for field: transferNumber").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_numbers_are_normalised_to_e164() {
    let s = start().await;
    // Like lead phones: a leading `+`, then digits with spaces, parentheses, hyphens.
    let mut body = full_with("transferNumber", json!("+1 555-010-0001"));
    body["fallbackTransferNumber"] = json!("+1 (555) 010-0002");
    let profile = put_profile(&s.ts, &s.admin, "solar", &body).await;
    assert_eq!(profile["transferNumber"], json!("+15550100001"));
    assert_eq!(profile["fallbackTransferNumber"], json!("+15550100002"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_reply_delay_is_refused() {
    let s = start().await;
    for delay in [json!("soon"), json!("5"), json!(5)] {
        let body = full_with("replyDelay", delay);
        assert_refused(&s, &body, "Invalid format for field: replyDelay").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_member_is_refused() {
    let s = start().await;
    let body = full_with("foo", json!("bar"));
    assert_refused(&s, &body, "Unknown field: foo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_are_a_string() {
    let s = start().await;
    for value in [json!(42), json!(["a"]), json!({"text": "a"})] {
        let body = full_with("instructions", value);
        assert_refused(&s, &body, "Invalid format for field: instructions").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_put_lists_every_refusal_beside_the_first() {
    let s = start().await;
    let bad = json!({"instructions": "x", "replyDelay": "soon", "cadence": [
        sms_step("0s", "ok"),
        sms_step("2 days", ""),
        sms_step("1d", "Hi {{lead.fist_name}}"),
    ]});
    let r = s.ts.put(&s.admin, &profile_path("solar"), &bad).await;
    let body = assert_put_refused(&r, "Invalid format for field: cadence[1].after");
    assert_eq!(
        body["errors"],
        json!([
            {"field": "cadence[1].after", "message": "Invalid format for field: cadence[1].after"},
            {"field": "cadence[1].text", "message": "Invalid format for field: cadence[1].text"},
            {"field": "cadence[2].text", "message": "Unknown placeholder: {{lead.fist_name}}"},
            {"field": "replyDelay", "message": "Invalid format for field: replyDelay"},
        ])
    );
    // A member of the wrong type is the one refusal listed.
    let r =
        s.ts.put(
            &s.admin,
            &profile_path("solar"),
            &json!({"cadence": 3, "replyDelay": "soon"}),
        )
        .await;
    let body = assert_put_refused(&r, "Invalid format for field: cadence");
    assert_eq!(body["errors"].as_array().map(Vec::len), Some(1));
    assert_error(
        &s.ts.get(&s.read, &profile_path("solar")).await,
        404,
        "Profile not found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_put_changes_nothing() {
    let s = start().await;
    let before = put_profile(&s.ts, &s.admin, "solar", &full()).await;
    let bad = json!({"instructions": "New", "cadence": [sms_step("0s", "Hi {{nickname}}")]});
    assert_put_refused(
        &s.ts.put(&s.admin, &profile_path("solar"), &bad).await,
        "Unknown placeholder: {{nickname}}",
    );
    let after = expect(&s.ts.get(&s.read, &profile_path("solar")).await, 200);
    assert_eq!(after, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_are_at_most_20000_characters() {
    let s = start().await;
    let body = full_with("instructions", json!("é".repeat(20_001)));
    assert_refused(&s, &body, "Field too long: instructions (at most 20000)").await;
    put_profile(
        &s.ts,
        &s.admin,
        "ok",
        &full_with("instructions", json!("é".repeat(20_000))),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_text_is_bounded_by_its_channel() {
    let s = start().await;
    for (step, message) in [
        (
            sms_step("0s", &"x".repeat(1_601)),
            "Field too long: cadence[1].text (at most 1600)",
        ),
        (
            sms_step("0s", &"x".repeat(1_531)),
            "Too long for one SMS: 11 segments (at most 10: 1530 characters, or 670 with an emoji or a character outside the GSM alphabet)",
        ),
        (
            email_step("0s", "Quote", &"x".repeat(100_001)),
            "Field too long: cadence[1].text (at most 100000)",
        ),
        (
            email_step("0s", &"x".repeat(1_001), "Hello"),
            "Field too long: cadence[1].subject (at most 1000)",
        ),
        (
            json!({"after": "0s", "channel": "voice", "text": "x".repeat(2_001)}),
            "Field too long: cadence[1].text (at most 2000)",
        ),
    ] {
        assert_refused(&s, &cadence_with(1, step), message).await;
    }
    assert_refused(
        &s,
        &full_with("voiceGreeting", json!("x".repeat(2_001))),
        "Field too long: voiceGreeting (at most 2000)",
    )
    .await;
    let at_bounds = json!({"cadence": [
        sms_step("0s", &"x".repeat(1_530)),
        email_step("1d", &"s".repeat(1_000), &"x".repeat(100_000)),
        {"after": "1d", "channel": "voice", "text": "x".repeat(2_000)},
    ], "voiceGreeting": "x".repeat(2_000)});
    put_profile(&s.ts, &s.admin, "ok", &at_bounds).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_has_at_most_50_dispositions() {
    let s = start().await;
    let many = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"id": format!("d{i}"), "name": format!("D {i}")}))
            .collect()
    };
    assert_refused(
        &s,
        &full_with("dispositions", many(51)),
        "Too many: dispositions (at most 50)",
    )
    .await;
    put_profile(&s.ts, &s.admin, "ok", &full_with("dispositions", many(50))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_has_at_most_200_profiles_and_lists_them_in_pages() {
    let s = start().await;
    let small = json!({"instructions": "Be brief."});
    for i in 0..200 {
        put_profile(&s.ts, &s.admin, &format!("p{i:03}"), &small).await;
    }
    // Not a member's refusal: the write's, `message` alone.
    let r = s.ts.put(&s.admin, &profile_path("refused"), &small).await;
    assert_error(&r, 400, "Too many: profiles (at most 200)");
    // Replacing one of the 200 is fine.
    put_profile(&s.ts, &s.admin, "p000", &small).await;
    // Without `limit`: the first 100, then the rest by `nextToken`.
    let first = expect(&s.ts.get(&s.read, "/v1/profiles").await, 200);
    assert_eq!(first["profiles"].as_array().unwrap().len(), 100);
    assert_eq!(first["profiles"][0]["name"], json!("p000"));
    let token = first["nextToken"]
        .as_str()
        .expect("a nextToken")
        .to_string();
    let rest = expect(
        &s.ts
            .get(
                &s.read,
                &format!("/v1/profiles?limit=1000&nextToken={token}"),
            )
            .await,
        200,
    );
    assert_eq!(rest["profiles"].as_array().unwrap().len(), 100);
    assert_eq!(rest["profiles"][0]["name"], json!("p100"));
    assert_eq!(rest["nextToken"], Value::Null);
    let small_page = expect(&s.ts.get(&s.read, "/v1/profiles?limit=2").await, 200);
    assert_eq!(small_page["profiles"].as_array().unwrap().len(), 2);
    assert_error(
        &s.ts.get(&s.read, "/v1/profiles?limit=0").await,
        400,
        "limit must be an integer between 1 and 1000",
    );
    assert_error(
        &s.ts.get(&s.read, "/v1/profiles?nextToken=forged").await,
        400,
        "Invalid nextToken",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_is_not_a_profile_name() {
    let s = start().await;
    let r = s.ts.put(&s.admin, &profile_path("new"), &full()).await;
    assert_put_refused(&r, "Invalid format for field: name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_profiles_ends_past_a_mebibyte() {
    let s = start().await;
    let big = json!({"cadence": (0..6)
        .map(|i| email_step(&format!("{i}d"), "Quote", &"x".repeat(100_000)))
        .collect::<Vec<_>>()});
    for name in ["a", "b", "c"] {
        put_profile(&s.ts, &s.admin, name, &big).await;
    }
    let first = expect(&s.ts.get(&s.read, "/v1/profiles").await, 200);
    let names: Vec<&Value> = first["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["name"])
        .collect();
    assert_eq!(
        names,
        [&json!("a"), &json!("b")],
        "600 KB each: two, then a token"
    );
    let token = first["nextToken"].as_str().expect("a nextToken");
    let rest = expect(
        &s.ts
            .get(&s.read, &format!("/v1/profiles?nextToken={token}"))
            .await,
        200,
    );
    assert_eq!(rest["profiles"][0]["name"], json!("c"));
    assert_eq!(rest["nextToken"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposition_fields_are_bounded() {
    let s = start().await;
    for (disposition, message) in [
        (
            json!({"id": "x".repeat(201), "name": "N"}),
            "Field too long: dispositions[0].id (at most 200)",
        ),
        (
            json!({"id": "i", "name": "x".repeat(201)}),
            "Field too long: dispositions[0].name (at most 200)",
        ),
        (
            json!({"id": "i", "name": "N", "description": "x".repeat(1_001)}),
            "Field too long: dispositions[0].description (at most 1000)",
        ),
    ] {
        assert_refused(
            &s,
            &full_with("dispositions", json!([disposition])),
            message,
        )
        .await;
    }
}
