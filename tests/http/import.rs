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

// ---- Bounds: whatever the file's shape, an import holds a bounded amount. ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_of_more_than_200_columns_refuses_the_file() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let header: Vec<String> = (0..201).map(|i| format!("c{i}")).collect();
    let csv = format!("{}\nAna,+15125550140\n", header.join(","));
    let r = post_file(ts, key, "", "text/csv", csv.into_bytes()).await;
    assert_error(
        &r,
        400,
        "The file has 201 columns; at most 200 can be imported",
    );
    let long = format!("{}\nAna\n", "x".repeat(70 * 1024));
    let r = post_file(ts, key, "", "text/csv", long.into_bytes()).await;
    assert_error(&r, 400, "The file's header is longer than 64 KiB");
    assert_eq!(total(ts, key).await, 1, "nothing imported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_over_64_kib_is_refused_as_that_row() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let csv = format!(
        "firstName,phone,notes\nJo,+15125550141,{}\nKay,+15125550142,short\n",
        "y".repeat(65 * 1024)
    );
    let report = import(ts, key, "", "text/csv", &csv).await;
    assert_eq!(report["created"], json!(1), "{report}");
    assert_eq!(
        refused(&report),
        [(2, "The row is longer than 64 KiB".to_string())]
    );
    let ndjson = format!(
        "{{\"firstName\": \"Lu\", \"notes\": \"{}\"}}\n{{\"firstName\": \"Mo\"}}\n",
        "z".repeat(65 * 1024)
    );
    let report = import(ts, key, "", "application/x-ndjson", &ndjson).await;
    assert_eq!(report["created"], json!(1), "{report}");
    assert_eq!(
        refused(&report),
        [(1, "The row is longer than 64 KiB".to_string())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unclosed_quote_refuses_its_row_only() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    // A quote closed on a later line spans its lines; one never closed refuses its own
    // row, and the rows after it are read as rows.
    let mut csv = String::from("firstName,phone,notes\nQuoted,+15125550170,\"two\nlines\"\n");
    csv.push_str("Ned,+15125550143,\"never closed\n");
    for i in 0..3 {
        csv.push_str(&format!("Row{i},+1512555016{i},fine\n"));
    }
    let report = import(ts, key, "", "text/csv", &csv).await;
    assert_eq!(
        refused(&report),
        [(3, "The row has a quote that is not closed".to_string())]
    );
    assert_eq!(report["created"], json!(4), "the rows after it: {report}");
    let found = expect(&ts.get(key, "/v1/leads/search?q=quoted").await, 200);
    assert_eq!(found["total"], json!(1), "a closed quote spans its lines");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_listed_to_100_counted_and_fetched_whole_and_neutralized() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let mut csv = String::from("firstName,phone,profile\n");
    csv.push_str("=cmd|' /C calc'!A0,+15125550150,nope\n");
    for i in 0..149 {
        csv.push_str(&format!("P{i},+1512555{:04},nope\n", 2000 + i));
    }
    let report = import(ts, key, "", "text/csv", &csv).await;
    assert_eq!(
        report["refusedCount"],
        json!(150),
        "{}",
        report["refusedCount"]
    );
    let listed = refused(&report);
    assert_eq!(listed.len(), 100);
    assert_eq!(listed[0], (2, "Unknown profile: nope".to_string()));
    let url = str_of(&report["refusedUrl"]).to_string();
    assert!(url.starts_with("/v1/leads/import/"), "{url}");

    let file = ts.get(key, &url).await;
    assert_eq!(file.status, 200, "{}", file.text());
    let text = file.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 151, "the header and every refused row");
    assert_eq!(lines[0], "row,reason,firstName,phone,profile");
    assert_eq!(
        lines[1], "2,Unknown profile: nope,'=cmd|' /C calc'!A0,+15125550150,nope",
        "a formula is neutralized, an E.164 phone is not"
    );
    let id = url.split('/').nth(4).unwrap_or_default();
    let path = ts
        .data_dir
        .join("imports")
        .read_dir()
        .unwrap()
        .flatten()
        .map(|org| org.path().join(format!("{id}.refused.csv")))
        .find(|p| p.exists())
        .expect("the refused file");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let other = ts.key("beta", "write").await;
    assert_error(
        &ts.get(&other, &url).await,
        404,
        "Resource not found: refused rows of this import",
    );
    assert_eq!(ts.get(&org.read, &url).await.status, 403);
    let report = import(ts, key, "", "text/csv", "firstName\nOk\n").await;
    assert_eq!(report["refusedCount"], json!(0));
    assert_eq!(report["refusedUrl"], Value::Null);
}

async fn post_file(
    ts: &TestServer,
    key: &str,
    query: &str,
    content_type: &str,
    body: Vec<u8>,
) -> engaged::testkit::Response {
    ts.request(
        Method::POST,
        &format!("/v1/leads/import{query}"),
        Some(key),
        Some(content_type),
        body,
    )
    .await
}

/// A body sent in chunks without a length: `chunks`, then, when `hold`, nothing more
/// while the connection stays open.
async fn post_chunked(
    ts: &TestServer,
    key: &str,
    query: &str,
    chunks: Vec<String>,
    hold: bool,
) -> engaged::testkit::Response {
    use bytes::Bytes;
    use http_body_util::{BodyExt, StreamBody};
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    tokio::spawn(async move {
        for chunk in chunks {
            if tx.send(Bytes::from(chunk)).await.is_err() {
                return;
            }
        }
        if hold {
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        }
        drop(tx);
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| {
            (
                Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(b)),
                rx,
            )
        })
    });
    let body = StreamBody::new(stream).boxed();
    let client: hyper_util::client::legacy::Client<_, _> =
        engaged::testkit::https_client(&ts.cert(), engaged::testkit::Versions::Http1);
    let request = hyper::Request::post(format!("{}/v1/leads/import{query}", ts.origin()))
        .header("x-api-key", key)
        .header("content-type", "text/csv")
        .body(body)
        .expect("request");
    let response = client.request(request).await.expect("an answer");
    engaged::testkit::Response::read(response).await
}

fn rows(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("R{i},+1737555{:04}\n", i % 10_000))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_max_import_bytes_is_413_at_once_or_at_the_cap() {
    let org = Org::start_with(|c| c.max_import_bytes = 4096).await;
    let (ts, key) = (&org.ts, &org.write);
    let big = format!("firstName,phone\n{}", rows(0, 400));
    assert!(big.len() > 4096);
    assert_error(
        &post_file(ts, key, "", "text/csv", big.clone().into_bytes()).await,
        413,
        "Request body too large",
    );
    let chunks: Vec<String> = big
        .as_bytes()
        .chunks(1000)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let cut = post_chunked(ts, key, "?dryRun=true", chunks.clone(), false).await;
    assert_error(&cut, 413, "Request body too large");
    let cut = post_chunked(ts, key, "", chunks, false).await;
    assert_error(&cut, 413, "Request body too large");
    // The parts committed before the cut stay imported, whole parts only.
    let kept = total(ts, key).await;
    let part = engaged::domain::import::PART_ROWS as u64;
    assert!(
        kept < 400 && kept % part == 0,
        "whole parts before the cap, nothing of the part it cut: {kept}"
    );
    let small = format!("firstName,phone\n{}", rows(500, 5));
    let ok = post_chunked(ts, key, "", vec![small], false).await;
    assert_eq!(expect(&ok, 200)["created"], json!(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_answers_408_and_a_dry_run_imports_nothing() {
    let org = Org::start_with(|c| {
        c.limits.body_read_timeout = std::time::Duration::from_secs(1);
    })
    .await;
    let (ts, key) = (&org.ts, &org.write);
    let start = format!("firstName,phone\n{}", rows(0, 3));
    let stalled = post_chunked(ts, key, "?dryRun=true", vec![start], true).await;
    assert_error(&stalled, 408, "Request body not received in time");
    assert_eq!(total(ts, key).await, 0, "nothing imported");
}

// ---- The console's uploads: bounded in number, disk and what the preview shows. ----

/// The console's multipart upload of `file` (named `name`).
async fn console_upload(
    ts: &TestServer,
    session: &engaged::testkit::console::Session,
    name: &str,
    file: &str,
) -> engaged::testkit::Response {
    use bytes::Bytes;
    use http_body_util::Full;
    let body = format!(
        "--XyZ\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{}\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
         Content-Type: text/csv\r\n\r\n{file}\r\n--XyZ--\r\n",
        session.csrf
    );
    let request = hyper::Request::post(format!("{}/console/import", ts.origin()))
        .header(
            "cookie",
            format!("__Host-engaged_session={}", session.cookie),
        )
        .header("origin", ts.origin())
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    // Post/Redirect/Get: the preview, or the import page saying why not.
    let posted = ts.send(request).await;
    assert_eq!(posted.status, 303, "{}", posted.text());
    let to = posted.headers["location"]
        .to_str()
        .expect("a path")
        .to_string();
    ts.console(Method::GET, &to, Some(&session.cookie), None, &[])
        .await
}

/// An upload refused: the import page again, with the file input.
fn assert_refused_upload(page: &engaged::testkit::Response) {
    assert_eq!(page.status, 200);
    assert!(
        page.text().contains("Upload and preview"),
        "{}",
        page.text()
    );
}

/// The upload token a preview page carries.
fn upload_token(page: &str) -> String {
    let at = page
        .find("name=\"upload\" value=\"")
        .expect("the upload's token")
        + 21;
    page[at..at + 32].to_string()
}

fn waiting_uploads(ts: &TestServer) -> Vec<std::path::PathBuf> {
    let Ok(orgs) = ts.data_dir.join("imports").read_dir() else {
        return Vec::new();
    };
    orgs.flatten()
        .flat_map(|org| org.path().read_dir().into_iter().flatten().flatten())
        .map(|f| f.path())
        .filter(|p| p.extension().is_some_and(|e| e == "upload"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_keeps_two_uploads_waiting_private_and_removes_an_imported_one() {
    let ts = TestServer::start().await;
    let password = ts.user("acme", "ag@example.com", "Ag", "agent").await;
    let session = ts.sign_in("ag@example.com", &password).await;
    let file = "firstName,phone\nZed,+15125550188\n";
    let first = console_upload(&ts, &session, "a.csv", file).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let second = console_upload(&ts, &session, "b.csv", file).await;
    assert_eq!(second.status, 200);
    let third = console_upload(&ts, &session, "c.csv", file).await;
    assert_refused_upload(&third);
    assert!(
        third
            .text()
            .contains("2 uploads are already waiting to be imported"),
        "{}",
        third.text()
    );
    let waiting = waiting_uploads(&ts);
    assert_eq!(waiting.len(), 2, "the third was not written");
    use std::os::unix::fs::PermissionsExt;
    for path in &waiting {
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
    }
    let token = upload_token(&first.text());
    let done = ts
        .console_post(
            "/console/import/run",
            &session.cookie,
            &[
                ("csrf", &session.csrf),
                ("upload", &token),
                ("format", "csv"),
                ("map0", "firstName"),
                ("map1", "phone"),
                ("action", "import"),
            ],
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text());
    assert_eq!(
        waiting_uploads(&ts).len(),
        1,
        "the imported upload is removed"
    );
    let again = console_upload(&ts, &session, "c.csv", file).await;
    assert_eq!(again.status, 200, "room for one again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_past_the_organization_s_quota_is_refused_and_removed() {
    let ts = TestServer::start_with(|c| c.import_quota_bytes = 2048).await;
    let password = ts.user("acme", "ag@example.com", "Ag", "agent").await;
    let session = ts.sign_in("ag@example.com", &password).await;
    let big = format!("firstName,phone\n{}", rows(0, 200));
    let refused = console_upload(&ts, &session, "big.csv", &big).await;
    assert_refused_upload(&refused);
    assert!(
        refused.text().contains("past their quota"),
        "{}",
        refused.text()
    );
    assert!(waiting_uploads(&ts).is_empty(), "nothing kept");
    let small = console_upload(&ts, &session, "small.csv", &rows(0, 3)).await;
    assert_eq!(small.status, 200, "within the quota");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_shows_10_rows_of_30_columns_and_says_what_is_left_out() {
    let ts = TestServer::start().await;
    let password = ts.user("acme", "ag@example.com", "Ag", "agent").await;
    let session = ts.sign_in("ag@example.com", &password).await;
    let header: Vec<String> = (0..40).map(|i| format!("col{i}")).collect();
    let mut file = header.join(",") + "\n";
    for r in 0..12 {
        let cells: Vec<String> = (0..40).map(|c| format!("r{r}c{c}")).collect();
        file.push_str(&(cells.join(",") + "\n"));
    }
    let page = console_upload(&ts, &session, "wide.csv", &file).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(text.contains(">r9c29</td>"), "the 10th row's 30th cell");
    assert!(!text.contains("r9c30"), "no 31st column");
    assert!(!text.contains("r10c0"), "no 11th row");
    assert!(text.contains("10 more columns are not shown."), "{text}");
    assert!(text.contains("more follow"), "{text}");

    let wide: Vec<String> = (0..100_000).map(|i| format!("c{i}")).collect();
    let page = console_upload(&ts, &session, "wider.csv", &(wide.join(",") + "\n")).await;
    assert_refused_upload(&page);
    assert!(page.text().len() < 100_000, "a short page");
    assert_eq!(
        waiting_uploads(&ts).len(),
        1,
        "the refused file does not wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_s_refused_rows_download_is_the_spooled_file_neutralized() {
    let ts = TestServer::start().await;
    let password = ts.user("acme", "ag@example.com", "Ag", "agent").await;
    let session = ts.sign_in("ag@example.com", &password).await;
    let file = "firstName,phone,profile\n@SUM(1+9)*cmd|' /C calc'!A0,+15125550189,nope\n";
    let preview = console_upload(&ts, &session, "f.csv", file).await;
    let token = upload_token(&preview.text());
    let done = ts
        .console_post(
            "/console/import/run",
            &session.cookie,
            &[
                ("csrf", &session.csrf),
                ("upload", &token),
                ("format", "csv"),
                ("map0", "firstName"),
                ("map1", "phone"),
                ("map2", "customerProfile"),
                ("action", "import"),
            ],
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text());
    let href = format!("/console/import/{token}/refused.csv");
    assert!(done.text().contains(&href), "{}", done.text());
    let csv = ts
        .console(Method::GET, &href, Some(&session.cookie), None, &[])
        .await;
    assert_eq!(csv.status, 200);
    assert_eq!(
        csv.text(),
        "row,reason,firstName,phone,profile\n2,Unknown profile: nope,'@SUM(1+9)*cmd|' /C calc'!A0,+15125550189,nope\n"
    );
}

/// The ledger of the lead whose search finds `q`.
async fn ledger_of(ts: &TestServer, key: &str, q: &str) -> Value {
    let found = expect(&ts.get(key, &format!("/v1/leads/search?q={q}")).await, 200);
    let id = str_of(&found["leads"][0]["id"]).to_string();
    expect(&ts.get(key, &format!("/v1/leads/{id}/consent")).await, 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consent_columns_write_ledger_entries_and_a_bad_value_refuses_the_row() {
    let org = setup().await;
    let (ts, key) = (&org.ts, &org.write);
    let csv = "\
First Name,Phone Number,Email,Consent,Consent Channels,consentAt,consentSource,consentText,consentUrl,consentIp
Ana,(512) 555-0101,ana@example.com,Yes,sms;VOICE,2025-06-01T12:00:00Z,,I agree to calls and texts,https://acme.example/form,203.0.113.7
Cy,(512) 555-0103,,TRUE,,,web_form,,,
Di,(512) 555-0104,,maybe,,,,,,
Ed,(512) 555-0105,,yes,fax,,,,,
Fa,(512) 555-0106,,no,,2999-01-01T00:00:00Z,,,,
Gu,(512) 555-0107,,granted,,,rumour,,,
Ho,(512) 555-0108,,,,,,,,
";
    let report = import(ts, key, "", "text/csv", csv).await;
    assert_eq!(report["created"], json!(3), "{report}");
    assert_eq!(
        refused(&report),
        [
            (
                4,
                "Invalid consent: maybe (yes, true, granted, no, false or revoked)".to_string()
            ),
            (5, "Invalid consentChannels: fax (sms;voice;email)".to_string()),
            (
                6,
                "Consent cannot be given in the future: consentAt".to_string()
            ),
            (
                7,
                "Invalid consentSource: rumour (one of import, api, console, web_form, keyword, reply, call, unsubscribe_link, timeout, webchat)".to_string()
            ),
        ]
    );

    let ana = ledger_of(ts, key, "ana").await;
    assert_eq!(
        ana["current"],
        json!({"sms": "granted", "voice": "granted", "email": "unknown"}),
        "{ana}"
    );
    let entries = ana["entries"].as_array().expect("entries");
    let mut channels: Vec<&str> = entries.iter().map(|e| str_of(&e["channel"])).collect();
    channels.sort();
    assert_eq!(channels, ["sms", "voice"], "one entry per channel: {ana}");
    for entry in entries {
        assert_eq!(entry["status"], "granted", "{entry}");
        assert_eq!(entry["source"], "import", "{entry}");
        assert_eq!(entry["purpose"], "marketing", "{entry}");
        assert!(
            str_of(&entry["at"]).starts_with("2025-06-01T12:00:00"),
            "{entry}"
        );
        assert_eq!(entry["proof"]["text"], "I agree to calls and texts");
        assert_eq!(entry["proof"]["url"], "https://acme.example/form");
        assert_eq!(entry["proof"]["ip"], "203.0.113.7");
        assert!(entry["proof"]["recordedBy"]["keyId"].is_string(), "{entry}");
    }

    // Without consentChannels: every channel the lead can receive (Cy has no email).
    let cy = ledger_of(ts, key, "cy").await;
    let entries = cy["entries"].as_array().expect("entries");
    let mut channels: Vec<&str> = entries.iter().map(|e| str_of(&e["channel"])).collect();
    channels.sort();
    assert_eq!(channels, ["sms", "voice"], "{cy}");
    assert!(entries.iter().all(|e| e["source"] == "web_form"), "{cy}");

    // No consent cell, no entry; the CSV export lists the imported entries.
    let ho = ledger_of(ts, key, "ho").await;
    assert_eq!(ho["entries"], json!([]), "{ho}");
    let found = expect(&ts.get(key, "/v1/leads/search?q=ana").await, 200);
    let id = str_of(&found["leads"][0]["id"]).to_string();
    let csv = ts
        .get(key, &format!("/v1/leads/{id}/consent?format=csv"))
        .await
        .text();
    assert!(
        csv.contains(",sms,granted,marketing,import,I agree to calls and texts,https://acme.example/form,203.0.113.7,"),
        "{csv}"
    );
}

/// Previews nobody imported are listed by name on the import page, each with
/// "Discard": a discarded one makes room at once (no hour's lock), and the browser is
/// sent back to the page (Post/Redirect/Get).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_uploads_are_listed_and_a_discarded_one_makes_room() {
    let ts = TestServer::start().await;
    let password = ts.user("acme", "ag@example.com", "Ag", "agent").await;
    let session = ts.sign_in("ag@example.com", &password).await;
    assert!(!import_page(&ts, &session).await.contains("Waiting uploads"));
    let file = "firstName,phone\nZed,+15125550188\n";
    console_upload(&ts, &session, "spring.csv", file).await;
    let second = console_upload(&ts, &session, "autumn.csv", file).await;
    let refused = console_upload(&ts, &session, "third.csv", file).await;
    assert_refused_upload(&refused);
    let text = refused.text();
    assert!(text.contains("import or discard one of them"), "{text}");
    for shown in [
        "Waiting uploads",
        "spring.csv",
        "autumn.csv",
        "Discard autumn.csv",
    ] {
        assert!(text.contains(shown), "{shown} not in {text}");
    }
    let token = upload_token(&second.text());
    let discarded = ts
        .console(
            Method::POST,
            "/console/import/discard",
            Some(&session.cookie),
            Some(&ts.origin()),
            &[("csrf", &session.csrf), ("upload", &token)],
        )
        .await;
    assert_eq!(discarded.status, 303);
    let listed = import_page(&ts, &session).await;
    assert!(listed.contains("spring.csv"), "{listed}");
    assert!(!listed.contains("autumn.csv"), "{listed}");
    assert_eq!(waiting_uploads(&ts).len(), 1);
    let bad = ts
        .console(
            Method::POST,
            "/console/import/discard",
            Some(&session.cookie),
            Some(&ts.origin()),
            &[("csrf", &session.csrf), ("upload", "../../etc")],
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(waiting_uploads(&ts).len(), 1, "nothing else went");
    let again = console_upload(&ts, &session, "third.csv", file).await;
    assert_eq!(again.status, 200, "room again at once");
}

async fn import_page(ts: &TestServer, session: &engaged::testkit::console::Session) -> String {
    ts.console(
        Method::GET,
        "/console/import",
        Some(&session.cookie),
        None,
        &[],
    )
    .await
    .text()
}
