//! `/console/import`: a file of leads uploaded, its columns mapped and its first rows
//! shown with what importing it would do (a dry run), then imported; the report with
//! the refused rows, and those rows as a CSV download. The person chooses what a row
//! matching a lead does (update it, fill its empty fields, or skip it) and a campaign
//! for the rows that name none; the preview and the report list each matched row and
//! what it changes ("Row 12 → Maria Gonzalez: first name Maria → Mia"). The rules are
//! `domain::import`'s, the same as `engaged import` and `POST /v1/leads/import`.
//!
//! The upload is written as it arrives to `<data dir>/imports/<org>/<token>.upload`
//! (never whole in memory; `domain::import::files`: mode 0600, at most two waiting per
//! organization, within its disk quota), read again for each preview and for the
//! import, and removed once imported (or by the server's sweeper an hour later); the
//! import's refused rows are written beside it as they are known. The form's CSRF token
//! comes before the file in the multipart body and is checked before a byte of the file
//! is written. The preview shows at most [`PREVIEW_ROWS`] rows of [`PREVIEW_COLUMNS`]
//! columns, and says how many more there are.

use std::path::PathBuf;

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
use crate::api::request::RequestBody;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::import::changes::{ChangedField, FieldChange};
use crate::domain::import::files::{self, MAX_WAITING_UPLOADS};
use crate::domain::import::mapping::{Field, Mapping, CHOICES};
use crate::domain::import::{self, Format, OnMatch, Options, Report};
use crate::domain::records::leads::LeadText;
use crate::error::{Error, Result};
use crate::store::Reader;

/// The person's choices for an import besides its mapping.
#[derive(Debug, Clone, Default)]
struct Choices {
    /// "Only create new leads" is [`OnMatch::Skip`], not a second control.
    on_match: OnMatch,
    /// The campaign (profile) of rows that name none.
    profile: Option<String>,
}

impl Choices {
    fn from_form(form: &Form) -> Choices {
        let profile = form.text("profile").trim();
        Choices {
            on_match: OnMatch::parse(form.text("onMatch")).unwrap_or_default(),
            profile: (!profile.is_empty()).then(|| profile.to_string()),
        }
    }
}

/// The radio buttons of the choice for matched rows, with their words.
const ON_MATCH: [(OnMatch, &str); 3] = [
    (OnMatch::Update, "Update fields"),
    (OnMatch::Fill, "Fill empty fields only"),
    (
        OnMatch::Skip,
        "Only create new leads (leave matching leads as they are)",
    ),
];

/// Rows the preview shows.
const PREVIEW_ROWS: usize = 10;
/// Columns the preview's rows show.
const PREVIEW_COLUMNS: usize = 30;

fn dir(state: &AppState, visitor: &Visitor) -> PathBuf {
    files::org_dir(state.store.dir(), visitor.org())
}

fn upload_path(state: &AppState, visitor: &Visitor, token: &str) -> Result<PathBuf> {
    if !files::valid_token(token) {
        return Err(Error::NotFound("Not found".into()));
    }
    Ok(files::upload_path(state.store.dir(), visitor.org(), token))
}

/// `GET /console/import`: the upload form and the uploads waiting for their import,
/// with why the last upload was refused (Post/Redirect/Get) once.
pub fn page(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let problem = state
        .flash
        .take::<UploadRefused>(visitor.token_hash, "/console/import");
    Ok(respond::html(
        StatusCode::OK,
        upload_page(state, visitor, problem.as_ref().map(|p| p.0.as_str())),
    ))
}

/// Why an upload was refused, for the import page the refusal redirects to.
struct UploadRefused(String);

/// The choices of a "Preview again", for the preview page it redirects to.
struct Previewed {
    fields: Option<Vec<Field>>,
    choices: Choices,
}

/// An import's report, rendered once for the page the import redirects to.
struct Reported(Markup);

fn preview_path(token: &str) -> String {
    format!("/console/import/{token}")
}

fn done_path(token: &str) -> String {
    format!("/console/import/{token}/done")
}

/// `GET /console/import/{token}`: an upload's preview, with the mapping and choices
/// of the last "Preview again" (or those guessed).
pub async fn preview_page(
    state: &AppState,
    visitor: &Visitor,
    token: &str,
) -> Result<Response<Body>> {
    let name = files::kept_name(state.store.dir(), visitor.org(), token);
    let format = Format::of_path(std::path::Path::new(&name));
    let previewed = state
        .flash
        .take::<Previewed>(visitor.token_hash, &preview_path(token));
    match previewed {
        Some(p) => preview(state, visitor, token, format, p.fields, &p.choices).await,
        None => preview(state, visitor, token, format, None, &Choices::default()).await,
    }
}

/// `GET /console/import/{token}/done`: the report of the import that redirected here,
/// once; afterwards, where its leads and refused rows are.
pub fn done_page(state: &AppState, visitor: &Visitor, token: &str) -> Result<Response<Body>> {
    let shown = state
        .flash
        .take::<Reported>(visitor.token_hash, &done_path(token));
    let refused = files::refused_path(state.store.dir(), visitor.org(), token).exists();
    let markup = layout::page(
        "Import done",
        Some(visitor),
        html! {
            h1 { "Import done" }
            @match shown {
                Some(Reported(report)) => (report),
                None => {
                    p { "This import has finished; its report was shown when it ended." }
                    @if refused {
                        p { a href={ "/console/import/" (token) "/refused.csv" } download="refused-rows.csv" { "Download the refused rows (CSV)" } }
                    }
                }
            }
            p { a href="/console/leads" { "See the leads" } " · " a href="/console/import" { "Import another file" } }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

/// `POST /console/import/discard`: the waiting upload `upload` goes (and its place
/// with it), then back to the import page (Post/Redirect/Get). One already gone is
/// no error: the page shows what waits.
pub fn discard(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Response<Body>> {
    let token = form.text("upload");
    if !files::valid_token(token) {
        return Err(Error::BadRequest("No such upload".into()));
    }
    files::discard(state.store.dir(), visitor.org(), token);
    Ok(respond::redirect("/console/import"))
}

/// The uploads waiting for their import (previews nobody imported), each with
/// "Preview" and "Discard": a team is never locked out until the sweeper's hour.
fn waiting_uploads(state: &AppState, visitor: &Visitor) -> Markup {
    let waiting = files::waiting(&dir(state, visitor));
    if waiting.is_empty() {
        return html! {};
    }
    let zone = state
        .store
        .read()
        .and_then(|r| r.engine_settings(visitor.org()))
        .map(|s| s.time_zone)
        .unwrap_or_default();
    let now = crate::time::now_micros();
    html! {
        section.panel aria-labelledby="waiting-uploads" {
            h2 #waiting-uploads { "Waiting uploads" }
            p.muted { "Files uploaded and previewed but not imported. At most " (MAX_WAITING_UPLOADS) " wait at a time; each is removed an hour after its upload." }
            div.table-wrap {
                table {
                    thead { tr { th scope="col" { "File" } th scope="col" { "Uploaded" } th scope="col" { "Size" } th scope="col" { "Actions" } } }
                    tbody {
                        @for upload in &waiting {
                            @let name = if upload.name.is_empty() { "An upload" } else { upload.name.as_str() };
                            @let at = upload.at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
                            tr {
                                td data-label="File" { (name) }
                                td data-label="Uploaded" { (super::inbox::relative(at, now, &zone)) }
                                td data-label="Size" { (size_words(upload.bytes)) }
                                td data-label="Actions" {
                                    div.actions {
                                        a.button href=(preview_path(&upload.token)) aria-label={ "Preview " (name) } { "Preview" }
                                        form method="post" action="/console/import/discard" {
                                            (layout::csrf_field(visitor))
                                            input type="hidden" name="upload" value=(upload.token);
                                            button.secondary type="submit" aria-label={ "Discard " (name) } { "Discard" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A file's size in words: "812 bytes", "3.4 KB", "1.2 MB".
fn size_words(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{:.1} KB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

fn upload_page(state: &AppState, visitor: &Visitor, problem: Option<&str>) -> Markup {
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
            (waiting_uploads(state, visitor))
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
    let limits = state.imports;
    // A signed-in person's upload: held to an upload's pace, not a form's deadline.
    body.stream(limits.max_bytes);
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| Error::BadRequest("The form could not be read".into()))?;
    if hyper::body::Body::size_hint(&body).lower() > limits.max_bytes {
        return Err(Error::PayloadTooLarge);
    }
    let stream = body.into_data_stream();
    let mut multipart = multer::Multipart::with_constraints(
        stream,
        boundary,
        multer::Constraints::new()
            .size_limit(multer::SizeLimit::new().whole_stream(limits.max_bytes)),
    );
    let unreadable = |e: multer::Error| match e {
        multer::Error::StreamSizeExceeded { .. } => Error::PayloadTooLarge,
        _ => Error::BadRequest("The form could not be read".into()),
    };
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
                let token = files::new_token();
                let folder = dir(state, visitor);
                let root = files::root(state.store.dir());
                let Some(_turn) = files::upload_turn(&folder) else {
                    let problem = "Another file of your organization is being uploaded: try again when it is done.";
                    return Ok(refuse_upload(state, visitor, problem));
                };
                let counted = folder.clone();
                let used = tokio::task::spawn_blocking(move || {
                    files::sweep(&root);
                    files::usage(&counted)
                })
                .await
                .map_err(|e| Error::Internal(format!("an import upload: {e}")))?;
                if used.uploads >= MAX_WAITING_UPLOADS {
                    let problem = format!("{MAX_WAITING_UPLOADS} uploads are already waiting to be imported: import or discard one of them (below) before uploading another file.");
                    return Ok(refuse_upload(state, visitor, &problem));
                }
                let path = upload_path(state, visitor, &token)?;
                let file = files::create_private(&path).map_err(io)?;
                let mut file = tokio::fs::File::from_std(file);
                let mut size = 0u64;
                let write = async {
                    while let Some(chunk) = field.chunk().await.map_err(unreadable)? {
                        size += chunk.len() as u64;
                        if used.bytes + size > limits.quota_bytes {
                            return Ok(false);
                        }
                        file.write_all(&chunk).await.map_err(io)?;
                    }
                    file.flush().await.map_err(io)?;
                    Ok::<bool, Error>(true)
                };
                let written = write.await;
                match written {
                    Ok(true) => {}
                    Ok(false) => {
                        let _ = tokio::fs::remove_file(&path).await;
                        let problem = format!("This file would take your organization's import files past their quota of {} MiB: import or wait for the waiting uploads (removed an hour after they were uploaded).", limits.quota_bytes / (1024 * 1024));
                        return Ok(refuse_upload(state, visitor, &problem));
                    }
                    Err(e) => {
                        let _ = tokio::fs::remove_file(&path).await;
                        return Err(e);
                    }
                }
                files::keep_name(state.store.dir(), visitor.org(), &token, &name);
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
            if Format::of_path(std::path::Path::new(&name)) == Format::Csv {
                if let Err(e) = head(&upload_path(state, visitor, &token)?).await {
                    // A file that cannot be imported (its header refused) does not wait.
                    files::discard(state.store.dir(), visitor.org(), &token);
                    return Ok(refuse_upload(state, visitor, &e.to_string()));
                }
            }
            // Post/Redirect/Get: the preview is a page of its own.
            Ok(respond::redirect(&preview_path(&token)))
        }
        _ => Ok(refuse_upload(state, visitor, "Choose a file to import.")),
    }
}

/// Back to the import page (Post/Redirect/Get), which says why the file was refused.
fn refuse_upload(state: &AppState, visitor: &Visitor, problem: &str) -> Response<Body> {
    state.flash.put(
        visitor.token_hash,
        "/console/import",
        UploadRefused(problem.to_string()),
    );
    respond::redirect("/console/import")
}

fn io(e: std::io::Error) -> Error {
    Error::Internal(format!("an import upload: {e}"))
}

/// The columns and first rows of an upload (a CSV's header and rows; NDJSON: none).
async fn head(path: &std::path::Path) -> Result<import::Head> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path).map_err(|_| Error::NotFound("Not found".into()))?;
        import::head(file, PREVIEW_ROWS)
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
    choices: &Choices,
) -> Result<Response<Body>> {
    let path = upload_path(state, visitor, token)?;
    let profiles = state.store.read()?.campaign_names(visitor.org())?;
    let import::Head { header, rows, more } = match format {
        Format::Csv => head(&path).await?,
        Format::Ndjson => import::Head::default(),
    };
    let hidden_columns = header.len().saturating_sub(PREVIEW_COLUMNS);
    let mut mapping = Mapping::guess(header.clone());
    if let Some(fields) = fields.clone() {
        mapping.fields = fields;
    }
    let options = Options {
        format,
        dry_run: true,
        create_only: false,
        on_match: choices.on_match,
        profile: choices.profile.clone(),
        fields: (format == Format::Csv).then(|| mapping.fields.clone()),
        refused_to: None,
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
                        table.cards {
                            thead { tr { @for column in header.iter().take(PREVIEW_COLUMNS) { th scope="col" { (column) } } } }
                            tbody { @for row in &rows { tr { @for (j, cell) in row.iter().take(PREVIEW_COLUMNS).enumerate() {
                                td data-label=(header.get(j).map_or("", String::as_str)) { (cell) }
                            } } } }
                        }
                    }
                    @if hidden_columns > 0 || more {
                        p.preview-more {
                            @if more { "The first " (PREVIEW_ROWS) " rows are shown; more follow. " }
                            @if hidden_columns > 0 { (hidden_columns) " more columns are not shown." }
                        }
                    }
                }
                fieldset.choices {
                    legend { "Rows that match a lead" }
                    @for (choice, words) in ON_MATCH {
                        div {
                            input id={ "on-match-" (choice.as_str()) } type="radio" name="onMatch" value=(choice.as_str()) checked[choices.on_match == choice];
                            " "
                            label for={ "on-match-" (choice.as_str()) } { (words) }
                        }
                    }
                }
                div {
                    label for="profile" { "Add the imported leads to a campaign" }
                    select #profile name="profile" {
                        option value="" selected[choices.profile.is_none()] { "None" }
                        @for name in &profiles {
                            option value=(name.id) selected[choices.profile.as_deref() == Some(name.id.as_str())] { (name.label) }
                        }
                    }
                    p.hint { "Rows that name no campaign of their own join this one." }
                }
                @match &report {
                    Ok(report) => {
                        h2 { "What importing would do" }
                        (summary(report))
                        (matches(report))
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
        "consent" => "Consent (yes or no)",
        "consentChannels" => "Consent channels",
        "consentAt" => "Consent given at",
        "consentSource" => "Consent source",
        "consentText" => "Consent text",
        "consentUrl" => "Consent page URL",
        "consentIp" => "Consent IP address",
        _ => "Leave out",
    }
}

fn summary(report: &Report) -> Markup {
    html! {
        dl.facts.import-report {
            dt { "Created" } dd { (report.created) }
            dt { "Updated" } dd { (report.updated) }
            @if report.unchanged > 0 { dt { "Already up to date" } dd { (report.unchanged) } }
            dt { "Merged" } dd { (report.merged) }
            dt { "Skipped" } dd { (report.skipped) }
            dt { "Refused" } dd { (report.refused_count) }
        }
    }
}

/// The matched rows, one line each: "Row 12 → Maria Gonzalez: first name Maria → Mia".
fn matches(report: &Report) -> Markup {
    html! {
        @if !report.matches.is_empty() {
            h3 #matched-rows { "Rows that match a lead" }
            ul.matches aria-labelledby="matched-rows" {
                @for m in &report.matches {
                    li { "Row " (m.row) " → " (m.name) ": " (changes(&m.changes)) }
                }
            }
            @if report.matches_count > report.matches.len() as u64 {
                p { "The first " (report.matches.len()) " of " (report.matches_count) " matched rows are listed." }
            }
        }
    }
}

/// A match's changes in words ("first name Maria → Mia; phone (empty) → +15125550100").
fn changes(changes: &[FieldChange]) -> String {
    if changes.is_empty() {
        return "no change".into();
    }
    let words: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "{} {} → {}",
                field_words(&c.field),
                value_words(&c.from),
                value_words(&c.to)
            )
        })
        .collect();
    words.join("; ")
}

fn field_words(field: &ChangedField) -> String {
    match field {
        ChangedField::Text(text) => match text {
            LeadText::FirstName => "first name",
            LeadText::LastName => "last name",
            LeadText::CustomerProfile => "campaign",
            LeadText::Summary => "summary",
            LeadText::ExternalLeadId => "external id",
            LeadText::SecondaryCrmLeadId => "secondary CRM id",
            LeadText::TimeZone => "time zone",
            LeadText::Phone => "phone",
            LeadText::Email => "email",
        }
        .to_string(),
        ChangedField::Tags => "tags".into(),
        ChangedField::Info(key) => key.clone(),
    }
}

fn value_words(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "(empty)".into(),
        Value::String(s) if s.is_empty() => "(empty)".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "(none)".into(),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
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
                        @for r in &report.refused {
                            tr { td { (r.row) } td { (r.reason) } }
                        }
                    }
                }
            }
            @if report.refused_count > report.refused.len() as u64 {
                p { "The first " (report.refused.len()) " of " (report.refused_count) " refused rows are listed." }
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
    let choices = Choices::from_form(form);
    let mut fields = Vec::new();
    if format == Format::Csv {
        let path = upload_path(state, visitor, &token)?;
        let header = head(&path).await?.header;
        for (i, column) in header.iter().enumerate() {
            let choice = form.text(&format!("map{i}"));
            let field = Field::chosen(choice, column).unwrap_or_else(|| Field::guess(column));
            fields.push(field);
        }
    }
    if form.text("action") != "import" {
        let fields = (format == Format::Csv).then_some(fields);
        let path = preview_path(&token);
        state
            .flash
            .put(visitor.token_hash, &path, Previewed { fields, choices });
        return Ok(respond::redirect(&path));
    }
    let options = Options {
        format,
        dry_run: false,
        create_only: false,
        on_match: choices.on_match,
        profile: choices.profile.clone(),
        fields: (format == Format::Csv).then_some(fields),
        refused_to: Some(files::refused_path(
            state.store.dir(),
            visitor.org(),
            &token,
        )),
    };
    let report = run(state, visitor, &token, &options).await?;
    files::discard(state.store.dir(), visitor.org(), &token);
    let download = report
        .refused_file
        .is_some()
        .then(|| format!("/console/import/{token}/refused.csv"));
    let shown = html! {
        p role="status" { (report.summary()) }
        (summary(&report))
        (matches(&report))
        (refusals(&report, download.as_deref()))
    };
    // Post/Redirect/Get: a reload shows the report's page, never imports again.
    let path = done_path(&token);
    state.flash.put(visitor.token_hash, &path, Reported(shown));
    Ok(respond::redirect(&path))
}

/// `GET /console/import/{token}/refused.csv`: the refused rows of an import.
pub async fn refused(state: &AppState, visitor: &Visitor, token: &str) -> Result<Response<Body>> {
    if !files::valid_token(token) {
        return Err(Error::NotFound("Not found".into()));
    }
    let path = files::refused_path(state.store.dir(), visitor.org(), token);
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|_| Error::NotFound("Not found".into()))?;
    let stream = tokio_util::io::ReaderStream::new(file);
    let body = http_body_util::StreamBody::new(futures_util::StreamExt::map(stream, |chunk| {
        chunk.map(hyper::body::Frame::data)
    }));
    Ok(respond::csv_download(body.boxed(), "refused-rows.csv"))
}
