//! The keys of calls from the browser (`browser_calls`): the Twilio API key
//! (`apiKeySid`, `apiKeySecret`) that signs a web chat visitor's Access Token and the
//! TwiML App (`twimlAppSid`) the call goes to, members of `providers.voice` in
//! `/v1/org`. A record of its own, keyed by organization, so that the voice provider's
//! `TwilioSettings` keeps its stored shape. Their rules live in `domain::settings::twilio`.

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::codec::{decode, encode};
use super::read::ReadTx;
use super::tables::BROWSER_CALLS;
use super::write::WriteTx;
use crate::error::Result;

/// The organization's keys for calls from the browser; an empty member is not set.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserCallKeys {
    /// `SK` and 32 hex digits.
    pub api_key_sid: String,
    /// Write-only: signs the Access Tokens.
    pub api_key_secret: String,
    /// `AP` and 32 hex digits.
    pub twiml_app_sid: String,
}

impl std::fmt::Debug for BrowserCallKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserCallKeys")
            .field("api_key_sid", &self.api_key_sid)
            .field("api_key_secret_set", &!self.api_key_secret.is_empty())
            .field("twiml_app_sid", &self.twiml_app_sid)
            .finish()
    }
}

impl BrowserCallKeys {
    /// Whether nothing is set (the record is then removed).
    pub fn is_empty(&self) -> bool {
        self.api_key_sid.is_empty()
            && self.api_key_secret.is_empty()
            && self.twiml_app_sid.is_empty()
    }
}

impl WriteTx<'_> {
    /// Writes the keys; empty ones remove the record.
    pub fn put_browser_call_keys(&mut self, org: &str, keys: &BrowserCallKeys) -> Result<()> {
        let mut table = self.open_write(BROWSER_CALLS)?;
        if keys.is_empty() {
            table.remove(org)?;
        } else {
            table.insert(org, encode(keys)?.as_slice())?;
        }
        Ok(())
    }

    pub fn browser_call_keys(&self, org: &str) -> Result<BrowserCallKeys> {
        let table = self.open_read(BROWSER_CALLS)?;
        let value = table.get(org)?;
        value.map_or_else(|| Ok(BrowserCallKeys::default()), |v| decode(v.value()))
    }
}

impl ReadTx {
    pub fn browser_call_keys(&self, org: &str) -> Result<BrowserCallKeys> {
        let table = self.open_read(BROWSER_CALLS)?;
        let value = table.get(org)?;
        value.map_or_else(|| Ok(BrowserCallKeys::default()), |v| decode(v.value()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_kept_per_organization_and_empty_ones_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::Store::open(&dir.path().join("t.redb")).unwrap();
        let keys = BrowserCallKeys {
            api_key_sid: "SK0123456789abcdef0123456789abcdef".into(),
            api_key_secret: "s3cret".into(),
            twiml_app_sid: "AP0123456789abcdef0123456789abcdef".into(),
        };
        let k = keys.clone();
        store
            .write_blocking(move |tx| tx.put_browser_call_keys("o1", &k))
            .unwrap();
        let read = store.read().unwrap();
        assert_eq!(read.browser_call_keys("o1").unwrap(), keys);
        assert!(read.browser_call_keys("o2").unwrap().is_empty());
        assert!(!format!("{keys:?}").contains("s3cret"));
        store
            .write_blocking(|tx| tx.put_browser_call_keys("o1", &BrowserCallKeys::default()))
            .unwrap();
        assert!(store
            .read()
            .unwrap()
            .browser_call_keys("o1")
            .unwrap()
            .is_empty());
    }
}
