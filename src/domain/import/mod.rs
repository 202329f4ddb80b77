//! Importing leads from a file, the same way from the console, `engaged import` and
//! `POST /v1/leads/import`: CSV (RFC 4180, UTF-8 with or without a BOM, comma or
//! semicolon detected from the header) or NDJSON, read as a stream and applied in parts
//! of [`PART_ROWS`] rows, each one write job (`rows::apply`). A dry run applies each
//! part in a transaction that is thrown away (`Store::trial`): it reports exactly what
//! would happen and changes nothing.
//!
//! **A file never sits whole in memory**: a blocking task parses it into parts, at most
//! two of them waiting, while the parts before are written. What stays is the file's
//! match keys (for merging its own rows, as digests: `rows::FileIndex`) and the refused
//! rows.

pub mod mapping;
pub mod rows;

use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncRead;

use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Store;
use mapping::{Field, Mapping};
use rows::{FileIndex, Outcome, Row};

/// The largest file an import reads (the API's body, the console's upload).
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Rows per write job, a part of the import's bulk job (`Store::write_bulk`): every
/// other write goes before the next part, so a part is the longest any other write
/// waits during an import. 50 rows hold the writer some 15 ms (500 held it 150 ms;
/// an import of 20,000 rows took 13.9 s instead of 9.0 s, while another organization's
/// single-event write kept a p99 1.5 times its idle one instead of 14 times:
/// `benches/hostile.sh`).
pub const PART_ROWS: usize = 50;
/// The longest NDJSON line read.
const MAX_LINE: u64 = 1 << 20;

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
    /// The console's choice of field per CSV column, overriding the guess.
    pub fields: Option<Vec<Field>>,
}

/// A refused row: its number, why, and its cells as read (for the download).
#[derive(Debug, Clone, Serialize)]
pub struct Refusal {
    pub row: u64,
    pub reason: String,
    #[serde(skip)]
    pub cells: Vec<String>,
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub created: u64,
    pub updated: u64,
    pub merged: u64,
    pub refused: Vec<Refusal>,
    pub dry_run: bool,
    /// The CSV header as read (for the console's download of refused rows).
    #[serde(skip)]
    pub headers: Vec<String>,
}

impl Report {
    /// The CLI's last line.
    pub fn summary(&self) -> String {
        format!(
            "{} created, {} updated, {} merged, {} refused",
            self.created,
            self.updated,
            self.merged,
            self.refused.len()
        )
    }

    /// Rows handled so far.
    pub fn rows(&self) -> u64 {
        self.created + self.updated + self.merged + self.refused.len() as u64
    }
}

/// One part of the file as the parser hands it over.
struct Part {
    rows: Vec<Row>,
    /// Rows unreadable as such (bad UTF-8, not a JSON object), refused before any write.
    unreadable: Vec<Refusal>,
    /// The cells of each row, by row number, kept only until its outcome is known.
    cells: Vec<(u64, Vec<String>)>,
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
    let (parts, mut receiver) = tokio::sync::mpsc::channel::<Result<Part>>(2);
    let (headers_tx, headers_rx) = tokio::sync::oneshot::channel::<Vec<String>>();
    let parse_options = options.clone();
    let parser = tokio::task::spawn_blocking(move || {
        let input = tokio_util::io::SyncIoBridge::new(input);
        if let Err(e) = parse(input, &parse_options, &parts, headers_tx) {
            let _ = parts.blocking_send(Err(e));
        }
    });
    let index: Arc<RwLock<FileIndex>> = Arc::default();
    let mut report = Report {
        dry_run: options.dry_run,
        ..Report::default()
    };
    let mut headers_rx = Some(headers_rx);
    let caller_org = caller.org_id.clone();
    while let Some(part) = receiver.recv().await {
        let part = part?;
        if let Some(rx) = headers_rx.take() {
            report.headers = rx.await.unwrap_or_default();
        }
        report.refused.extend(part.unreadable);
        let (caller, known, rows) = (caller.clone(), index.clone(), Arc::new(part.rows));
        let (create_only, dry_run) = (options.create_only, options.dry_run);
        let job = move |tx: &mut crate::store::WriteTx| {
            let known = known
                .read()
                .map_err(|_| Error::Internal("import index lock".into()))?;
            rows::apply(tx, &caller, &rows, create_only, dry_run, &known)
        };
        // Parts run in the writer's bulk lane: every other write goes first.
        let applied = if dry_run {
            store.trial_bulk(&caller_org, job).await?
        } else {
            store.write_bulk(&caller_org, job).await?
        };
        let mut known = index
            .write()
            .map_err(|_| Error::Internal("import index lock".into()))?;
        for done in applied {
            if let Some(lead) = done.lead() {
                known.add(lead, done.row, &done.keys);
            }
            match done.outcome {
                Outcome::Created(_) => report.created += 1,
                Outcome::Updated(_) => report.updated += 1,
                Outcome::Merged(..) => report.merged += 1,
                Outcome::Refused(reason) => {
                    let cells = part
                        .cells
                        .iter()
                        .find(|(n, _)| *n == done.row)
                        .map(|(_, c)| c.clone())
                        .unwrap_or_default();
                    report.refused.push(Refusal {
                        row: done.row,
                        reason,
                        cells,
                    });
                }
            }
        }
        drop(known);
        progress(&report);
    }
    parser
        .await
        .map_err(|e| Error::Internal(format!("the import's parser: {e}")))?;
    report.refused.sort_by_key(|r| r.row);
    Ok(report)
}

/// Parses `input` into parts on `parts`; the CSV header goes to `headers` first.
fn parse(
    input: impl Read,
    options: &Options,
    parts: &tokio::sync::mpsc::Sender<Result<Part>>,
    headers: tokio::sync::oneshot::Sender<Vec<String>>,
) -> Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let start = reader
        .fill_buf()
        .map_err(|e| Error::BadRequest(format!("The file could not be read: {e}")))?;
    if start.starts_with(&[0xEF, 0xBB, 0xBF]) {
        reader.consume(3);
    }
    let mut part = new_part();
    let send = |part: &mut Part, last: bool| -> bool {
        if part.rows.len() + part.unreadable.len() < PART_ROWS && !last {
            return true;
        }
        let full = std::mem::replace(part, new_part());
        parts.blocking_send(Ok(full)).is_ok()
    };
    match options.format {
        Format::Csv => {
            let delimiter = delimiter(reader.fill_buf().unwrap_or_default());
            let mut csv = csv::ReaderBuilder::new()
                .delimiter(delimiter)
                .flexible(true)
                .has_headers(true)
                .from_reader(reader);
            let header: Vec<String> = csv
                .byte_headers()
                .map_err(|e| {
                    Error::BadRequest(format!("The file's header could not be read: {e}"))
                })?
                .iter()
                .map(|h| String::from_utf8_lossy(h).trim().to_string())
                .collect();
            let mut mapping = Mapping::guess(header.clone());
            if let Some(fields) = &options.fields {
                if fields.len() != header.len() {
                    return Err(Error::BadRequest(
                        "The mapping does not match the file's columns".into(),
                    ));
                }
                mapping.fields = fields.clone();
            }
            let _ = headers.send(header);
            let mut record = csv::ByteRecord::new();
            let mut number = 1u64;
            loop {
                match csv.read_byte_record(&mut record) {
                    Ok(false) => break,
                    Ok(true) => {
                        number += 1;
                        let cells: Vec<String> = record
                            .iter()
                            .map(|c| String::from_utf8_lossy(c).into_owned())
                            .collect();
                        if cells.iter().all(|c| c.trim().is_empty()) {
                            continue;
                        }
                        if record.iter().any(|c| std::str::from_utf8(c).is_err()) {
                            part.unreadable.push(Refusal {
                                row: number,
                                reason: "The row is not UTF-8".into(),
                                cells,
                            });
                        } else {
                            let row = Row {
                                number,
                                cells: cells
                                    .iter()
                                    .enumerate()
                                    .map(|(i, c)| {
                                        (mapping.field(i).clone(), Value::String(c.clone()))
                                    })
                                    .collect(),
                            };
                            part.rows.push(row);
                            part.cells.push((number, cells));
                        }
                    }
                    Err(e) => {
                        number += 1;
                        part.unreadable.push(Refusal {
                            row: number,
                            reason: format!("The row could not be read: {e}"),
                            cells: Vec::new(),
                        });
                    }
                }
                if !send(&mut part, false) {
                    return Ok(());
                }
            }
        }
        Format::Ndjson => {
            let _ = headers.send(Vec::new());
            let mut number = 0u64;
            loop {
                let mut line = Vec::new();
                let read = (&mut reader)
                    .take(MAX_LINE)
                    .read_until(b'\n', &mut line)
                    .map_err(|e| Error::BadRequest(format!("The file could not be read: {e}")))?;
                if read == 0 {
                    break;
                }
                number += 1;
                let text = String::from_utf8_lossy(&line).trim().to_string();
                if text.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(members)) => {
                        let cells = members
                            .into_iter()
                            .map(|(k, v)| (Field::guess(&k), v))
                            .collect();
                        part.rows.push(Row { number, cells });
                        part.cells.push((number, vec![text]));
                    }
                    _ => part.unreadable.push(Refusal {
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

fn new_part() -> Part {
    Part {
        rows: Vec::with_capacity(PART_ROWS),
        unreadable: Vec::new(),
        cells: Vec::with_capacity(PART_ROWS),
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

/// The refused rows as CSV: the row number, the reason, then the row's cells under the
/// file's own header.
pub fn refused_csv(report: &Report) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["row".to_string(), "reason".to_string()];
    header.extend(report.headers.iter().cloned());
    let _ = out.write_record(&header);
    for r in &report.refused {
        let mut record = vec![r.row.to_string(), r.reason.clone()];
        record.extend(r.cells.iter().cloned());
        let _ = out.write_record(&record);
    }
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
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
