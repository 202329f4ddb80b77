//! Typed access to the voice tables: each call's session (engaged's side of a call it
//! placed or answered), the index from a provider's call id to the call, and where a
//! call's warm transfer stands.
//!
//! A session is written in the same job as the call record it accompanies, so the two
//! never disagree about whether a call exists.

use redb::ReadableTable;

use super::codec::encode;
use super::rows::{VoiceSession, WarmTransfer};
use super::tables::{PROVIDER_CALLS, VOICE_SESSIONS, WARM_TRANSFERS};
use super::write::WriteTx;
use crate::error::Result;

impl WriteTx<'_> {
    pub fn put_voice_session(
        &mut self,
        org: &str,
        call_id: &str,
        session: &VoiceSession,
    ) -> Result<()> {
        let bytes = encode(session)?;
        self.open_write(VOICE_SESSIONS)?
            .insert((org, call_id), bytes.as_slice())?;
        Ok(())
    }

    /// The call a provider's call id belongs to, when one was noted.
    pub fn provider_call(&self, org: &str, provider_call_id: &str) -> Result<Option<String>> {
        let table = self.open_read(PROVIDER_CALLS)?;
        let found = table.get((org, provider_call_id))?;
        Ok(found.map(|v| v.value().to_string()))
    }

    pub fn put_provider_call(
        &mut self,
        org: &str,
        provider_call_id: &str,
        call_id: &str,
    ) -> Result<()> {
        self.open_write(PROVIDER_CALLS)?
            .insert((org, provider_call_id), call_id)?;
        Ok(())
    }

    pub fn put_warm_transfer(
        &mut self,
        org: &str,
        call_id: &str,
        warm: &WarmTransfer,
    ) -> Result<()> {
        let bytes = encode(warm)?;
        self.open_write(WARM_TRANSFERS)?
            .insert((org, call_id), bytes.as_slice())?;
        Ok(())
    }
}
