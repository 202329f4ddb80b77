//! GET /v1/profiles/{name}/stats: a campaign's numbers, kept in the writes that change
//! them. Leads enrolled, a first step sent to two and blocked for one (no phone), one reply:
//! the numbers by state, the rates, the funnel and today's sends and replies.

use serde_json::{json, Value};

use engaged::testkit::{poll, Org, WAIT};

use crate::answers::*;
use crate::engagement::{put_profile, sms_step, wait_state};
use crate::requests::inbound_sms;

async fn stats(org: &Org, name: &str) -> Value {
    expect(
        &org.ts
            .get(&org.read, &format!("/v1/profiles/{name}/stats"))
            .await,
        200,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrolments_sends_blocks_and_a_reply_are_counted() {
    let org = Org::start().await;
    let ts = &org.ts;
    put_profile(
        ts,
        &org.admin,
        "solar",
        &json!({"instructions": "You are Sam.", "cadence": [sms_step("0s", "Hi {{firstName}}"), sms_step("2d", "Still there?")]}),
    )
    .await;
    ts.create_lead(&org.write, &json!({"id": "c-1", "firstName": "Ana", "phone": "+15125550101", "customerProfile": "solar"}))
        .await;
    ts.create_lead(&org.write, &json!({"id": "c-2", "firstName": "Bo", "phone": "+15125550102", "customerProfile": "solar"}))
        .await;
    // No phone for an SMS step: the gate blocks it (COMPLIANCE_TARGET_MISSING).
    ts.create_lead(
        &org.write,
        &json!({"id": "c-3", "firstName": "Cy", "customerProfile": "solar"}),
    )
    .await;

    let numbers = poll("the first step of every lead", WAIT, || async {
        let s = stats(&org, "solar").await;
        if s["steps"][0]["reached"] == json!(3) {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert_eq!(numbers["profile"], json!("solar"));
    assert_eq!(numbers["enrolled"], json!(3));
    assert_eq!(numbers["active"], json!(3));
    assert_eq!(numbers["steps"][0]["channel"], json!("sms"));
    assert_eq!(numbers["steps"][0]["blocked"], json!(1), "{numbers}");
    assert_eq!(numbers["steps"][0]["failed"], json!(0), "{numbers}");
    assert_eq!(numbers["steps"][1]["reached"], json!(0));

    inbound_sms(ts, &org.write, "+15125550101", "Yes please, call me").await;
    wait_state(ts, &org.write, "c-1", "stopped", Some("replied")).await;
    let numbers = poll("the reply counted", WAIT, || async {
        let s = stats(&org, "solar").await;
        if s["replied"] == json!(1) {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert_eq!(numbers["active"], json!(2));
    assert_eq!(numbers["stopped"]["replied"], json!(1));
    assert_eq!(numbers["steps"][0]["repliesAfter"], json!(1));
    let today = numbers["days"]
        .as_array()
        .expect("days")
        .last()
        .cloned()
        .unwrap_or_default();
    assert_eq!(today["replies"], json!(1), "{today}");
    assert_eq!(today["sends"], json!(2), "{today}");
    assert_eq!(numbers["days"].as_array().map(Vec::len), Some(30));

    ts.patch(&org.write, "/v1/leads/c-2", &json!({"isHot": true}))
        .await;
    assert_eq!(stats(&org, "solar").await["hot"], json!(1));
    ts.delete(&org.write, "/v1/leads/c-2").await;
    let after = stats(&org, "solar").await;
    assert_eq!(
        (after["enrolled"].clone(), after["hot"].clone()),
        (json!(2), json!(0)),
        "a deleted lead leaves the numbers by lead"
    );
    assert_eq!(
        after["days"]
            .as_array()
            .and_then(|d| d.last())
            .map(|d| d["sends"].clone()),
        Some(json!(2)),
        "but not its sends"
    );

    assert_error(
        &ts.get(&org.read, "/v1/profiles/wind/stats").await,
        404,
        "Profile not found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_campaign_runs_no_step_until_it_resumes() {
    use hyper::Method;
    let org = Org::start().await;
    let ts = &org.ts;
    put_profile(
        ts,
        &org.admin,
        "solar",
        &json!({"instructions": "You are Sam.", "cadence": [sms_step("0s", "Hi {{firstName}}")]}),
    )
    .await;
    let password = ts.user("acme", "boss@example.com", "Bo", "admin").await;
    let boss = ts.sign_in("boss@example.com", &password).await;
    let post = |path: &'static str| {
        let (cookie, csrf) = (boss.cookie.clone(), boss.csrf.clone());
        async move {
            ts.console(
                Method::POST,
                path,
                Some(&cookie),
                Some(&ts.origin()),
                &[("csrf", &csrf)],
            )
            .await
            .status
        }
    };
    assert_eq!(post("/console/campaigns/solar/pause").await, 303);
    ts.create_lead(&org.write, &json!({"id": "p-1", "firstName": "Ana", "phone": "+15125550101", "customerProfile": "solar"}))
        .await;
    wait_state(ts, &org.write, "p-1", "paused", None).await;
    let numbers = stats(&org, "solar").await;
    assert_eq!(numbers["paused"], json!(1), "{numbers}");
    assert_eq!(
        numbers["steps"][0]["reached"],
        json!(0),
        "nothing sent while paused"
    );
    let page = ts
        .console(
            Method::GET,
            "/console/campaigns/solar",
            Some(&boss.cookie),
            None,
            &[],
        )
        .await;
    assert!(page.text().contains("Resume campaign"), "{}", page.text());

    assert_eq!(post("/console/campaigns/solar/resume").await, 303);
    let numbers = poll("the step runs after the resume", WAIT, || async {
        let s = stats(&org, "solar").await;
        if s["steps"][0]["reached"] == json!(1) {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert_eq!(numbers["paused"], json!(0), "{numbers}");
    assert_eq!(post("/console/campaigns/wind/pause").await, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_due_on_a_day_off_waits_for_the_next_follow_up_day() {
    use crate::engagement::set_org;
    use chrono::Datelike;
    let org = Org::start().await;
    let ts = &org.ts;
    let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    let today = chrono::Utc::now().date_naive();
    let off = names[today.weekday().num_days_from_monday() as usize];
    let days: Vec<&str> = names.iter().copied().filter(|d| *d != off).collect();
    let tomorrow = today.succ_opt().expect("tomorrow");
    let settings = set_org(
        ts,
        &org.admin,
        &json!({"timeZone": "UTC", "followUpDays": days, "holidays": [tomorrow.format("%Y-%m-%d").to_string()]}),
    )
    .await;
    assert_eq!(settings["followUpDays"].as_array().map(Vec::len), Some(6));
    put_profile(
        ts,
        &org.admin,
        "solar",
        &json!({"instructions": "You are Sam.", "cadence": [sms_step("0s", "Hi")]}),
    )
    .await;
    ts.create_lead(
        &org.write,
        &json!({"id": "d-1", "phone": "+15125550101", "customerProfile": "solar"}),
    )
    .await;
    let after_tomorrow = tomorrow.succ_opt().expect("the day after");
    let want = format!("{}T00:00:00", after_tomorrow.format("%Y-%m-%d"));
    let engagement = poll(
        "the step deferred past today and tomorrow's holiday",
        WAIT,
        || async {
            let e = expect(&ts.get(&org.read, "/v1/leads/d-1/engagement").await, 200);
            let next = e["nextStepAt"].as_str().unwrap_or_default().to_string();
            if next.starts_with(&want) {
                Ok(e)
            } else {
                Err(e.to_string())
            }
        },
    )
    .await;
    assert_eq!(engagement["state"], json!("active"));
    assert_eq!(
        stats(&org, "solar").await["steps"][0]["reached"],
        json!(0),
        "nothing sent today"
    );

    for (body, message) in [
        (
            json!({"followUpDays": []}),
            "followUpDays needs at least one day (null: every day)",
        ),
        (
            json!({"followUpDays": ["funday"]}),
            "Invalid format for field: followUpDays",
        ),
        (
            json!({"holidays": ["2026-13-01"]}),
            "Invalid format for field: holidays",
        ),
    ] {
        assert_error(&ts.patch(&org.admin, "/v1/org", &body).await, 400, message);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_saves_like_the_api_and_its_playground_applies_nothing() {
    use engaged::testkit::model::{FakeModel, Step};
    use hyper::Method;
    let org = Org::start().await;
    let ts = &org.ts;
    let model = FakeModel::start().await;
    crate::engagement::set_org(ts, &org.admin, &model.settings()).await;
    let password = ts.user("acme", "boss@example.com", "Bo", "admin").await;
    let boss = ts.sign_in("boss@example.com", &password).await;
    let post = |path: &'static str, form: Vec<(&'static str, &'static str)>| {
        let (cookie, csrf) = (boss.cookie.clone(), boss.csrf.clone());
        async move {
            let mut fields = vec![("csrf", csrf.as_str())];
            fields.extend(form);
            let posted = ts
                .console(
                    Method::POST,
                    path,
                    Some(&cookie),
                    Some(&ts.origin()),
                    &fields,
                )
                .await;
            // The editor again (refusals, a preview, a try) is a redirect to the form,
            // which a browser follows; a save leads to the campaign's page.
            let to = posted
                .headers
                .get("location")
                .and_then(|l| l.to_str().ok())
                .map(str::to_string);
            match to {
                Some(to) if to.ends_with("/edit") || to.ends_with("/new") => {
                    ts.console(Method::GET, &to, Some(&cookie), None, &[]).await
                }
                _ => posted,
            }
        }
    };
    let step = vec![
        ("steps", "1"),
        ("step-0-channel", "sms"),
        ("step-0-after", "0s"),
        ("step-0-text", "Hi"),
    ];
    let mut bad = vec![
        ("op", "save"),
        ("display-name", "  "),
        ("instructions", "Be brief."),
    ];
    bad.extend(step.clone());
    let refused = post("/console/campaigns/new", bad).await;
    assert_eq!(refused.status, 200, "the form again, with the refusal");
    assert!(
        refused
            .text()
            .contains("Campaign name: write the name your team will see"),
        "{}",
        refused.text()
    );
    let mut good = vec![
        ("op", "save"),
        ("display-name", "Wind"),
        ("instructions", "Be brief."),
    ];
    good.extend(step.clone());
    assert_eq!(post("/console/campaigns/new", good).await.status, 303);
    let saved = expect(&ts.get(&org.read, "/v1/profiles/wind").await, 200);
    assert_eq!(saved["cadence"][0]["text"], json!("Hi"));
    assert_eq!(saved["displayName"], json!("Wind"));

    // A name with spaces: the id is derived, and a second campaign of the same name
    // takes the next id rather than replacing the first.
    for (i, expected) in ["spring-solar-push", "spring-solar-push-2"]
        .iter()
        .enumerate()
    {
        let text = if i == 0 { "First" } else { "Second" };
        let mut named = vec![
            ("op", "save"),
            ("display-name", "Spring Solar Push"),
            ("instructions", text),
        ];
        named.extend(step.clone());
        let saved = post("/console/campaigns/new", named).await;
        assert_eq!(saved.status, 303);
        assert_eq!(
            saved.headers["location"],
            format!("/console/campaigns/{expected}").as_str()
        );
        let profile = expect(
            &ts.get(&org.read, &format!("/v1/profiles/{expected}")).await,
            200,
        );
        assert_eq!(profile["displayName"], json!("Spring Solar Push"));
        assert_eq!(profile["instructions"], json!(text), "not replaced");
    }
    let list = ts
        .console(
            Method::GET,
            "/console/campaigns",
            Some(&boss.cookie),
            None,
            &[],
        )
        .await;
    assert!(
        list.text().contains(">Spring Solar Push</a>"),
        "{}",
        list.text()
    );

    model.push(Step::tool("call_1", "mark_hot", json!({})));
    let mut tried = vec![
        ("op", "try"),
        ("instructions", "Be brief."),
        ("say", "I want it now"),
    ];
    tried.extend(step);
    let page = post("/console/campaigns/wind/edit", tried).await;
    assert_eq!(page.status, 200);
    assert!(
        page.text().contains("would call mark_hot"),
        "{}",
        page.text()
    );
    assert!(page.text().contains("(not applied)"));
    let leads = expect(&ts.get(&org.read, "/v1/leads/search").await, 200);
    assert_eq!(leads["total"], json!(0), "nothing stored");

    let password = ts.user("acme", "agent@example.com", "Al", "agent").await;
    let agent = ts.sign_in("agent@example.com", &password).await;
    for path in ["/console/campaigns/new", "/console/campaigns/wind/edit"] {
        let page = ts
            .console(Method::GET, path, Some(&agent.cookie), None, &[])
            .await;
        assert_eq!(page.status, 403, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_after_a_step_count_leads_once_and_a_stop_is_no_reply() {
    let org = Org::start().await;
    let ts = &org.ts;
    put_profile(
        ts,
        &org.admin,
        "solar",
        &json!({"instructions": "You are Sam.", "cadence": [sms_step("0s", "Hi {{firstName}}"), sms_step("2d", "Still there?")]}),
    )
    .await;
    for (id, phone) in [("r-1", "+15125550101"), ("r-2", "+15125550102")] {
        ts.create_lead(
            &org.write,
            &json!({"id": id, "firstName": "Ana", "phone": phone, "customerProfile": "solar"}),
        )
        .await;
    }
    poll("the first step of both leads", WAIT, || async {
        let s = stats(&org, "solar").await;
        if s["steps"][0]["sent"] == json!(2) {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;

    // Two messages from one lead after step 1: one lead replied after it.
    inbound_sms(ts, &org.write, "+15125550101", "Who is this?").await;
    inbound_sms(ts, &org.write, "+15125550101", "Actually, call me tomorrow").await;
    // A STOP from the other: an opt-out, not a reply.
    inbound_sms(ts, &org.write, "+15125550102", "STOP").await;
    let numbers = poll("the messages counted", WAIT, || async {
        let s = stats(&org, "solar").await;
        if s["optedOut"] == json!(1) && s["days"][29]["replies"] == json!(2) {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert_eq!(numbers["replied"], json!(1), "{numbers}");
    assert_eq!(numbers["steps"][0]["repliesAfter"], json!(1), "{numbers}");
    assert_eq!(numbers["steps"][1]["repliesAfter"], json!(0), "{numbers}");
}
