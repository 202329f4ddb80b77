//! POST /v1/leads/import: a CSV or NDJSON file of leads, read as a stream. Phones
//! without `+` are read in the organization's `defaultCountry`; a row matching a live
//! lead updates it, rows of one file matching each other merge; unknown profiles, DNC
//! phones and unreadable phones are refused with their row; a dry run changes nothing.

use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::{Org, TestServer};

use crate::answers::*;
use crate::engagement::{put_profile, set_org};
use crate::requests::get_lead;

const CSV: &str = "\
First Name,Last Name,Phone Number,Email,profile,Tags,Roof type
Ana,Ruiz,(512) 555-0101,ana@example.com,solar,vip;web,tile
Ana,R.,+1 512 555 0101,,,,
Cy,Diaz,12,cy@example.com,,,
Di,Wu,(512) 555-0104,di@example.com,wind,,
Bo,Chen,,bo@example.com,,import,
Ed,Lee,(512) 555-0199,,,,
";

async fn setup() -> Org {
    let org = Org::start().await;
    set_org(&org.ts, &org.admin, &json!({"defaultCountry": "us"})).await;
    put_profile(
        &org.ts,
        &org.admin,
        "solar",
        &json!({"instructions": "You are Sam.", "cadence": [{"after": "1d", "channel": "sms", "text": "Hi"}]}),
    )
    .await;
    org.ts
        .create_lead(
            &org.write,
            &json!({"id": "bo", "firstName": "Bo", "email": "BO@example.com",
            "tags": [{"id": "crm", "name": "CRM"}]}),
        )
        .await;
    let dnc = org
        .ts
        .post(
            &org.write,
            "/v1/dnc/register",
            &json!({"phone": "+15125550199"}),
        )
        .await;
    assert!(dnc.status < 300, "{}", dnc.text());
    org
}

async fn import(ts: &TestServer, key: &str, query: &str, content_type: &str, body: &str) -> Value {
    let r = ts
        .request(
            Method::POST,
            &format!("/v1/leads/import{query}"),
            Some(key),
            Some(content_type),
            body.as_bytes().to_vec(),
        )
        .await;
    expect(&r, 200)
}

async fn total(ts: &TestServer, key: &str) -> u64 {
    expect(&ts.get(key, "/v1/leads/search").await, 200)["total"]
        .as_u64()
        .unwrap_or_default()
}

fn refused(report: &Value) -> Vec<(u64, String)> {
    report["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|r| {
            (
                r["row"].as_u64().unwrap_or_default(),
                str_of(&r["reason"]).to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_creates_updates_merges_and_refuses_by_row() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let report = import(ts, key, "", "text/csv", CSV).await;
    assert_eq!(report["created"], json!(1), "{report}");
    assert_eq!(report["updated"], json!(1), "{report}");
    assert_eq!(report["merged"], json!(1), "{report}");
    assert_eq!(report["dryRun"], json!(false));
    assert_eq!(
        refused(&report),
        [
            (4, "Unreadable phone: 12".to_string()),
            (5, "Unknown profile: wind".to_string()),
            (7, "Phone number is on the Do Not Contact list".to_string()),
        ]
    );
    assert_eq!(total(ts, key).await, 2, "Ana (once) and Bo: no duplicate");

    let found = expect(&ts.get(key, "/v1/leads/search?q=ana").await, 200);
    let ana = &found["leads"][0];
    assert_eq!(
        ana["phone"],
        json!("+15125550101"),
        "read in the default country"
    );
    assert_eq!(ana["lastName"], json!("R."), "the merged row's fields win");
    assert_eq!(
        ana["email"],
        json!("ana@example.com"),
        "an empty cell changes nothing"
    );
    assert_eq!(ana["customerProfile"], json!("solar"));
    assert_eq!(
        ana["engagement"]["state"],
        json!("active"),
        "enrolled like any lead"
    );
    assert_eq!(ana["additionalInfo"]["Roof type"], json!("tile"));
    let tags: Vec<&str> = ana["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| str_of(&t["id"]))
        .collect();
    assert_eq!(tags, ["vip", "web"]);

    let bo = get_lead(ts, key, "bo").await;
    assert_eq!(bo["lastName"], json!("Chen"));
    let tags: Vec<&str> = bo["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| str_of(&t["id"]))
        .collect();
    assert_eq!(
        tags,
        ["crm", "import"],
        "an update adds tags, never drops them"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_with_a_control_character_or_a_bidi_control_is_refused_as_that_row() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let csv = "First Name,Email\nAna,ana@example.com\nB\u{0}ob,bob@example.com\n\u{202e}Cy,cy@example.com\n";
    let report = import(ts, key, "", "text/csv", csv).await;
    assert_eq!(report["created"], json!(1), "{report}");
    assert_eq!(
        refused(&report),
        [
            (3, "Invalid format for field: firstName".to_string()),
            (4, "Invalid format for field: firstName".to_string()),
        ]
    );
}

/// A file of `n` distinct people, then a row repeating the first by phone and one
/// repeating the second by email: the repeats fall in a later part than their first.
fn long_file(n: usize) -> String {
    let mut csv = String::from("First Name,Phone Number,Email\n");
    for i in 0..n {
        csv.push_str(&format!("P{i},(737) 555-{i:04},p{i}@example.com\n"));
    }
    csv.push_str("Again,+1 737 555 0000,\n");
    csv.push_str("Twice,,P1@EXAMPLE.COM\n");
    csv
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_a_later_part_merge_into_the_first_part_s_leads() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let n = engaged::domain::import::PART_ROWS * 2 + 7;
    let csv = long_file(n);
    let before = total(ts, key).await;
    let dry = import(ts, key, "?dryRun=true", "text/csv", &csv).await;
    assert_eq!(dry["created"], json!(n), "{}", dry["refused"]);
    assert_eq!(dry["merged"], json!(2), "{}", dry["refused"]);
    assert_eq!(total(ts, key).await, before, "a dry run changes nothing");

    let report = import(ts, key, "", "text/csv", &csv).await;
    assert_eq!(report["created"], json!(n), "{}", report["refused"]);
    assert_eq!(report["merged"], json!(2), "{}", report["refused"]);
    assert_eq!(total(ts, key).await, before + n as u64, "no duplicate");
    let found = expect(&ts.get(key, "/v1/leads/search?q=p1@example.com").await, 200);
    assert_eq!(found["leads"][0]["firstName"], json!("Twice"), "{found}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_reports_the_same_and_changes_nothing() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let before = get_lead(ts, key, "bo").await;
    let dry = import(ts, key, "?dryRun=true", "text/csv", CSV).await;
    assert_eq!(dry["dryRun"], json!(true));
    assert_eq!(
        (
            dry["created"].clone(),
            dry["updated"].clone(),
            dry["merged"].clone()
        ),
        (json!(1), json!(1), json!(1))
    );
    assert_eq!(refused(&dry).len(), 3);
    assert_eq!(total(ts, key).await, 1, "nothing created");
    let after = get_lead(ts, key, "bo").await;
    assert_eq!(before, after, "nothing updated");
    let real = import(ts, key, "", "text/csv", CSV).await;
    assert_eq!(real["created"], dry["created"]);
    assert_eq!(real["refused"], dry["refused"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_only_refuses_every_match() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let report = import(ts, key, "?mode=create-only", "text/csv", CSV).await;
    assert_eq!(report["created"], json!(1));
    assert_eq!(report["updated"], json!(0));
    assert_eq!(report["merged"], json!(0));
    let reasons = refused(&report);
    assert!(
        reasons.contains(&(3, "Same lead as row 2".to_string())),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&(6, "Lead exists: bo".to_string())),
        "{reasons:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndjson_and_a_semicolon_csv_with_a_bom_import_alike() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let ndjson = "{\"firstName\": \"Fay\", \"phone\": \"512-555-0110\", \"score\": 7}\nnot json\n\n{\"first_name\": \"Gus\", \"email\": \"gus@example.com\", \"tags\": [\"a\", \"b\"]}\n";
    let report = import(ts, key, "", "application/x-ndjson", ndjson).await;
    assert_eq!(report["created"], json!(2), "{report}");
    assert_eq!(
        refused(&report),
        [(2, "The line is not a JSON object".to_string())]
    );
    let fay = &expect(&ts.get(key, "/v1/leads/search?q=fay").await, 200)["leads"][0];
    assert_eq!(fay["phone"], json!("+15125550110"));
    assert_eq!(fay["additionalInfo"]["score"], json!(7));

    let csv = "\u{feff}firstName;phone;email\nHal;(512) 555-0120;hal@example.com\n";
    let report = import(ts, key, "", "text/csv; charset=utf-8", csv).await;
    assert_eq!(report["created"], json!(1), "{report}");
    let hal = &expect(&ts.get(key, "/v1/leads/search?q=hal").await, 200)["leads"][0];
    assert_eq!(
        hal["firstName"],
        json!("Hal"),
        "the BOM is not part of the first column"
    );
    assert_eq!(hal["email"], json!("hal@example.com"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_default_country_a_national_phone_is_refused() {
    let org = Org::start().await;
    let report = import(
        &org.ts,
        &org.write,
        "",
        "text/csv",
        "name,phone\nIvy Park,(512) 555-0130\n",
    )
    .await;
    assert_eq!(report["created"], json!(0));
    assert_eq!(
        refused(&report),
        [(
            2,
            "Phone without a country code and no defaultCountry set: (512) 555-0130".to_string()
        )]
    );
    assert_error(
        &org.ts
            .patch(&org.admin, "/v1/org", &json!({"defaultCountry": "Narnia"}))
            .await,
        400,
        "Invalid format for field: defaultCountry",
    );
}

async fn post(
    ts: &TestServer,
    key: &str,
    query: &str,
    content_type: &str,
) -> engaged::testkit::Response {
    ts.request(
        Method::POST,
        &format!("/v1/leads/import{query}"),
        Some(key),
        Some(content_type),
        CSV.as_bytes().to_vec(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_named_and_change_nothing() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    assert_error(
        &post(ts, key, "", "application/json").await,
        415,
        "Content-Type must be text/csv or application/x-ndjson",
    );
    assert_error(
        &post(ts, key, "?dryRun=maybe", "text/csv").await,
        400,
        "Invalid format for field: dryRun",
    );
    assert_error(
        &post(ts, key, "?mode=merge", "text/csv").await,
        400,
        "Invalid format for field: mode",
    );
    assert_error(
        &post(ts, key, "?dry=true", "text/csv").await,
        400,
        "Unknown parameter: dry",
    );
    assert_error(&post(ts, &org.read, "", "text/csv").await, 403, "Forbidden");
    assert_eq!(total(ts, key).await, 1, "nothing imported");
}
