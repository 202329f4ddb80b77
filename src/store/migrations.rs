//! Schema migrations: how a file written by an older release is brought up to date.
//!
//! The file records its layout version in `meta.schema_version`. At start-up
//! `store::initialize` runs, in one write transaction, every step from the file's
//! version to [`SCHEMA_VERSION`]; a file from a newer release is refused with a clear
//! message rather than misread. A release that changes a table or a record format adds
//! one step here and bumps the version; the fixture test keeps the old files readable.

use redb::{ReadableTable, TableDefinition, WriteTransaction};

use super::codec::{decode, encode};
use super::lead_index;
use super::lead_view;
use super::rows::{
    email_key, Author, EngagementRecord, EventRecord, HandlingRecord, LeadOrder, LeadRecord,
};
use super::tables::{
    CAMPAIGN_COUNTS, CAMPAIGN_REPLIERS, ENGAGEMENTS, ENGINE_SETTINGS, EVENTS, EVENT_KEYS, LEADS,
    LEADS_BY_ACTIVITY, LEADS_BY_EMAIL, LEADS_BY_PHONE, LEADS_BY_REPLY, LEADS_BY_UPDATED,
    LEAD_FACETS, LEAD_FACET_COUNTS, LEAD_FACET_LIST, LEAD_HANDLING, LEAD_ORDER, LEAD_REPLIED,
    MESSAGES_BY_CREATED, ORGS, PROFILES,
};
use super::write::Logged;
use crate::error::{Error, Result};

/// The layout version this release writes.
pub const SCHEMA_VERSION: u32 = 16;

/// `STEPS[i]` upgrades a file from version `i + 1` to `i + 2`.
type Step = fn(&WriteTransaction) -> Result<()>;
const STEPS: &[Step] = &[
    leads_by_updated_holds_each_leads_json,
    contact_indexes_hold_live_leads,
    engine_settings_gain_max_tokens_and_rates,
    lead_search_index_is_built,
    engine_settings_gain_default_country,
    existing_orgs_require_no_consent,
    leads_and_profiles_gain_meeting_fields,
    handling_knows_who_wrote_and_inbox_tabs_are_indexed,
    campaign_replies_count_leads,
    calendars_and_meetings_gain_caldav_fields,
    replies_wait_for_a_person_without_an_assistant,
    profiles_gain_a_screening_reply_and_a_voicemail,
    handling_notes_a_meeting_changed_in_the_calendar,
    profiles_gain_transfer_settings,
    profiles_gain_tests,
];

// Every version below the current one has its step.
const _: () = assert!(STEPS.len() as u32 + 1 == SCHEMA_VERSION);

/// 11 → 12: a lead's reply that no assistant will answer (its organization has none
/// connected) needs attention ("Replied — no assistant connected"), and without an
/// assistant no lead is "Assisted": every live lead's facets are derived again with
/// its organization's assistant in mind.
fn replies_wait_for_a_person_without_an_assistant(txn: &WriteTransaction) -> Result<()> {
    let mut connected = std::collections::BTreeMap::new();
    {
        let settings = txn.open_table(ENGINE_SETTINGS)?;
        for row in settings.iter()? {
            let (org, value) = row?;
            let settings: crate::store::rows::EngineSettings = decode(value.value())?;
            connected.insert(org.value().to_string(), settings.assistant.is_some());
        }
    }
    let leads = txn.open_table(LEADS)?;
    let engagements = txn.open_table(ENGAGEMENTS)?;
    let handling = txn.open_table(LEAD_HANDLING)?;
    let mut tables = index_tables(txn)?;
    let mut moved = 0u64;
    for row in leads.iter()? {
        let (key, value) = row?;
        let (org, id) = key.value();
        let lead: LeadRecord = decode(value.value())?;
        if lead.deleted_at.is_some() {
            continue;
        }
        let Some((created_at, last_activity_at)) = tables.order.get((org, id))?.map(|v| v.value())
        else {
            continue;
        };
        let old = LeadOrder {
            created_at,
            last_activity_at,
            facets: match tables.lists.get((org, id))? {
                Some(list) => decode(list.value())?,
                None => Vec::new(),
            },
            last_inbound_at: tables.replied.get((org, id))?.map(|v| v.value()),
        };
        let engagement: Option<EngagementRecord> = engagements
            .get((org, id))?
            .map(|v| decode(v.value()))
            .transpose()?;
        // Read as today's layout: a handling row has gained `calendar_change` since
        // (schema 14).
        let handling: HandlingRecord = handling
            .get((org, id))?
            .map(|v| decode_grown(v.value()))
            .transpose()?
            .unwrap_or_default();
        let assistant = connected.get(org).copied().unwrap_or(false);
        let new = LeadOrder {
            facets: lead_index::facets(&lead, engagement.as_ref(), &handling, assistant),
            ..old.clone()
        };
        if new != old {
            tables.move_rows(org, id, Some(&old), Some(&new))?;
            moved += 1;
        }
    }
    tracing::info!(
        leads = moved,
        "schema 12: replies no assistant answers wait for a person"
    );
    Ok(())
}

/// 9 → 10: a campaign's `replied` and `step:<n>:repliesAfter` count leads, each once,
/// and an opt-out is no reply (`domain::engagement::campaigns`). The old per-message
/// `repliesAfter` counters go; each engagement a message of its lead stopped (reason
/// `replied`: a STOP stops as `unsubscribed`) counts once in `replied` and after the
/// step it stood at, marked in `campaign_repliers` as later replies are. Replies after
/// a finished cadence were not told apart before and are not counted.
fn campaign_replies_count_leads(txn: &WriteTransaction) -> Result<()> {
    use crate::store::rows::{EngagementState, StopReason};
    let mut counts = txn.open_table(CAMPAIGN_COUNTS)?;
    let mut old = Vec::new();
    for row in counts.iter()? {
        let (key, _) = row?;
        let (org, profile, counter) = key.value();
        if counter.ends_with(":repliesAfter") || counter == "replied" {
            old.push((org.to_string(), profile.to_string(), counter.to_string()));
        }
    }
    for (org, profile, counter) in &old {
        counts.remove((org.as_str(), profile.as_str(), counter.as_str()))?;
    }
    let mut replied: std::collections::BTreeMap<(String, String, String), u64> =
        std::collections::BTreeMap::new();
    let mut repliers = txn.open_table(CAMPAIGN_REPLIERS)?;
    let engagements = txn.open_table(ENGAGEMENTS)?;
    let mut leads = 0u64;
    for row in engagements.iter()? {
        let (key, value) = row?;
        let (org, lead) = key.value();
        let e: EngagementRecord = decode(value.value())?;
        let stopped_by_reply =
            e.state == EngagementState::Stopped && e.stopped_reason == Some(StopReason::Replied);
        if e.profile.is_empty() || !stopped_by_reply {
            continue;
        }
        leads += 1;
        repliers.insert((org, e.profile.as_str(), lead, 0), ())?;
        *replied
            .entry((org.to_string(), e.profile.clone(), "replied".into()))
            .or_default() += 1;
        if e.next_step > 0 {
            repliers.insert((org, e.profile.as_str(), lead, e.next_step), ())?;
            let counter = format!("step:{}:repliesAfter", e.next_step);
            *replied
                .entry((org.to_string(), e.profile.clone(), counter))
                .or_default() += 1;
        }
    }
    for ((org, profile, counter), n) in &replied {
        counts.insert((org.as_str(), profile.as_str(), counter.as_str()), *n)?;
    }
    tracing::info!(
        leads,
        "a campaign's replies count leads, each once, and an opt-out is no reply"
    );
    Ok(())
}

/// The lead search's index tables, open to be rebuilt (steps 5 and 9).
fn index_tables(txn: &WriteTransaction) -> Result<lead_index::IndexTables<'_, '_>> {
    Ok(lead_index::IndexTables {
        facets: Logged::unlogged(txn.open_table(LEAD_FACETS)?),
        counts: Logged::unlogged(txn.open_table(LEAD_FACET_COUNTS)?),
        by_activity: Logged::unlogged(txn.open_table(LEADS_BY_ACTIVITY)?),
        order: Logged::unlogged(txn.open_table(LEAD_ORDER)?),
        lists: Logged::unlogged(txn.open_table(LEAD_FACET_LIST)?),
        replied: Logged::unlogged(txn.open_table(LEAD_REPLIED)?),
        by_reply: Logged::unlogged(txn.open_table(LEADS_BY_REPLY)?),
    })
}

/// 4 → 5: the lead search's index (`lead_facets`, their counts, `lead_order`,
/// `lead_facet_list`, `leads_by_activity`) is built from every live lead, its engagement and (none yet)
/// its handling, as `store::lead_index` keeps it from then on.
fn lead_search_index_is_built(txn: &WriteTransaction) -> Result<()> {
    let leads = txn.open_table(LEADS)?;
    let engagements = txn.open_table(ENGAGEMENTS)?;
    let mut tables = index_tables(txn)?;
    let mut indexed = 0u64;
    for row in leads.iter()? {
        let (key, value) = row?;
        let (org, id) = key.value();
        let lead: LeadRecord = decode_grown(value.value())?;
        if lead.deleted_at.is_some() {
            continue;
        }
        let engagement: Option<EngagementRecord> = engagements
            .get((org, id))?
            .map(|v| decode(v.value()))
            .transpose()?;
        let order = LeadOrder {
            created_at: lead.created_at,
            last_activity_at: lead.last_activity_at,
            facets: lead_index::facets(
                &lead,
                engagement.as_ref(),
                &HandlingRecord::default(),
                true,
            ),
            last_inbound_at: None,
        };
        tables.move_rows(org, id, None, Some(&order))?;
        indexed += 1;
    }
    tracing::info!(leads = indexed, "schema 5: lead search index built");
    Ok(())
}

/// 5 → 6: the engine's organization settings gain `defaultCountry`, `followUpDays` and
/// `holidays` (all unset). Every row is read in the layout of schema 5 and written again.
fn engine_settings_gain_default_country(txn: &WriteTransaction) -> Result<()> {
    let rewritten = rewrite_engine_settings(txn, schema5::EngineSettings::upgraded)?;
    tracing::info!(
        organizations = rewritten,
        "the engine settings carry defaultCountry, followUpDays and holidays"
    );
    Ok(())
}

/// 6 → 7: the engine settings gain the consent policy (`consentRequired`,
/// `optOutKeywords`, `revocationScope`), and each profile's steps their `purpose`
/// (`marketing`, as every step was until then). A new organization requires consent for voice
/// marketing; one that exists before this release keeps what it had: no requirement
/// (`engaged check` says so). So every organization gets a row, written in the new
/// layout with `consentRequired` empty, whether it had one (schema 6's layout) or not.
fn existing_orgs_require_no_consent(txn: &WriteTransaction) -> Result<()> {
    let orgs: Vec<String> = {
        let table = txn.open_table(ORGS)?;
        let mut ids = Vec::new();
        for row in table.iter()? {
            ids.push(row?.0.value().to_string());
        }
        ids
    };
    let mut table = txn.open_table(ENGINE_SETTINGS)?;
    let mut rows = Vec::new();
    for row in table.iter()? {
        let (org, value) = row?;
        let old: schema6::EngineSettings = decode(value.value())?;
        rows.push((org.value().to_string(), old));
    }
    for org in orgs {
        if !rows.iter().any(|(id, _)| *id == org) {
            rows.push((org, schema6::EngineSettings::default()));
        }
    }
    for (org, old) in rows.iter().map(|(org, old)| (org, old.clone())) {
        let bytes = encode(&old.upgraded())?;
        table.insert(org.as_str(), bytes.as_slice())?;
    }
    tracing::info!(
        organizations = rows.len(),
        "the engine settings carry the consent policy (none required for existing organizations)"
    );
    let mut profiles = txn.open_table(PROFILES)?;
    let mut rewritten = Vec::new();
    for row in profiles.iter()? {
        let (key, value) = row?;
        let (org, name) = key.value();
        let old: schema6::ProfileRecord = decode(value.value())?;
        rewritten.push((org.to_string(), name.to_string(), encode(&old.upgraded())?));
    }
    for (org, name, bytes) in &rewritten {
        profiles.insert((org.as_str(), name.as_str()), bytes.as_slice())?;
    }
    tracing::info!(
        profiles = rewritten.len(),
        "cadence steps carry their purpose (marketing)"
    );
    Ok(())
}

/// The engine settings as schema 6 wrote them.
mod schema6 {
    use serde::{Deserialize, Serialize};

    use crate::channel::Channel;
    use crate::store::rows::{
        self, AssistantSettings, ConsentRequired, DispositionRecord, ProviderSettings, Purpose,
    };
    use crate::time::Micros;

    /// A profile as schema 6 wrote it: its steps had no purpose.
    #[derive(Deserialize, Serialize)]
    pub struct ProfileRecord {
        pub(super) name: String,
        pub(super) instructions: String,
        pub(super) cadence: Vec<StepRecord>,
        pub(super) reply_delay_ms: u64,
        pub(super) reply_delay: String,
        pub(super) dispositions: Vec<DispositionRecord>,
        pub(super) transfer_number: String,
        pub(super) fallback_transfer_number: String,
        pub(super) voice_greeting: String,
        pub(super) created_at: Micros,
        pub(super) updated_at: Micros,
    }

    #[derive(Deserialize, Serialize)]
    pub struct StepRecord {
        pub(super) after: String,
        pub(super) after_ms: u64,
        pub(super) channel: Channel,
        pub(super) text: String,
        pub(super) subject: String,
    }

    impl ProfileRecord {
        pub(super) fn upgraded(self) -> rows::ProfileRecord {
            rows::ProfileRecord {
                name: self.name,
                instructions: self.instructions,
                cadence: self
                    .cadence
                    .into_iter()
                    .map(|s| rows::StepRecord {
                        after: s.after,
                        after_ms: s.after_ms,
                        channel: s.channel,
                        text: s.text,
                        subject: s.subject,
                        purpose: Purpose::Marketing,
                    })
                    .collect(),
                reply_delay_ms: self.reply_delay_ms,
                reply_delay: self.reply_delay,
                dispositions: self.dispositions,
                transfer_number: self.transfer_number,
                fallback_transfer_number: self.fallback_transfer_number,
                voice_greeting: self.voice_greeting,
                created_at: self.created_at,
                updated_at: self.updated_at,
                calendar: String::new(),
                screening_reply: String::new(),
                voicemail: None,
                transfer: None,
                tests: Vec::new(),
                require_tests_pass: false,
            }
        }
    }

    #[derive(Clone, Default, Deserialize, Serialize)]
    pub struct EngineSettings {
        pub(super) time_zone: String,
        pub(super) business_name: String,
        pub(super) help_text: String,
        pub(super) assistant: Option<AssistantSettings>,
        pub(super) sms: ProviderSettings,
        pub(super) voice: ProviderSettings,
        pub(super) email: ProviderSettings,
        pub(super) default_country: String,
        pub(super) follow_up_days: Vec<String>,
        pub(super) holidays: Vec<String>,
    }

    impl EngineSettings {
        pub(super) fn upgraded(self) -> rows::EngineSettings {
            rows::EngineSettings {
                time_zone: self.time_zone,
                business_name: self.business_name,
                help_text: self.help_text,
                assistant: self.assistant,
                sms: self.sms,
                voice: self.voice,
                email: self.email,
                default_country: self.default_country,
                follow_up_days: self.follow_up_days,
                holidays: self.holidays,
                voice_opt_out: rows::VoiceOptOut::default(),
                consent_required: ConsentRequired(Vec::new()),
                opt_out_keywords: Vec::new(),
                revocation_scope: rows::RevocationScope::All,
            }
        }
    }
}

/// Reads every engine settings row in an older layout `Old` and writes it again as
/// `upgrade` makes it; answers how many rows.
fn rewrite_engine_settings<Old, New>(
    txn: &WriteTransaction,
    upgrade: fn(Old) -> New,
) -> Result<usize>
where
    Old: serde::de::DeserializeOwned,
    New: serde::Serialize,
{
    let mut table = txn.open_table(ENGINE_SETTINGS)?;
    let mut rows = Vec::new();
    for row in table.iter()? {
        let (org, value) = row?;
        let old: Old = decode(value.value())?;
        rows.push((org.value().to_string(), encode(&upgrade(old))?));
    }
    for (org, bytes) in &rows {
        table.insert(org.as_str(), bytes.as_slice())?;
    }
    Ok(rows.len())
}

/// The engine settings as schemas 4 and 5 wrote them.
mod schema5 {
    use serde::{Deserialize, Serialize};

    use crate::store::rows::{AssistantSettings, ProviderSettings};

    #[derive(Deserialize, Serialize)]
    pub struct EngineSettings {
        pub(super) time_zone: String,
        pub(super) business_name: String,
        pub(super) help_text: String,
        pub(super) assistant: Option<AssistantSettings>,
        pub(super) sms: ProviderSettings,
        pub(super) voice: ProviderSettings,
        pub(super) email: ProviderSettings,
    }

    impl EngineSettings {
        /// In schema 6's layout.
        pub(super) fn upgraded(self) -> super::schema6::EngineSettings {
            super::schema6::EngineSettings {
                time_zone: self.time_zone,
                business_name: self.business_name,
                help_text: self.help_text,
                assistant: self.assistant,
                sms: self.sms,
                voice: self.voice,
                email: self.email,
                default_country: String::new(),
                follow_up_days: Vec::new(),
                holidays: Vec::new(),
            }
        }
    }
}

/// 1 → 2: `leads_by_updated` rows gain the lead's createdAt and wire JSON
/// (`lead_view`). The table's value type changes, so the old table is renamed aside,
/// walked in its own key order (the new rows then go in as appends, which packs them),
/// and dropped. A stray old row, pointing at no lead, is not carried over (a warning
/// says so): the index is derived from the records.
fn leads_by_updated_holds_each_leads_json(txn: &WriteTransaction) -> Result<()> {
    const V1: TableDefinition<(&str, i64, &str), ()> = TableDefinition::new("leads_by_updated");
    const V1_ASIDE: TableDefinition<(&str, i64, &str), ()> =
        TableDefinition::new("leads_by_updated_v1");
    txn.rename_table(V1, V1_ASIDE)?;
    let mut filled = 0u64;
    {
        let old = txn.open_table(V1_ASIDE)?;
        let leads = txn.open_table(LEADS)?;
        let mut by_updated = txn.open_table(LEADS_BY_UPDATED)?;
        for row in old.iter()? {
            let (key, _) = row?;
            let (org, _, id) = key.value();
            let Some(record) = leads.get((org, id))? else {
                tracing::warn!(
                    org,
                    id,
                    "leads_by_updated pointed at a missing lead; dropped"
                );
                continue;
            };
            let lead: LeadRecord = decode_grown(record.value())?;
            let view = lead_view::index_value(&lead)?;
            by_updated.insert((org, lead.updated_at, id), view.as_slice())?;
            filled += 1;
        }
    }
    txn.delete_table(V1_ASIDE)?;
    tracing::info!(
        leads = filled,
        "leads_by_updated now holds each lead's JSON"
    );
    Ok(())
}

/// 2 → 3: duplicates are refused by lookup, so the contact indexes hold live leads
/// only: a deleted lead's `leads_by_phone` row goes, and `leads_by_email` is built. The
/// file may hold live leads that share a phone or email (from before the rule): each
/// keeps its row, the indexes being keyed by lead too.
fn contact_indexes_hold_live_leads(txn: &WriteTransaction) -> Result<()> {
    let leads = txn.open_table(LEADS)?;
    let mut by_phone = txn.open_table(LEADS_BY_PHONE)?;
    let mut by_email = txn.open_table(LEADS_BY_EMAIL)?;
    let (mut emails, mut freed) = (0u64, 0u64);
    for row in leads.iter()? {
        let (key, value) = row?;
        let (org, id) = key.value();
        let lead: LeadRecord = decode_grown(value.value())?;
        if lead.deleted_at.is_some() {
            if !lead.phone.is_empty() && by_phone.remove((org, lead.phone.as_str(), id))?.is_some()
            {
                freed += 1;
            }
        } else if !lead.email.is_empty() {
            by_email.insert((org, email_key(&lead.email).as_str(), id), ())?;
            emails += 1;
        }
    }
    tracing::info!(
        emails,
        deleted_phones = freed,
        "the contact indexes hold live leads"
    );
    Ok(())
}

/// 3 → 4: the engine's organization settings gain `assistant.maxTokens` and each
/// provider's `ratePerSecond` (both unset: the defaults). postcard records carry no
/// field names, so every row is read in the layout of schema 3 and written again.
fn engine_settings_gain_max_tokens_and_rates(txn: &WriteTransaction) -> Result<()> {
    let rewritten = rewrite_engine_settings(txn, schema3::EngineSettings::upgraded)?;
    tracing::info!(
        organizations = rewritten,
        "the engine settings carry maxTokens and sending rates"
    );
    Ok(())
}

/// The engine settings as schema 3 wrote them.
mod schema3 {
    use serde::Deserialize;

    use crate::store::rows::{self, ProviderSettings as Now, SmtpSettings};

    #[derive(Deserialize)]
    #[cfg_attr(test, derive(serde::Serialize))]
    pub struct EngineSettings {
        pub(super) time_zone: String,
        pub(super) business_name: String,
        pub(super) help_text: String,
        pub(super) assistant: Option<AssistantSettings>,
        pub(super) sms: ProviderSettings,
        pub(super) voice: ProviderSettings,
        pub(super) email: ProviderSettings,
    }

    #[derive(Deserialize)]
    #[cfg_attr(test, derive(serde::Serialize))]
    pub(super) struct AssistantSettings {
        pub(super) base_url: String,
        pub(super) model: String,
        pub(super) api_key: Option<String>,
        pub(super) timeout_ms: u64,
    }

    #[derive(Deserialize)]
    #[cfg_attr(test, derive(serde::Serialize))]
    pub(super) enum ProviderSettings {
        Sandbox { latency_ms: u64 },
        Smtp(SmtpSettings),
        Twilio(TwilioSettings),
    }

    #[derive(Deserialize)]
    #[cfg_attr(test, derive(serde::Serialize))]
    pub(super) struct TwilioSettings {
        pub(super) account_sid: String,
        pub(super) auth_token: String,
        pub(super) from: String,
        pub(super) messaging_service_sid: String,
        pub(super) base_url: String,
    }

    impl ProviderSettings {
        fn upgraded(self) -> Now {
            match self {
                ProviderSettings::Sandbox { latency_ms } => Now::Sandbox {
                    latency_ms,
                    rate_per_second: None,
                },
                ProviderSettings::Smtp(smtp) => Now::Smtp(smtp),
                ProviderSettings::Twilio(t) => Now::Twilio(rows::TwilioSettings {
                    account_sid: t.account_sid,
                    auth_token: t.auth_token,
                    from: t.from,
                    messaging_service_sid: t.messaging_service_sid,
                    base_url: t.base_url,
                    rate_per_second: None,
                }),
            }
        }
    }

    impl EngineSettings {
        /// In schema 4's layout (which schema 5 kept).
        pub fn upgraded(self) -> super::schema5::EngineSettings {
            super::schema5::EngineSettings {
                time_zone: self.time_zone,
                business_name: self.business_name,
                help_text: self.help_text,
                assistant: self.assistant.map(|a| rows::AssistantSettings {
                    base_url: a.base_url,
                    model: a.model,
                    api_key: a.api_key,
                    timeout_ms: a.timeout_ms,
                    max_tokens: None,
                }),
                sms: self.sms.upgraded(),
                voice: self.voice.upgraded(),
                email: self.email.upgraded(),
            }
        }
    }
}

/// Rewrites every record of `definition` that no longer reads as `T` because `T` gained
/// trailing fields that encode as one zero byte each (`Option::None`, an empty
/// `String`, `false`): up to `added` zero bytes are appended until it reads. A record
/// that already reads in the new layout is left as it is. Answers how many changed.
fn grow<T: serde::de::DeserializeOwned>(
    txn: &WriteTransaction,
    definition: TableDefinition<(&str, &str), &[u8]>,
    added: usize,
) -> Result<usize> {
    let mut table = txn.open_table(definition)?;
    let mut rewritten = Vec::new();
    for row in table.iter()? {
        let (key, value) = row?;
        if decode::<T>(value.value()).is_ok() {
            continue;
        }
        let mut grown = value.value().to_vec();
        let mut read = Err(Error::Internal("no field added".into()));
        for _ in 0..added {
            grown.push(0);
            read = decode::<T>(&grown).map(drop);
            if read.is_ok() {
                break;
            }
        }
        read?;
        let (org, id) = key.value();
        rewritten.push((org.to_string(), id.to_string(), grown));
    }
    for (org, id, bytes) in &rewritten {
        table.insert((org.as_str(), id.as_str()), bytes.as_slice())?;
    }
    Ok(rewritten.len())
}

/// A record whose layout gained trailing fields that encode as one zero byte each
/// (`Option::None`, an empty `String`): read as it is, or as its older layout with up to
/// [`GROWN_BYTES`] such bytes added. The steps before 8 read leads with it, since schema
/// 8's `LeadRecord` ends with `next_meeting_at`; the steps before 14 read handling rows,
/// which gained `calendar_change` and `call_back` then.
fn decode_grown<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let mut grown = bytes.to_vec();
    let mut read = decode(&grown);
    for _ in 0..GROWN_BYTES {
        if read.is_ok() {
            break;
        }
        grown.push(0);
        read = decode(&grown);
    }
    read
}

/// The most trailing fields a record read by [`decode_grown`] gained since its step.
const GROWN_BYTES: usize = 2;

/// 7 → 8: a lead records its next meeting (`next_meeting_at`, none) and a profile the
/// calendar it books on (`calendar`, none); both fields end their records. A record that
/// already reads in the new layout (written by an earlier step) is left as it is.
fn leads_and_profiles_gain_meeting_fields(txn: &WriteTransaction) -> Result<()> {
    let leads = grow::<LeadRecord>(txn, LEADS, 1)?;
    // Read as today's layout: a profile has gained `screening_reply` and `voicemail`
    // (schema 13) and `transfer` (schema 15) since.
    let profiles = grow::<super::rows::ProfileRecord>(txn, PROFILES, 4)?;
    tracing::info!(
        leads,
        profiles,
        "leads and profiles gain their meeting fields"
    );
    Ok(())
}

/// 8 → 9: a lead's handling row gains who wrote its last message and when the lead
/// last wrote (read off its messages, newest first, until both are known); then every
/// live lead is re-indexed: the inbox's tabs over conversations only
/// (`Facet::Conversing`) and the "Replied" tab's `leads_by_reply` rows.
fn handling_knows_who_wrote_and_inbox_tabs_are_indexed(txn: &WriteTransaction) -> Result<()> {
    let mut upgraded = Vec::new();
    {
        let handling = txn.open_table(LEAD_HANDLING)?;
        let messages = txn.open_table(MESSAGES_BY_CREATED)?;
        let keys = txn.open_table(EVENT_KEYS)?;
        let events = txn.open_table(EVENTS)?;
        for row in handling.iter()? {
            let (key, value) = row?;
            let (org, lead) = key.value();
            let old: schema8::HandlingRecord = decode(value.value())?;
            let mut author = None;
            let mut last_inbound_at = None;
            let wanted = old.last_message.as_ref().map(|m| m.event_id.clone());
            let range = messages.range(
                (org, lead, i64::MIN, "", "")..=(org, lead, i64::MAX, "\u{10FFFF}", "\u{10FFFF}"),
            )?;
            for message in range.rev() {
                let (key, _) = message?;
                let (_, _, created_at, kind, id) = key.value();
                let Some(updated_at) = keys.get((org, lead, kind, id))?.map(|v| v.value()) else {
                    continue;
                };
                let Some(event) = events.get((org, lead, updated_at, kind, id))? else {
                    continue;
                };
                let event: EventRecord = decode(event.value())?;
                let data = &event.data.0;
                let from_lead =
                    data.get("owner").and_then(serde_json::Value::as_str) == Some("lead");
                if wanted.as_deref() == Some(id) {
                    author = Some(Author::of(from_lead, data));
                }
                if from_lead && last_inbound_at.is_none() {
                    last_inbound_at = Some(created_at);
                }
                if last_inbound_at.is_some() && (author.is_some() || wanted.is_none()) {
                    break;
                }
            }
            let new = old.upgraded(author, last_inbound_at);
            upgraded.push((org.to_string(), lead.to_string(), encode(&new)?));
        }
    }
    {
        let mut handling = txn.open_table(LEAD_HANDLING)?;
        for (org, lead, bytes) in &upgraded {
            handling.insert((org.as_str(), lead.as_str()), bytes.as_slice())?;
        }
    }
    tracing::info!(
        leads = upgraded.len(),
        "lead handling knows who wrote last and when the lead last wrote"
    );
    let leads = txn.open_table(LEADS)?;
    let engagements = txn.open_table(ENGAGEMENTS)?;
    let handling = txn.open_table(LEAD_HANDLING)?;
    let mut tables = index_tables(txn)?;
    let mut indexed = 0u64;
    for row in leads.iter()? {
        let (key, value) = row?;
        let (org, id) = key.value();
        let lead: LeadRecord = decode(value.value())?;
        if lead.deleted_at.is_some() {
            continue;
        }
        let Some((created_at, last_activity_at)) = tables.order.get((org, id))?.map(|v| v.value())
        else {
            continue;
        };
        let facets = match tables.lists.get((org, id))? {
            Some(list) => decode(list.value())?,
            None => Vec::new(),
        };
        let old = LeadOrder {
            created_at,
            last_activity_at,
            facets,
            last_inbound_at: None,
        };
        let engagement: Option<EngagementRecord> = engagements
            .get((org, id))?
            .map(|v| decode(v.value()))
            .transpose()?;
        // Read as today's layout: a handling row has gained `calendar_change` since
        // (schema 14).
        let handling: HandlingRecord = handling
            .get((org, id))?
            .map(|v| decode_grown(v.value()))
            .transpose()?
            .unwrap_or_default();
        let new = LeadOrder {
            created_at: lead.created_at,
            last_activity_at: lead.last_activity_at,
            facets: lead_index::facets(&lead, engagement.as_ref(), &handling, true),
            last_inbound_at: handling.last_inbound_at,
        };
        tables.move_rows(org, id, Some(&old), Some(&new))?;
        indexed += 1;
    }
    tracing::info!(
        leads = indexed,
        "schema 9: the inbox's tabs and replies indexed"
    );
    Ok(())
}

/// The handling rows as schemas 7 and 8 wrote them.
mod schema8 {
    use serde::{Deserialize, Serialize};

    use crate::channel::Channel;
    use crate::store::rows::{self, Author, FailedSend};
    use crate::time::Micros;

    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub(super) struct HandlingRecord {
        pub(super) owner: String,
        pub(super) handed_off_at: Option<Micros>,
        pub(super) handoff_answered: bool,
        pub(super) conversation: bool,
        pub(super) awaiting_reply: bool,
        pub(super) failed_send: Option<FailedSend>,
        pub(super) last_message: Option<LastMessage>,
    }

    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub(super) struct LastMessage {
        pub(super) event_id: String,
        pub(super) channel: Channel,
        pub(super) preview: String,
        pub(super) created_at: Micros,
        pub(super) from_lead: bool,
    }

    impl HandlingRecord {
        /// The record in this release's layout; a last message whose event was not
        /// found is the lead's or the API's, as `from_lead` says.
        pub(super) fn upgraded(
            self,
            author: Option<Author>,
            last_inbound_at: Option<Micros>,
        ) -> rows::HandlingRecord {
            rows::HandlingRecord {
                owner: self.owner,
                handed_off_at: self.handed_off_at,
                handoff_answered: self.handoff_answered,
                conversation: self.conversation,
                awaiting_reply: self.awaiting_reply,
                failed_send: self.failed_send,
                last_message: self.last_message.map(|m| rows::LastMessage {
                    author: author.unwrap_or(if m.from_lead {
                        Author::Lead
                    } else {
                        Author::Api
                    }),
                    event_id: m.event_id,
                    channel: m.channel.into(),
                    preview: m.preview,
                    created_at: m.created_at,
                    from_lead: m.from_lead,
                }),
                meeting_message: false,
                last_inbound_at,
                calendar_change: None,
                call_back: None,
            }
        }
    }
}

/// 10 → 11: a calendar says whether its CalDAV server sends the invitations
/// (`server_schedules`, false) and a meeting keeps its event's `ETag` and the
/// collection it is of (`etag`, `etag_collection`, empty); the fields end their
/// records, each one zero byte. A record that already reads in the new layout is left
/// as it is.
fn calendars_and_meetings_gain_caldav_fields(txn: &WriteTransaction) -> Result<()> {
    let calendars = grow::<super::calendars::CalendarRecord>(txn, super::tables::CALENDARS, 2)?;
    let meetings = grow::<super::calendars::MeetingRecord>(txn, super::tables::MEETINGS, 2)?;
    tracing::info!(
        calendars,
        meetings,
        "calendars and meetings gain their CalDAV fields"
    );
    Ok(())
}

/// 12 → 13: a profile says what a call screener hears (`screening_reply`, empty: the
/// default) and what a call answered by a machine does (`voicemail`, none); the fields
/// end the record, one zero byte each.
fn profiles_gain_a_screening_reply_and_a_voicemail(txn: &WriteTransaction) -> Result<()> {
    // Read as today's layout: a profile has gained `transfer` since (schema 15), and
    // `tests` and `require_tests_pass` (schema 16).
    let profiles = grow::<super::rows::ProfileRecord>(txn, PROFILES, 5)?;
    tracing::info!(
        profiles,
        "schema 13: profiles gain a screening reply and a voicemail"
    );
    Ok(())
}

/// 13 → 14: a lead's handling row notes a meeting the owner changed in their calendar
/// (`calendar_change`, none) and a call back a person owes (`call_back`, none): one
/// zero byte each, ending the record.
fn handling_notes_a_meeting_changed_in_the_calendar(txn: &WriteTransaction) -> Result<()> {
    let handling = grow::<super::rows::HandlingRecord>(txn, LEAD_HANDLING, 2)?;
    tracing::info!(
        handling,
        "schema 14: handling notes a meeting changed in the owner's calendar"
    );
    Ok(())
}

/// 14 → 15: a profile says how a transfer reaches a person (`transfer`, none: cold,
/// as before); the field ends the record, one zero byte.
fn profiles_gain_transfer_settings(txn: &WriteTransaction) -> Result<()> {
    // Read as today's layout: a profile has gained `tests` and `require_tests_pass`
    // since (schema 16).
    let profiles = grow::<super::rows::ProfileRecord>(txn, PROFILES, 3)?;
    tracing::info!(profiles, "schema 15: profiles gain transfer settings");
    Ok(())
}

/// 15 → 16: a profile carries test conversations (`tests`, none) and whether a save
/// must pass them (`requireTestsPass`, false).
fn profiles_gain_tests(txn: &WriteTransaction) -> Result<()> {
    let profiles = grow::<super::rows::ProfileRecord>(txn, PROFILES, 2)?;
    tracing::info!(profiles, "schema 16: profiles gain test conversations");
    Ok(())
}

/// Brings a file at version `from` up to [`SCHEMA_VERSION`].
pub fn migrate(txn: &WriteTransaction, from: u32) -> Result<()> {
    if from > SCHEMA_VERSION {
        return Err(Error::Internal(format!(
            "the data was written by a newer release of engaged (schema {from}; this release reads up to {SCHEMA_VERSION}): upgrade engaged, or restore a backup made by this release"
        )));
    }
    if from == 0 {
        return Err(Error::Internal(
            "the data has an invalid schema version 0".into(),
        ));
    }
    for version in from..SCHEMA_VERSION {
        tracing::info!(from = version, to = version + 1, "migrating the database");
        let step = STEPS
            .get(version as usize - 1)
            .ok_or_else(|| Error::Internal(format!("no migration from schema {version}")))?;
        step(txn)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Channel;
    use crate::store::codec::encode;
    use redb::ReadableTableMetadata;

    #[test]
    fn schema_1_lead_index_rows_gain_the_leads_json_and_strays_go() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v1.redb")).unwrap();
        let v1_index: TableDefinition<(&str, i64, &str), ()> =
            TableDefinition::new("leads_by_updated");
        let leads: Vec<LeadRecord> = (0..3)
            .map(|i| LeadRecord {
                id: format!("lead-{i}"),
                first_name: format!("Name {i}"),
                created_at: i,
                updated_at: 10 + i,
                ..LeadRecord::default()
            })
            .collect();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(LEADS).unwrap();
            let mut index = txn.open_table(v1_index).unwrap();
            for lead in &leads {
                let id = lead.id.as_str();
                let bytes = encode(lead).unwrap();
                table.insert(("org", id), bytes.as_slice()).unwrap();
                index.insert(("org", lead.updated_at, id), ()).unwrap();
            }
            index.insert(("org", 99, "ghost"), ()).unwrap();
        }
        leads_by_updated_holds_each_leads_json(&txn).unwrap();
        let index = txn.open_table(LEADS_BY_UPDATED).unwrap();
        assert_eq!(index.len().unwrap(), 3);
        for lead in &leads {
            let value = index
                .get(("org", lead.updated_at, lead.id.as_str()))
                .unwrap()
                .unwrap();
            let indexed = lead_view::parse(value.value()).unwrap();
            assert_eq!(indexed.created_at, lead.created_at);
            assert_eq!(indexed.json, lead_view::render(lead).unwrap().as_slice());
        }
    }

    #[test]
    fn schema_2_contact_indexes_hold_live_leads_and_keep_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v2.redb")).unwrap();
        let lead = |id: &str, deleted: bool| LeadRecord {
            id: id.into(),
            phone: "+15551234567".into(),
            email: "Ada@Example.com".into(),
            deleted_at: deleted.then_some(5),
            ..LeadRecord::default()
        };
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(LEADS).unwrap();
            let mut by_phone = txn.open_table(LEADS_BY_PHONE).unwrap();
            for l in [lead("a", false), lead("b", false), lead("gone", true)] {
                let bytes = encode(&l).unwrap();
                table
                    .insert(("org", l.id.as_str()), bytes.as_slice())
                    .unwrap();
                by_phone
                    .insert(("org", "+15551234567", l.id.as_str()), ())
                    .unwrap();
            }
        }
        contact_indexes_hold_live_leads(&txn).unwrap();
        let keys = |table: TableDefinition<(&str, &str, &str), ()>| -> Vec<(String, String)> {
            let t = txn.open_table(table).unwrap();
            t.iter()
                .unwrap()
                .map(|row| {
                    let (k, _) = row.unwrap();
                    let (_, value, id) = k.value();
                    (value.to_string(), id.to_string())
                })
                .collect()
        };
        let pair = |v: &str, id: &str| (v.to_string(), id.to_string());
        assert_eq!(
            keys(LEADS_BY_PHONE),
            vec![pair("+15551234567", "a"), pair("+15551234567", "b")]
        );
        assert_eq!(
            keys(LEADS_BY_EMAIL),
            vec![pair("ada@example.com", "a"), pair("ada@example.com", "b")]
        );
    }

    #[test]
    fn schema_3_engine_settings_gain_unset_max_tokens_and_rates_then_no_country() {
        use super::schema3 as old;
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v3.redb")).unwrap();
        let twilio = || {
            old::ProviderSettings::Twilio(old::TwilioSettings {
                account_sid: format!("AC{}", "0".repeat(32)),
                auth_token: "token".into(),
                from: "+15550100000".into(),
                messaging_service_sid: String::new(),
                base_url: "https://api.twilio.com".into(),
            })
        };
        let v3 = old::EngineSettings {
            time_zone: "America/New_York".into(),
            business_name: "Acme Solar".into(),
            help_text: "Help at acme.example".into(),
            assistant: Some(old::AssistantSettings {
                base_url: "http://127.0.0.1:11434/v1".into(),
                model: "llama3.1:8b".into(),
                api_key: Some("key".into()),
                timeout_ms: 12_000,
            }),
            sms: twilio(),
            voice: twilio(),
            email: old::ProviderSettings::Sandbox { latency_ms: 7 },
        };
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(ENGINE_SETTINGS).unwrap();
            let bytes = encode(&v3).unwrap();
            table.insert("org", bytes.as_slice()).unwrap();
        }
        engine_settings_gain_max_tokens_and_rates(&txn).unwrap();
        // Schema 4's layout is 5's; 5 → 6 then adds the default country, 6 → 7 the
        // consent policy and the call opt-out.
        engine_settings_gain_default_country(&txn).unwrap();
        existing_orgs_require_no_consent(&txn).unwrap();
        let table = txn.open_table(ENGINE_SETTINGS).unwrap();
        let now: crate::store::rows::EngineSettings =
            decode(table.get("org").unwrap().unwrap().value()).unwrap();
        assert_eq!(now.default_country, "");
        assert!(now.consent_required.0.is_empty());
        assert_eq!(
            now.voice_opt_out,
            crate::store::rows::VoiceOptOut::default()
        );
        assert_eq!(now.voice_opt_out.digit.as_char(), '9');
        assert_eq!(now.time_zone, "America/New_York");
        assert_eq!(now.business_name, "Acme Solar");
        let assistant = now.assistant.unwrap();
        assert_eq!(assistant.timeout_ms, 12_000);
        assert_eq!(assistant.api_key.as_deref(), Some("key"));
        assert_eq!(assistant.max_tokens, None);
        match now.sms {
            crate::store::rows::ProviderSettings::Twilio(t) => {
                assert_eq!(t.from, "+15550100000");
                assert_eq!(t.rate_per_second, None);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            now.email,
            crate::store::rows::ProviderSettings::Sandbox {
                latency_ms: 7,
                rate_per_second: None
            }
        );
    }

    #[test]
    fn schema_10_calendars_and_meetings_gain_their_caldav_fields() {
        use crate::store::calendars::{CalendarRecord, MeetingRecord};
        use crate::store::tables::{CALENDARS, MEETINGS};
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v10.redb")).unwrap();
        let calendar = CalendarRecord {
            name: "sales".into(),
            time_zone: "UTC".into(),
            owner_name: "Ana".into(),
            ..CalendarRecord::default()
        };
        let meeting = MeetingRecord {
            id: "m1".into(),
            lead_id: "l1".into(),
            calendar: "sales".into(),
            start: 10,
            end: 20,
            time_zone: "UTC".into(),
            status: crate::store::calendars::MeetingStatus::Booked,
            booked_by: crate::store::calendars::BookedBy::Api,
            location: String::new(),
            calendar_sync: crate::store::calendars::CalendarSync::Synced,
            sync_error: String::new(),
            sequence: 2,
            created_at: 1,
            updated_at: 2,
            etag: String::new(),
            etag_collection: String::new(),
        };
        // Schema 10's layouts: the same records without their last zero bytes (one
        // field on a calendar, two on a meeting).
        let old = |bytes: Vec<u8>, fields: usize| bytes[..bytes.len() - fields].to_vec();
        let txn = db.begin_write().unwrap();
        {
            txn.open_table(CALENDARS)
                .unwrap()
                .insert(
                    ("o", "sales"),
                    old(encode(&calendar).unwrap(), 1).as_slice(),
                )
                .unwrap();
            txn.open_table(MEETINGS)
                .unwrap()
                .insert(("o", "m1"), old(encode(&meeting).unwrap(), 2).as_slice())
                .unwrap();
        }
        assert!(decode::<MeetingRecord>(&old(encode(&meeting).unwrap(), 2)).is_err());
        calendars_and_meetings_gain_caldav_fields(&txn).unwrap();
        // Run twice: records already in the new layout are left as they are.
        calendars_and_meetings_gain_caldav_fields(&txn).unwrap();
        let calendars = txn.open_table(CALENDARS).unwrap();
        let read: CalendarRecord =
            decode(calendars.get(("o", "sales")).unwrap().unwrap().value()).unwrap();
        assert_eq!(read, calendar);
        assert!(!read.server_schedules);
        let meetings = txn.open_table(MEETINGS).unwrap();
        let read: MeetingRecord =
            decode(meetings.get(("o", "m1")).unwrap().unwrap().value()).unwrap();
        assert_eq!(read, meeting);
    }

    #[test]
    fn schema_13_handling_rows_gain_no_calendar_change() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v13.redb")).unwrap();
        let handling = HandlingRecord {
            owner: "u1".into(),
            awaiting_reply: true,
            last_inbound_at: Some(7),
            ..HandlingRecord::default()
        };
        let bytes = encode(&handling).unwrap();
        // Schema 13's layout: the same record without its last two zero bytes.
        let old = &bytes[..bytes.len() - 2];
        assert!(decode::<HandlingRecord>(old).is_err());
        let txn = db.begin_write().unwrap();
        txn.open_table(LEAD_HANDLING)
            .unwrap()
            .insert(("o", "l1"), old)
            .unwrap();
        handling_notes_a_meeting_changed_in_the_calendar(&txn).unwrap();
        handling_notes_a_meeting_changed_in_the_calendar(&txn).unwrap();
        let table = txn.open_table(LEAD_HANDLING).unwrap();
        let read: HandlingRecord =
            decode(table.get(("o", "l1")).unwrap().unwrap().value()).unwrap();
        assert_eq!(read, handling);
        assert_eq!((read.calendar_change, read.call_back), (None, None));
    }

    #[test]
    fn schema_14_profiles_gain_no_transfer_settings_and_a_schema_12_one_reads_too() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v14.redb")).unwrap();
        let profile = crate::store::rows::ProfileRecord {
            name: "solar".into(),
            instructions: "Be brief".into(),
            transfer_number: "+15550100001".into(),
            created_at: 1,
            updated_at: 2,
            ..crate::store::rows::ProfileRecord::default()
        };
        // Schema 14's layout ends before `transfer` (one zero byte, and schema 16's
        // `tests` and `requireTestsPass` after it); schema 12's before
        // `screening_reply` and `voicemail` too.
        let old = |fields: usize| {
            let bytes = encode(&profile).unwrap();
            bytes[..bytes.len() - fields - 2].to_vec()
        };
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(PROFILES).unwrap();
            table.insert(("o", "v14"), old(1).as_slice()).unwrap();
            table.insert(("o", "v12"), old(3).as_slice()).unwrap();
        }
        assert!(decode::<crate::store::rows::ProfileRecord>(&old(1)).is_err());
        profiles_gain_a_screening_reply_and_a_voicemail(&txn).unwrap();
        profiles_gain_transfer_settings(&txn).unwrap();
        profiles_gain_transfer_settings(&txn).unwrap();
        profiles_gain_tests(&txn).unwrap();
        let table = txn.open_table(PROFILES).unwrap();
        for key in ["v14", "v12"] {
            let read: crate::store::rows::ProfileRecord =
                decode(table.get(("o", key)).unwrap().unwrap().value()).unwrap();
            assert_eq!(read, profile, "{key}");
            assert_eq!(read.transfer, None);
        }
    }

    #[test]
    fn schema_15_profiles_gain_no_tests_and_keep_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v15.redb")).unwrap();
        let profile = crate::store::rows::ProfileRecord {
            name: "solar".into(),
            instructions: "Be brief".into(),
            calendar: "sales".into(),
            created_at: 1,
            updated_at: 2,
            ..crate::store::rows::ProfileRecord::default()
        };
        // Schema 15's layout ends before `tests` and `require_tests_pass` (one zero
        // byte each when empty).
        let bytes = encode(&profile).unwrap();
        let v15 = bytes[..bytes.len() - 2].to_vec();
        assert!(decode::<crate::store::rows::ProfileRecord>(&v15).is_err());
        let txn = db.begin_write().unwrap();
        txn.open_table(PROFILES)
            .unwrap()
            .insert(("o", "v15"), v15.as_slice())
            .unwrap();
        profiles_gain_tests(&txn).unwrap();
        profiles_gain_tests(&txn).unwrap();
        let table = txn.open_table(PROFILES).unwrap();
        let read: crate::store::rows::ProfileRecord =
            decode(table.get(("o", "v15")).unwrap().unwrap().value()).unwrap();
        assert_eq!(read, profile);
        assert!(read.tests.is_empty() && !read.require_tests_pass);
    }

    #[test]
    fn schema_7_handling_learns_who_wrote_last_and_when_the_lead_wrote_and_is_reindexed() {
        use crate::store::facet::Facet;
        use crate::store::rows::{EventRecord, JsonBlob, LastMessage};
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v7.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let lead = LeadRecord {
                id: "l1".into(),
                created_at: 1,
                last_activity_at: 20,
                is_ai_on: true,
                ..LeadRecord::default()
            };
            txn.open_table(LEADS)
                .unwrap()
                .insert(("o", "l1"), encode(&lead).unwrap().as_slice())
                .unwrap();
            txn.open_table(LEAD_ORDER)
                .unwrap()
                .insert(("o", "l1"), (1, 20))
                .unwrap();
            let mut messages = txn.open_table(MESSAGES_BY_CREATED).unwrap();
            let mut keys = txn.open_table(EVENT_KEYS).unwrap();
            let mut events = txn.open_table(EVENTS).unwrap();
            for (id, at, data) in [
                (
                    "m1",
                    10,
                    serde_json::json!({"owner": "lead", "content": {"text": "Is this a scam?"}}),
                ),
                (
                    "m2",
                    20,
                    serde_json::json!({"owner": "user", "origin": "assistant", "content": {"text": "No."}}),
                ),
            ] {
                messages.insert(("o", "l1", at, "MESSAGE", id), ()).unwrap();
                keys.insert(("o", "l1", "MESSAGE", id), at + 1).unwrap();
                let event = EventRecord {
                    created_at: at,
                    data: JsonBlob(data),
                };
                events
                    .insert(
                        ("o", "l1", at + 1, "MESSAGE", id),
                        encode(&event).unwrap().as_slice(),
                    )
                    .unwrap();
            }
            let v7 = schema8::HandlingRecord {
                owner: String::new(),
                handed_off_at: None,
                handoff_answered: false,
                conversation: true,
                awaiting_reply: false,
                failed_send: None,
                last_message: Some(schema8::LastMessage {
                    event_id: "m2".into(),
                    channel: Channel::Sms,
                    preview: "No.".into(),
                    created_at: 20,
                    from_lead: false,
                }),
            };
            txn.open_table(LEAD_HANDLING)
                .unwrap()
                .insert(("o", "l1"), encode(&v7).unwrap().as_slice())
                .unwrap();
        }
        handling_knows_who_wrote_and_inbox_tabs_are_indexed(&txn).unwrap();
        let handling: HandlingRecord = decode(
            txn.open_table(LEAD_HANDLING)
                .unwrap()
                .get(("o", "l1"))
                .unwrap()
                .unwrap()
                .value(),
        )
        .unwrap();
        assert_eq!(handling.last_inbound_at, Some(10));
        let last: LastMessage = handling.last_message.unwrap();
        assert_eq!(last.author, Author::Assistant);
        let replied = txn.open_table(LEADS_BY_REPLY).unwrap();
        assert!(replied.get(("o", 10, "l1")).unwrap().is_some());
        let counts = txn.open_table(LEAD_FACET_COUNTS).unwrap();
        let count = |f: Facet| {
            counts
                .get(("o", f.key().as_str()))
                .unwrap()
                .map(|c| c.value())
        };
        assert_eq!(count(Facet::Conversation), Some(1));
        assert_eq!(count(Facet::Conversing(Box::new(Facet::Assisted))), Some(1));
    }

    #[test]
    fn schema_6_orgs_keep_no_consent_requirement_while_new_ones_get_voice_marketing() {
        use crate::store::rows::{ConsentRequired, EngineSettings, OrgRecord, OrgSettings};
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v6.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut orgs = txn.open_table(ORGS).unwrap();
            for id in ["with-row", "without-row"] {
                let org = OrgRecord {
                    id: id.into(),
                    name: id.into(),
                    created_at: 1,
                    settings: OrgSettings::default(),
                };
                orgs.insert(id, encode(&org).unwrap().as_slice()).unwrap();
            }
            let mut engine = txn.open_table(ENGINE_SETTINGS).unwrap();
            let v6 = schema6::EngineSettings {
                time_zone: "America/Chicago".into(),
                holidays: vec!["2026-12-25".into()],
                ..schema6::EngineSettings::default()
            };
            engine
                .insert("with-row", encode(&v6).unwrap().as_slice())
                .unwrap();
            let profile = schema6::ProfileRecord {
                name: "solar".into(),
                instructions: "Be brief".into(),
                cadence: vec![schema6::StepRecord {
                    after: "0s".into(),
                    after_ms: 0,
                    channel: Channel::Voice,
                    text: "Hi".into(),
                    subject: String::new(),
                }],
                reply_delay_ms: 1000,
                reply_delay: "1s".into(),
                dispositions: Vec::new(),
                transfer_number: String::new(),
                fallback_transfer_number: String::new(),
                voice_greeting: String::new(),
                created_at: 1,
                updated_at: 2,
            };
            let mut profiles = txn.open_table(PROFILES).unwrap();
            profiles
                .insert(("with-row", "solar"), encode(&profile).unwrap().as_slice())
                .unwrap();
        }
        existing_orgs_require_no_consent(&txn).unwrap();
        let table = txn.open_table(ENGINE_SETTINGS).unwrap();
        let read = |id: &str| -> EngineSettings {
            decode(table.get(id).unwrap().unwrap().value()).unwrap()
        };
        let kept = read("with-row");
        assert_eq!(kept.time_zone, "America/Chicago");
        assert_eq!(kept.holidays, vec!["2026-12-25".to_string()]);
        assert_eq!(kept.consent_required, ConsentRequired(Vec::new()));
        assert_eq!(
            read("without-row").consent_required,
            ConsentRequired(Vec::new())
        );
        assert_eq!(
            read("without-row").revocation_scope,
            crate::store::rows::RevocationScope::All
        );
        let profiles = txn.open_table(PROFILES).unwrap();
        let profile: crate::store::rows::ProfileRecord = decode(
            profiles
                .get(("with-row", "solar"))
                .unwrap()
                .unwrap()
                .value(),
        )
        .unwrap();
        assert_eq!(
            profile.cadence[0].purpose,
            crate::store::rows::Purpose::Marketing
        );
        assert_eq!(profile.cadence[0].text, "Hi");
        assert_eq!(profile.updated_at, 2);
        // An organization created later has no row: the default requires voice marketing.
        assert!(table.get("new").unwrap().is_none());
        assert!(EngineSettings::default()
            .consent_required
            .requires(Channel::Voice, crate::store::rows::Purpose::Marketing));
    }
}
