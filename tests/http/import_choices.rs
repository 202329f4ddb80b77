//! POST /v1/leads/import's choices: `onMatch` (update, fill, skip) for rows matching a
//! lead, each match listed with the fields it changes (from, to), in a dry run as for
//! real; `profile` for rows that name none; a bad choice refused before anything changes.

use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::{Org, TestServer};

use crate::answers::*;
use crate::engagement::{put_profile, set_org};
use crate::requests::get_lead;

/// Row 2 matches Maria by phone, row 3 Jim by email, row 4 is new, row 5 merges into it.
const CSV: &str = "\
First Name,Last Name,Phone,Email,Roof type
Mia,Gonzalez,(512) 555-0100,mia@example.com,metal
James,,(512) 555-0111,jim@example.com,
Zoe,Park,(512) 555-0122,zoe@example.com,flat
Zoey,,(512) 555-0122,,
";

async fn setup() -> Org {
    let org = Org::start().await;
    set_org(&org.ts, &org.admin, &json!({"defaultCountry": "US"})).await;
    for name in ["solar", "wind"] {
        put_profile(
            &org.ts,
            &org.admin,
            name,
            &json!({"instructions": "You are Sam.", "cadence": [{"after": "1d", "channel": "sms", "text": "Hi"}]}),
        )
        .await;
    }
    org.ts
        .create_lead(
            &org.write,
            &json!({"id": "maria", "firstName": "Maria", "lastName": "Gonzalez",
                "phone": "+15125550100", "additionalInfo": {"Roof type": "tile"}}),
        )
        .await;
    org.ts
        .create_lead(
            &org.write,
            &json!({"id": "jim", "firstName": "Jim", "email": "jim@example.com"}),
        )
        .await;
    org
}

async fn post(ts: &TestServer, key: &str, query: &str, csv: &str) -> engaged::testkit::Response {
    ts.request(
        Method::POST,
        &format!("/v1/leads/import{query}"),
        Some(key),
        Some("text/csv"),
        csv.as_bytes().to_vec(),
    )
    .await
}

async fn import(ts: &TestServer, key: &str, query: &str) -> Value {
    expect(&post(ts, key, query, CSV).await, 200)
}

/// The report's matches as (row, lead, changes).
fn matches(report: &Value) -> Vec<(u64, String, Value)> {
    report["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| {
            (
                m["row"].as_u64().unwrap_or_default(),
                m["leadId"].as_str().unwrap_or_default().to_string(),
                m["changes"].clone(),
            )
        })
        .collect()
}

fn counts(report: &Value) -> [Value; 5] {
    ["created", "updated", "merged", "skipped", "matchesCount"].map(|k| report[k].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_lists_each_match_with_what_it_changes_from_and_to() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let report = import(ts, key, "?onMatch=update").await;
    assert_eq!(counts(&report), [1, 2, 1, 0, 3].map(|n| json!(n)));
    let listed = matches(&report);
    assert_eq!(listed[0].0, 2);
    assert_eq!(listed[0].1, "maria");
    assert_eq!(
        listed[0].2,
        json!({"firstName": {"from": "Maria", "to": "Mia"},
               "email": {"from": null, "to": "mia@example.com"},
               "additionalInfo.Roof type": {"from": "tile", "to": "metal"}})
    );
    assert_eq!(
        (listed[1].0, listed[1].1.as_str()),
        (3, "jim"),
        "{listed:?}"
    );
    assert_eq!(
        listed[1].2,
        json!({"firstName": {"from": "Jim", "to": "James"},
               "phone": {"from": null, "to": "+15125550111"}})
    );
    assert_eq!(listed[2].0, 5);
    assert_eq!(
        listed[2].2,
        json!({"firstName": {"from": "Zoe", "to": "Zoey"}})
    );
    let maria = get_lead(ts, key, "maria").await;
    assert_eq!(maria["firstName"], json!("Mia"));
    assert_eq!(maria["additionalInfo"]["Roof type"], json!("metal"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fill_writes_only_the_fields_empty_on_the_lead() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let report = import(ts, key, "?onMatch=fill").await;
    assert_eq!(counts(&report), [1, 2, 1, 0, 3].map(|n| json!(n)));
    let listed = matches(&report);
    assert_eq!(
        listed[0].2,
        json!({"email": {"from": null, "to": "mia@example.com"}})
    );
    assert_eq!(
        listed[1].2,
        json!({"phone": {"from": null, "to": "+15125550111"}})
    );
    assert_eq!(listed[2].2, json!({}), "Zoe's name is not empty");
    let maria = get_lead(ts, key, "maria").await;
    assert_eq!(maria["firstName"], json!("Maria"));
    assert_eq!(maria["email"], json!("mia@example.com"));
    assert_eq!(maria["additionalInfo"]["Roof type"], json!("tile"));
    let jim = get_lead(ts, key, "jim").await;
    assert_eq!(jim["firstName"], json!("Jim"));
    assert_eq!(jim["phone"], json!("+15125550111"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_leaves_matched_leads_untouched_and_counts_them() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let before = get_lead(ts, key, "maria").await;
    let report = import(ts, key, "?onMatch=skip").await;
    assert_eq!(counts(&report), [1, 0, 0, 3, 3].map(|n| json!(n)));
    let listed = matches(&report);
    assert_eq!(
        listed.iter().map(|m| m.0).collect::<Vec<_>>(),
        vec![2, 3, 5]
    );
    assert!(listed.iter().all(|m| m.2 == json!({})), "{listed:?}");
    assert_eq!(get_lead(ts, key, "maria").await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_lists_the_same_matches_and_changes_nothing() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let (maria, jim) = (
        get_lead(ts, key, "maria").await,
        get_lead(ts, key, "jim").await,
    );
    let dry = import(ts, key, "?dryRun=true&onMatch=update").await;
    assert_eq!(get_lead(ts, key, "maria").await, maria);
    assert_eq!(get_lead(ts, key, "jim").await, jim);
    let search = expect(&ts.get(key, "/v1/leads/search").await, 200);
    assert_eq!(search["total"], json!(2), "nothing created");
    let real = import(ts, key, "").await;
    // The same rows and changes; a lead the file creates has a new id each time.
    let (dry, real) = (matches(&dry), matches(&real));
    assert_eq!(dry[..2], real[..2]);
    assert_eq!((dry[2].0, &dry[2].2), (real[2].0, &real[2].2));
    assert_eq!(dry.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_enrols_rows_naming_none_and_an_unknown_one_imports_nothing() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let csv = "firstName,phone,profile\nAl,(512) 555-0131,\nBea,(512) 555-0132,wind\n";
    let unknown = post(ts, key, "?profile=nope", csv).await;
    assert_error(&unknown, 400, "Unknown profile: nope");
    let search = expect(&ts.get(key, "/v1/leads/search").await, 200);
    assert_eq!(search["total"], json!(2), "nothing imported");
    let report = expect(&post(ts, key, "?profile=solar", csv).await, 200);
    assert_eq!(report["created"], json!(2));
    let solar = expect(&ts.get(key, "/v1/leads/search?profile=solar").await, 200);
    let names: Vec<&str> = solar["leads"]
        .as_array()
        .expect("leads")
        .iter()
        .filter_map(|l| l["firstName"].as_str())
        .collect();
    assert_eq!(names, vec!["Al"]);
    let al = &solar["leads"][0];
    assert_eq!(al["customerProfile"], json!("solar"));
    assert_eq!(al["engagement"]["profile"], json!("solar"), "{al}");
    let wind = expect(&ts.get(key, "/v1/leads/search?profile=wind").await, 200);
    assert_eq!(wind["leads"][0]["firstName"], json!("Bea"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_on_match_is_refused_and_changes_nothing() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let before = get_lead(ts, key, "maria").await;
    assert_error(
        &post(ts, key, "?onMatch=replace", CSV).await,
        400,
        "Invalid format for field: onMatch",
    );
    assert_eq!(get_lead(ts, key, "maria").await, before);
}

/// "Updated" counts only rows that change something (a row the lead already holds is
/// `unchanged` and does not write the lead); an email that differs only in case is the
/// same email and never overwrites the lead's, in the file and against live leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_rows_that_change_something_count_updated_and_an_email_keeps_its_case() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let maria = get_lead(ts, key, "maria").await;
    let csv = "\
First Name,Last Name,Phone,Email
Maria,Gonzalez,(512) 555-0100,
Jimmy,,,JIM@EXAMPLE.COM
Priya,Raman,,priya.raman@example.com
Priya,Raman,,PRIYA.RAMAN@EXAMPLE.COM
";
    for query in ["?dryRun=true", ""] {
        let report = expect(&post(ts, key, query, csv).await, 200);
        assert_eq!(
            ["created", "updated", "unchanged", "merged", "skipped"].map(|k| report[k].clone()),
            [1, 1, 1, 1, 0].map(|n| json!(n)),
            "{query}: {report}"
        );
        let listed = matches(&report);
        assert_eq!(listed[0].2, json!({}), "Maria's row changes nothing");
        assert_eq!(
            listed[1].2,
            json!({"firstName": {"from": "Jim", "to": "Jimmy"}}),
            "Jim's email keeps its case"
        );
    }
    assert_eq!(
        get_lead(ts, key, "maria").await,
        maria,
        "an unchanged lead is not written"
    );
    let jim = get_lead(ts, key, "jim").await;
    assert_eq!(
        (jim["firstName"].clone(), jim["email"].clone()),
        (json!("Jimmy"), json!("jim@example.com"))
    );
    let found = expect(&ts.get(key, "/v1/leads/search?q=priya").await, 200);
    let leads = found["leads"].as_array().cloned().unwrap_or_default();
    assert_eq!(leads.len(), 1, "{found}");
    assert_eq!(leads[0]["email"], json!("priya.raman@example.com"));

    // The same file again: nothing changes, nothing counts as updated.
    let report = expect(&post(ts, key, "", csv).await, 200);
    assert_eq!(
        ["created", "updated", "unchanged", "merged"].map(|k| report[k].clone()),
        [0, 0, 3, 1].map(|n| json!(n)),
        "{report}"
    );
}
