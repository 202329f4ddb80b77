//! `/console/import`: a file of leads uploaded, its columns mapped and its first rows
//! shown with what importing it would do (a dry run), then imported; the report with
//! the refused rows, and those rows as a CSV download. The rules are
//! `domain::import`'s, the same as `engaged import` and `POST /v1/leads/import`.
//!
//! The upload is written as it arrives to `<data dir>/imports/<org>/<token>.upload`
//! (never whole in memory), read again for each preview and for the import, and removed
//! with its refused rows an hour later. The form's CSRF token comes before the file in
//! the multipart body and is checked before a byte of the file is written.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::api::request::RequestBody;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::CONTENT_TYPE;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use maud::{html, Markup};
use tokio::io::AsyncWriteExt;

use super::form::Form;
use super::layout;
use super::respond;
use super::session::{self, Visitor};
use crate::api::response::{full, Body};
use crate::api::AppState;
use crate::domain::import::mapping::{Field, Mapping, CHOICES};
use crate::domain::import::{self, Format, Options, Report};
use crate::error::{Error, Result};

/// How long an upload and its refused rows are kept.
const KEEP: Duration = Duration::from_secs(3600);
/// Rows the preview shows.
const PREVIEW_ROWS: usize = 10;
/// Refused rows the page lists (all are in the download).
const LISTED_REFUSALS: usize = 100;

fn dir(state: &AppState, visitor: &Visitor) -> PathBuf {
    state.store.dir().join("imports").join(visitor.org())
}

/// A token names an upload: 32 hex digits, nothing else reaches the file system.
fn valid_token(token: &str) -> bool {
    token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

fn upload_path(state: &AppState, visitor: &Visitor, token: &str) -> Result<PathBuf> {
    if !valid_token(token) {
        return Err(Error::NotFound("Not found".into()));
    }
    Ok(dir(state, visitor).join(format!("{token}.upload")))
}

/// `GET /console/import`.
pub fn page(visitor: &Visitor) -> Result<Response<Body>> {
    Ok(respond::html(StatusCode::OK, upload_page(visitor, None)))
}

fn upload_page(visitor: &Visitor, problem: Option<&str>) -> Markup {
    layout::page(
        "Import leads",
        Some(visitor),
        html! {
            h1 { "Import leads" }
            p { "A CSV file (comma or semicolon) or NDJSON, UTF-8. Columns map by name: first name, last name, phone, email, profile, external id, tags (separated by ;); any other column is kept as additional information. A row matching a lead by external id, phone or email updates it instead of making a duplicate." }
            @if let Some(problem) = problem { p.field-error role="alert" { (problem) } }
            form.stack method="post" action="/console/import" enctype="multipart/form-data" {
                (layout::csrf_field(visitor))
                div {
                    label for="file" { "File" }
                    input #file type="file" name="file" accept=".csv,.ndjson,.jsonl,text/csv" required;
                }
                div.actions { button type="submit" { "Upload and preview" } }
            }
        },
    )
}

/// `POST /console/import` (multipart): stores the upload and shows its preview.
pub async fn upload(
    state: &AppState,
    visitor: &Visitor,
    parts: &Parts,
    mut body: RequestBody,
) -> Result<Response<Body>> {
    session::check_origin(parts)?;
    // A signed-in person's upload: held to an upload's pace, not a form's deadline.
    body.stream(import::MAX_FILE_BYTES);
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| Error::BadRequest("The form could not be read".into()))?;
    let stream = body.into_data_stream();
    let mut multipart = multer::Multipart::with_constraints(
        stream,
        boundary,
        multer::Constraints::new()
            .size_limit(multer::SizeLimit::new().whole_stream(import::MAX_FILE_BYTES)),
    );
    let unreadable = |_| Error::BadRequest("The form could not be read".into());
    let mut checked = false;
    let mut saved = None;
    while let Some(mut field) = multipart.next_field().await.map_err(unreadable)? {
        match field.name() {
            Some("csrf") => {
                let token = field.text().await.map_err(unreadable)?;
                session::check_post(
                    visitor,
                    parts,
                    &Form::from_pairs(vec![("csrf".into(), token)]),
                )?;
                checked = true;
            }
            Some("file") if checked => {
                let name = field.file_name().unwrap_or_default().to_string();
                let token = hex::encode(crate::ids::random_bytes::<16>());
                let folder = dir(state, visitor);
                tokio::fs::create_dir_all(&folder).await.map_err(io)?;
                sweep(&folder).await;
                let path = folder.join(format!("{token}.upload"));
                let mut file = tokio::fs::File::create(&path).await.map_err(io)?;
                let mut size = 0u64;
                while let Some(chunk) = field.chunk().await.map_err(unreadable)? {
                    size += chunk.len() as u64;
                    file.write_all(&chunk).await.map_err(io)?;
                }
                file.flush().await.map_err(io)?;
                saved = Some((token, name, size));
            }
            _ => {}
        }
    }
    if !checked {
        return Err(Error::Forbidden);
    }
    match saved {
        Some((token, name, size)) if size > 0 => {
            let format = Format::of_path(std::path::Path::new(&name));
            preview(state, visitor, &token, format, None, false).await
        }
        _ => Ok(respond::html(
            StatusCode::BAD_REQUEST,
            upload_page(visitor, Some("Choose a file to import.")),
        )),
    }
}

fn io(e: std::io::Error) -> Error {
    Error::Internal(format!("an import upload: {e}"))
}

/// Removes uploads and refused rows older than [`KEEP`].
async fn sweep(folder: &std::path::Path) {
    let Ok(mut entries) = tokio::fs::read_dir(folder).await else {
        return;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let old = entry
            .metadata()
            .await
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > KEEP);
        if old {
            let _ = tokio::fs::remove_file(entry.path()).await;
        }
    }
}

/// The columns and first rows of an upload (a CSV's header and rows; NDJSON: none).
async fn head(path: &std::path::Path) -> Result<(Vec<String>, Vec<Vec<String>>)> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path).map_err(|_| Error::NotFound("Not found".into()))?;
        let mut reader = std::io::BufReader::new(file);
        let start = std::io::BufRead::fill_buf(&mut reader).map_err(io)?;
        let bom = start.starts_with(&[0xEF, 0xBB, 0xBF]);
        let delimiter = import::delimiter(start);
        if bom {
            std::io::BufRead::consume(&mut reader, 3);
        }
        let mut csv = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .flexible(true)
            .from_reader(reader);
        let header: Vec<String> = csv
            .byte_headers()
            .map_err(|_| Error::BadRequest("The file's header could not be read".into()))?
            .iter()
            .map(|h| String::from_utf8_lossy(h).trim().to_string())
            .collect();
        let rows = csv
            .byte_records()
            .take(PREVIEW_ROWS)
            .filter_map(|r| r.ok())
            .map(|r| {
                r.iter()
                    .map(|c| String::from_utf8_lossy(c).into_owned())
                    .collect()
            })
            .collect();
        Ok((header, rows))
    })
    .await
    .map_err(|e| Error::Internal(format!("an import preview: {e}")))?
}

async fn run(
    state: &AppState,
    visitor: &Visitor,
    token: &str,
    options: &Options,
) -> Result<Report> {
    let path = upload_path(state, visitor, token)?;
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|_| Error::NotFound("This upload is gone: upload the file again.".into()))?;
    let caller = visitor.caller();
    import::run(&state.store, &caller, options, file, |_| {}).await
}

/// The preview: the mapping (guessed, or as chosen), the first rows, and the dry run.
async fn preview(
    state: &AppState,
    visitor: &Visitor,
    token: &str,
    format: Format,
    fields: Option<Vec<Field>>,
    create_only: bool,
) -> Result<Response<Body>> {
    let path = upload_path(state, visitor, token)?;
    let (header, rows) = match format {
        Format::Csv => head(&path).await?,
        Format::Ndjson => (Vec::new(), Vec::new()),
    };
    let mut mapping = Mapping::guess(header.clone());
    if let Some(fields) = fields.clone() {
        mapping.fields = fields;
    }
    let options = Options {
        format,
        dry_run: true,
        create_only,
        fields: (format == Format::Csv).then(|| mapping.fields.clone()),
    };
    let report = run(state, visitor, token, &options).await;
    let format_name = match format {
        Format::Csv => "csv",
        Format::Ndjson => "ndjson",
    };
    let markup = layout::page(
        "Import leads",
        Some(visitor),
        html! {
            h1 { "Import leads" }
            form.stack method="post" action="/console/import/run" {
                (layout::csrf_field(visitor))
                input type="hidden" name="upload" value=(token);
                input type="hidden" name="format" value=(format_name);
                @if !header.is_empty() {
                    h2 { "Columns" }
                    div.table-wrap {
                        table {
                            thead { tr { th scope="col" { "Column" } th scope="col" { "Imported as" } } }
                            tbody {
                                @for (i, column) in header.iter().enumerate() {
                                    tr {
                                        td { label for={ "map-" (i) } { (column) } }
                                        td {
                                            select id={ "map-" (i) } name={ "map" (i) } {
                                                @for (name, field) in &CHOICES {
                                                    option value=(name) selected[mapping.field(i) == field] { (choice_label(name)) }
                                                }
                                                option value="info" selected[matches!(mapping.field(i), Field::Info(_))] { "Additional info" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    h2 #first-rows { "First rows" }
                    // Cells keep their words whole; the table scrolls sideways instead.
                    div.table-wrap.preview role="region" aria-labelledby="first-rows" tabindex="0" {
                        table {
                            thead { tr { @for column in &header { th scope="col" { (column) } } } }
                            tbody { @for row in &rows { tr { @for cell in row { td { (cell) } } } } }
                        }
                    }
                }
                div {
                    input #create-only type="checkbox" name="createOnly" value="on" checked[create_only];
                    " "
                    label for="create-only" { "Only create new leads (refuse rows matching a lead)" }
                }
                @match &report {
                    Ok(report) => {
                        h2 { "What importing would do" }
                        (summary(report))
                        (refusals(report, None))
                    }
                    Err(e) => p.field-error role="alert" { (e.to_string()) }
                }
                div.actions {
                    button.secondary type="submit" name="action" value="preview" { "Preview again" }
                    button type="submit" name="action" value="import" { "Import" }
                }
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

fn choice_label(name: &str) -> &'static str {
    match name {
        "firstName" => "First name",
        "lastName" => "Last name",
        "name" => "Full name",
        "phone" => "Phone",
        "email" => "Email",
        "customerProfile" => "Profile",
        "externalLeadId" => "External id",
        "secondaryCrmLeadId" => "Secondary CRM id",
        "summary" => "Summary",
        "timeZone" => "Time zone",
        "tags" => "Tags",
        _ => "Leave out",
    }
}

fn summary(report: &Report) -> Markup {
    html! {
        dl.facts.import-report {
            dt { "Created" } dd { (report.created) }
            dt { "Updated" } dd { (report.updated) }
            dt { "Merged" } dd { (report.merged) }
            dt { "Refused" } dd { (report.refused.len()) }
        }
    }
}

fn refusals(report: &Report, download: Option<&str>) -> Markup {
    html! {
        @if !report.refused.is_empty() {
            div.table-wrap {
                table {
                    caption { "Refused rows" }
                    thead { tr { th scope="col" { "Row" } th scope="col" { "Reason" } } }
                    tbody {
                        @for r in report.refused.iter().take(LISTED_REFUSALS) {
                            tr { td { (r.row) } td { (r.reason) } }
                        }
                    }
                }
            }
            @if let Some(href) = download {
                p { a href=(href) download="refused-rows.csv" { "Download the refused rows (CSV)" } }
            }
        }
    }
}

/// `POST /console/import/run`: a preview with the chosen mapping, or the import.
pub async fn act(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Response<Body>> {
    let token = form.text("upload").to_string();
    let format = match form.text("format") {
        "ndjson" => Format::Ndjson,
        _ => Format::Csv,
    };
    let create_only = form.get("createOnly") == Some("on");
    let mut fields = Vec::new();
    if format == Format::Csv {
        let path = upload_path(state, visitor, &token)?;
        let (header, _) = head(&path).await?;
        for (i, column) in header.iter().enumerate() {
            let choice = form.text(&format!("map{i}"));
            let field = Field::chosen(choice, column).unwrap_or_else(|| Field::guess(column));
            fields.push(field);
        }
    }
    if form.text("action") != "import" {
        let fields = (format == Format::Csv).then_some(fields);
        return preview(state, visitor, &token, format, fields, create_only).await;
    }
    let options = Options {
        format,
        dry_run: false,
        create_only,
        fields: (format == Format::Csv).then_some(fields),
    };
    let report = run(state, visitor, &token, &options).await?;
    let path = upload_path(state, visitor, &token)?;
    let _ = tokio::fs::remove_file(&path).await;
    let download = if report.refused.is_empty() {
        None
    } else {
        let refused = dir(state, visitor).join(format!("{token}.refused.csv"));
        tokio::fs::write(&refused, import::refused_csv(&report))
            .await
            .map_err(io)?;
        Some(format!("/console/import/{token}/refused.csv"))
    };
    let markup = layout::page(
        "Import done",
        Some(visitor),
        html! {
            h1 { "Import done" }
            p role="status" { (report.summary()) }
            (summary(&report))
            (refusals(&report, download.as_deref()))
            p { a href="/console/leads" { "See the leads" } " · " a href="/console/import" { "Import another file" } }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

/// `GET /console/import/{token}/refused.csv`: the refused rows of an import.
pub async fn refused(state: &AppState, visitor: &Visitor, token: &str) -> Result<Response<Body>> {
    if !valid_token(token) {
        return Err(Error::NotFound("Not found".into()));
    }
    let path = dir(state, visitor).join(format!("{token}.refused.csv"));
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|_| Error::NotFound("Not found".into()))?;
    Ok(respond::csv_download(
        full(Bytes::from(bytes)),
        "refused-rows.csv",
    ))
}
