//! API keys: how they are made, stored and checked.
//!
//! A key is `ek_` followed by 32 random bytes in base64url, shown once. The store keeps
//! only its SHA-256, which is also the lookup key, so checking a key is one hash and one
//! point read, and a stolen database file yields no usable key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{KeyRecord, Scope};
use crate::store::{ReadTx, Reader, Store, WriteTx};

pub fn new_key() -> String {
    format!(
        "ek_{}",
        URL_SAFE_NO_PAD.encode(crate::ids::random_bytes::<32>())
    )
}

pub fn hash_key(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// A new key of organization `org_id`: its record and the key itself, which exists only
/// in this answer (the store keeps its SHA-256).
pub fn create_key(
    tx: &mut WriteTx,
    org_id: &str,
    scope: Scope,
    name: &str,
) -> Result<(KeyRecord, String)> {
    if name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(Error::invalid_field("name"));
    }
    let key = new_key();
    let record = KeyRecord {
        id: crate::ids::generate("key"),
        org_id: org_id.to_string(),
        scope,
        name: name.trim().to_string(),
        created_at: tx.tick(),
        revoked_at: None,
    };
    tx.put_key(&hash_key(&key), &record)?;
    Ok((record, key))
}

/// Revokes key `id` (of organization `org_id` when given: another's is not found).
pub fn revoke_key(tx: &mut WriteTx, org_id: Option<&str>, id: &str) -> Result<KeyRecord> {
    let not_found = || Error::NotFound(format!("Key not found: {id}"));
    let hash = tx.key_hash_by_id(id)?.ok_or_else(not_found)?;
    let mut record = tx.key(&hash)?.ok_or_else(not_found)?;
    if org_id.is_some_and(|org| org != record.org_id) {
        return Err(not_found());
    }
    if record.revoked_at.is_none() {
        record.revoked_at = Some(tx.tick());
        tx.put_key(&hash, &record)?;
    }
    Ok(record)
}

/// Organization `org_id`'s keys, oldest first.
pub fn keys_of(read: &ReadTx, org_id: &str) -> Result<Vec<KeyRecord>> {
    let mut keys: Vec<KeyRecord> = read
        .keys()?
        .into_iter()
        .filter(|k| k.org_id == org_id)
        .collect();
    keys.sort_by_key(|k| k.created_at);
    Ok(keys)
}

/// Checks the `x-api-key` header against the scope an operation needs.
pub fn authenticate(store: &Store, header: Option<&str>, needed: Scope) -> Result<Caller> {
    let key = header.ok_or(Error::Unauthorized)?;
    let record = store
        .api_key(&hash_key(key.trim()))?
        .ok_or(Error::Forbidden)?;
    if record.revoked_at.is_some() || record.scope < needed {
        return Err(Error::Forbidden);
    }
    Ok(Caller {
        org_id: record.org_id,
        key_id: record.id,
        scope: record.scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_and_hashes_stable() {
        let (a, b) = (new_key(), new_key());
        assert_ne!(a, b);
        assert!(a.starts_with("ek_") && a.len() == 46);
        assert_eq!(hash_key(&a), hash_key(&a));
        assert_ne!(hash_key(&a), hash_key(&b));
    }
}
