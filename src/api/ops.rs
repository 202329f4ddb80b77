//! Operational endpoints: readiness and Prometheus metrics.

use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::response::{full, json as reply, Body};
use super::AppState;
use crate::error::{Error, Result};
use crate::metrics::StoreGauges;
use crate::store::Store;
use crate::time::now_micros;

/// The OpenAPI document, compiled in so that it always describes this very binary.
const OPENAPI: &str = include_str!("../../openapi/openapi.json");

/// `GET /v1/openapi.json`, open without a key.
pub fn openapi() -> Response<Body> {
    let mut response = Response::new(full(OPENAPI));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `GET /readyz`: 200 when the store answers reads and the writer runs and writes,
/// else 503 (also while a storage error, a full disk, fails writes).
pub fn readyz(store: &Store) -> Result<Response<Body>> {
    let readable = store.read().is_ok();
    let writing = store.writer_running() && !store.writes_failing();
    if readable && writing {
        Ok(reply(StatusCode::OK, &json!({"status": "ready"})))
    } else {
        Err(Error::Unavailable)
    }
}

/// `GET /metrics` (admin key): Prometheus text format.
pub fn metrics(state: &AppState) -> Result<Response<Body>> {
    let store = &state.store;
    let (depth, oldest) = store.read()?.outbox_depth()?;
    let writer = store.writer_stats();
    let gauges = StoreGauges {
        outbox_depth: depth,
        outbox_oldest_age_seconds: oldest.map_or(0.0, |t| ((now_micros() - t).max(0)) as f64 / 1e6),
        database_bytes: store.file_size(),
        writer_commits: writer.commits.load(std::sync::atomic::Ordering::Relaxed),
        writer_jobs: writer.jobs.load(std::sync::atomic::Ordering::Relaxed),
    };
    let mut text = state.metrics.render(writer, &gauges);
    let (rows, due, oldest_due) = store.read()?.agenda_depth(now_micros())?;
    state
        .engine
        .metrics()
        .render(&mut text, rows, due, oldest_due);
    if let Some(replica) = &state.replica {
        replica.render(&mut text);
    }
    let mut response = Response::new(full(text));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    Ok(response)
}

/// `GET /v1/admin/replica` (admin key): continuous replication's status, the
/// metrics' numbers as JSON; `{"enabled": false}` when `[replica]` is not set.
pub fn replica(state: &AppState) -> Response<Body> {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(status) = &state.replica else {
        return reply(StatusCode::OK, &json!({"enabled": false}));
    };
    let text = status.text();
    let time = |ms: u64| {
        (ms > 0)
            .then(|| chrono::DateTime::from_timestamp_millis(ms as i64))
            .flatten()
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    };
    reply(
        StatusCode::OK,
        &json!({
            "enabled": true,
            "url": text.url,
            "generation": text.generation,
            "committedSeq": status.committed_seq.load(Relaxed),
            "uploadedSeq": status.uploaded_seq.load(Relaxed),
            "lagSeconds": status.lag_seconds(),
            "pendingBytes": status.spooled_bytes.load(Relaxed),
            "bytesTotal": status.bytes_total.load(Relaxed),
            "errorsTotal": status.errors_total.load(Relaxed),
            "lastError": text.last_error,
            "paused": text.paused,
            "lastSnapshotAt": time(status.snapshot_ms.load(Relaxed)),
            "lastUploadAt": time(status.synced_ms.load(Relaxed)),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{fill_log_disk, wal_path};

    #[tokio::test]
    async fn readiness_is_503_while_a_full_disk_fails_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.redb");
        let store = Store::open(&path).unwrap();
        assert!(readyz(&store).is_ok());
        fill_log_disk(&wal_path(&path), true);
        let failed = store.write(|tx| tx.dnc_add("org", "+15550000000", 1)).await;
        assert!(failed.is_err());
        assert!(matches!(readyz(&store), Err(Error::Unavailable)));
        fill_log_disk(&wal_path(&path), false);
        let mut waited = 0;
        while readyz(&store).is_err() {
            assert!(waited < 500, "ready again once the disk has room");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            waited += 1;
        }
        store
            .write(|tx| tx.dnc_add("org", "+15550000000", 1))
            .await
            .unwrap();
    }
}
