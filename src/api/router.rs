//! The router: method and path segments to a [`Route`], by hand.
//!
//! A `match` on the segment slice is the whole routing table: easy to read top to bottom,
//! no allocation beyond the decoded segments, and a path that exists with another method
//! answers 405 rather than 404, naming the path's methods (`Allow`). Each path lists its
//! methods once, in `pick`; `HEAD` takes the `GET` route of every path that has one, and
//! `OPTIONS` on any path answers 204 with its `Allow` ([`Route::Options`]). The fixed
//! segments under `/v1/leads/` (`leads::RESERVED_IDS`) are never lead ids.

use hyper::Method;

use crate::error::{Allowed, Error, Result};
use crate::store::rows::Scope;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// `OPTIONS` on a path: 204 with the path's methods in `Allow` (no key needed).
    Options(Allowed),
    Healthz,
    Readyz,
    OpenApi,
    Metrics,
    /// `GET /v1/admin/replica`: continuous replication's status.
    AdminReplica,
    ListLeads,
    /// `GET /v1/leads/search`: the lead search (a lead whose id is `search` is reached
    /// by the other methods only).
    SearchLeads,
    /// `POST /v1/leads/import`: a CSV or NDJSON file of leads (a lead whose id is
    /// `import` is reached by the other methods only).
    ImportLeads,
    /// `GET /v1/leads/import/{id}/refused.csv`: every refused row of an import (its
    /// answer's `refusedUrl`), for an hour.
    ImportRefused(&'a str),
    CreateLead,
    GetLead(&'a str),
    UpdateLead(&'a str),
    DeleteLead(&'a str),
    ListEvents(&'a str),
    PostEvent(&'a str),
    ListMessages(&'a str),
    PostMessage(&'a str),
    GetCall(&'a str),
    PutCall(&'a str),
    Unsubscribe(&'a str),
    Resubscribe(&'a str),
    TurnOff(&'a str),
    TurnOn(&'a str),
    AddTags(&'a str),
    RemoveTags(&'a str),
    RequestCall(&'a str),
    /// `GET /v1/leads/{id}/consent`: the lead's consent ledger (JSON or CSV).
    GetConsent(&'a str),
    /// `POST /v1/leads/{id}/consent`: one ledger entry.
    PostConsent(&'a str),
    RegisterDnc,
    ListDnc,
    RemoveDnc(&'a str),
    InboundSms,
    GetOrg,
    UpdateOrg,
    CreateWebhook,
    ListWebhooks,
    DeleteWebhook(&'a str),
    ListDeliveries(&'a str),
    RetryDelivery(&'a str, &'a str),
    GetRecording(&'a str),
    PutRecording(&'a str),
    DeleteRecording(&'a str),
    /// A signed recording link: (org, call id); its query is checked instead of a key.
    RecordingFile(&'a str, &'a str),
    ListProfiles,
    GetProfile(&'a str),
    /// `GET /v1/profiles/{name}/stats`: the campaign's numbers.
    ProfileStats(&'a str),
    PutProfile(&'a str),
    DeleteProfile(&'a str),
    /// `POST /v1/profiles/{name}/replays`: a draft tried on past conversations.
    CreateReplay(&'a str),
    ListReplays,
    GetReplay(&'a str),
    CancelReplay(&'a str),
    GetEngagement(&'a str),
    ListCalendars,
    GetCalendar(&'a str),
    PutCalendar(&'a str),
    DeleteCalendar(&'a str),
    /// `POST /v1/calendars/{name}/rotate-feed-token`.
    RotateFeedToken(&'a str),
    /// `GET /v1/calendars/{name}/times`: open times.
    CalendarTimes(&'a str),
    /// `GET /v1/calendars/{name}/feed.ics?token=`: the iCalendar feed (the token, no key).
    CalendarFeed(&'a str),
    /// `POST /v1/leads/{id}/meetings`: books a meeting.
    BookMeeting(&'a str),
    ListMeetings,
    GetMeeting(&'a str),
    /// `PATCH /v1/meetings/{id}`: `completed` or `no_show`.
    UpdateMeeting(&'a str),
    CancelMeeting(&'a str),
    RescheduleMeeting(&'a str),
    InboundEmail,
    /// A one-click unsubscribe link's page (GET) and its unsubscribe (POST): the token.
    UnsubscribePage(&'a str),
    UnsubscribeOneClick(&'a str),
    /// Inbound email forwarded by a Mailgun route: the org id.
    MailgunInbound(&'a str),
    /// Twilio's inbound SMS webhook of an organization (signed, no key).
    TwilioSms(&'a str),
    /// Twilio's message status callback of an organization (signed, no key).
    TwilioSmsStatus(&'a str),
    /// A call to the organization's Twilio number (signed, no key): the org id.
    TwilioVoiceInbound(&'a str),
    /// What to do once an outbound call is answered (signed): (org, call id).
    TwilioVoiceTwiml(&'a str, &'a str),
    /// A call's status and answering-machine callbacks (signed): (org, call id).
    TwilioVoiceStatus(&'a str, &'a str),
    /// A call's recording is ready (signed): (org, call id).
    TwilioVoiceRecording(&'a str, &'a str),
    /// A call's hand-over and transfer rings (signed): (org, call id).
    TwilioVoiceTransfer(&'a str, &'a str),
    TwilioVoiceWarm(&'a str, &'a str),
    /// A call's ConversationRelay WebSocket (signed handshake): (org, call id).
    TwilioVoiceRelay(&'a str, &'a str),
    /// `GET /webchat.js`: the web chat widget.
    WebchatScript,
    /// `POST /webchat/{org}/sessions`: a visitor's new chat (origin-checked, no key).
    WebchatCreateSession(&'a str),
    /// `POST /webchat/{org}/sessions/{id}/messages`: the visitor's message (the token).
    WebchatPostMessage(&'a str, &'a str),
    /// `GET /webchat/{org}/sessions/{id}/events?token=`: the visitor's stream.
    WebchatEvents(&'a str, &'a str),
    /// `POST /webchat/{org}/sessions/{id}/contact`: the contact form and consent box.
    WebchatContact(&'a str, &'a str),
    /// `POST /webchat/{org}/sessions/{id}/voice-token`: a call's Access Token (the token).
    WebchatVoiceToken(&'a str, &'a str),
    /// `GET /webchat/twilio-voice-<version>.js`: the vendored Voice SDK.
    WebchatVoiceSdk,
    /// `GET /webchat/twilio-voice-<version>.LICENSE.md`: its licence.
    WebchatVoiceSdkLicense,
}

impl Route<'_> {
    /// The least scope a key needs; `None` for routes open without a key.
    pub fn scope(&self) -> Option<Scope> {
        match self {
            Route::Options(_)
            | Route::Healthz
            | Route::Readyz
            | Route::OpenApi
            | Route::RecordingFile(_, _)
            | Route::CalendarFeed(_) => None,
            Route::UnsubscribePage(_)
            | Route::UnsubscribeOneClick(_)
            | Route::MailgunInbound(_)
            | Route::TwilioSms(_)
            | Route::TwilioSmsStatus(_)
            | Route::TwilioVoiceInbound(_)
            | Route::TwilioVoiceTwiml(_, _)
            | Route::TwilioVoiceStatus(_, _)
            | Route::TwilioVoiceRecording(_, _)
            | Route::TwilioVoiceTransfer(_, _)
            | Route::TwilioVoiceWarm(_, _)
            | Route::TwilioVoiceRelay(_, _)
            | Route::WebchatScript
            | Route::WebchatCreateSession(_)
            | Route::WebchatPostMessage(_, _)
            | Route::WebchatEvents(_, _)
            | Route::WebchatContact(_, _)
            | Route::WebchatVoiceToken(_, _)
            | Route::WebchatVoiceSdk
            | Route::WebchatVoiceSdkLicense => None,
            Route::GetRecording(_) => Some(Scope::Read),
            Route::PutRecording(_) => Some(Scope::Write),
            Route::DeleteRecording(_) => Some(Scope::Admin),
            Route::Metrics | Route::AdminReplica => Some(Scope::Admin),
            Route::ListLeads
            | Route::SearchLeads
            | Route::GetLead(_)
            | Route::ListEvents(_)
            | Route::ListMessages(_)
            | Route::GetConsent(_)
            | Route::GetCall(_) => Some(Scope::Read),
            Route::CreateLead
            | Route::ImportLeads
            | Route::ImportRefused(_)
            | Route::UpdateLead(_)
            | Route::DeleteLead(_)
            | Route::PostEvent(_)
            | Route::PostMessage(_)
            | Route::PutCall(_)
            | Route::Unsubscribe(_)
            | Route::Resubscribe(_)
            | Route::TurnOff(_)
            | Route::TurnOn(_)
            | Route::AddTags(_)
            | Route::RemoveTags(_)
            | Route::RequestCall(_)
            | Route::PostConsent(_)
            | Route::RegisterDnc
            | Route::InboundSms
            | Route::InboundEmail => Some(Scope::Write),
            Route::ListProfiles
            | Route::GetProfile(_)
            | Route::ProfileStats(_)
            | Route::GetEngagement(_) => Some(Scope::Read),
            Route::PutProfile(_) | Route::DeleteProfile(_) => Some(Scope::Admin),
            Route::CreateReplay(_) | Route::CancelReplay(_) => Some(Scope::Write),
            Route::ListReplays | Route::GetReplay(_) => Some(Scope::Read),
            Route::ListCalendars
            | Route::GetCalendar(_)
            | Route::CalendarTimes(_)
            | Route::ListMeetings
            | Route::GetMeeting(_) => Some(Scope::Read),
            Route::PutCalendar(_) | Route::DeleteCalendar(_) | Route::RotateFeedToken(_) => {
                Some(Scope::Admin)
            }
            Route::BookMeeting(_)
            | Route::UpdateMeeting(_)
            | Route::CancelMeeting(_)
            | Route::RescheduleMeeting(_) => Some(Scope::Write),
            Route::ListDnc => Some(Scope::Read),
            Route::RemoveDnc(_) | Route::GetOrg | Route::UpdateOrg => Some(Scope::Admin),
            Route::CreateWebhook
            | Route::ListWebhooks
            | Route::DeleteWebhook(_)
            | Route::ListDeliveries(_)
            | Route::RetryDelivery(_, _) => Some(Scope::Admin),
        }
    }

    /// A short name for logs and metrics, without ids.
    pub fn name(&self) -> &'static str {
        match self {
            Route::Options(_) => "options",
            Route::Healthz => "healthz",
            Route::Readyz => "readyz",
            Route::OpenApi => "openapi",
            Route::Metrics => "metrics",
            Route::AdminReplica => "admin_replica",
            Route::ListLeads => "list_leads",
            Route::SearchLeads => "search_leads",
            Route::ImportLeads => "import_leads",
            Route::ImportRefused(_) => "import_refused",
            Route::CreateLead => "create_lead",
            Route::GetLead(_) => "get_lead",
            Route::UpdateLead(_) => "update_lead",
            Route::DeleteLead(_) => "delete_lead",
            Route::ListEvents(_) => "list_events",
            Route::PostEvent(_) => "post_event",
            Route::ListMessages(_) => "list_messages",
            Route::PostMessage(_) => "post_message",
            Route::GetCall(_) => "get_call",
            Route::PutCall(_) => "put_call",
            Route::Unsubscribe(_) => "unsubscribe",
            Route::Resubscribe(_) => "resubscribe",
            Route::TurnOff(_) => "turn_off",
            Route::TurnOn(_) => "turn_on",
            Route::AddTags(_) => "add_tags",
            Route::RemoveTags(_) => "remove_tags",
            Route::RequestCall(_) => "request_call",
            Route::GetConsent(_) => "get_consent",
            Route::PostConsent(_) => "post_consent",
            Route::RegisterDnc => "register_dnc",
            Route::ListDnc => "list_dnc",
            Route::RemoveDnc(_) => "remove_dnc",
            Route::InboundSms => "inbound_sms",
            Route::GetOrg => "get_org",
            Route::UpdateOrg => "update_org",
            Route::CreateWebhook => "create_webhook",
            Route::ListWebhooks => "list_webhooks",
            Route::DeleteWebhook(_) => "delete_webhook",
            Route::ListDeliveries(_) => "list_deliveries",
            Route::RetryDelivery(_, _) => "retry_delivery",
            Route::GetRecording(_) => "get_recording",
            Route::PutRecording(_) => "put_recording",
            Route::DeleteRecording(_) => "delete_recording",
            Route::RecordingFile(_, _) => "recording_file",
            Route::ListProfiles => "list_profiles",
            Route::GetProfile(_) => "get_profile",
            Route::ProfileStats(_) => "profile_stats",
            Route::PutProfile(_) => "put_profile",
            Route::DeleteProfile(_) => "delete_profile",
            Route::CreateReplay(_) => "create_replay",
            Route::ListReplays => "list_replays",
            Route::GetReplay(_) => "get_replay",
            Route::CancelReplay(_) => "cancel_replay",
            Route::GetEngagement(_) => "get_engagement",
            Route::ListCalendars => "list_calendars",
            Route::GetCalendar(_) => "get_calendar",
            Route::PutCalendar(_) => "put_calendar",
            Route::DeleteCalendar(_) => "delete_calendar",
            Route::RotateFeedToken(_) => "rotate_feed_token",
            Route::CalendarTimes(_) => "calendar_times",
            Route::CalendarFeed(_) => "calendar_feed",
            Route::BookMeeting(_) => "book_meeting",
            Route::ListMeetings => "list_meetings",
            Route::GetMeeting(_) => "get_meeting",
            Route::UpdateMeeting(_) => "update_meeting",
            Route::CancelMeeting(_) => "cancel_meeting",
            Route::RescheduleMeeting(_) => "reschedule_meeting",
            Route::InboundEmail => "inbound_email",
            Route::UnsubscribePage(_) => "unsubscribe_page",
            Route::UnsubscribeOneClick(_) => "unsubscribe_one_click",
            Route::MailgunInbound(_) => "mailgun_inbound",
            Route::TwilioSms(_) => "twilio_sms",
            Route::TwilioSmsStatus(_) => "twilio_sms_status",
            Route::TwilioVoiceInbound(_) => "twilio_voice_inbound",
            Route::TwilioVoiceTwiml(_, _) => "twilio_voice_twiml",
            Route::TwilioVoiceStatus(_, _) => "twilio_voice_status",
            Route::TwilioVoiceRecording(_, _) => "twilio_voice_recording",
            Route::TwilioVoiceTransfer(_, _) => "twilio_voice_transfer",
            Route::TwilioVoiceWarm(_, _) => "twilio_voice_warm",
            Route::TwilioVoiceRelay(_, _) => "twilio_voice_relay",
            Route::WebchatScript => "webchat_script",
            Route::WebchatCreateSession(_) => "webchat_create_session",
            Route::WebchatPostMessage(_, _) => "webchat_post_message",
            Route::WebchatEvents(_, _) => "webchat_events",
            Route::WebchatContact(_, _) => "webchat_contact",
            Route::WebchatVoiceToken(_, _) => "webchat_voice_token",
            Route::WebchatVoiceSdk => "webchat_voice_sdk",
            Route::WebchatVoiceSdkLicense => "webchat_voice_sdk_license",
        }
    }
}

pub fn route<'a>(method: &Method, segments: &'a [String]) -> Result<Route<'a>> {
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let m = method.clone();
    let route = match segs.as_slice() {
        ["healthz"] => only(m, Method::GET, Route::Healthz)?,
        ["readyz"] => only(m, Method::GET, Route::Readyz)?,
        ["v1", "openapi.json"] => only(m, Method::GET, Route::OpenApi)?,
        ["metrics"] => only(m, Method::GET, Route::Metrics)?,
        ["v1", "admin", "replica"] => only(m, Method::GET, Route::AdminReplica)?,
        ["v1", "leads"] => pick(
            &m,
            [
                (Method::GET, Route::ListLeads),
                (Method::POST, Route::CreateLead),
            ],
        )?,
        // Fixed segments, never lead ids (`leads::RESERVED_IDS`).
        ["v1", "leads", "search"] => only(m, Method::GET, Route::SearchLeads)?,
        ["v1", "leads", "import"] => only(m, Method::POST, Route::ImportLeads)?,
        ["v1", "leads", "import", _, "refused.csv"] => {
            only(m, Method::GET, Route::ImportRefused(segments[3].as_str()))?
        }
        ["v1", "leads", _] => {
            let id = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::GetLead(id)),
                    (Method::PATCH, Route::UpdateLead(id)),
                    (Method::DELETE, Route::DeleteLead(id)),
                ],
            )?
        }
        ["v1", "leads", _, "events"] => {
            let id = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::ListEvents(id)),
                    (Method::POST, Route::PostEvent(id)),
                ],
            )?
        }
        ["v1", "leads", _, "messages"] => {
            let id = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::ListMessages(id)),
                    (Method::POST, Route::PostMessage(id)),
                ],
            )?
        }
        ["v1", "calls", _] => {
            let id = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::GetCall(id)),
                    (Method::PUT, Route::PutCall(id)),
                ],
            )?
        }
        ["v1", "leads", _, "consent"] => {
            let id = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::GetConsent(id)),
                    (Method::POST, Route::PostConsent(id)),
                ],
            )?
        }
        ["v1", "leads", _, "engagement"] => {
            only(m, Method::GET, Route::GetEngagement(segments[2].as_str()))?
        }
        ["v1", "leads", _, action] => {
            let id = segments[2].as_str();
            let route = match *action {
                "unsubscribe" => Route::Unsubscribe(id),
                "resubscribe" => Route::Resubscribe(id),
                "turn-off" => Route::TurnOff(id),
                "turn-on" => Route::TurnOn(id),
                "calls" => Route::RequestCall(id),
                "meetings" => Route::BookMeeting(id),
                _ => return Err(Error::NotFound("Not found".into())),
            };
            only(m, Method::POST, route)?
        }
        ["v1", "leads", _, "tags", "add"] => {
            only(m, Method::POST, Route::AddTags(segments[2].as_str()))?
        }
        ["v1", "leads", _, "tags", "remove"] => {
            only(m, Method::POST, Route::RemoveTags(segments[2].as_str()))?
        }
        ["v1", "dnc"] => only(m, Method::GET, Route::ListDnc)?,
        ["v1", "dnc", "register"] => only(m, Method::POST, Route::RegisterDnc)?,
        ["v1", "dnc", _] => only(m, Method::DELETE, Route::RemoveDnc(segments[2].as_str()))?,
        ["v1", "inbound", "sms"] => only(m, Method::POST, Route::InboundSms)?,
        ["v1", "inbound", "email"] => only(m, Method::POST, Route::InboundEmail)?,
        ["v1", "unsubscribe", _] => {
            let token = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::UnsubscribePage(token)),
                    (Method::POST, Route::UnsubscribeOneClick(token)),
                ],
            )?
        }
        ["v1", "providers", "twilio", _, "sms"] => {
            only(m, Method::POST, Route::TwilioSms(segments[3].as_str()))?
        }
        ["v1", "providers", "twilio", _, "sms-status"] => only(
            m,
            Method::POST,
            Route::TwilioSmsStatus(segments[3].as_str()),
        )?,
        ["v1", "providers", "twilio", _, "voice", "inbound"] => only(
            m,
            Method::POST,
            Route::TwilioVoiceInbound(segments[3].as_str()),
        )?,
        ["v1", "providers", "twilio", _, "voice", _, leaf] => {
            let (org, call) = (segments[3].as_str(), segments[5].as_str());
            match *leaf {
                "twiml" => only(m, Method::POST, Route::TwilioVoiceTwiml(org, call))?,
                "status" => only(m, Method::POST, Route::TwilioVoiceStatus(org, call))?,
                "recording" => only(m, Method::POST, Route::TwilioVoiceRecording(org, call))?,
                "transfer" => only(m, Method::POST, Route::TwilioVoiceTransfer(org, call))?,
                "warm" => only(m, Method::POST, Route::TwilioVoiceWarm(org, call))?,
                "relay" => only(m, Method::GET, Route::TwilioVoiceRelay(org, call))?,
                _ => return Err(Error::NotFound("Not found".into())),
            }
        }
        ["v1", "providers", "mailgun", _, "inbound"] => {
            only(m, Method::POST, Route::MailgunInbound(segments[3].as_str()))?
        }
        ["v1", "profiles"] => only(m, Method::GET, Route::ListProfiles)?,
        ["v1", "profiles", _, "replays"] => {
            only(m, Method::POST, Route::CreateReplay(segments[2].as_str()))?
        }
        ["v1", "replays"] => only(m, Method::GET, Route::ListReplays)?,
        ["v1", "replays", _] => only(m, Method::GET, Route::GetReplay(segments[2].as_str()))?,
        ["v1", "replays", _, "cancel"] => {
            only(m, Method::POST, Route::CancelReplay(segments[2].as_str()))?
        }
        ["v1", "profiles", _, "stats"] => {
            only(m, Method::GET, Route::ProfileStats(segments[2].as_str()))?
        }
        ["v1", "profiles", _] => {
            let name = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::GetProfile(name)),
                    (Method::PUT, Route::PutProfile(name)),
                    (Method::DELETE, Route::DeleteProfile(name)),
                ],
            )?
        }
        ["v1", "calendars"] => only(m, Method::GET, Route::ListCalendars)?,
        ["v1", "calendars", _] => {
            let name = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::GetCalendar(name)),
                    (Method::PUT, Route::PutCalendar(name)),
                    (Method::DELETE, Route::DeleteCalendar(name)),
                ],
            )?
        }
        ["v1", "calendars", _, "rotate-feed-token"] => only(
            m,
            Method::POST,
            Route::RotateFeedToken(segments[2].as_str()),
        )?,
        ["v1", "calendars", _, "times"] => {
            only(m, Method::GET, Route::CalendarTimes(segments[2].as_str()))?
        }
        ["v1", "calendars", _, "feed.ics"] => {
            only(m, Method::GET, Route::CalendarFeed(segments[2].as_str()))?
        }
        ["v1", "meetings"] => only(m, Method::GET, Route::ListMeetings)?,
        ["v1", "meetings", _] => {
            let id = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::GetMeeting(id)),
                    (Method::PATCH, Route::UpdateMeeting(id)),
                ],
            )?
        }
        ["v1", "meetings", _, "cancel"] => {
            only(m, Method::POST, Route::CancelMeeting(segments[2].as_str()))?
        }
        ["v1", "meetings", _, "reschedule"] => only(
            m,
            Method::POST,
            Route::RescheduleMeeting(segments[2].as_str()),
        )?,
        ["v1", "org"] => pick(
            &m,
            [
                (Method::GET, Route::GetOrg),
                (Method::PATCH, Route::UpdateOrg),
            ],
        )?,
        ["v1", "webhooks"] => pick(
            &m,
            [
                (Method::GET, Route::ListWebhooks),
                (Method::POST, Route::CreateWebhook),
            ],
        )?,
        ["v1", "webhooks", _] => only(
            m,
            Method::DELETE,
            Route::DeleteWebhook(segments[2].as_str()),
        )?,
        ["v1", "webhooks", _, "deliveries"] => {
            only(m, Method::GET, Route::ListDeliveries(segments[2].as_str()))?
        }
        ["v1", "webhooks", _, "deliveries", _, "retry"] => only(
            m,
            Method::POST,
            Route::RetryDelivery(segments[2].as_str(), segments[4].as_str()),
        )?,
        ["v1", "calls", _, "recording"] => {
            let id = segments[2].as_str();
            pick(
                &m,
                [
                    (Method::GET, Route::GetRecording(id)),
                    (Method::PUT, Route::PutRecording(id)),
                    (Method::DELETE, Route::DeleteRecording(id)),
                ],
            )?
        }
        ["webchat.js"] => only(m, Method::GET, Route::WebchatScript)?,
        ["webchat", file] if *file == crate::api::webchat_voice::SDK_FILE => {
            only(m, Method::GET, Route::WebchatVoiceSdk)?
        }
        ["webchat", file] if *file == crate::api::webchat_voice::SDK_LICENSE_FILE => {
            only(m, Method::GET, Route::WebchatVoiceSdkLicense)?
        }
        ["webchat", _, "sessions"] => only(
            m,
            Method::POST,
            Route::WebchatCreateSession(segments[1].as_str()),
        )?,
        ["webchat", _, "sessions", _, leaf] => {
            let (org, id) = (segments[1].as_str(), segments[3].as_str());
            match *leaf {
                "messages" => only(m, Method::POST, Route::WebchatPostMessage(org, id))?,
                "events" => only(m, Method::GET, Route::WebchatEvents(org, id))?,
                "contact" => only(m, Method::POST, Route::WebchatContact(org, id))?,
                "voice-token" => only(m, Method::POST, Route::WebchatVoiceToken(org, id))?,
                _ => return Err(Error::NotFound("Not found".into())),
            }
        }
        ["v1", "recordings", _, _] => only(
            m,
            Method::GET,
            Route::RecordingFile(segments[2].as_str(), segments[3].as_str()),
        )?,
        _ => return Err(Error::NotFound("Not found".into())),
    };
    Ok(route)
}

fn only<'a>(method: Method, allowed: Method, route: Route<'a>) -> Result<Route<'a>> {
    pick(&method, [(allowed, route)])
}

/// The route of `method` among a path's `choices`; `HEAD` takes the `GET` route (its
/// body is dropped by `api::handle`); `OPTIONS` takes [`Route::Options`]. Otherwise 405,
/// with every method of the path (`OPTIONS` among them).
fn pick<'a, const N: usize>(
    method: &Method,
    choices: [(Method, Route<'a>); N],
) -> Result<Route<'a>> {
    let wanted = if method == Method::HEAD {
        &Method::GET
    } else {
        method
    };
    let allowed = choices
        .iter()
        .fold(Allowed::default().with(&Method::OPTIONS), |a, (m, _)| {
            a.with(m)
        });
    if method == Method::OPTIONS {
        return Ok(Route::Options(allowed));
    }
    for (choice, route) in choices {
        if choice == wanted {
            return Ok(route);
        }
    }
    Err(Error::MethodNotAllowed(allowed))
}

/// Splits a path into percent-decoded segments. An empty segment (`//`, trailing `/`)
/// or one that does not decode to UTF-8 matches no route.
pub fn segments(path: &str) -> Result<Vec<String>> {
    let not_found = || Error::NotFound("Not found".into());
    let trimmed = path.strip_prefix('/').ok_or_else(not_found)?;
    trimmed
        .split('/')
        .map(|raw| {
            let decoded = percent_encoding::percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| not_found())?;
            if decoded.is_empty() {
                return Err(not_found());
            }
            Ok(decoded.into_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(method: Method, path: &str) -> std::result::Result<String, String> {
        let segs = segments(path).map_err(|e| e.to_string())?;
        route(&method, &segs)
            .map(|r| format!("{r:?}"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn routes_by_method_and_segments() {
        assert_eq!(r(Method::GET, "/v1/leads").unwrap(), "ListLeads");
        assert_eq!(
            r(Method::PATCH, "/v1/leads/a%2Fb").unwrap(),
            "UpdateLead(\"a/b\")"
        );
        assert_eq!(
            r(Method::GET, "/v1/leads/x/events").unwrap(),
            "ListEvents(\"x\")"
        );
        assert_eq!(r(Method::PUT, "/v1/calls/c1").unwrap(), "PutCall(\"c1\")");
        assert_eq!(
            r(Method::PUT, "/v1/calls/c1/recording").unwrap(),
            "PutRecording(\"c1\")"
        );
        assert_eq!(
            r(Method::GET, "/v1/recordings/org_1/c%3A1").unwrap(),
            "RecordingFile(\"org_1\", \"c:1\")"
        );
    }

    #[test]
    fn unknown_paths_are_404_and_wrong_methods_405() {
        assert_eq!(r(Method::GET, "/v1/nope").unwrap_err(), "Not found");
        assert_eq!(r(Method::GET, "/v1/leads/").unwrap_err(), "Not found");
        assert_eq!(r(Method::GET, "/v1//leads").unwrap_err(), "Not found");
        assert_eq!(
            r(Method::PUT, "/v1/leads").unwrap_err(),
            "Method not allowed"
        );
        assert_eq!(
            r(Method::POST, "/healthz").unwrap_err(),
            "Method not allowed"
        );
    }

    fn allow(method: Method, path: &str) -> String {
        let segs = segments(path).expect("segments");
        match route(&method, &segs) {
            Err(Error::MethodNotAllowed(allowed)) => allowed.header(),
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    #[test]
    fn a_405_names_the_methods_of_the_path_with_head_beside_get() {
        assert_eq!(allow(Method::PUT, "/v1/leads"), "GET, HEAD, POST, OPTIONS");
        assert_eq!(
            allow(Method::POST, "/v1/leads/x"),
            "GET, HEAD, PATCH, DELETE, OPTIONS"
        );
        assert_eq!(allow(Method::GET, "/v1/dnc/x"), "DELETE, OPTIONS");
        assert_eq!(allow(Method::HEAD, "/v1/inbound/sms"), "POST, OPTIONS");
        assert_eq!(allow(Method::POST, "/healthz"), "GET, HEAD, OPTIONS");
        assert_eq!(
            allow(Method::PATCH, "/v1/leads/search"),
            "GET, HEAD, OPTIONS"
        );
        assert_eq!(allow(Method::DELETE, "/v1/leads/import"), "POST, OPTIONS");
    }

    #[test]
    fn options_answers_the_methods_of_any_path() {
        let options = |path: &str| {
            let segs = segments(path).expect("segments");
            match route(&Method::OPTIONS, &segs) {
                Ok(Route::Options(allowed)) => allowed.header(),
                other => panic!("OPTIONS {path}: {other:?}"),
            }
        };
        assert_eq!(options("/v1/leads/import"), "POST, OPTIONS");
        assert_eq!(options("/v1/leads/search"), "GET, HEAD, OPTIONS");
        assert_eq!(options("/v1/leads/L1"), "GET, HEAD, PATCH, DELETE, OPTIONS");
        assert_eq!(r(Method::OPTIONS, "/v1/nope").unwrap_err(), "Not found");
    }

    #[test]
    fn reserved_lead_ids_are_exactly_the_fixed_segments_under_leads() {
        for method in [Method::GET, Method::POST, Method::PATCH, Method::DELETE] {
            for id in crate::domain::records::leads::RESERVED_IDS {
                let path = format!("/v1/leads/{id}");
                let routed = r(method.clone(), &path).unwrap_or_default();
                assert!(!routed.contains("Lead("), "{method} {path}: {routed}");
            }
        }
        // Any other id is a lead's.
        assert_eq!(
            r(Method::GET, "/v1/leads/searches").unwrap(),
            "GetLead(\"searches\")"
        );
    }

    #[test]
    fn head_takes_the_get_route() {
        assert_eq!(r(Method::HEAD, "/v1/leads").unwrap(), "ListLeads");
        assert_eq!(r(Method::HEAD, "/healthz").unwrap(), "Healthz");
        assert_eq!(
            r(Method::HEAD, "/v1/calls/c1/recording").unwrap(),
            "GetRecording(\"c1\")"
        );
    }
}
