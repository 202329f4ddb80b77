//! What the benches share: an organization with a key, and JSON bodies as maps.
#![allow(dead_code)]

use serde_json::{Map, Value};

use engaged::admin::{self, AdminRequest};
use engaged::domain::{auth, Caller};
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
    admin::run(
        store,
        AdminRequest::OrgCreate {
            name: "bench".into(),
        },
    )
    .await
    .expect("org");
    let created = admin::run(
        store,
        AdminRequest::KeyCreate {
            org: "bench".into(),
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
