//! Importing leads from a file, the same way from the console, `engaged import` and
//! `POST /v1/leads/import`: CSV (RFC 4180, UTF-8 with or without a BOM, comma or
//! semicolon detected from the header) or NDJSON, read as a stream and applied in parts
//! of at most [`PART_ROWS`] rows ([`PART_BYTES`] of cells), each one write job
//! (`rows::apply`). A dry run applies each part in a transaction that is thrown away
//! (`Store::trial`): it reports exactly what would happen and changes nothing.
//!
//! **An import runs in constant memory, whatever the file's shape**: a blocking task
//! reads it into parts, at most two of them waiting, while the parts before are
//! written. A row is at most [`MAX_ROW_BYTES`] and a header at most [`MAX_COLUMNS`]
//! columns (a longer header refuses the file: 400, nothing imported). Records are split
//! by lines here (`lines::Records`), not by the csv crate, so that an unclosed quote
//! refuses its own row only: a record still in quotes after [`MAX_ROW_BYTES`] or at the
//! end of the file is refused and reading resumes at its next line. What stays for the
//! whole import is the file's match keys (as digests: `rows::FileIndex`), the first
//! [`LISTED_REFUSALS`] refusals and the count; every refused row goes to a file
//! (`Options::refused_to`, mode 0600) as it is known.
//!
//! A body that fails (408: it stopped arriving; 413: it passed `max_import_bytes`)
//! ends the import with that error; in a real run the parts committed before stay.

pub mod changes;
pub mod files;
mod lines;
pub mod mapping;
pub mod rows;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncRead;

use crate::csv_cell::{neutralize, Column};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::{Reader, Store};
use changes::{Match, LISTED_MATCHES};
use lines::{Line, Record, Records};
use mapping::{Field, Mapping};
pub use rows::OnMatch;
use rows::{FileIndex, Outcome, Row, Rules};

/// The most rows the reader puts in a part, and a write job takes; the writer takes
/// them in jobs of fewer (`Pace`).
pub const PART_ROWS: usize = 500;
/// How long one write job of an import works on its rows (their index rows
/// included) while other writes come (a single write queued in the last
/// [`OTHERS_WITHIN`]). Its commit comes on top: the sync of its log record, as for
/// any batch, and now and then a checkpoint. Each job's row count is set from what the
/// jobs before took (`Pace`); see `benches/hostile.sh`, attack 3, and
/// docs/performance.md.
pub const PART_TIME: std::time::Duration = std::time::Duration::from_millis(2);
/// How long a job works on its rows while no other write comes: the import at its own
/// speed, in parts of up to [`PART_ROWS`].
pub const PART_TIME_ALONE: std::time::Duration = std::time::Duration::from_millis(100);
/// How recent another write must be for an import to keep its jobs short.
pub const OTHERS_WITHIN: std::time::Duration = std::time::Duration::from_millis(250);

/// The most cell bytes a part holds (wide rows make smaller parts).
pub const PART_BYTES: usize = 4 << 20;
/// The longest row (a CSV record, an NDJSON line), its line end included.
pub const MAX_ROW_BYTES: usize = 64 * 1024;
/// The most columns a CSV header (or fields an NDJSON object) may have.
pub const MAX_COLUMNS: usize = 200;
/// Refusals an import's report lists (all are counted, and written to the refused file).
pub const LISTED_REFUSALS: usize = 100;

/// The bounds of an import's files, from the configuration (`max_import_bytes`,
/// `import_quota_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest file (an API body, a console upload).
    pub max_bytes: u64,
    /// The disk an organization's import files may take.
    pub quota_bytes: u64,
}

/// A file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Ndjson,
}

impl Format {
    /// The format of a `Content-Type` (parameters ignored).
    pub fn of_content_type(value: &str) -> Option<Format> {
        let kind = value.split(';').next().unwrap_or_default().trim();
        match kind.to_ascii_lowercase().as_str() {
            "text/csv" => Some(Format::Csv),
            "application/x-ndjson" | "application/ndjson" => Some(Format::Ndjson),
            _ => None,
        }
    }

    /// The format of a file name (`.ndjson`/`.jsonl`, else CSV).
    pub fn of_path(path: &std::path::Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("ndjson" | "jsonl") => Format::Ndjson,
            _ => Format::Csv,
        }
    }
}

/// How to import.
#[derive(Debug, Clone)]
pub struct Options {
    pub format: Format,
    pub dry_run: bool,
    /// Refuse rows matching a live lead or an earlier row instead of updating.
    pub create_only: bool,
    /// What a row matching a lead does to it.
    pub on_match: OnMatch,
    /// The profile (campaign) of rows that name none: an unknown one refuses the
    /// import before anything is read (`Unknown profile: NAME`).
    pub profile: Option<String>,
    /// The console's choice of field per CSV column, overriding the guess.
    pub fields: Option<Vec<Field>>,
    /// Where every refused row is written (created at the first refusal, mode 0600);
    /// `None`: only the first [`LISTED_REFUSALS`] are kept, in the report.
    pub refused_to: Option<PathBuf>,
}

/// A refused row: its number and why.
#[derive(Debug, Clone, Serialize)]
pub struct Refusal {
    pub row: u64,
    pub reason: String,
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub created: u64,
    pub updated: u64,
    pub merged: u64,
    /// Rows matching a lead left untouched ([`OnMatch::Skip`]).
    pub skipped: u64,
    /// Rows matching a live lead that already held what they say (an email differing
    /// only in case included): nothing written, not counted as updated.
    pub unchanged: u64,
    /// The first [`LISTED_MATCHES`] rows that matched a lead, by row number.
    pub matches: Vec<Match>,
    /// Every row that matched a lead.
    pub matches_count: u64,
    /// The first [`LISTED_REFUSALS`] refused rows, by row number.
    pub refused: Vec<Refusal>,
    /// Every refused row.
    pub refused_count: u64,
    pub dry_run: bool,
    /// The file every refused row was written to (`Options::refused_to`), when a row
    /// was refused.
    #[serde(skip)]
    pub refused_file: Option<PathBuf>,
}

impl Report {
    /// The CLI's last line; rows that changed nothing on their lead are named only
    /// when there are some ("0 created, 0 updated, 4 unchanged, 1 merged, 1 refused").
    pub fn summary(&self) -> String {
        let unchanged = if self.unchanged > 0 {
            format!("{} unchanged, ", self.unchanged)
        } else {
            String::new()
        };
        format!(
            "{} created, {} updated, {unchanged}{} merged, {} refused",
            self.created, self.updated, self.merged, self.refused_count
        )
    }

    /// Rows handled so far.
    pub fn rows(&self) -> u64 {
        self.created
            + self.updated
            + self.unchanged
            + self.merged
            + self.skipped
            + self.refused_count
    }
}

/// A refused row with its cells, on its way to the refused file.
struct Refused {
    row: u64,
    reason: String,
    cells: Vec<String>,
}

/// One part of the file as the parser hands it over.
struct Part {
    rows: Vec<Row>,
    /// Rows unreadable as such (too long, an unclosed quote, bad UTF-8, not a JSON
    /// object), refused before any write.
    unreadable: Vec<Refused>,
    /// NDJSON: each row's line as read (for the refused file), by index of `rows`.
    lines: Vec<String>,
    /// Cell bytes held.
    bytes: usize,
}

/// Imports `input` for `caller`; `progress` hears the rows handled after each part.
pub async fn run<R>(
    store: &Arc<Store>,
    caller: &Caller,
    options: &Options,
    input: R,
    mut progress: impl FnMut(&Report),
) -> Result<Report>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    if let Some(profile) = &options.profile {
        if store.read()?.profile(&caller.org_id, profile)?.is_none() {
            return Err(Error::BadRequest(format!("Unknown profile: {profile}")));
        }
    }
    let (parts, mut receiver) = tokio::sync::mpsc::channel::<Result<Part>>(2);
    let (mapping_tx, mapping_rx) = tokio::sync::oneshot::channel::<Mapping>();
    let parse_options = options.clone();
    let parser = tokio::task::spawn_blocking(move || {
        let input = tokio_util::io::SyncIoBridge::new(input);
        if let Err(e) = parse(input, &parse_options, &parts, mapping_tx) {
            let _ = parts.blocking_send(Err(e));
        }
    });
    let index: Arc<RwLock<FileIndex>> = Arc::default();
    let mut report = Report {
        dry_run: options.dry_run,
        ..Report::default()
    };
    let caller_org = caller.org_id.clone();
    let mut mapping_rx = Some(mapping_rx);
    let mut spool: Option<Spool> = None;
    let mut mapping = Mapping::guess(Vec::new());
    let mut pace = Pace::default();
    while let Some(part) = receiver.recv().await {
        let part = part?;
        if let Some(rx) = mapping_rx.take() {
            mapping = rx.await.unwrap_or(mapping);
        }
        let mut refused = part.unreadable;
        let rows = Arc::new(part.rows);
        let rules = Arc::new(Rules {
            create_only: options.create_only,
            dry_run: options.dry_run,
            on_match: options.on_match,
            profile: options.profile.clone(),
        });
        // The part's rows go to the writer in jobs of `take` rows, sized by what the
        // jobs before cost (`Pace`).
        let mut from = 0;
        while from < rows.len() {
            let take = pace.rows(store.others_writing(OTHERS_WITHIN));
            let (caller, known, job_rows, rules) =
                (caller.clone(), index.clone(), rows.clone(), rules.clone());
            let job = move |tx: &mut crate::store::WriteTx| {
                let known = known
                    .read()
                    .map_err(|_| Error::Internal("import index lock".into()))?;
                let end = (from + take).min(job_rows.len());
                let rows = job_rows.get(from..end).unwrap_or_default();
                rows::apply(tx, &caller, rows, &rules, &known)
            };
            // Parts run in the writer's bulk lane: every other write goes first.
            let (applied, work) = store.bulk_part(&caller_org, options.dry_run, job).await?;
            pace.record(applied.len(), work);
            let offset = from;
            from += applied.len().max(1);
            let mut known = index
                .write()
                .map_err(|_| Error::Internal("import index lock".into()))?;
            for (i, mut done) in applied.into_iter().enumerate() {
                let i = offset + i;
                let matched = done.matched.take();
                if let Some(lead) = done.lead() {
                    known.add(lead, done.row, &done.keys);
                    if let Some(matched) = matched {
                        report.matches_count += 1;
                        if report.matches.len() < LISTED_MATCHES {
                            report.matches.push(Match {
                                row: done.row,
                                lead_id: lead.to_string(),
                                name: matched.name,
                                changes: matched.changes,
                            });
                        }
                    }
                }
                match done.outcome {
                    Outcome::Created(_) => report.created += 1,
                    Outcome::Updated(_) => report.updated += 1,
                    Outcome::Merged(..) => report.merged += 1,
                    Outcome::Skipped(_) => report.skipped += 1,
                    Outcome::Unchanged(_) => report.unchanged += 1,
                    Outcome::Refused(reason) => {
                        let cells = match options.format {
                            Format::Csv => rows
                                .get(i)
                                .map(|row| {
                                    row.cells
                                        .iter()
                                        .map(|(_, v)| v.as_str().unwrap_or_default().to_string())
                                        .collect()
                                })
                                .unwrap_or_default(),
                            Format::Ndjson => part.lines.get(i).cloned().into_iter().collect(),
                        };
                        refused.push(Refused {
                            row: done.row,
                            reason,
                            cells,
                        });
                    }
                }
            }
            drop(known);
        }
        refused.sort_by_key(|r| r.row);
        for r in refused {
            if let Some(path) = &options.refused_to {
                if spool.is_none() {
                    spool = Some(Spool::create(path, options.format, &mapping)?);
                    report.refused_file = Some(path.clone());
                }
            }
            if let Some(spool) = &mut spool {
                spool.write(&r)?;
            }
            report.refused_count += 1;
            if report.refused.len() < LISTED_REFUSALS {
                report.refused.push(Refusal {
                    row: r.row,
                    reason: r.reason,
                });
            }
        }
        progress(&report);
    }
    parser
        .await
        .map_err(|e| Error::Internal(format!("the import's parser: {e}")))?;
    if let Some(spool) = spool {
        spool.finish()?;
    }
    Ok(report)
}

/// The refused file being written: the row number, the reason, then the row's cells
/// under the file's own header (NDJSON: the line), each cell neutralized
/// (`csv_cell::neutralize`).
struct Spool {
    out: csv::Writer<std::io::BufWriter<std::fs::File>>,
    /// The column of the file's phone, counted in the refused file.
    phone: Option<usize>,
}

impl Spool {
    fn create(path: &std::path::Path, format: Format, mapping: &Mapping) -> Result<Spool> {
        let file = files::create_private(path).map_err(spool_error)?;
        // A refused row has the cells it was read with: fewer (an unreadable row) or more.
        let out = csv::WriterBuilder::new()
            .flexible(true)
            .from_writer(std::io::BufWriter::new(file));
        let mut spool = Spool {
            out,
            phone: mapping
                .fields
                .iter()
                .position(|f| *f == Field::Phone)
                .map(|i| i + 2),
        };
        let mut header = vec!["row".to_string(), "reason".to_string()];
        match format {
            Format::Csv => header.extend(mapping.headers.iter().cloned()),
            Format::Ndjson => header.push("line".into()),
        }
        spool.record(&header)?;
        Ok(spool)
    }

    fn write(&mut self, refused: &Refused) -> Result<()> {
        let mut record = Vec::with_capacity(refused.cells.len() + 2);
        record.push(refused.row.to_string());
        record.push(refused.reason.clone());
        record.extend(refused.cells.iter().cloned());
        self.record(&record)
    }

    fn record(&mut self, cells: &[String]) -> Result<()> {
        let phone = self.phone;
        let safe = cells.iter().enumerate().map(|(i, cell)| {
            let column = if Some(i) == phone {
                Column::Phone
            } else {
                Column::Other
            };
            neutralize(cell, column)
        });
        self.out
            .write_record(safe.map(|c| c.into_owned()))
            .map_err(|e| spool_error(e.into()))
    }

    fn finish(self) -> Result<()> {
        let mut inner = self
            .out
            .into_inner()
            .map_err(|e| spool_error(e.into_error()))?;
        inner.flush().map_err(spool_error)
    }
}

/// How many rows the next write job of an import takes: the time its rows' work may
/// take, at what a row's work cost in the jobs before (a moving average), between 1
/// and [`PART_ROWS`].
///
/// A job's commit is not counted: it costs about the same for one row or many (a
/// sync), so counting it per row made parts shrink while it dominated, and smaller
/// parts paid it more often. When every part committed as a checkpoint (until
/// 2026-11-29), an import alone fell to 15 rows a part, 500 rows a second; beside
/// another organization's writes, to one row a part.
#[derive(Debug, Clone, Copy)]
struct Pace {
    /// The writer's work on one row (its index rows included), in microseconds.
    per_row_us: f64,
}

impl Default for Pace {
    fn default() -> Self {
        // Until measured: a row as a slow machine writes it.
        Pace { per_row_us: 500.0 }
    }
}

impl Pace {
    /// The rows of the next job: [`PART_TIME`] of work while `others` write, else
    /// [`PART_TIME_ALONE`].
    fn rows(&self, others: bool) -> usize {
        let time = if others { PART_TIME } else { PART_TIME_ALONE };
        let rows = time.as_micros() as f64 / self.per_row_us.max(1.0);
        (rows as usize).clamp(1, PART_ROWS)
    }

    /// Takes in how long a job of `rows` rows worked on them (its commit not counted).
    fn record(&mut self, rows: usize, work: std::time::Duration) {
        if rows == 0 {
            return;
        }
        let per_row = work.as_micros() as f64 / rows as f64;
        self.per_row_us = 0.7 * self.per_row_us + 0.3 * per_row;
    }
}

fn spool_error(e: std::io::Error) -> Error {
    Error::Internal(format!("the refused rows' file: {e}"))
}

/// A read of the input that failed: the body's own error (408, 413) when it is one.
fn read_error(e: std::io::Error) -> Error {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<Error>()) {
        return inner.clone();
    }
    Error::BadRequest(format!("The file could not be read: {e}"))
}

/// Parses `input` into parts on `parts`; the CSV header's mapping goes to `mapping`
/// first.
fn parse(
    input: impl Read,
    options: &Options,
    parts: &tokio::sync::mpsc::Sender<Result<Part>>,
    mapping_tx: tokio::sync::oneshot::Sender<Mapping>,
) -> Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let start = reader.fill_buf().map_err(read_error)?;
    if start.starts_with(&[0xEF, 0xBB, 0xBF]) {
        reader.consume(3);
    }
    let mut part = new_part();
    let send = |part: &mut Part, last: bool| -> bool {
        let full = part.rows.len() + part.unreadable.len() >= PART_ROWS || part.bytes >= PART_BYTES;
        if !full && !last {
            return true;
        }
        let full = std::mem::replace(part, new_part());
        parts.blocking_send(Ok(full)).is_ok()
    };
    match options.format {
        Format::Csv => {
            let delimiter = delimiter(reader.fill_buf().map_err(read_error)?);
            let mut records = Records::new(reader);
            let header = match header_fields(records.next_record().map_err(read_error)?, delimiter)?
            {
                None => Vec::new(),
                Some(fields) => fields
                    .iter()
                    .map(|h| String::from_utf8_lossy(h).trim().to_string())
                    .collect(),
            };
            check_columns(header.len())?;
            let mut mapping = Mapping::guess(header.clone());
            if let Some(fields) = &options.fields {
                if fields.len() != header.len() {
                    return Err(Error::BadRequest(
                        "The mapping does not match the file's columns".into(),
                    ));
                }
                mapping.fields = fields.clone();
            }
            // Each cell of a row going to additionalInfo carries its column's name.
            let header_bytes: usize = header.iter().map(String::len).sum();
            let _ = mapping_tx.send(mapping.clone());
            let mut number = 1u64;
            while let Some(record) = records.next_record().map_err(read_error)? {
                let bytes = match record {
                    Record::Fields(bytes) if blank(&bytes) => continue,
                    Record::Fields(bytes) => bytes,
                    Record::TooLong => {
                        number += 1;
                        part.unreadable.push(Refused {
                            row: number,
                            reason: too_long(),
                            cells: Vec::new(),
                        });
                        if !send(&mut part, false) {
                            return Ok(());
                        }
                        continue;
                    }
                    Record::Unclosed(line) => {
                        number += 1;
                        part.bytes += line.len();
                        part.unreadable.push(Refused {
                            row: number,
                            reason: "The row has a quote that is not closed".into(),
                            cells: vec![String::from_utf8_lossy(&line)
                                .trim_end_matches(['\r', '\n'])
                                .to_string()],
                        });
                        if !send(&mut part, false) {
                            return Ok(());
                        }
                        continue;
                    }
                };
                number += 1;
                // A row of empty cells (`,,,`, `"",""`) is skipped before it is split: a
                // file of them is read as fast as it arrives.
                if empty_cells(&bytes, delimiter) {
                    continue;
                }
                part.bytes += bytes.len() + header_bytes;
                let fields = match split(&bytes, delimiter) {
                    Ok(fields) => fields,
                    Err(e) => {
                        part.unreadable.push(Refused {
                            row: number,
                            reason: format!("The row could not be read: {e}"),
                            cells: Vec::new(),
                        });
                        if !send(&mut part, false) {
                            return Ok(());
                        }
                        continue;
                    }
                };
                let cells: Vec<String> = fields
                    .iter()
                    .take(MAX_COLUMNS)
                    .map(|c| String::from_utf8_lossy(c).into_owned())
                    .collect();
                if cells.iter().all(|c| c.trim().is_empty()) {
                    continue;
                }
                if fields.iter().any(|c| std::str::from_utf8(c).is_err()) {
                    part.unreadable.push(Refused {
                        row: number,
                        reason: "The row is not UTF-8".into(),
                        cells,
                    });
                } else {
                    let row = Row {
                        number,
                        cells: cells
                            .into_iter()
                            .enumerate()
                            .map(|(i, c)| (mapping.field(i).clone(), Value::String(c)))
                            .collect(),
                    };
                    part.rows.push(row);
                }
                if !send(&mut part, false) {
                    return Ok(());
                }
            }
        }
        Format::Ndjson => {
            let _ = mapping_tx.send(Mapping::guess(Vec::new()));
            let mut lines = Records::new(reader);
            let mut number = 0u64;
            while let Some(line) = lines.next_line().map_err(read_error)? {
                number += 1;
                let line = match line {
                    Line::Text(line) => line,
                    Line::TooLong => {
                        part.unreadable.push(Refused {
                            row: number,
                            reason: too_long(),
                            cells: Vec::new(),
                        });
                        if !send(&mut part, false) {
                            return Ok(());
                        }
                        continue;
                    }
                };
                let text = String::from_utf8_lossy(&line).trim().to_string();
                if text.is_empty() {
                    continue;
                }
                part.bytes += 2 * text.len();
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(members)) if members.len() > MAX_COLUMNS => {
                        part.unreadable.push(Refused {
                            row: number,
                            reason: format!("The row has more than {MAX_COLUMNS} fields"),
                            cells: vec![text],
                        })
                    }
                    Ok(Value::Object(members)) => {
                        let cells = members
                            .into_iter()
                            .map(|(k, v)| (Field::guess(&k), v))
                            .collect();
                        part.rows.push(Row { number, cells });
                        part.lines.push(text);
                    }
                    _ => part.unreadable.push(Refused {
                        row: number,
                        reason: "The line is not a JSON object".into(),
                        cells: vec![text],
                    }),
                }
                if !send(&mut part, false) {
                    return Ok(());
                }
            }
        }
    }
    send(&mut part, true);
    Ok(())
}

/// The start of a CSV file, for a preview.
#[derive(Debug, Clone, Default)]
pub struct Head {
    pub header: Vec<String>,
    /// The first rows (an unreadable one is left out).
    pub rows: Vec<Vec<String>>,
    /// Whether rows follow those.
    pub more: bool,
}

/// The header and first `rows` rows of a CSV file, bounded like an import: a header
/// longer than [`MAX_ROW_BYTES`] or of more than [`MAX_COLUMNS`] columns is refused.
pub fn head(input: impl Read, rows: usize) -> Result<Head> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let start = reader.fill_buf().map_err(read_error)?;
    if start.starts_with(&[0xEF, 0xBB, 0xBF]) {
        reader.consume(3);
    }
    let delimiter = delimiter(reader.fill_buf().map_err(read_error)?);
    let mut records = Records::new(reader);
    let mut head = Head::default();
    let cells = |bytes: &[u8]| -> Option<Vec<String>> {
        let fields = split(bytes, delimiter).ok()?;
        Some(
            fields
                .iter()
                .take(MAX_COLUMNS)
                .map(|c| String::from_utf8_lossy(c).trim().to_string())
                .collect(),
        )
    };
    match header_fields(records.next_record().map_err(read_error)?, delimiter)? {
        None => return Ok(head),
        Some(fields) => {
            check_columns(fields.len())?;
            head.header = fields
                .iter()
                .take(MAX_COLUMNS)
                .map(|c| String::from_utf8_lossy(c).trim().to_string())
                .collect();
        }
    }
    while let Some(record) = records.next_record().map_err(read_error)? {
        let Record::Fields(bytes) = record else {
            continue;
        };
        if blank(&bytes) {
            continue;
        }
        if head.rows.len() == rows {
            head.more = true;
            break;
        }
        if let Some(row) = cells(&bytes) {
            head.rows.push(row);
        }
    }
    Ok(head)
}

/// A header of more than [`MAX_COLUMNS`] columns refuses the file.
/// The header's fields, or why the whole file is refused; `None` for an empty file.
fn header_fields(record: Option<Record>, delimiter: u8) -> Result<Option<csv::ByteRecord>> {
    match record {
        None => Ok(None),
        Some(Record::Fields(bytes)) => split(&bytes, delimiter)
            .map(Some)
            .map_err(|e| Error::BadRequest(format!("The file's header could not be read: {e}"))),
        Some(Record::TooLong) => Err(Error::BadRequest(format!(
            "The file's header is longer than {} KiB",
            MAX_ROW_BYTES / 1024
        ))),
        Some(Record::Unclosed(_)) => Err(Error::BadRequest(
            "The file's header could not be read: a quote is not closed".into(),
        )),
    }
}

fn check_columns(columns: usize) -> Result<()> {
    if columns > MAX_COLUMNS {
        return Err(Error::BadRequest(format!(
            "The file has {columns} columns; at most {MAX_COLUMNS} can be imported"
        )));
    }
    Ok(())
}

fn too_long() -> String {
    format!("The row is longer than {} KiB", MAX_ROW_BYTES / 1024)
}

/// A record of nothing but its line end.
fn blank(record: &[u8]) -> bool {
    record.iter().all(|b| *b == b'\r' || *b == b'\n')
}

/// A record whose every cell is empty or white space, bare or as `""`.
fn empty_cells(record: &[u8], delimiter: u8) -> bool {
    record.split(|b| *b == delimiter).all(|cell| {
        let cell = cell.trim_ascii();
        cell.is_empty() || cell == b"\"\""
    })
}

/// The fields of one CSV record (its bytes, at most [`MAX_ROW_BYTES`]).
fn split(record: &[u8], delimiter: u8) -> std::result::Result<csv::ByteRecord, csv::Error> {
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .has_headers(false)
        .buffer_capacity(record.len().clamp(64, MAX_ROW_BYTES))
        .from_reader(record);
    let mut fields = csv::ByteRecord::new();
    reader.read_byte_record(&mut fields)?;
    Ok(fields)
}

fn new_part() -> Part {
    Part {
        rows: Vec::with_capacity(PART_ROWS),
        unreadable: Vec::new(),
        lines: Vec::new(),
        bytes: 0,
    }
}

/// `;` when the first line has more semicolons than commas (outside quotes), else `,`.
pub fn delimiter(start: &[u8]) -> u8 {
    let line = start.split(|b| *b == b'\n').next().unwrap_or_default();
    let (mut quoted, mut commas, mut semicolons) = (false, 0, 0);
    for b in line {
        match b {
            b'"' => quoted = !quoted,
            b',' if !quoted => commas += 1,
            b';' if !quoted => semicolons += 1,
            _ => {}
        }
    }
    if semicolons > commas {
        b';'
    } else {
        b','
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Pace, PART_ROWS};

    #[test]
    fn a_parts_commit_does_not_shrink_the_next_part() {
        let mut pace = Pace::default();
        // Rows at 200 µs each, every part's commit (a sync) 25 ms more.
        for _ in 0..30 {
            let rows = pace.rows(false);
            // Only the work reaches the pace (`Store::bulk_part` answers it alone).
            pace.record(rows, Duration::from_micros(rows as u64 * 200));
        }
        // The average nears 200 µs from above.
        let alone = pace.rows(false);
        assert!(
            (490..=500).contains(&alone),
            "100 ms of rows alone: {alone}"
        );
        let beside = pace.rows(true);
        assert!(
            (9..=10).contains(&beside),
            "2 ms while others write: {beside}"
        );
    }

    #[test]
    fn a_parts_rows_stay_between_one_and_the_most() {
        let mut pace = Pace::default();
        for _ in 0..30 {
            pace.record(1, Duration::from_micros(150_000));
        }
        assert_eq!(pace.rows(true), 1);
        assert_eq!(pace.rows(false), 1);
        for _ in 0..30 {
            pace.record(100, Duration::ZERO);
        }
        assert_eq!(pace.rows(false), PART_ROWS);
        pace.record(0, Duration::from_micros(500_000));
        assert_eq!(pace.rows(false), PART_ROWS, "an empty part teaches nothing");
    }

    #[test]
    fn rows_of_empty_cells_are_known_without_splitting_them() {
        for empty in [&b",,,\r\n"[..], b"\"\",\"\"\n", b" , \t,", b""] {
            assert!(
                empty_cells(empty, b','),
                "{:?}",
                String::from_utf8_lossy(empty)
            );
        }
        for full in [&b",a,\n"[..], b"\",\",\n", b"\"\"\"\"\n", b";;\n"] {
            assert!(
                !empty_cells(full, b','),
                "{:?}",
                String::from_utf8_lossy(full)
            );
        }
        assert!(empty_cells(b";;\n", b';'));
    }

    use super::*;

    #[test]
    fn the_delimiter_is_read_from_the_header() {
        assert_eq!(delimiter(b"first name,phone,email\n1,2,3"), b',');
        assert_eq!(delimiter(b"first name;phone;email\n"), b';');
        assert_eq!(delimiter(b"\"a;b\",c\n"), b',');
    }

    #[test]
    fn content_types_name_the_format() {
        assert_eq!(
            Format::of_content_type("text/csv; charset=utf-8"),
            Some(Format::Csv)
        );
        assert_eq!(
            Format::of_content_type("application/x-ndjson"),
            Some(Format::Ndjson)
        );
        assert_eq!(Format::of_content_type("application/json"), None);
    }
}
