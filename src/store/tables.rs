//! Every redb table of the service, its key and its value, in one place.
//!
//! Records are postcard-encoded behind a one-byte format version (see `codec`). Index
//! tables map a sort key to `()`: the record itself lives once, in its primary table.
//! The one exception is `leads_by_updated`, which holds each lead's rendered JSON so
//! the sync query it serves reads nothing else.
//! Organization ids come first in every key, so one organization's rows are a
//! contiguous range and another organization's rows are never in reach of a scan.
//! ARCHITECTURE.md carries the same list for readers who are not in the code.

use redb::TableDefinition;

/// Applies the macro `$apply` to every table: the one list that table creation, backup
/// and the consistency check share. A new table is added here and defined below.
macro_rules! all_tables {
    ($apply:ident) => {
        $apply!(META);
        $apply!(ORGS);
        $apply!(ORG_NAMES);
        $apply!(API_KEYS);
        $apply!(API_KEY_IDS);
        $apply!(LEADS);
        $apply!(LEADS_BY_UPDATED);
        $apply!(LEADS_BY_CREATED);
        $apply!(LEADS_BY_PHONE);
        $apply!(LEADS_BY_EMAIL);
        $apply!(EVENTS);
        $apply!(EVENT_KEYS);
        $apply!(MESSAGES_BY_CREATED);
        $apply!(CALLS);
        $apply!(DNC);
        $apply!(WEBHOOK_ENDPOINTS);
        $apply!(DELIVERIES);
        $apply!(DELIVERIES_BY_ENDPOINT);
        $apply!(OUTBOX);
        $apply!(RECORDINGS);
        $apply!(RECORDING_CHUNKS);
        $apply!(RECORDING_UPLOADS);
        $apply!(ENGINE_SETTINGS);
        $apply!(PROFILES);
        $apply!(PROFILE_LABELS);
        $apply!(ENGAGEMENTS);
        $apply!(AGENDA);
        $apply!(QUIET_DEFERRED);
        $apply!(SENDING);
        $apply!(PROVIDER_MESSAGES);
        $apply!(PROVIDER_INBOUND);
        $apply!(VOICE_SESSIONS);
        $apply!(PROVIDER_CALLS);
        $apply!(WARM_TRANSFERS);
        $apply!(MAILGUN_TOKENS);
        $apply!(LEAD_HANDLING);
        $apply!(LEAD_FACETS);
        $apply!(LEAD_FACET_COUNTS);
        $apply!(LEAD_ORDER);
        $apply!(LEAD_FACET_LIST);
        $apply!(LEADS_BY_ACTIVITY);
        $apply!(LEAD_REPLIED);
        $apply!(LEADS_BY_REPLY);
        $apply!(LEAD_SEEN);
        $apply!(USERS);
        $apply!(USERS_BY_EMAIL);
        $apply!(SESSIONS);
        $apply!(SESSIONS_BY_USER);
        $apply!(ATTENTION_NOTICES);
        $apply!(LEAD_NOTIFIED);
        $apply!(NOTIFICATIONS);
        $apply!(CAMPAIGN_COUNTS);
        $apply!(CAMPAIGN_MEETINGS);
        $apply!(PAUSED_CAMPAIGNS);
        $apply!(CAMPAIGN_REPLIERS);
        $apply!(CONSENT_LEDGER);
        $apply!(CONSENT_STATE);
        $apply!(CONSENT_HOLDS);
        $apply!(CALENDARS);
        $apply!(MEETINGS);
        $apply!(MEETINGS_BY_START);
        $apply!(MEETINGS_BY_UPDATED);
        $apply!(CALENDAR_SYNC);
        $apply!(MEETINGS_BY_LEAD);
        $apply!(ENROLMENT_JOBS);
        $apply!(ENROLMENT_BATCHES);
        $apply!(WEBCHAT_SETTINGS);
        $apply!(WEBCHAT_SESSIONS);
        $apply!(WEBCHAT_BY_CREATED);
        $apply!(REPLAYS);
        $apply!(BROWSER_CALLS);
    };
}
pub(crate) use all_tables;

/// Store-wide values: `schema_version` (u32 LE), `clock` (i64 LE high-water mark of
/// assigned timestamps), `cursor_secret` (32 bytes), `recording_secret` (32 bytes, signs
/// recording download links), `setup_token` (`SetupTokenRecord`: the first run's
/// one-time link, while no user exists).
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The `meta` key of the first run's setup token.
pub const SETUP_TOKEN: &str = "setup_token";

/// org id → `OrgRecord`.
pub const ORGS: TableDefinition<&str, &[u8]> = TableDefinition::new("orgs");
/// org name → org id (names are unique).
pub const ORG_NAMES: TableDefinition<&str, &str> = TableDefinition::new("org_names");

/// SHA-256 of the API key → `KeyRecord`.
pub const API_KEYS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("api_keys");
/// key id → SHA-256 of the key, so `key revoke ID` finds the record.
pub const API_KEY_IDS: TableDefinition<&str, &[u8]> = TableDefinition::new("api_key_ids");

/// (org, lead id) → `LeadRecord`.
pub const LEADS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("leads");
/// (org, updatedAt, lead id) → the lead's createdAt and wire JSON (`lead_view`): the
/// index covers `GET /v1/leads?updatedSince`, which then reads no record.
pub const LEADS_BY_UPDATED: TableDefinition<(&str, i64, &str), &[u8]> =
    TableDefinition::new("leads_by_updated");
/// (org, createdAt, lead id) → (): `GET /v1/leads?createdSince`.
pub const LEADS_BY_CREATED: TableDefinition<(&str, i64, &str), ()> =
    TableDefinition::new("leads_by_created");
/// (org, E.164 phone, lead id) → (), for live leads only: a new lead's phone is
/// checked for a duplicate, and an inbound SMS or call finds its lead. Keyed by the lead
/// too, so leads that shared a phone before duplicates were refused keep their rows.
pub const LEADS_BY_PHONE: TableDefinition<(&str, &str, &str), ()> =
    TableDefinition::new("leads_by_phone");
/// (org, email in lower case (`rows::email_key`), lead id) → (), for live leads
/// only: as `leads_by_phone`, for email.
pub const LEADS_BY_EMAIL: TableDefinition<(&str, &str, &str), ()> =
    TableDefinition::new("leads_by_email");

/// (org, lead id, updatedAt, type, event id) → `EventRecord`, in sync order.
pub const EVENTS: TableDefinition<(&str, &str, i64, &str, &str), &[u8]> =
    TableDefinition::new("events");
/// (org, lead id, type, event id) → updatedAt: an upsert finds and moves its row.
pub const EVENT_KEYS: TableDefinition<(&str, &str, &str, &str), i64> =
    TableDefinition::new("event_keys");
/// (org, lead id, createdAt, type, event id) → (): the message projection of `MESSAGE`
/// and `EMAIL` events, in conversation order. The message itself is the event.
pub const MESSAGES_BY_CREATED: TableDefinition<(&str, &str, i64, &str, &str), ()> =
    TableDefinition::new("messages_by_created");

/// (org, call id) → `CallRecord`.
pub const CALLS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("calls");

/// (org, E.164 phone) → time added: the Do Not Contact list.
pub const DNC: TableDefinition<(&str, &str), i64> = TableDefinition::new("dnc");

/// (org, endpoint id) → `EndpointRecord`: registered webhook receivers.
pub const WEBHOOK_ENDPOINTS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("webhook_endpoints");
/// delivery id → `DeliveryRecord`: one event for one endpoint, with its attempts.
pub const DELIVERIES: TableDefinition<&str, &[u8]> = TableDefinition::new("deliveries");
/// (endpoint id, createdAt, delivery id) → (): an endpoint's deliveries, oldest first.
pub const DELIVERIES_BY_ENDPOINT: TableDefinition<(&str, i64, &str), ()> =
    TableDefinition::new("deliveries_by_endpoint");
/// (endpoint id, due time, delivery id) → (): the outbox, what is still to be sent,
/// per endpoint in due order. Written in the same transaction as the change that
/// causes the webhook.
pub const OUTBOX: TableDefinition<(&str, i64, &str), ()> = TableDefinition::new("outbox");

/// (org, call id) → `RecordingRecord` (upload id, content type, size, SHA-256, uploaded
/// at): a call's current recording. Its audio lives in `recording_chunks`.
pub const RECORDINGS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("recordings");
/// (upload id, chunk index) → the audio bytes, 255 KiB per chunk but the last (so one
/// chunk fills one 256 KiB page): every upload's audio, in order. An upload id is fresh
/// for every `PUT`, so a re-upload writes beside the old audio and the last job swaps
/// them (see `store::recordings`).
pub const RECORDING_CHUNKS: TableDefinition<(&str, u64), &[u8]> =
    TableDefinition::new("recording_chunks");
/// upload id → `UploadRecord` (org, call, started at): uploads still streaming in. A row
/// leaves when its upload finishes or is discarded; rows found at start-up belong to
/// uploads cut short by a crash and are swept with their chunks.
pub const RECORDING_UPLOADS: TableDefinition<&str, &[u8]> =
    TableDefinition::new("recording_uploads");

/// org id → `EngineSettings`: the engine's organization settings (time zone, business,
/// assistant, providers), apart from `OrgRecord` so that record keeps its layout.
pub const ENGINE_SETTINGS: TableDefinition<&str, &[u8]> = TableDefinition::new("engine_settings");
/// (org, profile name) → `ProfileRecord`.
pub const PROFILES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("profiles");
/// (org, profile name) → the campaign's display name ("Spring Solar Push"), when it has
/// one other than its name: apart from the profile so that lists of campaigns (every
/// leads page) read names without decoding a profile.
pub const PROFILE_LABELS: TableDefinition<(&str, &str), &str> =
    TableDefinition::new("profile_labels");
/// (org, lead id) → `EngagementRecord`: a lead's cadence position and the agenda rows it
/// has pending (so they can be moved or removed without a scan).
pub const ENGAGEMENTS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("engagements");
/// (due time, job id) → `AgendaJob`: the engine's durable work, in due order. Written
/// in the same transaction as its cause; a row leaves in the transaction that commits
/// the job's outcome (or, for a send, its attempt).
pub const AGENDA: TableDefinition<(i64, &str), &[u8]> = TableDefinition::new("agenda");
/// (org, lead id, due time, job id) → the time the work wanted: the agenda rows quiet
/// hours deferred (to their window's end). A change of the quiet hours or a time zone
/// walks only these (the organization's, or one lead's) to re-compute them; a row's
/// entry leaves with the row (`WriteTx::remove_agenda`).
pub const QUIET_DEFERRED: TableDefinition<(&str, &str, i64, &str), i64> =
    TableDefinition::new("quiet_deferred");
/// (org, lead id, event type, event id) → (): messages handed to a provider whose answer
/// is not committed yet. At start-up these become `unknown` (never sent again).
pub const SENDING: TableDefinition<(&str, &str, &str, &str), ()> = TableDefinition::new("sending");
/// (org, provider message id) → `ProviderMessageRef`: the message event a provider's
/// status callback is about. Written when a provider accepts a message whose status
/// may still change.
pub const PROVIDER_MESSAGES: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("provider_messages");
/// (org, provider message id) → time seen: inbound messages a provider delivered
/// already, so a retried webhook changes nothing.
pub const PROVIDER_INBOUND: TableDefinition<(&str, &str), i64> =
    TableDefinition::new("provider_inbound");

/// (end of its window in Unix seconds, org, token) → (): Mailgun inbound-email tokens
/// accepted, each remembered until its signed timestamp is too old to be accepted
/// again (a replay within the window is refused). Rows past their end are pruned in
/// the write that adds one.
pub const MAILGUN_TOKENS: TableDefinition<(i64, &str, &str), ()> =
    TableDefinition::new("mailgun_tokens");

/// (org, call id) → `VoiceSession`: engaged's side of a call it placed or answered
/// through a voice provider (its lead, profile, provider id, transfer stage).
pub const VOICE_SESSIONS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("voice_sessions");
/// (org, provider call id) → call id: a provider's calls, so a repeated inbound-call
/// webhook answers the call it created the first time.
pub const PROVIDER_CALLS: TableDefinition<(&str, &str), &str> =
    TableDefinition::new("provider_calls");
/// (org, call id) → `WarmTransfer`: where a call's warm transfer stands (the lead held
/// in a conference, the person rung, whispered to, bridged).
pub const WARM_TRANSFERS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("warm_transfers");

/// (org, lead id) → `HandlingRecord`: who handles a lead besides the assistant (the
/// person who took it over) and whether the assistant handed it off. Apart from
/// `LeadRecord` so that record keeps its layout.
pub const LEAD_HANDLING: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("lead_handling");
/// (org, facet, lead id) → (): the lead search's index, live leads only. A facet is a
/// filter value (`state:active`, `hot:1`, `tag:vip`, `profile:solar`, ...) or a search
/// term (`t:` and a lower-case word, an email, a phone's trailing digits), so a filter
/// is one range and a search word one prefix range (`store::lead_index`).
pub const LEAD_FACETS: TableDefinition<(&str, &str, &str), ()> =
    TableDefinition::new("lead_facets");
/// (org, facet) → how many live leads have it (`all`: every live lead): the total of a
/// one-filter query, and the smallest set to start an intersection from.
pub const LEAD_FACET_COUNTS: TableDefinition<(&str, &str), u64> =
    TableDefinition::new("lead_facet_counts");
/// (org, lead id) → (createdAt, lastActivityAt): a live lead's sort keys, fixed width
/// so a search reads them without decoding.
pub const LEAD_ORDER: TableDefinition<(&str, &str), (i64, i64)> =
    TableDefinition::new("lead_order");
/// (org, lead id) → the lead's facets as last written (postcard `Vec<String>`), so a
/// change moves only the facet rows that changed.
pub const LEAD_FACET_LIST: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("lead_facet_list");
/// (org, lastActivityAt, lead id) → (), live leads only: the lead list by activity.
pub const LEADS_BY_ACTIVITY: TableDefinition<(&str, i64, &str), ()> =
    TableDefinition::new("leads_by_activity");
/// (org, lead id) → when the live lead's newest own message was created: what its
/// `leads_by_reply` row is keyed by, so a change moves it.
pub const LEAD_REPLIED: TableDefinition<(&str, &str), i64> = TableDefinition::new("lead_replied");
/// (org, newest own message's createdAt, lead id) → (), live leads that wrote: the
/// inbox's "Replied" tab is the range of the last 7 days, read newest first.
pub const LEADS_BY_REPLY: TableDefinition<(&str, i64, &str), ()> =
    TableDefinition::new("leads_by_reply");
/// (org, user id, lead id) → the lead's newest own message the user has seen on its
/// page: the inbox's per-person unread markers. Written only when it moves.
pub const LEAD_SEEN: TableDefinition<(&str, &str, &str), i64> = TableDefinition::new("lead_seen");

/// user id → `UserRecord`: the console's people, each of one organization.
pub const USERS: TableDefinition<&str, &[u8]> = TableDefinition::new("users");
/// email in lower case → user id: an email is one user's across the server.
pub const USERS_BY_EMAIL: TableDefinition<&str, &str> = TableDefinition::new("users_by_email");
/// SHA-256 of a session token → `SessionRecord`: the cookie's token is never stored.
pub const SESSIONS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("sessions");
/// (user id, SHA-256 of the token) → (): a user's sessions, ended together when the
/// user is disabled or its password changes.
pub const SESSIONS_BY_USER: TableDefinition<(&str, &[u8]), ()> =
    TableDefinition::new("sessions_by_user");

/// (entered at, org, lead id) → (): leads that entered "Needs attention", waiting for
/// the notifier (`engine::notices`) to email the people who asked for it. Written in
/// the commit that made the lead need attention; removed once its emails are done.
pub const ATTENTION_NOTICES: TableDefinition<(i64, &str, &str), ()> =
    TableDefinition::new("attention_notices");
/// (org, lead id) → when the lead's last notice was queued: at most one an hour.
pub const LEAD_NOTIFIED: TableDefinition<(&str, &str), i64> = TableDefinition::new("lead_notified");
/// (org, sent at, notification id) → `NotificationRecord`: the emails the notifier sent
/// (or, with the sandbox, logged), the newest [`NOTIFICATIONS_KEPT`] per organization
/// (Settings → Notifications).
pub const NOTIFICATIONS: TableDefinition<(&str, i64, &str), &[u8]> =
    TableDefinition::new("notifications");
/// How many notifications an organization's log keeps.
pub const NOTIFICATIONS_KEPT: usize = 200;
/// (org, profile, counter) → u64: a campaign's leads that replied (`replied`, each
/// once, an opt-out not), its numbers by step (`step:<n>:<metric>`:
/// reached, sent, delivered, blocked, failed, repliesAfter) and by day
/// (`day:<YYYY-MM-DD>:sends|replies`, the organization's calendar day), kept in the write of each event that
/// changes one (`domain::engagement::campaigns`). The numbers by lead state are
/// counted-only facets of the lead index (`Facet::Campaign`).
pub const CAMPAIGN_COUNTS: TableDefinition<(&str, &str, &str), u64> =
    TableDefinition::new("campaign_counts");
/// (org, profile, lead id, step) → (): the lead was counted as a campaign's reply
/// (step 0: `replied`) or a reply after step `step` (`step:<n>:repliesAfter`), so a
/// lead counts once however many messages it writes.
pub const CAMPAIGN_REPLIERS: TableDefinition<(&str, &str, &str, u32), ()> =
    TableDefinition::new("campaign_repliers");
/// (org, profile, lead id) → (): the leads a campaign's `meetingsBooked` counted (once
/// each, when a meeting was booked while they followed the profile).
pub const CAMPAIGN_MEETINGS: TableDefinition<(&str, &str, &str), ()> =
    TableDefinition::new("campaign_meetings");
/// (org, profile) → when it was paused: a paused campaign runs no cadence step; its
/// engagements read `paused` until it resumes (`domain::engagement::campaigns`).
pub const PAUSED_CAMPAIGNS: TableDefinition<(&str, &str), i64> =
    TableDefinition::new("paused_campaigns");

/// (org, lead id, at, `CONSENT` event id) → `ConsentEntry`: a lead's consent ledger in
/// the order consent was given or revoked. Append-only; a lead's soft deletion keeps it
/// (`domain::records::consent`).
pub const CONSENT_LEDGER: TableDefinition<(&str, &str, i64, &str), &[u8]> =
    TableDefinition::new("consent_ledger");
/// (org, lead id, channel) → `ConsentState`: the latest grant per purpose and the latest
/// revocation of the channel, so the gate's check is one lookup.
pub const CONSENT_STATE: TableDefinition<(&str, &str, &str), &[u8]> =
    TableDefinition::new("consent_state");
/// (org, lead id) → `HoldRecord`: a lead held by a possible opt-out until it is decided
/// (`domain::conversation::hold`); the engagement reads `held` meanwhile.
pub const CONSENT_HOLDS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("consent_holds");
/// (org, calendar name) → `CalendarRecord`: a calendar's weekly hours, meeting rules,
/// CalDAV connection and feed token (`store::calendars`).
pub const CALENDARS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("calendars");
/// (org, meeting id) → `MeetingRecord`.
pub const MEETINGS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("meetings");
/// (org, calendar, start, meeting id) → end: booked meetings only, the busy times of a
/// calendar (open times, the slot re-checked in a booking's write, the feed).
pub const MEETINGS_BY_START: TableDefinition<(&str, &str, i64, &str), i64> =
    TableDefinition::new("meetings_by_start");
/// (org, updatedAt, meeting id) → (): `GET /v1/meetings`, the incremental listing.
pub const MEETINGS_BY_UPDATED: TableDefinition<(&str, i64, &str), ()> =
    TableDefinition::new("meetings_by_updated");
/// The CalDAV writes owed: (org, meeting id) → (due time, attempts so far, the meeting's
/// `updatedAt` when queued). A meeting's row is replaced by its next change.
pub const CALENDAR_SYNC: TableDefinition<(&str, &str), (i64, u32, i64)> =
    TableDefinition::new("calendar_sync");
/// (org, lead id, start, meeting id) → (): a lead's booked meetings (its `nextMeetingAt`).
pub const MEETINGS_BY_LEAD: TableDefinition<(&str, &str, i64, &str), ()> =
    TableDefinition::new("meetings_by_lead");

/// (org, job id) → `EnrolmentJob`: a bulk "Add to campaign" of the console, its
/// progress and result (`domain::conversation::bulk_enrolment`).
pub const ENROLMENT_JOBS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("enrolment_jobs");
/// (org, job id, batch) → the lead ids of one batch of a bulk enrolment, captured when
/// the job was created; removed as the batch is run.
pub const ENROLMENT_BATCHES: TableDefinition<(&str, &str, u32), &[u8]> =
    TableDefinition::new("enrolment_batches");

/// org id → `WebchatSettings`: the organization's web chat (`webchat` of `/v1/org`),
/// in a record of its own so the organization's other records keep their shape.
pub const WEBCHAT_SETTINGS: TableDefinition<&str, &[u8]> = TableDefinition::new("webchat_settings");
/// (org, session id) → `WebchatSession`: a website visitor's chat, its token's hash,
/// its bounds' counters and its transcript (`domain::conversation::webchat`).
pub const WEBCHAT_SESSIONS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("webchat_sessions");
/// (org, createdAt, session id) → (): the sessions by age, for the organization's hourly
/// bound and the purge of sessions that never became leads.
pub const WEBCHAT_BY_CREATED: TableDefinition<(&str, i64, &str), ()> =
    TableDefinition::new("webchat_by_created");
/// (org, replay id) → `ReplayRecord`: a replay of a profile's draft over past
/// conversations, its progress and results (`store::replays`), kept 30 days and the
/// newest 20 per organization.
pub const REPLAYS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("replays");
/// org id → `BrowserCallKeys`: the API key and TwiML App of calls from the browser
/// (`providers.voice`'s `apiKeySid`, `apiKeySecret`, `twimlAppSid`), in a record of its
/// own so the voice provider's `TwilioSettings` keeps its shape.
pub const BROWSER_CALLS: TableDefinition<&str, &[u8]> = TableDefinition::new("browser_calls");
