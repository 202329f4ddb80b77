//! What the benches share: an organization with a key, JSON bodies as maps, and an
//! HTTPS client that trusts the server's self-signed certificate.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{Map, Value};

use engaged::admin::{self, AdminRequest};
use engaged::domain::records::auth;
use engaged::domain::Caller;
use engaged::store::records::Scope;
use engaged::store::Store;

pub fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Creates organization `bench` and a key of `scope`; returns the key and its caller.
pub async fn org_with_key(store: &Store, scope: &str) -> (String, Caller) {
    named_org_with_key(store, "bench", scope).await
}

/// Creates organization `name` and a key of `scope`; returns the key and its caller.
pub async fn named_org_with_key(store: &Store, name: &str, scope: &str) -> (String, Caller) {
    admin::run(store, AdminRequest::OrgCreate { name: name.into() })
        .await
        .expect("org");
    let created = admin::run(
        store,
        AdminRequest::KeyCreate {
            org: name.into(),
            scope: engaged::store::records::Scope::parse(scope).expect("a scope"),
            name: None,
        },
    )
    .await
    .expect("key");
    let key = created["key"].as_str().expect("key").to_string();
    let needed = Scope::parse(scope).expect("scope");
    let caller = auth::authenticate(store, Some(&key), needed).expect("caller");
    (key, caller)
}

pub type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A pooled HTTP/1.1 client trusting exactly the certificate the server generated in
/// `data_dir`.
pub fn https_client(data_dir: &Path) -> HttpsClient {
    let pem = std::fs::read(data_dir.join("tls/cert.pem")).expect("cert");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(cert.expect("pem")).expect("root");
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(128)
        .build(connector)
}

/// The `p` quantile (0.0 to 1.0) of `samples`, in any order; zero for none.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
