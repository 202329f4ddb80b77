//! `/console/settings` (admins): the organization's settings (saved exactly as
//! `PATCH /v1/org` saves them, each refusal shown beside its field), the people (added
//! with a password shown once, a role changed, disabled), the API keys (created with
//! the key shown once, revoked), the webhook endpoints (added with their signing secret
//! shown once, removed; their recent deliveries retried) and the notification emails
//! sent.

use hyper::{Response, StatusCode};
use maud::{html, Markup};
use serde_json::{json, Map, Value};

use super::form::Form;
use super::layout;
use super::notifications::{notification_list, NOTIFICATIONS_SHOWN};
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::channel::Channel;
use crate::domain::people::{passwords, users};
use crate::domain::records::{auth, webhook_endpoints};
use crate::domain::settings::org;
use crate::error::{Error, Result};
use crate::store::rows::{Role, Scope};
use crate::store::Reader;
use crate::webhooks::WebhookEvent;

/// Deliveries shown per webhook endpoint.
const RECENT_DELIVERIES: usize = 10;

/// The days of the week as the form shows them.
const WEEKDAY_LABELS: [(&str, &str); 7] = [
    ("mon", "Mon"),
    ("tue", "Tue"),
    ("wed", "Wed"),
    ("thu", "Thu"),
    ("fri", "Fri"),
    ("sat", "Sat"),
    ("sun", "Sun"),
];

/// What a settings POST does: `POST /console/settings/{segment}`.
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
}

impl SettingsAction {
    pub const ALL: [(&'static str, SettingsAction); 13] = [
        ("assistant", SettingsAction::SaveAssistant),
        ("providers", SettingsAction::SaveProviders),
        ("retry-delivery", SettingsAction::RetryDelivery),
        ("webhooks", SettingsAction::AddWebhook),
        ("remove-webhook", SettingsAction::RemoveWebhook),
        ("assistant-test", SettingsAction::TestAssistant),
        ("send-test", SettingsAction::SendTest),
        ("organization", SettingsAction::SaveOrg),
        ("people", SettingsAction::AddPerson),
        ("role", SettingsAction::SetRole),
        ("disable", SettingsAction::DisablePerson),
        ("keys", SettingsAction::CreateKey),
        ("revoke", SettingsAction::RevokeKey),
    ];

    pub fn parse(segment: &str) -> Option<SettingsAction> {
        Self::ALL
            .iter()
            .find(|(s, _)| *s == segment)
            .map(|(_, a)| *a)
    }
}

/// What the page shows besides the settings: a notice, a secret shown once, or a
/// refusal beside a field of the organization form (with what was typed).
#[derive(Debug, Default)]
struct Shown {
    notice: Option<String>,
    secret: Option<(String, String)>,
    field_error: Option<(String, String)>,
    typed: Option<Form>,
}

/// `GET /console/settings`.
pub fn page(state: &AppState, visitor: &Visitor, query: &str) -> Result<Response<Body>> {
    let shown = Shown {
        notice: (query == "saved=1").then(|| "Saved.".to_string()),
        ..Shown::default()
    };
    render(state, visitor, StatusCode::OK, shown)
}

fn render(
    state: &AppState,
    visitor: &Visitor,
    status: StatusCode,
    shown: Shown,
) -> Result<Response<Body>> {
    let org_id = visitor.org();
    let read = state.store.read()?;
    let record = read
        .org(org_id)?
        .ok_or_else(|| Error::Internal("the visitor's organization is missing".into()))?;
    let engine = read.engine_settings(org_id)?;
    let people = users::list(&read, Some(org_id))?;
    let keys = auth::keys_of(&read, org_id)?;
    let sent = read.notifications(org_id, NOTIFICATIONS_SHOWN)?;
    let zone = engine.time_zone.clone();
    let mut hooks = Vec::new();
    for endpoint in read
        .all_webhook_endpoints()?
        .into_iter()
        .filter(|e| e.org_id == org_id)
    {
        let recent = read.recent_deliveries(&endpoint.id, RECENT_DELIVERIES)?;
        hooks.push((endpoint, recent));
    }
    // The form shows what was typed after a refusal, else what is saved.
    let value = |name: &str, saved: &str| -> String {
        match &shown.typed {
            Some(form) => form.get(name).unwrap_or_default().to_string(),
            None => saved.to_string(),
        }
    };
    let (quiet_start, quiet_end) = record.settings.quiet_hours.clone().unwrap_or_default();
    let coupled = match &shown.typed {
        Some(form) => form.get("coupled") == Some("on"),
        None => record.settings.sms_voice_opt_out_coupled,
    };
    let error_for = |field: &str| -> Option<&str> {
        shown
            .field_error
            .as_ref()
            .filter(|(f, _)| f == field)
            .map(|(_, m)| m.as_str())
    };
    let field = |id: &str, label: &str, api: &str, current: String, hint: &str| -> Markup {
        let error = error_for(api);
        html! {
            div {
                label for=(id) { (label) }
                input id=(id) type="text" name=(id) value=(current)
                    aria-invalid=[error.map(|_| "true")] aria-describedby=[error.map(|_| format!("{id}-error"))];
                @if let Some(message) = error { p.field-error id={ (id) "-error" } { (message) } }
                @else if !hint.is_empty() { p.muted { (hint) } }
            }
        }
    };
    let markup = layout::page(
        "Settings",
        Some(visitor),
        html! {
            h1 { "Settings" }
            @if let Some(notice) = &shown.notice { p.notice role="status" { (notice) } }
            @if let Some((_, message)) = &shown.field_error {
                p.field-error role="alert" { "Not saved: " (message) }
            }
            @if let Some((what, secret)) = &shown.secret {
                div.notice role="status" {
                    p { (what) " It is shown only now: copy it." }
                    p { code.secret { (secret) } }
                }
            }
            section.panel aria-labelledby="org-heading" {
                h2 #org-heading { "Organization" }
                p.muted { "Name: " (record.name) }
                form.stack method="post" action="/console/settings/organization" {
                    (layout::csrf_field(visitor))
                    (field("business-name", "Business name", "business.name", value("business-name", &engine.business_name), "How texts name the business."))
                    (field("help-text", "Help text", "business.helpText", value("help-text", &engine.help_text), "The answer to HELP."))
                    (field("time-zone", "Time zone", "timeZone", value("time-zone", &engine.time_zone), "An IANA name such as America/Chicago."))
                    (field("default-country", "Default country", "defaultCountry", value("default-country", &engine.default_country), "Imports read phones without + in this country (US, GB, ...)."))
                    (field("quiet-start", "Quiet hours from", "quietHours", value("quiet-start", &quiet_start), "HH:MM in the lead's time zone; both empty: none."))
                    (field("quiet-end", "Quiet hours until", "quietHours.end", value("quiet-end", &quiet_end), ""))
                    fieldset.choice {
                        legend { "Days follow-ups run" }
                        @for (day, label) in WEEKDAY_LABELS {
                            @let on = match &shown.typed {
                                Some(form) => form.all("day").any(|d| d == day),
                                None => engine.follow_up_days.is_empty() || engine.follow_up_days.iter().any(|d| d == day),
                            };
                            span.pair {
                                input id={ "day-" (day) } type="checkbox" name="day" value=(day) checked[on];
                                label for={ "day-" (day) } { (label) }
                            }
                            " "
                        }
                        @if let Some(message) = error_for("followUpDays") { p.field-error { (message) } }
                    }
                    (field("holidays", "Holidays", "holidays", value("holidays", &engine.holidays.join(" ")), "Dates without follow-ups, YYYY-MM-DD, separated by spaces."))
                    div {
                        input #coupled type="checkbox" name="coupled" value="on" checked[coupled];
                        " "
                        label for="coupled" { "An SMS opt-out also opts out of calls, and the reverse" }
                    }
                    div.actions { button type="submit" { "Save" } }
                }
            }
            section.panel aria-labelledby="assistant-heading" {
                h2 #assistant-heading { "Assistant" }
                @let a = engine.assistant.as_ref();
                form.stack method="post" action="/console/settings/assistant" {
                    (layout::csrf_field(visitor))
                    (field("assistant-url", "Model server URL", "assistant.baseUrl", value("assistant-url", a.map_or("", |a| a.base_url.as_str())), "An OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1."))
                    (field("assistant-model", "Model", "assistant.model", value("assistant-model", a.map_or("", |a| a.model.as_str())), ""))
                    div {
                        label for="assistant-key" { "API key" }
                        input #assistant-key type="password" name="assistant-key" autocomplete="off";
                        p.muted { @if a.is_some_and(|a| a.api_key.is_some()) { "Set; leave empty to keep it." } @else { "None." } }
                    }
                    (field("assistant-timeout", "Timeout (ms)", "assistant.timeoutMs", value("assistant-timeout", &a.map_or(String::new(), |a| a.timeout_ms.to_string())), ""))
                    div.actions {
                        button type="submit" name="op" value="save" { "Save assistant" }
                        @if a.is_some() { button.danger type="submit" name="op" value="remove" { "Remove the assistant" } }
                    }
                }
                @if a.is_some() {
                    form method="post" action="/console/settings/assistant-test" {
                        (layout::csrf_field(visitor))
                        button.secondary type="submit" { "Test connection" }
                    }
                }
            }
            section.panel aria-labelledby="providers-heading" {
                h2 #providers-heading { "Providers" }
                form.stack method="post" action="/console/settings/providers" {
                    (layout::csrf_field(visitor))
                    @for (channel, label, current) in [("sms", "SMS", &engine.sms), ("voice", "Voice", &engine.voice), ("email", "Email", &engine.email)] {
                        fieldset.provider {
                            legend { (label) ": " (provider_words(current)) }
                            (provider_fields(channel, label, current, &error_for))
                        }
                    }
                    div.actions { button type="submit" { "Save providers" } }
                }
                form.stack method="post" action="/console/settings/send-test" {
                    (layout::csrf_field(visitor))
                    div {
                        label for="test-channel" { "Channel to test" }
                        select #test-channel name="channel" { option value="sms" { "SMS" } option value="email" { "Email" } }
                    }
                    div { label for="test-to" { "Send the test to" } input #test-to type="text" name="to" placeholder="+15125550100 or you@example.com" required; }
                    div.actions { button.secondary type="submit" { "Send test" } }
                }
            }
            section.panel aria-labelledby="people-heading" {
                h2 #people-heading { "People" }
                div.table-wrap {
                    table {
                        thead { tr { th scope="col" { "Name" } th scope="col" { "Email" } th scope="col" { "Role" } th scope="col" { "Status" } th scope="col" { "Actions" } } }
                        tbody {
                            @for (i, u) in people.iter().enumerate() {
                                tr {
                                    td { (u.name) } td { (u.email) }
                                    td { (u.role.as_str()) }
                                    td { @if u.disabled_at.is_some() { "Disabled" } @else { "Active" } }
                                    td {
                                        @if u.disabled_at.is_none() && u.id != visitor.user.id {
                                            form.inline method="post" action="/console/settings/role" {
                                                (layout::csrf_field(visitor))
                                                input type="hidden" name="email" value=(u.email);
                                                label.visually-hidden for={ "role-" (i) } { "Role of " (u.name) }
                                                select id={ "role-" (i) } name="role" {
                                                    @for r in ["viewer", "agent", "admin"] {
                                                        option value=(r) selected[u.role.as_str() == r] { (r) }
                                                    }
                                                }
                                                " " button.secondary type="submit" { "Change role" }
                                            }
                                            form.inline method="post" action="/console/settings/disable" {
                                                (layout::csrf_field(visitor))
                                                input type="hidden" name="email" value=(u.email);
                                                button.danger type="submit" { "Disable " (u.name) }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                h3 { "Add a person" }
                form.stack method="post" action="/console/settings/people" {
                    (layout::csrf_field(visitor))
                    div { label for="person-email" { "Email" } input #person-email type="email" name="email" required; }
                    div { label for="person-name" { "Name" } input #person-name type="text" name="name" required; }
                    div {
                        label for="person-role" { "Role" }
                        select #person-role name="role" {
                            option value="viewer" { "viewer" } option value="agent" selected { "agent" } option value="admin" { "admin" }
                        }
                    }
                    div.actions { button type="submit" { "Add person" } }
                }
            }
            section.panel aria-labelledby="keys-heading" {
                h2 #keys-heading { "API keys" }
                @if keys.is_empty() { p.muted { "No key yet." } } @else {
                    div.table-wrap {
                        table {
                            thead { tr { th scope="col" { "Name" } th scope="col" { "Scope" } th scope="col" { "Created" } th scope="col" { "State" } th scope="col" { "Actions" } } }
                            tbody {
                                @for k in &keys {
                                    tr {
                                        td { (k.name) } td { (k.scope.as_str()) } td { (layout::time(k.created_at, &zone)) }
                                        td { @if k.revoked_at.is_some() { "Revoked" } @else { "Active" } }
                                        td {
                                            @if k.revoked_at.is_none() {
                                                form.inline method="post" action="/console/settings/revoke" {
                                                    (layout::csrf_field(visitor))
                                                    input type="hidden" name="id" value=(k.id);
                                                    button.danger type="submit" { "Revoke " (if k.name.is_empty() { k.id.as_str() } else { k.name.as_str() }) }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                h3 { "Create a key" }
                form.stack method="post" action="/console/settings/keys" {
                    (layout::csrf_field(visitor))
                    div { label for="key-name" { "Key name" } input #key-name type="text" name="name" required; }
                    div {
                        label for="key-scope" { "Scope" }
                        select #key-scope name="scope" {
                            option value="read" { "read" } option value="write" selected { "write" } option value="admin" { "admin" }
                        }
                    }
                    div.actions { button type="submit" { "Create key" } }
                }
            }
            section.panel aria-labelledby="webhooks-heading" {
                h2 #webhooks-heading { "Webhooks" }
                @if hooks.is_empty() { p.muted { "No endpoint yet." } }
                @for (endpoint, recent) in &hooks {
                    h3 { (endpoint.url) @if endpoint.disabled_at.is_some() { " " span.badge.attention { "Disabled: " (endpoint.disabled_reason) } } }
                    p.muted {
                        @if endpoint.events.is_empty() { "Every event" } @else { (endpoint.events.join(", ")) }
                    }
                    form.inline method="post" action="/console/settings/remove-webhook" data-confirm={ "Remove the endpoint " (endpoint.url) "?" } {
                        (layout::csrf_field(visitor))
                        input type="hidden" name="id" value=(endpoint.id);
                        button.secondary type="submit" { "Remove endpoint " (endpoint.url) }
                    }
                    @if recent.is_empty() { p.muted { "No delivery yet." } } @else {
                        div.table-wrap {
                            table {
                                thead { tr { th scope="col" { "Event" } th scope="col" { "Created" } th scope="col" { "State" } th scope="col" { "Last attempt" } th scope="col" { "Actions" } } }
                                tbody {
                                    @for d in recent {
                                        tr {
                                            td { (d.event) } td { (layout::time(d.created_at, &zone)) }
                                            td { (format!("{:?}", d.state).to_lowercase()) " (" (d.attempts.len()) " attempts)" }
                                            td { @if let Some(a) = d.attempts.last() {
                                                @match a.status { Some(status) => { "HTTP " (status) }, None => { (a.error) } }
                                            } }
                                            td {
                                                @if d.state != crate::store::rows::DeliveryState::Delivered {
                                                    form.inline method="post" action="/console/settings/retry-delivery" {
                                                        (layout::csrf_field(visitor))
                                                        input type="hidden" name="endpoint" value=(endpoint.id);
                                                        input type="hidden" name="delivery" value=(d.id);
                                                        button.secondary type="submit" { "Retry" }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                h3 { "Add an endpoint" }
                form.stack method="post" action="/console/settings/webhooks" {
                    (layout::csrf_field(visitor))
                    div {
                        label for="webhook-url" { "Endpoint URL" }
                        input #webhook-url type="url" name="url" required placeholder="https://crm.example/hooks/engaged";
                    }
                    fieldset.choice {
                        legend { "Events (none checked: every event)" }
                        @for event in WebhookEvent::ALL {
                            span.pair {
                                input id={ "event-" (event.as_str()) } type="checkbox" name="events" value=(event.as_str());
                                label for={ "event-" (event.as_str()) } { (event.as_str()) }
                            }
                            " "
                        }
                    }
                    div.actions { button type="submit" { "Add endpoint" } }
                }
            }
            section.panel #notifications aria-labelledby="notifications-heading" {
                h2 #notifications-heading { "Notifications" }
                (notification_list(&sent, &zone))
            }
        },
    );
    Ok(respond::html(status, markup))
}

/// A provider in words: its kind and where it sends from; secrets never.
fn provider_words(p: &crate::store::rows::ProviderSettings) -> String {
    use crate::store::rows::ProviderSettings;
    match p {
        ProviderSettings::Sandbox { .. } => "Sandbox (nothing leaves this machine)".to_string(),
        ProviderSettings::Smtp(s) => {
            format!("SMTP {}:{} from {} (password set)", s.host, s.port, s.from)
        }
        ProviderSettings::Twilio(t) => {
            format!("Twilio {} from {} (auth token set)", t.account_sid, t.from)
        }
    }
}

/// The fields of one channel's provider: its kind, and the fields of each kind the
/// channel takes (secrets empty: "leave empty to keep").
fn provider_fields<'a>(
    channel: &str,
    label: &str,
    current: &crate::store::rows::ProviderSettings,
    error_for: &dyn Fn(&str) -> Option<&'a str>,
) -> Markup {
    use crate::store::rows::ProviderSettings;
    let id = |f: &str| format!("{channel}-{f}");
    let kind = match current {
        ProviderSettings::Sandbox { .. } => "sandbox",
        ProviderSettings::Smtp(_) => "smtp",
        ProviderSettings::Twilio(_) => "twilio",
    };
    let kinds: &[(&str, &str)] = if channel == "email" {
        &[("sandbox", "Sandbox"), ("smtp", "SMTP")]
    } else {
        &[("sandbox", "Sandbox"), ("twilio", "Twilio")]
    };
    let input = |f: &str, text: &str, val: String, secret: bool| {
        let path = format!("providers.{channel}.{}", f);
        let error = error_for(&path);
        html! {
            div {
                label for=(id(f)) { (text) " (" (label) ")" }
                @if secret {
                    input id=(id(f)) type="password" name=(id(f)) autocomplete="off";
                    p.muted { @if val.is_empty() { "Not set." } @else { "Set; leave empty to keep it." } }
                } @else {
                    input id=(id(f)) type="text" name=(id(f)) value=(val);
                }
                @if let Some(message) = error { p.field-error { (message) } }
            }
        }
    };
    let (sid, from, service, rate, host, port, user, mail_from, set) = match current {
        ProviderSettings::Twilio(t) => (
            t.account_sid.clone(),
            t.from.clone(),
            t.messaging_service_sid.clone(),
            t.rate_per_second.map(|r| r.to_string()).unwrap_or_default(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            "set".to_string(),
        ),
        ProviderSettings::Smtp(m) => (
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            m.host.clone(),
            m.port.to_string(),
            m.username.clone().unwrap_or_default(),
            m.from.clone(),
            m.password
                .as_ref()
                .map(|_| "set".to_string())
                .unwrap_or_default(),
        ),
        ProviderSettings::Sandbox { .. } => Default::default(),
    };
    html! {
        div {
            label for=(id("kind")) { "Kind (" (label) ")" }
            select id=(id("kind")) name=(id("kind")) {
                @for (value, text) in kinds { option value=(value) selected[*value == kind] { (text) } }
            }
            @if let Some(message) = error_for(&format!("providers.{channel}")) { p.field-error { (message) } }
        }
        @if channel == "email" {
            (input("host", "SMTP host", host, false))
            (input("port", "SMTP port", port, false))
            div {
                label for=(id("security")) { "Security (" (label) ")" }
                select id=(id("security")) name=(id("security")) {
                    @let now = match current { ProviderSettings::Smtp(m) => format!("{:?}", m.security).to_lowercase(), _ => "starttls".into() };
                    @for v in ["starttls", "tls", "none"] { option value=(v) selected[now == v] { (v) } }
                }
            }
            (input("username", "SMTP username", user, false))
            (input("password", "SMTP password", set, true))
            (input("from", "From", mail_from, false))
        } @else {
            (input("accountSid", "Account SID", sid, false))
            (input("authToken", "Auth token", set, true))
            (input("from", "From number", from, false))
            (input("messagingServiceSid", "Messaging service SID", service, false))
            (input("ratePerSecond", "Sends per second", rate, false))
        }
    }
}

/// The providers form as `PATCH /v1/org`'s `providers` (every channel: one left out
/// would go back to the sandbox).
fn providers_body(form: &Form) -> Value {
    let mut providers = Map::new();
    for channel in ["sms", "voice", "email"] {
        let get = |f: &str| form.text(&format!("{channel}-{f}")).to_string();
        let kind = get("kind");
        let mut p = Map::new();
        p.insert("kind".into(), json!(kind));
        let mut put = |f: &str, v: Value| {
            p.insert(f.to_string(), v);
        };
        match kind.as_str() {
            "twilio" => {
                for f in ["accountSid", "from", "messagingServiceSid"] {
                    if !get(f).is_empty() {
                        put(f, json!(get(f)));
                    }
                }
                if !get("authToken").is_empty() {
                    put("authToken", json!(get("authToken")));
                }
                if let Ok(rate) = get("ratePerSecond").parse::<f64>() {
                    put("ratePerSecond", json!(rate));
                } else if !get("ratePerSecond").is_empty() {
                    put("ratePerSecond", json!(get("ratePerSecond")));
                }
            }
            "smtp" => {
                put("host", json!(get("host")));
                match get("port").parse::<u64>() {
                    Ok(port) => put("port", json!(port)),
                    Err(_) => put("port", json!(get("port"))),
                }
                put("security", json!(get("security")));
                if !get("username").is_empty() {
                    put("username", json!(get("username")));
                }
                if !get("password").is_empty() {
                    put("password", json!(get("password")));
                }
                put("from", json!(get("from")));
            }
            _ => {}
        }
        providers.insert(channel.to_string(), Value::Object(p));
    }
    Value::Object(providers)
}

/// The organization form as `PATCH /v1/org`'s body: an empty field clears its setting.
fn org_body(form: &Form) -> Map<String, Value> {
    let text = |name: &str| {
        let v = form.text(name);
        if v.is_empty() {
            Value::Null
        } else {
            json!(v)
        }
    };
    let mut body = Map::new();
    let (name, help) = (form.text("business-name"), form.text("help-text"));
    body.insert(
        "business".into(),
        if name.is_empty() && help.is_empty() {
            Value::Null
        } else {
            json!({"name": name, "helpText": help})
        },
    );
    body.insert("timeZone".into(), text("time-zone"));
    body.insert("defaultCountry".into(), text("default-country"));
    let (start, end) = (form.text("quiet-start"), form.text("quiet-end"));
    body.insert(
        "quietHours".into(),
        if start.is_empty() && end.is_empty() {
            Value::Null
        } else {
            json!({"start": start, "end": end})
        },
    );
    body.insert(
        "smsVoiceOptOutCoupled".into(),
        json!(form.get("coupled") == Some("on")),
    );
    let days: Vec<&str> = form.all("day").collect();
    body.insert(
        "followUpDays".into(),
        if days.len() == WEEKDAY_LABELS.len() {
            Value::Null
        } else {
            json!(days)
        },
    );
    let holidays: Vec<&str> = form
        .text("holidays")
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|d| !d.is_empty())
        .collect();
    body.insert("holidays".into(), json!(holidays));
    body
}

/// The API field a refusal names (`Invalid format for field: timeZone`).
fn refused_field(message: &str) -> Option<String> {
    let (_, field) = message.rsplit_once(": ")?;
    Some(field.trim().to_string())
}

/// `POST /console/settings/{action}`.
pub async fn act(
    state: &AppState,
    visitor: &Visitor,
    action: SettingsAction,
    form: Form,
) -> Result<Response<Body>> {
    let caller = visitor.caller();
    let org_id = visitor.org().to_string();
    let store = &state.store;
    let mut shown = Shown::default();
    match action {
        SettingsAction::SaveOrg | SettingsAction::SaveAssistant | SettingsAction::SaveProviders => {
            let body = match action {
                SettingsAction::SaveAssistant if form.text("op") == "remove" => {
                    let mut body = Map::new();
                    body.insert("assistant".into(), Value::Null);
                    body
                }
                SettingsAction::SaveAssistant => {
                    let mut assistant = Map::new();
                    assistant.insert("baseUrl".into(), json!(form.text("assistant-url")));
                    assistant.insert("model".into(), json!(form.text("assistant-model")));
                    if !form.text("assistant-key").is_empty() {
                        assistant.insert("apiKey".into(), json!(form.text("assistant-key")));
                    }
                    let timeout = form.text("assistant-timeout");
                    if !timeout.is_empty() {
                        assistant.insert(
                            "timeoutMs".into(),
                            timeout
                                .parse::<u64>()
                                .map_or_else(|_| json!(timeout), |ms| json!(ms)),
                        );
                    }
                    let mut body = Map::new();
                    body.insert("assistant".into(), Value::Object(assistant));
                    body
                }
                SettingsAction::SaveProviders => {
                    let mut body = Map::new();
                    body.insert("providers".into(), providers_body(&form));
                    body
                }
                _ => org_body(&form),
            };
            let public_url = state.engine.public_url().map(str::to_string);
            let saved = store
                .write(move |tx| {
                    org::update(tx, &caller, body.clone(), public_url.as_deref()).map(drop)
                })
                .await;
            match saved {
                Ok(()) => return Ok(respond::redirect("/console/settings?saved=1")),
                Err(e) if e.is_bad_request() => {
                    let message = e.to_string();
                    let field = refused_field(&message).unwrap_or_default();
                    let field = match field.as_str() {
                        f if f.starts_with("quietHours") => "quietHours".to_string(),
                        _ if message.starts_with("followUpDays") => "followUpDays".to_string(),
                        _ => field,
                    };
                    shown.field_error = Some((field, message));
                    shown.typed = Some(form);
                    return render(state, visitor, StatusCode::BAD_REQUEST, shown);
                }
                Err(e) => return Err(e),
            }
        }
        SettingsAction::AddPerson => {
            let (email, name) = (
                form.text("email").to_string(),
                form.text("name").to_string(),
            );
            let role =
                Role::parse(form.text("role")).ok_or_else(|| Error::invalid_field("role"))?;
            let password = passwords::generate();
            let hashed = password.clone();
            let hash = state.passwords.hash(hashed).await?;
            let shown_email = email.clone();
            let added = store
                .write(move |tx| {
                    users::create(tx, &org_id, &email, &name, role, hash.clone()).map(drop)
                })
                .await;
            match added {
                Ok(()) => {
                    shown.secret = Some((
                        format!("{shown_email} can sign in with this password."),
                        password,
                    ))
                }
                Err(
                    e @ (Error::BadRequest(_) | Error::InvalidField { .. } | Error::Conflict(_)),
                ) => shown.notice = Some(e.to_string()),
                Err(e) => return Err(e),
            }
        }
        SettingsAction::SetRole | SettingsAction::DisablePerson => {
            let email = form.text("email").to_string();
            let role = Role::parse(form.text("role"));
            let disable = action == SettingsAction::DisablePerson;
            let me = visitor.user.id.clone();
            let changed = store
                .write(move |tx| {
                    let user = users::of_org(tx, &org_id, &email)?;
                    if user.id == me {
                        return Err(Error::Conflict(
                            "You cannot change your own role or disable yourself here".into(),
                        ));
                    }
                    if disable {
                        users::disable(tx, &email)
                    } else {
                        users::set_role(
                            tx,
                            &email,
                            role.ok_or_else(|| Error::invalid_field("role"))?,
                        )
                    }
                })
                .await?;
            shown.notice = Some(if disable {
                format!("{} is disabled; their sessions ended.", changed.name)
            } else {
                format!("{} is now {}.", changed.name, changed.role.as_str())
            });
        }
        SettingsAction::CreateKey => {
            let name = form.text("name").to_string();
            let scope =
                Scope::parse(form.text("scope")).ok_or_else(|| Error::invalid_field("scope"))?;
            let (record, key) = store
                .write(move |tx| auth::create_key(tx, &org_id, scope, &name))
                .await?;
            shown.secret = Some((
                format!("The new {} key \"{}\".", record.scope.as_str(), record.name),
                key,
            ));
        }
        SettingsAction::TestAssistant => {
            let turns = [crate::providers::model::protocol::Turn {
                from_lead: true,
                text: "Hello, is anyone there?".into(),
            }];
            let tried = state
                .engine
                .try_assistant(
                    visitor.org(),
                    "Answer in one short sentence.",
                    &turns,
                    Channel::Sms,
                )
                .await?;
            shown.notice = Some(match tried {
                Ok(tried) => format!(
                    "The assistant answered in {} ms: \"{}\"",
                    tried.took.as_millis(),
                    tried.reply
                ),
                Err(reason) => reason,
            });
        }
        SettingsAction::SendTest => {
            let channel = match form.text("channel") {
                "email" => Channel::Email,
                "sms" => Channel::Sms,
                _ => return Err(Error::invalid_field("channel")),
            };
            let to = form.text("to");
            let to = match channel {
                Channel::Email if crate::domain::records::leads::is_plausible_email(to) => {
                    to.to_string()
                }
                Channel::Email => return Err(Error::invalid_field("to")),
                _ => crate::phone::normalize(to).ok_or_else(|| Error::invalid_field("to"))?,
            };
            let sent = state.engine.send_test(visitor.org(), channel, &to).await?;
            shown.notice = Some(match sent {
                Ok(words) | Err(words) => words,
            });
        }
        SettingsAction::RetryDelivery => {
            let (endpoint, delivery) = (
                form.text("endpoint").to_string(),
                form.text("delivery").to_string(),
            );
            store
                .write(move |tx| {
                    webhook_endpoints::retry_delivery(tx, &caller, &endpoint, &delivery).map(drop)
                })
                .await?;
            shown.notice = Some("The delivery is queued again.".into());
        }
        SettingsAction::AddWebhook => {
            let mut body = Map::new();
            body.insert("url".into(), json!(form.text("url")));
            let events: Vec<&str> = form.all("events").collect();
            if !events.is_empty() {
                body.insert("events".into(), json!(events));
            }
            let added = store
                .write(move |tx| webhook_endpoints::create_endpoint(tx, &caller, body.clone()))
                .await;
            match added {
                Ok(endpoint) => {
                    shown.secret = Some((
                        format!(
                            "Deliveries to {} are signed with this secret (webhook-signature).",
                            endpoint.url
                        ),
                        endpoint.secret,
                    ))
                }
                Err(e) if e.is_bad_request() => {
                    shown.notice = Some(e.to_string());
                    return render(state, visitor, StatusCode::BAD_REQUEST, shown);
                }
                Err(e) => return Err(e),
            }
        }
        SettingsAction::RemoveWebhook => {
            let id = form.text("id").to_string();
            store
                .write(move |tx| webhook_endpoints::delete_endpoint(tx, &caller, &id))
                .await?;
            shown.notice = Some("The endpoint is removed.".into());
        }
        SettingsAction::RevokeKey => {
            let id = form.text("id").to_string();
            let record = store
                .write(move |tx| auth::revoke_key(tx, Some(&org_id), &id))
                .await?;
            shown.notice = Some(format!("The key \"{}\" is revoked.", record.name));
        }
    }
    render(state, visitor, StatusCode::OK, shown)
}
