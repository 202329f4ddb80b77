//! Replays (`POST /v1/profiles/{name}/replays`, `GET /v1/replays[/{id}]`, cancel): a
//! draft of a profile tried on the leads' real past conversations, against the test
//! kit's fake model answering from its instructions (`fake-model:` lines), so a change
//! of the draft changes the answers deterministically. A draft that books flags
//! `action_changed` with `book_meeting` where the lead asked for a time; answers past
//! 1,600 characters flag `too_long`; the leads' events, messages and meetings are the
//! same bytes after a replay; one replay at a time; cancel; a draft PUT would refuse is
//! refused before any model request; the draft's test conversations are judged, and
//! `requireTestsPass` refuses a save whose tests fail (422).

use std::time::Duration;

use serde_json::{json, Value};

use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::{poll, Org, WAIT};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;

const INSTRUCTIONS: &str = "You are Sam from Acme Solar. Be brief and friendly.";
const BOOKS: &str = "fake-model: call book_meeting when the lead says \"time\"";

struct Setup {
    acme: Org,
    model: FakeModel,
}

impl std::ops::Deref for Setup {
    type Target = Org;

    fn deref(&self) -> &Org {
        &self.acme
    }
}

/// Two leads of profile "assist", the assistant off for them (nothing answers live):
/// each wrote "What time can we talk?", was answered, then wrote "ok thanks".
async fn start() -> Setup {
    let acme = Org::start().await;
    let model = FakeModel::start().await;
    let (ts, key, admin) = (&acme.ts, &acme.write, &acme.admin);
    set_business(ts, admin).await;
    set_org(ts, admin, &model.settings()).await;
    put_profile(ts, admin, "assist", &json!({"instructions": INSTRUCTIONS})).await;
    for (id, phone) in [("L1", "+15551230001"), ("L2", "+15551230002")] {
        ts.create_lead(
            key,
            &json!({"id": id, "firstName": "Ada", "phone": phone, "customerProfile": "assist"}),
        )
        .await;
        expect(
            &ts.patch(key, &lead_path(id), &json!({"isAiOn": false}))
                .await,
            200,
        );
        let path = format!("{}/messages", lead_path(id));
        for (owner, text) in [
            ("lead", "What time can we talk?"),
            ("user", "Thanks, we will be in touch."),
            ("lead", "ok thanks"),
        ] {
            let sent = expect(
                &ts.post(
                    key,
                    &path,
                    &json!({"owner": owner, "channel": "sms", "content": {"text": text}}),
                )
                .await,
                201,
            );
            if owner == "user" {
                wait_settled(ts, key, id, &sent["id"]).await;
            }
        }
    }
    Setup { acme, model }
}

fn draft(instructions: &str) -> Value {
    json!({"instructions": instructions})
}

/// Starts a replay; answers the 202's body.
async fn replay(s: &Setup, body: &Value) -> Value {
    expect(
        &s.ts
            .post(&s.write, "/v1/profiles/assist/replays", body)
            .await,
        202,
    )
}

/// Waits until the replay `id` is no longer running; answers it.
async fn finished(s: &Setup, id: &Value) -> Value {
    let path = format!("/v1/replays/{}", str_of(id));
    let (ts, key) = (&s.ts, s.write.as_str());
    poll("the replay to finish", WAIT * 2, || {
        let path = path.clone();
        async move {
            let r = expect(&ts.get(key, &path).await, 200);
            if r["status"] == json!("running") {
                Err(r["progress"].to_string())
            } else {
                Ok(r)
            }
        }
    })
    .await
}

/// What a lead holds that a replay must not change: the lead, its events (messages
/// and tool calls among them), its engagement, and the organization's meetings.
async fn state(s: &Setup) -> Vec<String> {
    let mut out = Vec::new();
    for id in ["L1", "L2"] {
        out.push(s.ts.get(&s.write, &lead_path(id)).await.text());
        out.push(serde_json::to_string(&all_events(&s.ts, &s.write, id).await).unwrap());
        out.push(
            s.ts.get(&s.write, &format!("{}/engagement", lead_path(id)))
                .await
                .text(),
        );
    }
    out.push(s.ts.get(&s.write, "/v1/meetings").await.text());
    out
}

fn turns(replay: &Value) -> Vec<Value> {
    replay["conversations"]
        .as_array()
        .expect("conversations")
        .iter()
        .flat_map(|c| c["turns"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_that_books_flags_the_turns_where_a_lead_asked_for_a_time_and_changes_nothing() {
    let s = start().await;
    let before = state(&s).await;
    let body = json!({"draft": {
        "instructions": format!("{INSTRUCTIONS}\n{BOOKS}"),
        "tests": [
            {"name": "books", "turns": ["Any time tomorrow?"], "expect": [{"turn": 1, "tool": "book_meeting"}]},
            {"name": "never opts out", "turns": ["hello"], "expect": [
                {"turn": 1, "notTool": "opt_out"}, {"turn": 1, "contains": "guarantee"}]},
        ]},
        "conversations": 5});
    let started = replay(&s, &body).await;
    assert_eq!(started["status"], json!("running"));
    assert_eq!(started["profile"], json!("assist"));
    assert_eq!(
        started["progress"]["total"],
        json!(6),
        "2 leads × 2 turns + 2 test turns"
    );
    let done = finished(&s, &started["id"]).await;
    assert_eq!(done["status"], json!("done"), "{done}");
    assert_eq!(done["progress"], json!({"done": 6, "total": 6}));
    let turns = turns(&done);
    assert_eq!(turns.len(), 4, "{done}");
    for pair in turns.chunks(2) {
        let (asked, thanked) = (&pair[0], &pair[1]);
        assert_eq!(asked["leadText"], json!("What time can we talk?"));
        assert_eq!(
            asked["before"],
            json!({"text": "Thanks, we will be in touch.", "tools": []})
        );
        assert_eq!(
            asked["after"],
            json!({"text": "Done.", "tools": ["book_meeting"]})
        );
        assert_eq!(asked["flags"], json!(["action_changed"]));
        assert_eq!(thanked["leadText"], json!("ok thanks"));
        assert_eq!(thanked["after"]["text"], json!(FakeModel::DEFAULT_TEXT));
        assert_eq!(thanked["flags"], json!([]));
    }
    let summary = &done["summary"];
    assert_eq!(summary["conversations"], json!(2));
    assert_eq!(summary["turns"], json!(4));
    assert_eq!(summary["sameActions"], json!(0.5));
    assert_eq!(summary["flags"]["action_changed"], json!(2));
    assert_eq!(summary["flags"]["too_long"], json!(0));
    assert!(
        summary["modelTokens"].as_u64().unwrap() >= 6 * 15,
        "{summary}"
    );
    assert_eq!(
        done["tests"],
        json!([
            {"name": "books", "passed": true, "failures": []},
            {"name": "never opts out", "passed": false, "failures": [
                "turn 1: expected the answer to contain \u{201c}guarantee\u{201d}; it did not"]},
        ])
    );
    // Every request went out with the draft's instructions, and nothing reached a lead.
    assert!(s
        .model
        .requests()
        .iter()
        .all(|r| r["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains(BOOKS)));
    assert_eq!(
        state(&s).await,
        before,
        "a replay writes nothing to the leads"
    );

    let listed = expect(&s.ts.get(&s.write, "/v1/replays").await, 200);
    assert_eq!(listed["replays"][0]["id"], done["id"]);
    assert!(listed["replays"][0].get("conversations").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_over_the_sms_bound_flag_too_long() {
    let s = start().await;
    let body =
        json!({"draft": draft("fake-model: answer with 1700 characters"), "leadIds": ["L1"]});
    let done = finished(&s, &replay(&s, &body).await["id"]).await;
    let turns = turns(&done);
    assert_eq!(turns.len(), 2);
    for turn in &turns {
        assert_eq!(turn["flags"], json!(["too_long"]), "{turn}");
        let said = turn["after"]["text"].as_str().unwrap();
        assert!(
            !said.is_empty() && said.chars().count() <= 306,
            "the guard cut it: {said}"
        );
    }
    assert_eq!(done["summary"]["flags"]["too_long"], json!(2));
}

/// The lead as it was at each turn: a meeting booked after the conversation is not the
/// lead's next meeting in the replayed turns, though the lead has it today.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meeting_booked_after_a_turn_is_not_in_the_lead_the_model_is_shown() {
    let s = start().await;
    let calendar = engaged::testkit::fixtures::always_open_calendar("Consultation");
    expect(
        &s.ts.put(&s.admin, "/v1/calendars/sales", &calendar).await,
        200,
    );
    let start = (chrono::Utc::now() + chrono::Duration::days(1))
        .date_naive()
        .and_hms_opt(15, 0, 0)
        .unwrap()
        .and_utc()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let booked =
        s.ts.post(
            &s.write,
            &format!("{}/meetings", lead_path("L1")),
            &json!({"calendar": "sales", "start": start}),
        )
        .await;
    expect(&booked, 201);
    let lead = expect(&s.ts.get(&s.write, &lead_path("L1")).await, 200);
    assert!(lead["nextMeetingAt"].is_string(), "{lead}");

    let before = s.model.count();
    let body = json!({"draft": draft(INSTRUCTIONS), "leadIds": ["L1"]});
    let done = finished(&s, &replay(&s, &body).await["id"]).await;
    assert_eq!(turns(&done).len(), 2);
    let asked = &s.model.requests()[before..];
    assert_eq!(asked.len(), 2);
    for request in asked {
        let prompt: String = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect();
        assert!(
            prompt.contains("\"nextMeeting\":null"),
            "the lead as it was, with no meeting yet: {prompt}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replay_runs_at_a_time_and_cancel_stops_it() {
    let s = start().await;
    s.model
        .set_default(Step::text("Slow answer.").delayed(Duration::from_millis(400)));
    let first = replay(&s, &json!({"draft": draft(INSTRUCTIONS)})).await;
    let r =
        s.ts.post(
            &s.write,
            "/v1/profiles/assist/replays",
            &json!({"draft": draft(INSTRUCTIONS)}),
        )
        .await;
    assert_error_status(&r, 409);
    let id = str_of(&first["id"]).to_string();
    let canceled = expect(
        &s.ts
            .post(&s.write, &format!("/v1/replays/{id}/cancel"), &json!({}))
            .await,
        202,
    );
    assert_eq!(canceled["id"], first["id"]);
    let done = finished(&s, &first["id"]).await;
    assert_eq!(done["status"], json!("canceled"), "{done}");
    let progress = &done["progress"];
    assert!(
        progress["done"].as_u64() < progress["total"].as_u64(),
        "{done}"
    );
    // A finished replay cannot be canceled; an unknown one is not found; a new one runs.
    let again =
        s.ts.post(&s.write, &format!("/v1/replays/{id}/cancel"), &json!({}))
            .await;
    assert_error_status(&again, 409);
    let unknown = s.ts.get(&s.write, "/v1/replays/rpl_nothing").await;
    assert_error_status(&unknown, 404);
    replay(
        &s,
        &json!({"draft": draft(INSTRUCTIONS), "leadIds": ["L2"]}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_put_would_refuse_is_refused_before_any_model_request() {
    let s = start().await;
    let refused = |body: Value| {
        let s = &s;
        async move {
            s.ts.post(&s.write, "/v1/profiles/assist/replays", &body)
                .await
        }
    };
    let r = refused(json!({"draft": {"instructions": "x", "replyDelay": "soon"}})).await;
    assert_eq!(r.status, 400);
    let answer = r.json();
    assert_eq!(
        answer["errors"][0]["field"],
        json!("replyDelay"),
        "{answer}"
    );
    let put =
        s.ts.put(
            &s.admin,
            "/v1/profiles/assist",
            &json!({"instructions": "x", "replyDelay": "soon"}),
        )
        .await;
    assert_eq!(
        put.json()["message"],
        answer["message"],
        "refused as PUT refuses it"
    );

    let r = refused(json!({"draft": {"colour": "red"}})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["message"], json!("Unknown field: colour"));
    let r = refused(json!({"draft": draft("x"), "conversations": 201})).await;
    assert_error_status(&r, 400);
    let r = refused(json!({"draft": draft("x"), "leadIds": ["nobody"]})).await;
    assert_error_status(&r, 400);
    let tests = vec![json!({"name": "t", "turns": ["hi"]}); 51];
    let r = refused(json!({"draft": {"instructions": "x", "tests": tests}})).await;
    assert_eq!(r.status, 400);
    let answer = r.json();
    assert!(str_of(&answer["message"]).contains("at most 50 test conversations"));
    assert_eq!(answer["errors"][0]["field"], json!("tests"));
    let r = refused(json!({"conversations": 3})).await;
    assert_error_status(&r, 400);
    assert_eq!(s.model.count(), 0, "no model request for a refused draft");
    let r =
        s.ts.post(
            &s.read,
            "/v1/profiles/assist/replays",
            &json!({"draft": draft("x")}),
        )
        .await;
    assert_error_status(&r, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_tests_pass_refuses_a_save_whose_tests_fail() {
    let s = start().await;
    let tests = json!([{"name": "books when asked", "turns": ["What time works?"],
                        "expect": [{"turn": 1, "tool": "book_meeting"}]}]);
    let booking = json!({"instructions": format!("{INSTRUCTIONS}\n{BOOKS}"),
                         "tests": tests, "requireTestsPass": true});
    let saved = put_profile(&s.ts, &s.admin, "assist", &booking).await;
    assert_eq!(saved["tests"], tests);
    assert_eq!(saved["requireTestsPass"], json!(true));
    let asked = s.model.count();
    assert!(asked >= 1, "the tests ran before the save");

    // The same instructions again: nothing changed, so the tests do not run.
    put_profile(&s.ts, &s.admin, "assist", &booking).await;
    assert_eq!(s.model.count(), asked);

    let forgetful = json!({"instructions": INSTRUCTIONS, "tests": tests, "requireTestsPass": true});
    let r = s.ts.put(&s.admin, "/v1/profiles/assist", &forgetful).await;
    let refused = expect(&r, 422);
    assert_eq!(
        refused["failures"],
        json!(["books when asked: turn 1: expected a call of book_meeting; it called none"])
    );
    assert!(str_of(&refused["message"]).contains("books when asked: turn 1"));
    let kept = expect(&s.ts.get(&s.read, "/v1/profiles/assist").await, 200);
    assert_eq!(
        kept["instructions"], booking["instructions"],
        "nothing saved"
    );

    // Off, the same save goes through.
    let mut unguarded = forgetful.clone();
    unguarded["requireTestsPass"] = json!(false);
    put_profile(&s.ts, &s.admin, "assist", &unguarded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_tries_the_unsaved_form_and_shows_it_in_words_then_the_form_saves() {
    let s = start().await;
    let password = s.ts.user("acme", "pat@example.com", "Pat", "admin").await;
    let pat = s.ts.sign_in("pat@example.com", &password).await;
    let edit = "/console/campaigns/assist/edit";
    let instructions = format!("{INSTRUCTIONS}\n{BOOKS}");
    let form = [
        ("csrf", pat.csrf.as_str()),
        ("steps", "0"),
        ("instructions", instructions.as_str()),
        ("reply-delay", "5s"),
    ];
    let mut tried = form.to_vec();
    tried.push(("op", "replay"));
    let page = s.ts.console_post(edit, &pat.cookie, &tried).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let (ts, cookie, key) = (&s.ts, pat.cookie.as_str(), s.write.as_str());
    let html = poll("the replay page to finish", WAIT * 2, || async move {
        let listed = expect(&ts.get(key, "/v1/replays").await, 200);
        let id = str_of(&listed["replays"][0]["id"]).to_string();
        let page = ts
            .console(
                hyper::Method::GET,
                &format!("/console/replays/{id}"),
                Some(cookie),
                None,
                &[],
            )
            .await;
        let html = page.text();
        if html.contains("data-status=\"running\"") {
            Err("running".to_string())
        } else {
            Ok(html)
        }
    })
    .await;
    assert!(
        html.contains("Tried on 2 conversations, 4 answers: 2 do something different"),
        "{html}"
    );
    let flagged = html.find("Flagged answers").expect("flagged first");
    let calm = html.find("The other answers").expect("the rest after");
    assert!(flagged < calm);
    assert!(html.contains("What was said") && html.contains("What the change says"));
    assert!(html.contains("Does something different") && html.contains("Did: book_meeting"));
    assert!(!html.contains("\"leadText\""), "words, never JSON");
    assert_eq!(
        expect(&s.ts.get(&s.read, "/v1/profiles/assist").await, 200)["instructions"],
        json!(INSTRUCTIONS),
        "nothing saved by trying"
    );

    // Back to the form: it holds the change, and "Save" saves it.
    let back =
        s.ts.console(hyper::Method::GET, edit, Some(&pat.cookie), None, &[])
            .await;
    assert!(
        back.text().contains("fake-model: call book_meeting"),
        "the unsaved change waits"
    );
    let mut save = form.to_vec();
    save.push(("op", "save"));
    s.ts.console_post(edit, &pat.cookie, &save).await;
    assert_eq!(
        expect(&s.ts.get(&s.read, "/v1/profiles/assist").await, 200)["instructions"],
        json!(instructions)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_save_of_a_campaign_requiring_its_tests_is_refused_in_words() {
    let s = start().await;
    let tests = json!([{"name": "books when asked", "turns": ["What time works?"],
                        "expect": [{"turn": 1, "tool": "book_meeting"}]}]);
    let booking = format!("{INSTRUCTIONS}\n{BOOKS}");
    let guarded = json!({"instructions": booking, "tests": tests, "requireTestsPass": true});
    put_profile(&s.ts, &s.admin, "assist", &guarded).await;
    let password = s.ts.user("acme", "pat@example.com", "Pat", "admin").await;
    let pat = s.ts.sign_in("pat@example.com", &password).await;
    let form = [
        ("csrf", pat.csrf.as_str()),
        ("steps", "0"),
        ("instructions", INSTRUCTIONS),
        ("reply-delay", "5s"),
        ("op", "save"),
    ];
    let page =
        s.ts.console_post("/console/campaigns/assist/edit", &pat.cookie, &form)
            .await;
    let html = page.text();
    assert!(
        html.contains("The campaign's tests failed, so it was not saved: books when asked: turn 1: expected a call of book_meeting; it called none"),
        "{html}"
    );
    let kept = expect(&s.ts.get(&s.read, "/v1/profiles/assist").await, 200);
    assert_eq!(kept["instructions"], json!(booking), "nothing saved");
    assert_eq!(kept["tests"], tests, "the console keeps the tests");
}
