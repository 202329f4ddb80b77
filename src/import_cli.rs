//! `engaged import`: a file of leads sent to a running server through its admin socket
//! (the file's bytes follow the request line), or imported in this process when no
//! server runs. On a terminal a progress bar follows the bytes read; the refused rows
//! and the summary line go to standard output.

use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::Deserialize;

use crate::admin::{self, AdminRequest, AdminResponse};
use crate::config;
use crate::store::{OpenError, Store};

/// The report as the socket carries it (the fields the command prints).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    created: u64,
    updated: u64,
    merged: u64,
    #[serde(default)]
    skipped: u64,
    /// Rows whose lead already held what they say.
    #[serde(default)]
    unchanged: u64,
    /// The first matched rows (`--verbose` prints them).
    #[serde(default)]
    matches: Vec<Matched>,
    #[serde(default)]
    matches_count: u64,
    /// The first refused rows.
    refused: Vec<Refused>,
    refused_count: u64,
    /// Where every refused row was written.
    refused_file: Option<String>,
    dry_run: bool,
}

/// A matched row as the report carries it: the lead and its fields' changes.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Matched {
    row: u64,
    lead_id: String,
    changes: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Refused {
    row: u64,
    reason: String,
}

/// Imports `file` as `request` says, into the database under `data_dir`; `verbose`
/// prints each matched row and what it changes.
pub fn import(
    data_dir: &Path,
    request: AdminRequest,
    file: &Path,
    verbose: bool,
) -> Result<(), String> {
    let opened = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let size = opened.metadata().map(|m| m.len()).unwrap_or(0);
    let read = Arc::new(AtomicU64::new(0));
    let bar = Progress::start(size, read.clone());
    let report = match UnixStream::connect(data_dir.join(admin::SOCKET_NAME)) {
        Ok(stream) => through_socket(stream, &request, opened, &read),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            in_process(data_dir, &request, opened, &read)
        }
        Err(e) => Err(format!("admin socket: {e}")),
    };
    bar.finish();
    let report = report?;
    if verbose {
        for matched in &report.matches {
            let changes: Vec<String> = matched
                .changes
                .iter()
                .map(|(field, change)| format!("{field} {} -> {}", change["from"], change["to"]))
                .collect();
            let changes = if changes.is_empty() {
                "no change".to_string()
            } else {
                changes.join(", ")
            };
            println!("row {} matched {}: {changes}", matched.row, matched.lead_id);
        }
        let more = report
            .matches_count
            .saturating_sub(report.matches.len() as u64);
        if more > 0 {
            println!("{more} more matched rows");
        }
    }
    if report.skipped > 0 {
        println!("{} matched rows skipped", report.skipped);
    }
    for refused in &report.refused {
        println!("row {}: {}", refused.row, refused.reason);
    }
    let more = report
        .refused_count
        .saturating_sub(report.refused.len() as u64);
    if let Some(file) = &report.refused_file {
        if more > 0 {
            println!("{more} more refused rows; all of them are in {file}");
        } else {
            println!("the refused rows are in {file}");
        }
    }
    if report.dry_run {
        println!("dry run: nothing was changed");
    }
    // Rows that changed nothing on their lead are named only when there are some.
    let unchanged = if report.unchanged > 0 {
        format!("{} unchanged, ", report.unchanged)
    } else {
        String::new()
    };
    println!(
        "{} created, {} updated, {unchanged}{} merged, {} refused",
        report.created, report.updated, report.merged, report.refused_count
    );
    Ok(())
}

fn through_socket(
    mut stream: UnixStream,
    request: &AdminRequest,
    file: std::fs::File,
    read: &Arc<AtomicU64>,
) -> Result<Report, String> {
    let io = |e: std::io::Error| format!("admin socket: {e}");
    let mut line = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    line.push(b'\n');
    stream.write_all(&line).map_err(io)?;
    let mut counted = Counted {
        inner: file,
        read: read.clone(),
    };
    // The server reads as it imports: the copy follows its pace.
    std::io::copy(&mut counted, &mut stream).map_err(io)?;
    stream.shutdown(std::net::Shutdown::Write).map_err(io)?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).map_err(io)?;
    let response: AdminResponse =
        serde_json::from_str(&answer).map_err(|e| format!("unexpected answer: {e}"))?;
    match (response.ok, response.error) {
        (Some(value), _) => {
            serde_json::from_value(value).map_err(|e| format!("unexpected answer: {e}"))
        }
        (None, Some(error)) => Err(error),
        (None, None) => Err("the server sent an empty answer".into()),
    }
}

fn in_process(
    data_dir: &Path,
    request: &AdminRequest,
    file: std::fs::File,
    read: &Arc<AtomicU64>,
) -> Result<Report, String> {
    let store = Store::open(&config::database_path(data_dir)).map_err(|e| match e {
        OpenError::InUse => format!(
            "the database in {} is in use, but no server answers on its admin socket",
            data_dir.display()
        ),
        OpenError::Other(msg) | OpenError::Refused(msg) => msg,
    })?;
    let store = Arc::new(store);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let input = Counted {
        inner: tokio::fs::File::from_std(file),
        read: read.clone(),
    };
    let done = runtime.block_on(admin::import(&store, request, input));
    store.shutdown();
    let report = done.map_err(|e| e.to_string_for_logs())?;
    let file = report
        .refused_file
        .as_ref()
        .map(|f| f.display().to_string());
    let mut report: Report = serde_json::to_value(report)
        .and_then(serde_json::from_value)
        .map_err(|e| e.to_string())?;
    report.refused_file = file;
    Ok(report)
}

/// A reader that counts the bytes read through it (std or tokio).
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        polled
    }
}

/// The progress bar on standard error, when it is a terminal: redrawn every 200 ms.
struct Progress {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn start(size: u64, read: Arc<AtomicU64>) -> Progress {
        if !std::io::stderr().is_terminal() || size == 0 {
            return Progress {
                stop: None,
                thread: None,
            };
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || loop {
            let done = read.load(Ordering::Relaxed).min(size);
            let width = 30;
            let filled = (done * width / size) as usize;
            eprint!(
                "\r[{}{}] {:>3}% {} of {} KiB",
                "#".repeat(filled),
                " ".repeat(width as usize - filled),
                done * 100 / size,
                done / 1024,
                size / 1024
            );
            if stopped
                .recv_timeout(std::time::Duration::from_millis(200))
                .is_ok()
            {
                eprintln!();
                return;
            }
        });
        Progress {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
