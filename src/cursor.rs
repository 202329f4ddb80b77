//! Opaque, tamper-evident pagination tokens.
//!
//! A token carries the sort key of the last row a page returned (keyset pagination, never
//! an offset) and an HMAC-SHA256 tag. The tag covers a fingerprint of the query the token
//! was issued for (organization, resource, filters) besides the position, so a token
//! replayed against another query, another organization or with a flipped bit fails to
//! open and the caller answers 400 `Invalid nextToken`. The page size is not part of the
//! fingerprint: a client may change `limit` between pages.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::Sha256;

use crate::error::{Error, Result};

const TAG_LEN: usize = 16;
const FORMAT: u8 = 1;

/// The server's secret for signing tokens; kept in the store so tokens survive restarts.
#[derive(Clone)]
pub struct CursorKey([u8; 32]);

impl CursorKey {
    pub fn new(secret: [u8; 32]) -> Self {
        CursorKey(secret)
    }

    fn tag(&self, query: &[&str], payload: &[u8]) -> Result<[u8; TAG_LEN]> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .map_err(|e| Error::Internal(format!("hmac key: {e}")))?;
        for part in query {
            // Length-prefix each part so ("ab","c") and ("a","bc") differ.
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part.as_bytes());
        }
        mac.update(payload);
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        Ok(tag)
    }

    /// Seals `position` into a token valid only for `query`.
    pub fn seal<P: Serialize>(&self, query: &[&str], position: &P) -> Result<String> {
        let mut payload = vec![FORMAT];
        payload.extend(postcard::to_stdvec(position)?);
        let tag = self.tag(query, &payload)?;
        payload.extend_from_slice(&tag);
        Ok(URL_SAFE_NO_PAD.encode(payload))
    }

    /// Opens a token issued by [`CursorKey::seal`] for the same `query`.
    pub fn open<P: DeserializeOwned>(&self, query: &[&str], token: &str) -> Result<P> {
        let raw = URL_SAFE_NO_PAD
            .decode(token.trim())
            .map_err(|_| Error::invalid_token())?;
        if raw.len() < 1 + TAG_LEN || raw[0] != FORMAT {
            return Err(Error::invalid_token());
        }
        let (payload, tag) = raw.split_at(raw.len() - TAG_LEN);
        let expected = self.tag(query, payload)?;
        // Constant-time comparison: the tag is a secret-derived value.
        let diff = expected
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return Err(Error::invalid_token());
        }
        postcard::from_bytes(&payload[1..]).map_err(|_| Error::invalid_token())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::new([7u8; 32])
    }

    #[test]
    fn round_trips_for_the_same_query() {
        let token = key().seal(&["org", "leads"], &(42i64, "lead_1")).unwrap();
        let (t, id): (i64, String) = key().open(&["org", "leads"], &token).unwrap();
        assert_eq!((t, id.as_str()), (42, "lead_1"));
    }

    #[test]
    fn refuses_another_query_or_organization() {
        let token = key().seal(&["org", "leads", "u=1"], &(42i64,)).unwrap();
        assert!(key()
            .open::<(i64,)>(&["org", "leads", "u=2"], &token)
            .is_err());
        assert!(key()
            .open::<(i64,)>(&["other", "leads", "u=1"], &token)
            .is_err());
        assert!(key().open::<(i64,)>(&["org", "leadsu=1"], &token).is_err());
    }

    #[test]
    fn refuses_tampering_and_garbage() {
        let token = key().seal(&["q"], &(42i64,)).unwrap();
        let mut raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        raw[1] ^= 1;
        let altered = URL_SAFE_NO_PAD.encode(&raw);
        assert!(key().open::<(i64,)>(&["q"], &altered).is_err());
        assert!(CursorKey::new([8u8; 32])
            .open::<(i64,)>(&["q"], &token)
            .is_err());
        for bad in ["", "!!!", "abc", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
            assert!(key().open::<(i64,)>(&["q"], bad).is_err(), "{bad}");
        }
    }
}
