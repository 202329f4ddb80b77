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
use crate::store::records::Scope;
use crate::store::Store;

pub fn new_key() -> String {
    format!(
        "ek_{}",
        URL_SAFE_NO_PAD.encode(crate::ids::random_bytes::<32>())
    )
}

pub fn hash_key(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
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
