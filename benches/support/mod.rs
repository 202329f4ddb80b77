//! What the benches share: an organization with a key, JSON bodies as maps, percentiles.
//! The HTTPS client and the fakes are the test kit's (`engaged::testkit`).
#![allow(dead_code)]

pub mod bare_writer;

use std::time::Duration;

use serde_json::{Map, Value};

use engaged::admin::{self, AdminRequest};
use engaged::domain::records::auth;
use engaged::domain::Caller;
use engaged::store::rows::Scope;
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
            scope: engaged::store::rows::Scope::parse(scope).expect("a scope"),
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
