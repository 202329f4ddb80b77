//! Recordings: the audio of a call, kept in the store in chunks, and the expiring signed
//! links through which clients download it.
//!
//! An upload is a sequence of write jobs, never one transaction held across network
//! reads (see `store::recordings`): [`begin`] registers it against an existing call,
//! [`put_chunk`] stores each chunk, [`finish`] makes it the call's recording, replacing
//! the previous one atomically, and [`discard`] removes what a failed upload left.
//!
//! A link names the organization, the call and an expiry (Unix seconds), and carries an
//! HMAC-SHA256 of the three under a server secret ([`LinkKey`]); it needs no API key.
//! A link that does not verify is 403 `Forbidden`; a genuine one past its expiry is
//! 410 `Link expired`. The link serves whatever recording the call has when it is used.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{RecordingRecord, UploadRecord};
use crate::store::Reader;
use crate::store::{ReadTx, WriteTx};

pub use crate::store::rows::CHUNK_BYTES;

/// Longest accepted `Content-Type` value.
const MAX_CONTENT_TYPE_LEN: usize = 255;

pub fn call_not_found() -> Error {
    Error::NotFound("Call not found".into())
}

pub fn recording_not_found() -> Error {
    Error::NotFound("Recording not found".into())
}

/// Checks an upload's `Content-Type`: any `audio/*` type, parameters allowed. Returns
/// the value to store, trimmed.
pub fn content_type(raw: Option<&str>) -> Result<String> {
    let refuse = || Error::UnsupportedMediaType("Content-Type must be audio/*".into());
    let value = raw.map(str::trim).ok_or_else(refuse)?;
    let essence = value.split(';').next().unwrap_or("").trim();
    let (kind, subtype) = essence.split_once('/').ok_or_else(refuse)?;
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    if !kind.eq_ignore_ascii_case("audio")
        || !token(subtype)
        || value.len() > MAX_CONTENT_TYPE_LEN
        || !value
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return Err(refuse());
    }
    Ok(value.to_string())
}

/// Registers upload `upload_id` for call `call_id`; 404 `Call not found` when the
/// caller's organization has no such call.
pub fn begin(tx: &mut WriteTx, caller: &Caller, call_id: &str, upload_id: &str) -> Result<()> {
    let org = caller.org_id.as_str();
    if !crate::ids::is_valid_client_id(call_id) || tx.call(org, call_id)?.is_none() {
        return Err(call_not_found());
    }
    let started_at = tx.tick();
    tx.begin_recording_upload(
        upload_id,
        &UploadRecord {
            org_id: org.to_string(),
            call_id: call_id.to_string(),
            started_at,
        },
    )
}

/// Stores chunk `index` of a registered upload.
pub fn put_chunk(tx: &mut WriteTx, upload_id: &str, index: u64, bytes: &[u8]) -> Result<()> {
    if tx.recording_upload(upload_id)?.is_none() {
        return Err(Error::Conflict("The upload was abandoned".into()));
    }
    tx.put_recording_chunk(upload_id, index, bytes)
}

/// What an upload turned out to be once its last byte arrived.
#[derive(Debug, Clone)]
pub struct Uploaded {
    pub upload_id: String,
    pub content_type: String,
    pub size: u64,
    pub sha256: String,
}

/// Makes a completed upload the call's recording, replacing (and deleting) the previous
/// one in the same transaction. Returns the recording and whether it replaced one.
pub fn finish(
    tx: &mut WriteTx,
    caller: &Caller,
    call_id: &str,
    uploaded: Uploaded,
) -> Result<(RecordingRecord, bool)> {
    let org = caller.org_id.as_str();
    match tx.recording_upload(&uploaded.upload_id)? {
        Some(up) if up.org_id == org && up.call_id == call_id => {}
        _ => return Err(Error::Conflict("The upload was abandoned".into())),
    }
    if tx.call(org, call_id)?.is_none() {
        return Err(call_not_found());
    }
    let record = RecordingRecord {
        call_id: call_id.to_string(),
        upload_id: uploaded.upload_id,
        content_type: uploaded.content_type,
        size: uploaded.size,
        sha256: uploaded.sha256,
        uploaded_at: tx.tick(),
    };
    let previous = tx.put_recording(org, &record)?;
    Ok((record, previous.is_some()))
}

/// Removes what an unfinished upload stored; a finished one is left alone.
pub fn discard(tx: &mut WriteTx, upload_id: &str) -> Result<()> {
    tx.discard_recording_upload(upload_id).map(|_| ())
}

/// Deletes the call's recording and its audio; 404 `Recording not found`.
pub fn delete(tx: &mut WriteTx, caller: &Caller, call_id: &str) -> Result<RecordingRecord> {
    tx.delete_recording(&caller.org_id, call_id)?
        .ok_or_else(recording_not_found)
}

/// The recording of a call of `org`; 404 `Recording not found` for a missing call, a
/// call without a recording, or another organization's call.
pub fn find(read: &ReadTx, org: &str, call_id: &str) -> Result<RecordingRecord> {
    read.recording(org, call_id)?
        .ok_or_else(recording_not_found)
}

/// The server's secret for recording links; kept in the store so links survive
/// restarts.
#[derive(Clone)]
pub struct LinkKey([u8; 32]);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey(..)")
    }
}

impl LinkKey {
    pub fn new(secret: [u8; 32]) -> Self {
        LinkKey(secret)
    }

    fn mac(&self, org: &str, call_id: &str, expires: u64) -> Result<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .map_err(|e| Error::Internal(format!("hmac key: {e}")))?;
        // Length-prefixed parts, so ("ab", "c") and ("a", "bc") differ.
        for part in [
            b"recording-link-v1".as_slice(),
            org.as_bytes(),
            call_id.as_bytes(),
        ] {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        mac.update(&expires.to_le_bytes());
        Ok(mac)
    }

    /// The signature of a link to the recording of (`org`, `call_id`) valid until
    /// `expires` (Unix seconds), lowercase hex.
    pub fn sign(&self, org: &str, call_id: &str, expires: u64) -> Result<String> {
        Ok(hex::encode(
            self.mac(org, call_id, expires)?.finalize().into_bytes(),
        ))
    }

    /// Checks a link's `expires` and `sig` query values at `now` (Unix seconds, with a
    /// fraction): 403 `Forbidden` unless the signature matches, then 410 `Link expired`
    /// once `now` is past `expires`.
    pub fn verify(
        &self,
        org: &str,
        call_id: &str,
        expires: Option<&str>,
        sig: Option<&str>,
        now: f64,
    ) -> Result<()> {
        let expires: u64 = expires
            .filter(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|e| e.parse().ok())
            .ok_or(Error::Forbidden)?;
        let sig = sig
            .and_then(|s| hex::decode(s).ok())
            .ok_or(Error::Forbidden)?;
        // Constant-time comparison.
        self.mac(org, call_id, expires)?
            .verify_slice(&sig)
            .map_err(|_| Error::Forbidden)?;
        if now > expires as f64 {
            return Err(Error::Gone("Link expired".into()));
        }
        Ok(())
    }
}

/// The expiry of a link issued at `now` (Unix seconds, with a fraction) for `ttl_secs`:
/// rounded up to a whole second, so a link is never valid for less than its TTL.
pub fn link_expiry(now: f64, ttl_secs: u64) -> u64 {
    (now + ttl_secs as f64).ceil().max(0.0) as u64
}

/// The current time as Unix seconds with a fraction.
pub fn now_secs() -> f64 {
    crate::time::now_micros() as f64 / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> LinkKey {
        LinkKey::new([9u8; 32])
    }

    #[test]
    fn a_signed_link_verifies_until_it_expires() {
        let sig = key().sign("org_a", "call-1", 1_000).unwrap();
        assert_eq!(sig.len(), 64);
        let check = |org: &str, call: &str, exp: &str, sig: &str, now: f64| {
            key()
                .verify(org, call, Some(exp), Some(sig), now)
                .map_err(|e| e.to_string())
        };
        assert_eq!(check("org_a", "call-1", "1000", &sig, 999.5), Ok(()));
        assert_eq!(check("org_a", "call-1", "1000", &sig, 1000.0), Ok(()));
        assert_eq!(
            check("org_a", "call-1", "1000", &sig, 1000.1),
            Err("Link expired".into())
        );
    }

    #[test]
    fn an_altered_or_forged_link_is_forbidden() {
        let sig = key().sign("org_a", "call-1", 1_000).unwrap();
        let forbidden = |org: &str, call: &str, exp: Option<&str>, sig: Option<&str>| {
            matches!(
                key().verify(org, call, exp, sig, 10.0),
                Err(Error::Forbidden)
            )
        };
        assert!(forbidden("org_a", "call-1", Some("1001"), Some(&sig)));
        assert!(forbidden("org_b", "call-1", Some("1000"), Some(&sig)));
        assert!(forbidden("org_a", "call-2", Some("1000"), Some(&sig)));
        assert!(forbidden(
            "org_a",
            "call-1",
            Some("1000"),
            Some(&"0".repeat(64))
        ));
        assert!(forbidden("org_a", "call-1", Some("1000"), Some(&sig[..62])));
        assert!(forbidden("org_a", "call-1", Some("1000"), Some("zz")));
        assert!(forbidden("org_a", "call-1", Some("+1000"), Some(&sig)));
        assert!(forbidden("org_a", "call-1", None, Some(&sig)));
        assert!(forbidden("org_a", "call-1", Some("1000"), None));
        // Another server's secret.
        let other = LinkKey::new([1u8; 32])
            .sign("org_a", "call-1", 1_000)
            .unwrap();
        assert!(forbidden("org_a", "call-1", Some("1000"), Some(&other)));
        // Parts cannot slide into each other.
        let slid = key().sign("org_", "acall-1", 1_000).unwrap();
        assert!(forbidden("org_a", "call-1", Some("1000"), Some(&slid)));
    }

    #[test]
    fn expiry_rounds_up() {
        assert_eq!(link_expiry(100.2, 900), 1001);
        assert_eq!(link_expiry(100.0, 1), 101);
    }

    #[test]
    fn only_audio_types_are_accepted() {
        for ok in [
            "audio/mpeg",
            "Audio/WAV",
            " audio/ogg; codecs=opus ",
            "audio/x-m4a",
        ] {
            assert!(content_type(Some(ok)).is_ok(), "{ok}");
        }
        assert_eq!(content_type(Some(" audio/mpeg ")).unwrap(), "audio/mpeg");
        for bad in [
            None,
            Some(""),
            Some("audio"),
            Some("audio/"),
            Some("video/mp4"),
            Some("application/octet-stream"),
            Some("audiox/mpeg"),
            Some("audio/mp eg"),
        ] {
            let e = content_type(bad).unwrap_err();
            assert_eq!(e.to_string(), "Content-Type must be audio/*");
            assert_eq!(e.status(), hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE);
        }
    }
}
