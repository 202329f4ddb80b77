//! The console's routing table: method and path to a [`Page`], each with the least role
//! it needs. Like the API's router, one `match` lists every path; a known path with
//! another method is 405 with `Allow`, and `HEAD` takes a page's `GET`.

use hyper::Method;

use crate::domain::conversation::handling::PersonAction;
use crate::error::{Allowed, Error, Result};
use crate::store::rows::Role;

/// Something a person does on a lead's page: `POST /console/leads/{id}/{action}`.
/// Replying and asking for a suggestion send or draft a message; every other action is
/// a person-action of the domain (`handling::PersonAction`, the one list of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadAction {
    Reply,
    Suggest,
    /// "Reply as this lead (sandbox)": a text as if the lead sent it.
    ReplyAsLead,
    /// "Transfer the call": the lead's live call to the campaign's transfer number.
    TransferCall,
    Person(PersonAction),
}

impl LeadAction {
    /// Every action by its path segment.
    const ALL: [(&'static str, LeadAction); 24] = [
        ("take-over", LeadAction::Person(PersonAction::TakeOver)),
        ("hand-back", LeadAction::Person(PersonAction::HandBack)),
        ("reply", LeadAction::Reply),
        ("suggest", LeadAction::Suggest),
        ("reply-as-lead", LeadAction::ReplyAsLead),
        ("transfer-call", LeadAction::TransferCall),
        ("unsubscribe", LeadAction::Person(PersonAction::Unsubscribe)),
        ("resubscribe", LeadAction::Person(PersonAction::Resubscribe)),
        ("dnc", LeadAction::Person(PersonAction::AddToDnc)),
        ("tags-add", LeadAction::Person(PersonAction::AddTag)),
        ("tags-remove", LeadAction::Person(PersonAction::RemoveTag)),
        ("hot", LeadAction::Person(PersonAction::MarkHot)),
        ("qualified", LeadAction::Person(PersonAction::MarkQualified)),
        ("delete", LeadAction::Person(PersonAction::Delete)),
        ("send-again", LeadAction::Person(PersonAction::RetrySend)),
        (
            "dismiss-failure",
            LeadAction::Person(PersonAction::DismissFailure),
        ),
        ("consent", LeadAction::Person(PersonAction::RecordConsent)),
        ("opt-out", LeadAction::Person(PersonAction::ConfirmOptOut)),
        (
            "not-opt-out",
            LeadAction::Person(PersonAction::DismissOptOut),
        ),
        ("fields-set", LeadAction::Person(PersonAction::SetField)),
        (
            "fields-remove",
            LeadAction::Person(PersonAction::RemoveField),
        ),
        (
            "add-to-campaign",
            LeadAction::Person(PersonAction::AddToCampaign),
        ),
        (
            "calendar-change-seen",
            LeadAction::Person(PersonAction::SeenCalendarChange),
        ),
        ("called-back", LeadAction::Person(PersonAction::CalledBack)),
    ];

    pub fn segment(self) -> &'static str {
        LeadAction::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("", |(s, _)| s)
    }

    fn parse(segment: &str) -> Option<LeadAction> {
        LeadAction::ALL
            .iter()
            .find(|(s, _)| *s == segment)
            .map(|(_, a)| *a)
    }
}

impl From<PersonAction> for LeadAction {
    fn from(action: PersonAction) -> LeadAction {
        LeadAction::Person(action)
    }
}

/// What an agent does to a meeting: `POST /console/meetings/{id}/{action}`, each through
/// `records::meetings` (`cancel`, `set_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeetingAction {
    Cancel,
    Completed,
    NoShow,
}

impl MeetingAction {
    const ALL: [(&'static str, MeetingAction); 3] = [
        ("cancel", MeetingAction::Cancel),
        ("completed", MeetingAction::Completed),
        ("no-show", MeetingAction::NoShow),
    ];

    pub fn segment(self) -> &'static str {
        MeetingAction::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("", |(s, _)| s)
    }

    fn parse(segment: &str) -> Option<MeetingAction> {
        MeetingAction::ALL
            .iter()
            .find(|(s, _)| *s == segment)
            .map(|(_, a)| *a)
    }
}

/// What an admin does on the settings page: `POST /console/settings/{action}`, each
/// handled by its section (`console::settings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsAction {
    SaveOrg,
    AddPerson,
    SetRole,
    DisablePerson,
    CreateKey,
    RevokeKey,
    TestAssistant,
    SendTest,
    RetryDelivery,
    AddWebhook,
    RemoveWebhook,
    SaveAssistant,
    SaveProviders,
    SaveConsent,
    SaveCalendar,
    DeleteCalendar,
    TestCalendar,
    RotateFeed,
    SaveWebchat,
}

impl SettingsAction {
    /// Every action by its path segment.
    const ALL: [(&'static str, SettingsAction); 19] = [
        ("assistant", SettingsAction::SaveAssistant),
        ("providers", SettingsAction::SaveProviders),
        ("retry-delivery", SettingsAction::RetryDelivery),
        ("webhooks", SettingsAction::AddWebhook),
        ("remove-webhook", SettingsAction::RemoveWebhook),
        ("assistant-test", SettingsAction::TestAssistant),
        ("send-test", SettingsAction::SendTest),
        ("organization", SettingsAction::SaveOrg),
        ("consent", SettingsAction::SaveConsent),
        ("people", SettingsAction::AddPerson),
        ("role", SettingsAction::SetRole),
        ("disable", SettingsAction::DisablePerson),
        ("keys", SettingsAction::CreateKey),
        ("revoke", SettingsAction::RevokeKey),
        ("calendar", SettingsAction::SaveCalendar),
        ("delete-calendar", SettingsAction::DeleteCalendar),
        ("calendar-test", SettingsAction::TestCalendar),
        ("rotate-feed", SettingsAction::RotateFeed),
        ("webchat", SettingsAction::SaveWebchat),
    ];

    pub fn segment(self) -> &'static str {
        SettingsAction::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("", |(s, _)| s)
    }

    fn parse(segment: &str) -> Option<SettingsAction> {
        SettingsAction::ALL
            .iter()
            .find(|(s, _)| *s == segment)
            .map(|(_, a)| *a)
    }

    /// The settings page the action's form is on, which it returns to.
    pub fn section(self) -> SettingsSection {
        match self {
            SettingsAction::SaveOrg => SettingsSection::Organization,
            SettingsAction::SaveProviders | SettingsAction::SendTest => SettingsSection::Providers,
            SettingsAction::SaveAssistant | SettingsAction::TestAssistant => {
                SettingsSection::Assistant
            }
            SettingsAction::AddWebhook
            | SettingsAction::RemoveWebhook
            | SettingsAction::RetryDelivery => SettingsSection::Webhooks,
            SettingsAction::CreateKey | SettingsAction::RevokeKey => SettingsSection::Keys,
            SettingsAction::AddPerson | SettingsAction::SetRole | SettingsAction::DisablePerson => {
                SettingsSection::People
            }
            SettingsAction::SaveConsent => SettingsSection::Consent,
            SettingsAction::SaveWebchat => SettingsSection::Webchat,
            SettingsAction::SaveCalendar
            | SettingsAction::DeleteCalendar
            | SettingsAction::TestCalendar
            | SettingsAction::RotateFeed => SettingsSection::Calendars,
        }
    }
}

/// A page of Settings (admins): `GET /console/settings/{section}`, one section each,
/// reached by the settings' sub-navigation; `/console/settings` is the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsSection {
    Organization,
    Providers,
    Assistant,
    Webhooks,
    Keys,
    People,
    Consent,
    Calendars,
    Notifications,
    Webchat,
}

impl SettingsSection {
    /// Every section in the sub-navigation's order, with its path segment and title.
    pub const ALL: [(&'static str, &'static str, SettingsSection); 10] = [
        (
            "organization",
            "Organization",
            SettingsSection::Organization,
        ),
        ("providers", "Providers", SettingsSection::Providers),
        ("assistant", "Assistant", SettingsSection::Assistant),
        ("webhooks", "Webhooks", SettingsSection::Webhooks),
        ("keys", "API keys", SettingsSection::Keys),
        ("people", "People", SettingsSection::People),
        ("consent", "Consent", SettingsSection::Consent),
        ("calendars", "Calendars", SettingsSection::Calendars),
        (
            "notifications",
            "Notification emails",
            SettingsSection::Notifications,
        ),
        ("webchat", "Web chat", SettingsSection::Webchat),
    ];

    /// The section `/console/settings` shows.
    pub const FIRST: SettingsSection = SettingsSection::Organization;

    pub fn segment(self) -> &'static str {
        SettingsSection::ALL
            .iter()
            .find(|(_, _, s)| *s == self)
            .map_or("", |(segment, _, _)| segment)
    }

    /// The section's name in the sub-navigation and the page's title.
    pub fn title(self) -> &'static str {
        SettingsSection::ALL
            .iter()
            .find(|(_, _, s)| *s == self)
            .map_or("", |(_, title, _)| title)
    }

    /// The section's page: `/console/settings/{segment}`.
    pub fn path(self) -> String {
        format!("/console/settings/{}", self.segment())
    }

    fn parse(segment: &str) -> Option<SettingsSection> {
        SettingsSection::ALL
            .iter()
            .find(|(s, _, _)| *s == segment)
            .map(|(_, _, section)| *section)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page<'a> {
    /// `GET /`: to the console.
    Root,
    /// `GET /console/`: to the inbox.
    Home,
    /// An embedded file: `GET /console/assets/{name}`.
    Asset(&'a str),
    Login,
    SignIn,
    SignOut,
    /// The first run's page (`/console/setup?token=…`) and its form's POST: open pages.
    Setup,
    CreateFirstAdmin,
    Inbox,
    /// The live stream (Server-Sent Events) of an open page.
    Events,
    Leads,
    LeadsCsv,
    Lead(&'a str),
    /// A lead's consent record as CSV (`consent::csv`), for a dispute.
    LeadConsentCsv(&'a str),
    LeadAction(&'a str, LeadAction),
    Campaigns,
    Campaign(&'a str),
    /// The organization's meetings by day, filtered by calendar and status.
    Meetings,
    /// "Cancel meeting", "Completed", "No-show".
    MeetingAction(&'a str, MeetingAction),
    /// A meeting's open times of a day (GET) and its move to one of them (POST).
    Reschedule(&'a str),
    RescheduleMeeting(&'a str),
    /// A lead's meetings and "Book a meeting": a calendar's open times of a day (GET)
    /// and the booking of one (POST).
    LeadMeetings(&'a str),
    BookMeeting(&'a str),
    /// The profile editor (admins): a profile's (`Some`) or a new one's; its form posts
    /// back to the same path.
    EditCampaign(Option<&'a str>),
    EditCampaignPost(Option<&'a str>),
    /// "Pause campaign" (`true`) or "Resume campaign" (admins).
    PauseCampaign(&'a str, bool),
    /// A page of Settings, one section each.
    Settings(SettingsSection),
    SettingsAction(SettingsAction),
    /// The import page: the upload form (GET), an upload and its preview (POST,
    /// multipart), a preview again or the import (`Run`), a report's refused rows.
    Import,
    ImportUpload,
    ImportRun,
    /// "Discard" on a waiting upload.
    ImportDiscard,
    /// An upload's preview (after the upload's or a "Preview again"'s redirect), and
    /// an import's report (after the import's).
    ImportPreview(&'a str),
    ImportDone(&'a str),
    ImportRefused(&'a str),
    /// The person's own notification setting and the organization's recent ones.
    Notifications,
    SetNotifications,
    /// "Add lead": its form (GET) and the lead created (POST).
    NewLead,
    CreateLead,
    /// The bulk "Add to campaign": its confirmation, the job created, its page.
    EnrolmentNew,
    EnrolmentCreate,
    Enrolment(&'a str),
    /// The inbox's "Web chat" channel: the visitors' chats, one chat, and a person's
    /// "Take over" (`false`) or reply (`true`).
    Webchats,
    Webchat(&'a str),
    WebchatAction(&'a str, bool),
    /// "Try this change": a replay of the campaign editor's form, its progress and results.
    Replay(&'a str),
}

impl Page<'_> {
    /// The least role a signed-in person needs (open pages: viewer, unused).
    pub fn role(&self) -> Role {
        match self {
            Page::Root
            | Page::Home
            | Page::Asset(_)
            | Page::Login
            | Page::SignIn
            | Page::SignOut
            | Page::Setup
            | Page::CreateFirstAdmin
            | Page::Inbox
            | Page::Events
            | Page::Leads
            | Page::Lead(_)
            | Page::LeadConsentCsv(_)
            | Page::Campaigns
            | Page::Campaign(_)
            | Page::Meetings
            | Page::Webchats
            | Page::Webchat(_)
            | Page::LeadMeetings(_) => Role::Viewer,
            // "Suggest a reply" drafts a message: an agent's work, like sending it.
            Page::LeadsCsv
            | Page::LeadAction(_, _)
            | Page::Notifications
            | Page::SetNotifications
            | Page::Import
            | Page::ImportUpload
            | Page::ImportRun
            | Page::ImportDiscard
            | Page::ImportRefused(_)
            | Page::ImportPreview(_)
            | Page::ImportDone(_)
            | Page::NewLead
            | Page::CreateLead
            | Page::EnrolmentNew
            | Page::EnrolmentCreate
            | Page::Enrolment(_)
            | Page::MeetingAction(_, _)
            | Page::Reschedule(_)
            | Page::RescheduleMeeting(_)
            | Page::BookMeeting(_)
            | Page::WebchatAction(_, _) => Role::Agent,
            Page::Settings(_)
            | Page::SettingsAction(_)
            | Page::PauseCampaign(_, _)
            | Page::EditCampaign(_)
            | Page::EditCampaignPost(_)
            | Page::Replay(_) => Role::Admin,
        }
    }

    /// A short name for metrics, without ids.
    pub fn name(&self) -> &'static str {
        match self {
            Page::Root => "console_root",
            Page::Home => "console_home",
            Page::Asset(_) => "console_asset",
            Page::Login => "console_login",
            Page::SignIn => "console_sign_in",
            Page::SignOut => "console_sign_out",
            Page::Setup => "console_setup",
            Page::CreateFirstAdmin => "console_create_first_admin",
            Page::Inbox => "console_inbox",
            Page::Events => "console_events",
            Page::Leads => "console_leads",
            Page::NewLead => "console_new_lead",
            Page::CreateLead => "console_create_lead",
            Page::LeadsCsv => "console_leads_csv",
            Page::Lead(_) => "console_lead",
            Page::LeadConsentCsv(_) => "console_lead_consent_csv",
            Page::LeadAction(_, _) => "console_lead_action",
            Page::Campaigns => "console_campaigns",
            Page::Campaign(_) => "console_campaign",
            Page::Meetings => "console_meetings",
            Page::MeetingAction(_, _) => "console_meeting_action",
            Page::Reschedule(_) => "console_reschedule",
            Page::RescheduleMeeting(_) => "console_reschedule_meeting",
            Page::LeadMeetings(_) => "console_lead_meetings",
            Page::BookMeeting(_) => "console_book_meeting",
            Page::PauseCampaign(_, _) => "console_pause_campaign",
            Page::Webchats => "console_webchats",
            Page::Webchat(_) => "console_webchat",
            Page::WebchatAction(_, _) => "console_webchat_action",
            Page::EditCampaign(_) => "console_edit_campaign",
            Page::EditCampaignPost(_) => "console_save_campaign",
            Page::Settings(_) => "console_settings",
            Page::SettingsAction(_) => "console_settings_action",
            Page::Notifications => "console_notifications",
            Page::Import => "console_import",
            Page::ImportUpload => "console_import_upload",
            Page::ImportRun => "console_import_run",
            Page::ImportDiscard => "console_import_discard",
            Page::ImportRefused(_) => "console_import_refused",
            Page::ImportPreview(_) => "console_import_preview",
            Page::ImportDone(_) => "console_import_done",
            Page::SetNotifications => "console_set_notifications",
            Page::EnrolmentNew => "console_enrolment_new",
            Page::EnrolmentCreate => "console_enrolment_create",
            Page::Enrolment(_) => "console_enrolment",
            Page::Replay(_) => "console_replay",
        }
    }
}

/// `path` with each segment percent-decoded (a profile's name may hold `"`, `é` or
/// `?`); `None`, so no page, when a segment is not UTF-8 or decodes to a `/`.
pub fn decoded(path: &str) -> Option<String> {
    let segments: Option<Vec<String>> = path
        .split('/')
        .map(|raw| {
            let segment = percent_encoding::percent_decode_str(raw)
                .decode_utf8()
                .ok()?;
            (!segment.contains('/')).then(|| segment.into_owned())
        })
        .collect();
    segments.map(|s| s.join("/"))
}

/// The characters a path segment escapes: all but letters, digits and `-._~`.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A campaign's page, `/console/campaigns/{profile}`, its name percent-encoded; `tail`
/// follows it (`/edit`, `/pause`, or nothing).
pub fn campaign_path(name: &str, tail: &str) -> String {
    format!(
        "/console/campaigns/{}{tail}",
        percent_encoding::utf8_percent_encode(name, SEGMENT)
    )
}

/// The page of `method` and `path` (already [`decoded`]).
pub fn route<'a>(method: &Method, path: &'a str) -> Result<Page<'a>> {
    let not_found = || Error::NotFound("Not found".into());
    if path == "/" {
        return get(method, Page::Root);
    }
    if path == super::assets::FAVICON_PATH {
        return get(method, Page::Asset(path));
    }
    let rest = path
        .strip_prefix("/console")
        .ok_or_else(not_found)?
        .trim_start_matches('/');
    let segments: Vec<&str> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split('/').collect()
    };
    match segments.as_slice() {
        [] => get(method, Page::Home),
        ["assets", name] => get(method, Page::Asset(name)),
        ["login"] => pick(method, Page::Login, Some(Page::SignIn)),
        ["logout"] => post(method, Page::SignOut),
        ["setup"] => pick(method, Page::Setup, Some(Page::CreateFirstAdmin)),
        ["inbox"] => get(method, Page::Inbox),
        ["events"] => get(method, Page::Events),
        ["leads"] => get(method, Page::Leads),
        ["new-lead"] => pick(method, Page::NewLead, Some(Page::CreateLead)),
        ["leads.csv"] => get(method, Page::LeadsCsv),
        ["leads", id] if valid_id(id) => get(method, Page::Lead(id)),
        ["leads", id, "consent.csv"] if valid_id(id) => get(method, Page::LeadConsentCsv(id)),
        ["leads", id, "meetings"] if valid_id(id) => {
            pick(method, Page::LeadMeetings(id), Some(Page::BookMeeting(id)))
        }
        ["leads", id, action] if valid_id(id) => {
            let action = LeadAction::parse(action).ok_or_else(not_found)?;
            post(method, Page::LeadAction(id, action))
        }
        ["campaigns"] => get(method, Page::Campaigns),
        ["campaigns", "new"] => pick(
            method,
            Page::EditCampaign(None),
            Some(Page::EditCampaignPost(None)),
        ),
        ["campaigns", name] => get(method, Page::Campaign(name)),
        ["campaigns", name, "edit"] => pick(
            method,
            Page::EditCampaign(Some(name)),
            Some(Page::EditCampaignPost(Some(name))),
        ),
        ["campaigns", name, "pause"] => post(method, Page::PauseCampaign(name, true)),
        ["campaigns", name, "resume"] => post(method, Page::PauseCampaign(name, false)),
        ["meetings"] => get(method, Page::Meetings),
        ["meetings", id, "reschedule"] if valid_id(id) => pick(
            method,
            Page::Reschedule(id),
            Some(Page::RescheduleMeeting(id)),
        ),
        ["meetings", id, action] if valid_id(id) => {
            let action = MeetingAction::parse(action).ok_or_else(not_found)?;
            post(method, Page::MeetingAction(id, action))
        }
        ["settings"] => get(method, Page::Settings(SettingsSection::FIRST)),
        ["settings", segment] => match (
            SettingsSection::parse(segment),
            SettingsAction::parse(segment),
        ) {
            (Some(section), action) => pick(
                method,
                Page::Settings(section),
                action.map(Page::SettingsAction),
            ),
            (None, Some(action)) => post(method, Page::SettingsAction(action)),
            (None, None) => Err(not_found()),
        },
        ["import"] => pick(method, Page::Import, Some(Page::ImportUpload)),
        ["import", "run"] => post(method, Page::ImportRun),
        ["import", "discard"] => post(method, Page::ImportDiscard),
        ["import", token, "refused.csv"] => get(method, Page::ImportRefused(token)),
        ["import", token] if crate::domain::import::files::valid_token(token) => {
            get(method, Page::ImportPreview(token))
        }
        ["import", token, "done"] if crate::domain::import::files::valid_token(token) => {
            get(method, Page::ImportDone(token))
        }
        ["enrolments"] => post(method, Page::EnrolmentCreate),
        ["enrolments", "new"] => get(method, Page::EnrolmentNew),
        ["enrolments", id] if valid_id(id) => get(method, Page::Enrolment(id)),
        ["replays", id] if valid_id(id) => get(method, Page::Replay(id)),
        ["notifications"] => pick(method, Page::Notifications, Some(Page::SetNotifications)),
        ["webchats"] => get(method, Page::Webchats),
        ["webchats", id] if valid_id(id) => get(method, Page::Webchat(id)),
        ["webchats", id, "take-over"] if valid_id(id) => {
            post(method, Page::WebchatAction(id, false))
        }
        ["webchats", id, "reply"] if valid_id(id) => post(method, Page::WebchatAction(id, true)),
        _ => Err(not_found()),
    }
}

/// Lead ids in console paths are client ids (`ids::is_valid_client_id`): no escaping
/// is needed to put them in a path, and anything else is no lead.
fn valid_id(id: &str) -> bool {
    crate::ids::is_valid_client_id(id)
}

fn get<'a>(method: &Method, page: Page<'a>) -> Result<Page<'a>> {
    pick(method, page, None)
}

fn post<'a>(method: &Method, page: Page<'a>) -> Result<Page<'a>> {
    if method == Method::POST {
        return Ok(page);
    }
    Err(Error::MethodNotAllowed(
        Allowed::default().with(&Method::POST),
    ))
}

/// `page` for GET (and HEAD), `on_post` for POST when the path takes one.
fn pick<'a>(method: &Method, page: Page<'a>, on_post: Option<Page<'a>>) -> Result<Page<'a>> {
    if method == Method::GET || method == Method::HEAD {
        return Ok(page);
    }
    match on_post {
        Some(posted) if method == Method::POST => Ok(posted),
        _ => {
            let mut allowed = Allowed::default().with(&Method::GET);
            if on_post.is_some() {
                allowed = allowed.with(&Method::POST);
            }
            Err(Error::MethodNotAllowed(allowed))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn campaign_paths_encode_their_name_and_decode_back() {
        for name in ["say\"hi\"", "café", "what?", "50%", "plain-name_1.x~"] {
            let path = campaign_path(name, "/edit");
            assert!(path.is_ascii() && !path[1..].contains(['?', '"']), "{path}");
            let decoded = decoded(&path).unwrap();
            assert_eq!(
                route(&Method::GET, &decoded).unwrap(),
                Page::EditCampaign(Some(name))
            );
        }
        assert_eq!(
            campaign_path("plain-name_1.x~", ""),
            "/console/campaigns/plain-name_1.x~"
        );
        assert_eq!(decoded("/console/campaigns/a%2Fb"), None, "no new segment");
        assert_eq!(decoded("/console/campaigns/%FF"), None, "not UTF-8");
    }

    #[test]
    fn console_paths_route_by_method() {
        assert_eq!(route(&Method::GET, "/").unwrap(), Page::Root);
        assert_eq!(route(&Method::GET, "/console/").unwrap(), Page::Home);
        assert_eq!(
            route(&Method::POST, "/console/login").unwrap(),
            Page::SignIn
        );
        assert_eq!(route(&Method::HEAD, "/console/leads").unwrap(), Page::Leads);
        assert_eq!(
            route(&Method::POST, "/console/leads/l-1/take-over").unwrap(),
            Page::LeadAction("l-1", LeadAction::Person(PersonAction::TakeOver))
        );
        assert!(matches!(
            route(&Method::GET, "/console/leads/l-1/take-over"),
            Err(Error::MethodNotAllowed(_))
        ));
        assert!(matches!(
            route(&Method::POST, "/console/leads/l-1/explode"),
            Err(Error::NotFound(_))
        ));
        assert!(matches!(
            route(&Method::GET, "/consolex"),
            Err(Error::NotFound(_))
        ));
    }

    #[test]
    fn every_lead_action_has_its_own_segment() {
        for (segment, action) in LeadAction::ALL {
            assert_eq!(action.segment(), segment);
            assert_eq!(LeadAction::parse(segment), Some(action));
        }
    }

    #[test]
    fn every_settings_section_is_a_page_and_settings_lands_on_the_first() {
        for (segment, _, section) in SettingsSection::ALL {
            assert_eq!(section.segment(), segment);
            assert_eq!(
                route(&Method::GET, &format!("/console/settings/{segment}")).unwrap(),
                Page::Settings(section)
            );
        }
        assert_eq!(
            route(&Method::GET, "/console/settings").unwrap(),
            Page::Settings(SettingsSection::FIRST)
        );
        for (_, action) in SettingsAction::ALL {
            assert!(SettingsSection::ALL
                .iter()
                .any(|(_, _, s)| *s == action.section()));
        }
        assert!(route(&Method::GET, "/console/settings/role").is_err());
    }

    #[test]
    fn meeting_paths_route_by_method() {
        for (segment, action) in MeetingAction::ALL {
            assert_eq!(action.segment(), segment);
            assert_eq!(
                route(&Method::POST, &format!("/console/meetings/m-1/{segment}")).unwrap(),
                Page::MeetingAction("m-1", action)
            );
        }
        assert_eq!(
            route(&Method::GET, "/console/meetings/m-1/reschedule").unwrap(),
            Page::Reschedule("m-1")
        );
        assert_eq!(
            route(&Method::POST, "/console/leads/l-1/meetings").unwrap(),
            Page::BookMeeting("l-1")
        );
        assert!(route(&Method::GET, "/console/meetings/m-1/cancel").is_err());
    }

    #[test]
    fn every_settings_action_has_its_own_segment() {
        for (segment, action) in SettingsAction::ALL {
            assert_eq!(action.segment(), segment);
            assert_eq!(SettingsAction::parse(segment), Some(action));
            assert_eq!(
                route(&Method::POST, &format!("/console/settings/{segment}")).unwrap(),
                Page::SettingsAction(action)
            );
        }
    }
}
