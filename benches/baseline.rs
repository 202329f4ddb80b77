//! The bare baseline the load test compares `engaged` with: hyper 1.x over the same
//! tokio-rustls settings, a SHA-256 key check against an in-memory set, one redb point
//! read per GET, and a writer thread that group-commits raw rows for POST. It is what
//! the service's own request path costs at the very least.
//!
//! Started by `benches/load.sh`; under plain `cargo bench` it only says how to run it.
//!   ENGAGED_BASELINE_LISTEN=127.0.0.1:9443 ENGAGED_BASELINE_DIR=<dir with tls/> \
//!   ENGAGED_BASELINE_KEY=<key> target/release/deps/baseline-<hash>

mod support;

use std::collections::HashSet;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use redb::{Database, ReadableDatabase, TableDefinition};
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use support::bare_writer::{Write, ROWS};

const CALLS: TableDefinition<&str, &[u8]> = TableDefinition::new("calls");

fn main() {
    let (Ok(listen), Ok(dir), Ok(key)) = (
        std::env::var("ENGAGED_BASELINE_LISTEN"),
        std::env::var("ENGAGED_BASELINE_DIR"),
        std::env::var("ENGAGED_BASELINE_KEY"),
    ) else {
        println!(
            "baseline server: run by benches/load.sh (set ENGAGED_BASELINE_LISTEN, _DIR and _KEY)"
        );
        return;
    };
    let dir = PathBuf::from(dir);
    let db = Arc::new(Database::create(dir.join("baseline.redb")).expect("baseline database"));
    let txn = db.begin_write().expect("write");
    {
        let mut calls = txn.open_table(CALLS).expect("table");
        let call = br#"{"id":"call-1","direction":"OUTBOUND","callStatus":"COMPLETE","durationSeconds":42,"transcript":[]}"#;
        calls.insert("call-1", &call[..]).expect("insert");
        txn.open_table(ROWS).expect("table");
    }
    txn.commit().expect("commit");
    let keys: Arc<HashSet<[u8; 32]>> = Arc::new(
        [Sha256::digest(key.as_bytes()).into()]
            .into_iter()
            .collect(),
    );
    let writes = support::bare_writer::spawn(db.clone());
    let tls = tls_acceptor(&dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind");
        println!("baseline listening on {listen}");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (tls, db, keys, writes) = (tls.clone(), db.clone(), keys.clone(), writes.clone());
            tokio::spawn(async move {
                let Ok(stream) = tls.accept(stream).await else {
                    return;
                };
                let service =
                    service_fn(move |req| handle(req, db.clone(), keys.clone(), writes.clone()));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

async fn handle(
    req: Request<hyper::body::Incoming>,
    db: Arc<Database>,
    keys: Arc<HashSet<[u8; 32]>>,
    writes: mpsc::Sender<Write>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status: StatusCode, body: Bytes| {
        let mut r = Response::new(Full::new(body));
        *r.status_mut() = status;
        Ok(r)
    };
    let key = req
        .headers()
        .get("x-api-key")
        .map(|v| Sha256::digest(v.as_bytes()).into());
    if !key.is_some_and(|k: [u8; 32]| keys.contains(&k)) {
        return reply(
            StatusCode::FORBIDDEN,
            Bytes::from_static(b"{\"message\":\"Forbidden\"}"),
        );
    }
    if req.method() == hyper::Method::POST {
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let (tx, rx) = oneshot::channel();
        let committed = writes.send((body.to_vec(), tx)).is_ok() && rx.await.unwrap_or(false);
        let status = if committed {
            StatusCode::OK
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        return reply(status, Bytes::from_static(b"{}"));
    }
    let id = req.uri().path().trim_start_matches("/call/").to_string();
    let found = db
        .begin_read()
        .ok()
        .and_then(|r| r.open_table(CALLS).ok())
        .and_then(|t| {
            redb::ReadableTable::get(&t, id.as_str())
                .ok()
                .flatten()
                .map(|v| Bytes::copy_from_slice(v.value()))
        });
    match found {
        Some(body) => reply(StatusCode::OK, body),
        None => reply(
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"{\"message\":\"Not found\"}"),
        ),
    }
}

fn tls_acceptor(dir: &std::path::Path) -> tokio_rustls::TlsAcceptor {
    let cert = std::fs::read(dir.join("tls/cert.pem")).expect("cert.pem");
    let key = std::fs::read(dir.join("tls/key.pem")).expect("key.pem");
    let chain = rustls_pemfile::certs(&mut cert.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .expect("certs");
    let key = rustls_pemfile::private_key(&mut key.as_slice())
        .expect("key")
        .expect("a key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("config");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}
