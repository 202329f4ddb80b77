//! Point reads that a snapshot ([`ReadTx`]) and the writer's transaction ([`WriteTx`])
//! share.
//!
//! redb opens tables differently in the two (a read-only table, a writable one), but
//! both are `ReadableTable`s. Each transaction says once how it opens a table for a
//! lookup ([`Reader::record`], [`Reader::contains`]); every named getter (a lead, an
//! organization, a call, ...) is written once here, on top of those two.

use redb::{Key, ReadableTable, TableDefinition, Value};
use serde::de::DeserializeOwned;

use super::codec::decode;
use super::read::ReadTx;
use super::rows::{
    CallRecord, DeliveryRecord, EndpointRecord, EngagementRecord, EngineSettings, HandlingRecord,
    KeyRecord, LeadRecord, OrgRecord, ProfileRecord, SessionRecord, UserRecord, VoiceSession,
    WarmTransfer,
};
use super::rows::{ConsentState, HoldRecord, RecordingRecord, UploadRecord};
use super::tables::*;
use super::write::WriteTx;
use crate::channel::Channel;
use crate::error::Result;

/// Typed point reads, the same in a snapshot and in the writer's transaction. Bring it
/// into scope (`use crate::store::Reader`) to call `lead`, `org`, ... on either.
pub trait Reader {
    /// The record stored at `key` of `table`, decoded.
    fn record<K: Key + 'static, T: DeserializeOwned>(
        &self,
        table: TableDefinition<K, &'static [u8]>,
        key: K::SelfType<'_>,
    ) -> Result<Option<T>>;

    /// Whether `table` has a row at `key`.
    fn contains<K: Key + 'static, V: Value + 'static>(
        &self,
        table: TableDefinition<K, V>,
        key: K::SelfType<'_>,
    ) -> Result<bool>;

    fn key(&self, hash: &[u8]) -> Result<Option<KeyRecord>> {
        self.record(API_KEYS, hash)
    }

    fn org(&self, id: &str) -> Result<Option<OrgRecord>> {
        self.record(ORGS, id)
    }

    fn lead(&self, org: &str, id: &str) -> Result<Option<LeadRecord>> {
        self.record(LEADS, (org, id))
    }

    fn call(&self, org: &str, id: &str) -> Result<Option<CallRecord>> {
        self.record(CALLS, (org, id))
    }

    /// Whether the campaign of profile `profile` is paused.
    fn campaign_paused(&self, org: &str, profile: &str) -> Result<bool> {
        self.contains(PAUSED_CAMPAIGNS, (org, profile))
    }

    fn dnc_contains(&self, org: &str, phone: &str) -> Result<bool> {
        self.contains(DNC, (org, phone))
    }

    fn webhook_endpoint(&self, org: &str, id: &str) -> Result<Option<EndpointRecord>> {
        self.record(WEBHOOK_ENDPOINTS, (org, id))
    }

    fn delivery(&self, id: &str) -> Result<Option<DeliveryRecord>> {
        self.record(DELIVERIES, id)
    }

    fn recording(&self, org: &str, call_id: &str) -> Result<Option<RecordingRecord>> {
        self.record(RECORDINGS, (org, call_id))
    }

    fn recording_upload(&self, upload_id: &str) -> Result<Option<UploadRecord>> {
        self.record(RECORDING_UPLOADS, upload_id)
    }

    fn engine_settings(&self, org: &str) -> Result<EngineSettings> {
        Ok(self.record(ENGINE_SETTINGS, org)?.unwrap_or_default())
    }

    fn profile(&self, org: &str, name: &str) -> Result<Option<ProfileRecord>> {
        self.record(PROFILES, (org, name))
    }

    /// Whether `org` has a profile named `name` (nothing decoded).
    fn profile_exists(&self, org: &str, name: &str) -> Result<bool> {
        self.contains(PROFILES, (org, name))
    }

    fn user(&self, id: &str) -> Result<Option<UserRecord>> {
        self.record(USERS, id)
    }

    /// The user whose email (any case) is `email`.
    fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>> {
        let key = super::rows::email_key(email);
        let Some(id) = self.user_id_by_email(&key)? else {
            return Ok(None);
        };
        self.user(&id)
    }

    /// The id of the user with `email_key` (an email in lower case).
    fn user_id_by_email(&self, email_key: &str) -> Result<Option<String>>;

    /// The display name of `org`'s campaign `name`, when it has one besides its name.
    fn profile_label(&self, org: &str, name: &str) -> Result<Option<String>>;

    /// The first run's setup token, while one is stored.
    fn setup_token(&self) -> Result<Option<super::rows::SetupTokenRecord>> {
        self.record(META, SETUP_TOKEN)
    }

    fn session(&self, hash: &[u8; 32]) -> Result<Option<SessionRecord>> {
        self.record(SESSIONS, &hash[..])
    }

    /// Who handles a lead besides the assistant (nobody: the default).
    fn handling(&self, org: &str, lead: &str) -> Result<HandlingRecord> {
        Ok(self.record(LEAD_HANDLING, (org, lead))?.unwrap_or_default())
    }

    fn engagement(&self, org: &str, lead: &str) -> Result<Option<EngagementRecord>> {
        self.record(ENGAGEMENTS, (org, lead))
    }

    /// The possible opt-out a lead is held by, if any.
    fn hold(&self, org: &str, lead: &str) -> Result<Option<HoldRecord>> {
        self.record(CONSENT_HOLDS, (org, lead))
    }

    fn voice_session(&self, org: &str, call_id: &str) -> Result<Option<VoiceSession>> {
        self.record(VOICE_SESSIONS, (org, call_id))
    }

    /// Where a call's warm transfer stands (none: it had none).
    fn warm_transfer(&self, org: &str, call_id: &str) -> Result<Option<WarmTransfer>> {
        self.record(WARM_TRANSFERS, (org, call_id))
    }

    /// A lead's consent on `channel` (nothing recorded: the default, no consent).
    fn consent_state(&self, org: &str, lead: &str, channel: Channel) -> Result<ConsentState> {
        Ok(self
            .record(CONSENT_STATE, (org, lead, channel.as_str()))?
            .unwrap_or_default())
    }
}

/// The two implementations differ only in the table type redb hands back.
macro_rules! reader_for {
    ($tx:ty $(, { $($own:item)* })?) => {
        impl Reader for $tx {
            $($($own)*)?

            fn record<K: Key + 'static, T: DeserializeOwned>(
                &self,
                table: TableDefinition<K, &'static [u8]>,
                key: K::SelfType<'_>,
            ) -> Result<Option<T>> {
                let table = self.open_read(table)?;
                let found = table.get(key)?;
                found.map(|v| decode(v.value())).transpose()
            }

            fn contains<K: Key + 'static, V: Value + 'static>(
                &self,
                table: TableDefinition<K, V>,
                key: K::SelfType<'_>,
            ) -> Result<bool> {
                let table = self.open_read(table)?;
                let found = table.get(key)?;
                Ok(found.is_some())
            }

            fn user_id_by_email(&self, email_key: &str) -> Result<Option<String>> {
                let table = self.open_read(USERS_BY_EMAIL)?;
                let found = table.get(email_key)?;
                Ok(found.map(|v| v.value().to_string()))
            }

            fn profile_label(&self, org: &str, name: &str) -> Result<Option<String>> {
                let table = self.open_read(PROFILE_LABELS)?;
                let found = table.get((org, name))?;
                Ok(found.map(|v| v.value().to_string()))
            }
        }
    };
}

reader_for!(ReadTx);
// An event's job reads its lead and its handling through the tables the transaction
// keeps open (`write::Kept`).
reader_for!(WriteTx<'_>, {
    fn lead(&self, org: &str, id: &str) -> Result<Option<LeadRecord>> {
        self.kept_lead(org, id)
    }

    fn handling(&self, org: &str, lead: &str) -> Result<HandlingRecord> {
        Ok(self.kept_handling(org, lead)?.unwrap_or_default())
    }
});
