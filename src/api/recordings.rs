//! Handlers of call recordings: upload, link, delete, and the signed download link.
//!
//! `PUT /v1/calls/{id}/recording` streams the body into the store chunk by chunk (a few
//! chunk writes in flight, never a whole file in memory, never a write transaction held
//! across network reads). `GET` answers a link to `/v1/recordings/{org}/{callId}`, which
//! needs no key: its `expires` and `sig` query values are checked instead, and it
//! streams the audio chunk by chunk from short read transactions, honouring one `Range`.

use std::collections::VecDeque;
use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::header::{
    HeaderMap, HeaderValue, ACCEPT_RANGES, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_RANGE,
    CONTENT_TYPE, ETAG, HOST, IF_RANGE, RANGE,
};
use hyper::http::request::Parts;
use hyper::http::uri::Authority;
use hyper::{Response, StatusCode};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::recording_body::{ByteRange, ChunkReader};
use super::request::{Query, RequestBody};
use super::response::{json as reply, Body};
use super::AppState;
use crate::config::Config;
use crate::domain::recordings::{self, LinkKey, Uploaded, CHUNK_BYTES};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::recordings::{QueuedWrite, RecordingRecord};
use crate::store::Store;
use crate::time::Timestamp;

/// Chunk writes an upload keeps queued before it waits for the oldest.
const WRITES_IN_FLIGHT: usize = 4;

/// What path segments of a link leave unencoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What the recording handlers need from the configuration and the store.
#[derive(Debug, Clone)]
pub struct Settings {
    pub link_key: LinkKey,
    pub link_ttl_secs: u64,
    pub max_bytes: u64,
    /// Scheme, host and optional path prefix of links; `None`: from each request.
    pub public_url: Option<String>,
    /// The scheme of links built from a request's host.
    pub scheme: &'static str,
}

impl Settings {
    /// Reads (or creates) the link secret and discards uploads a crash cut short. Runs
    /// at start-up, before any request.
    pub async fn prepare(store: &Store, config: &Config) -> std::result::Result<Settings, String> {
        let (secret, swept) = store
            .write(|tx| {
                let swept = tx.discard_all_recording_uploads()?;
                Ok((tx.recording_secret()?, swept))
            })
            .await
            .map_err(|e| format!("preparing recordings: {}", e.to_string_for_logs()))?;
        if swept > 0 {
            tracing::info!(uploads = swept, "discarded unfinished recording uploads");
        }
        Ok(Settings {
            link_key: LinkKey::new(secret),
            link_ttl_secs: config.recording_link_ttl_secs,
            max_bytes: config.recording_max_bytes,
            public_url: config
                .public_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_string()),
            scheme: if config.insecure_http {
                "http"
            } else {
                "https"
            },
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordingView<'a> {
    call_id: &'a str,
    content_type: &'a str,
    size_bytes: u64,
    sha256: &'a str,
    uploaded_at: Timestamp,
}

impl<'a> RecordingView<'a> {
    fn of(r: &'a RecordingRecord) -> Self {
        RecordingView {
            call_id: &r.call_id,
            content_type: &r.content_type,
            size_bytes: r.size,
            sha256: &r.sha256,
            uploaded_at: Timestamp(r.uploaded_at),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LinkView<'a> {
    url: String,
    expires_at: Timestamp,
    content_type: &'a str,
    size_bytes: u64,
}

/// `PUT /v1/calls/{callId}/recording`: 201 with the recording, 200 when it replaced one.
pub async fn upload(
    state: &AppState,
    caller: Caller,
    call_id: &str,
    headers: &HeaderMap,
    mut body: RequestBody,
) -> Result<Response<Body>> {
    let settings = &state.recordings;
    // An upload may be long: it is held to a minimum rate, not a deadline.
    body.stream(settings.max_bytes);
    let content_type =
        recordings::content_type(headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()))?;
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > settings.max_bytes) {
        return Err(Error::PayloadTooLarge);
    }
    let store = state.store.clone();
    let upload_id = crate::ids::generate("upl");
    {
        let (caller, call_id, upload_id) = (caller.clone(), call_id.to_string(), upload_id.clone());
        store
            .write(move |tx| recordings::begin(tx, &caller, &call_id, &upload_id))
            .await?;
    }
    // From here on, leaving early (an error, or the connection dropping this future)
    // discards what the upload stored.
    let mut guard = Abandon {
        store: store.clone(),
        upload_id: Some(upload_id.clone()),
    };

    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buffer = Vec::with_capacity(CHUNK_BYTES);
    let mut next_index = 0u64;
    let mut in_flight = VecDeque::with_capacity(WRITES_IN_FLIGHT);
    loop {
        let Some(frame) = body.frame().await else {
            break;
        };
        let frame = frame?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        size += data.len() as u64;
        if size > settings.max_bytes {
            return Err(Error::PayloadTooLarge);
        }
        hasher.update(&data);
        let mut rest = &data[..];
        while !rest.is_empty() {
            let take = (CHUNK_BYTES - buffer.len()).min(rest.len());
            buffer.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if buffer.len() == CHUNK_BYTES {
                let chunk = std::mem::replace(&mut buffer, Vec::with_capacity(CHUNK_BYTES));
                queue_chunk(&store, &mut in_flight, &upload_id, next_index, chunk).await?;
                next_index += 1;
            }
        }
    }
    if size == 0 {
        return Err(Error::BadRequest("Request body is empty".into()));
    }
    if !buffer.is_empty() {
        queue_chunk(&store, &mut in_flight, &upload_id, next_index, buffer).await?;
    }
    while let Some(write) = in_flight.pop_front() {
        write.await?;
    }

    let uploaded = Uploaded {
        upload_id,
        content_type,
        size,
        sha256: hex::encode(hasher.finalize()),
    };
    let call = call_id.to_string();
    let (record, replaced) = store
        .write(move |tx| recordings::finish(tx, &caller, &call, uploaded))
        .await?;
    guard.upload_id = None;
    let status = if replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(reply(status, &RecordingView::of(&record)))
}

/// Queues the write of one chunk, first waiting for the oldest queued one if the
/// window is full.
async fn queue_chunk(
    store: &Store,
    in_flight: &mut VecDeque<QueuedWrite<()>>,
    upload_id: &str,
    index: u64,
    chunk: Vec<u8>,
) -> Result<()> {
    while in_flight.len() >= WRITES_IN_FLIGHT {
        if let Some(oldest) = in_flight.pop_front() {
            oldest.await?;
        }
    }
    let upload_id = upload_id.to_string();
    in_flight.push_back(
        store.write_queued(move |tx| recordings::put_chunk(tx, &upload_id, index, &chunk))?,
    );
    Ok(())
}

/// Discards an upload's chunks when dropped armed. The discard is queued behind the
/// upload's own chunk writes, and leaves a finished upload alone.
struct Abandon {
    store: Arc<Store>,
    upload_id: Option<String>,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let Some(upload_id) = self.upload_id.take() else {
            return;
        };
        let id = upload_id.clone();
        match self
            .store
            .write_queued(move |tx| recordings::discard(tx, &id))
        {
            Ok(answer) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        if let Err(e) = answer.await {
                            tracing::warn!(upload = %upload_id, error = %e.to_string_for_logs(), "could not discard an unfinished recording upload; the next start will");
                        }
                    });
                }
            }
            Err(e) => {
                tracing::warn!(upload = %upload_id, error = %e.to_string_for_logs(), "could not discard an unfinished recording upload; the next start will");
            }
        }
    }
}

/// `GET /v1/calls/{callId}/recording`: a signed, expiring download link.
pub fn link(
    state: &AppState,
    caller: &Caller,
    call_id: &str,
    parts: &Parts,
) -> Result<Response<Body>> {
    let settings = &state.recordings;
    let org = caller.org_id.as_str();
    let record = recordings::find(&state.store.read()?, org, call_id)?;
    let base = base_url(settings, parts)?;
    let expires = recordings::link_expiry(recordings::now_secs(), settings.link_ttl_secs);
    let sig = settings.link_key.sign(org, call_id, expires)?;
    let url = format!(
        "{base}/v1/recordings/{}/{}?expires={expires}&sig={sig}",
        utf8_percent_encode(org, SEGMENT),
        utf8_percent_encode(call_id, SEGMENT),
    );
    let expires_at = i64::try_from(expires)
        .ok()
        .and_then(|s| s.checked_mul(1_000_000))
        .ok_or_else(|| Error::Internal("link expiry out of range".into()))?;
    Ok(reply(
        StatusCode::OK,
        &LinkView {
            url,
            expires_at: Timestamp(expires_at),
            content_type: &record.content_type,
            size_bytes: record.size,
        },
    ))
}

/// Where links point: `public_url` when set, else the scheme this server speaks and the
/// host the request named (`:authority` in HTTP/2, `Host` in HTTP/1.1).
fn base_url(settings: &Settings, parts: &Parts) -> Result<String> {
    if let Some(url) = &settings.public_url {
        return Ok(url.clone());
    }
    let from_header = || {
        parts
            .headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.trim().parse::<Authority>().ok())
    };
    let authority = parts
        .uri
        .authority()
        .cloned()
        .or_else(from_header)
        .filter(|a| !a.as_str().contains('@') && !a.host().is_empty())
        .ok_or_else(|| Error::BadRequest("A Host header is required".into()))?;
    Ok(format!("{}://{}", settings.scheme, authority.as_str()))
}

/// `DELETE /v1/calls/{callId}/recording` (admin).
pub async fn delete(store: &Store, caller: Caller, call_id: &str) -> Result<Response<Body>> {
    let call_id = call_id.to_string();
    store
        .write(move |tx| recordings::delete(tx, &caller, &call_id))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": "Recording deleted."}),
    ))
}

/// `GET /v1/recordings/{org}/{callId}?expires=..&sig=..`: the audio, no key needed.
pub fn download(
    state: &AppState,
    parts: &Parts,
    org: &str,
    call_id: &str,
) -> Result<Response<Body>> {
    let settings = &state.recordings;
    let query = Query::parse(parts.uri.query()).map_err(|_| Error::Forbidden)?;
    settings.link_key.verify(
        org,
        call_id,
        query.get("expires"),
        query.get("sig"),
        recordings::now_secs(),
    )?;
    let record = recordings::find(&state.store.read()?, org, call_id)?;
    let etag = format!("\"{}\"", record.sha256);
    let header = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let range = match header(IF_RANGE) {
        // A range of another version of the file would corrupt a resumed download.
        Some(validator) if validator.trim() != etag => ByteRange::Full,
        _ => ByteRange::parse(header(RANGE), record.size),
    };
    let (status, start, end) = match range {
        ByteRange::Full => (StatusCode::OK, 0, record.size),
        ByteRange::Partial { first, last } => (StatusCode::PARTIAL_CONTENT, first, last + 1),
        ByteRange::Unsatisfiable => {
            let mut response = reply(
                StatusCode::RANGE_NOT_SATISFIABLE,
                &json!({"message": "Range not satisfiable"}),
            );
            insert(
                &mut response,
                CONTENT_RANGE,
                &format!("bytes */{}", record.size),
            );
            insert(&mut response, ACCEPT_RANGES, "bytes");
            return Ok(response);
        }
    };
    let body = ChunkReader::new(state.store.clone(), &record, start, end);
    let mut response = Response::new(body.boxed());
    *response.status_mut() = status;
    let content_type = HeaderValue::from_str(&record.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    insert(&mut response, CONTENT_LENGTH, &(end - start).to_string());
    insert(&mut response, ETAG, &etag);
    insert(&mut response, ACCEPT_RANGES, "bytes");
    insert(&mut response, CACHE_CONTROL, "private");
    if status == StatusCode::PARTIAL_CONTENT {
        insert(
            &mut response,
            CONTENT_RANGE,
            &format!("bytes {start}-{}/{}", end - 1, record.size),
        );
    }
    Ok(response)
}

fn insert(response: &mut Response<Body>, name: hyper::header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}
