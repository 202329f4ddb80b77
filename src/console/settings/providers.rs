//! The settings page's "Providers" section: each channel's provider (sandbox, Twilio
//! for SMS and voice, SMTP for email; secrets left empty are kept while the place they
//! go to stays the same: `domain::settings::bound_secret`), saved as one
//! `ProviderPatch` per channel, and "Send test" through `Engine::send_test`. A Twilio
//! voice provider also has the keys of web chat's calls from the browser (API key SID,
//! its secret, TwiML App SID): left empty, each is kept.

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::channel::Channel;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::settings::email::SmtpPatch;
use crate::domain::settings::org::{self, OrgPatch, ProviderKind, ProviderPatch};
use crate::domain::settings::twilio::TwilioPatch;
use crate::error::{Error, Result};
use crate::store::browser_calls::BrowserCallKeys;
use crate::store::rows::{EngineSettings, ProviderSettings};

/// What the section shows: each channel's provider as saved.
pub(super) struct ProvidersSectionView {
    sms: ProviderSettings,
    voice: ProviderSettings,
    email: ProviderSettings,
    /// The voice provider's keys of calls from the browser.
    keys: BrowserCallKeys,
}

impl ProvidersSectionView {
    pub(super) fn of(engine: &EngineSettings, keys: BrowserCallKeys) -> ProvidersSectionView {
        ProvidersSectionView {
            sms: engine.sms.clone(),
            voice: engine.voice.clone(),
            email: engine.email.clone(),
            keys,
        }
    }

    pub(super) fn view(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        html! {
            section.panel aria-labelledby="providers-heading" {
                h2 #providers-heading { "Providers" }
                form.stack method="post" action=(super::path(SettingsAction::SaveProviders)) {
                    (layout::csrf_field(visitor))
                    @for (channel, label, current) in [("sms", "SMS", &self.sms), ("voice", "Voice", &self.voice), ("email", "Email", &self.email)] {
                        fieldset.provider {
                            legend { (label) ": " (provider_words(current)) }
                            (provider_fields(channel, label, current, &self.keys, shown))
                        }
                    }
                    div.actions { button type="submit" { "Save providers" } }
                }
                form.stack method="post" action=(super::path(SettingsAction::SendTest)) {
                    (layout::csrf_field(visitor))
                    div {
                        label for="test-channel" { "Channel to test" }
                        select #test-channel name="channel" { option value="sms" { "SMS" } option value="email" { "Email" } }
                    }
                    @let error = shown.error_for("to");
                    div {
                        label for="test-to" { "Send the test to" }
                        input #test-to type="text" name="to" value=(shown.value("to", "")) placeholder="(512) 555-0100 or you@example.com" required
                            aria-invalid=[error.map(|_| "true")] aria-describedby=[error.map(|_| "test-to-error")];
                        @if let Some(message) = error { p #test-to-error .field-error { (message) } }
                    }
                    div.actions { button.secondary type="submit" { "Send test" } }
                }
            }
        }
    }
}

/// `POST /console/settings/providers`.
pub(super) async fn save(state: &AppState, visitor: &Visitor, form: Form) -> Result<Outcome> {
    let patch = providers_patch(&form).map(|providers| {
        let mut patch = OrgPatch::default();
        patch.providers(providers);
        patch
    });
    super::save(state, visitor, form, patch).await
}

/// `POST /console/settings/send-test`: a test message on a channel, and what came of it.
pub(super) async fn send_test(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let channel = match form.text("channel") {
        "email" => Channel::Email,
        "sms" => Channel::Sms,
        _ => return Err(Error::invalid_field("channel")),
    };
    let to = form.text("to");
    let to = match channel {
        Channel::Email if crate::domain::records::leads::is_plausible_email(to) => to.to_string(),
        Channel::Email => {
            return Err(Error::field(
                "to",
                "This is not an email address: write it as you@example.com",
            ))
        }
        _ => org::read_phone(&state.store.read()?, visitor.org(), to)?
            .map_err(|why| Error::field("to", org::unreadable_phone(why)))?,
    };
    let sent = state.engine.send_test(visitor.org(), channel, &to).await?;
    Ok(Outcome::shown(Shown::notice(match sent {
        Ok(words) | Err(words) => words,
    })))
}

/// A provider in words: its kind and where it sends from; secrets never.
fn provider_words(p: &ProviderSettings) -> String {
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
fn provider_fields(
    channel: &str,
    label: &str,
    current: &ProviderSettings,
    keys: &BrowserCallKeys,
    shown: &Shown,
) -> Markup {
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
        let error = shown.error_for(&path);
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
            @if let Some(message) = shown.error_for(&format!("providers.{channel}")) { p.field-error { (message) } }
        }
        // Hidden while the kind is the sandbox (the stylesheet's `:has`), shown when a
        // real provider is chosen, with or without the script.
        div.provider-fields {
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
            @if channel == "voice" {
                p.muted { "Calls from the browser (web chat's Call button): a Twilio API key and a TwiML App whose voice URL is this server's voice webhook. Left empty, each is kept." }
                (input("apiKeySid", "API key SID", keys.api_key_sid.clone(), false))
                (input("apiKeySecret", "API key secret", if keys.api_key_secret.is_empty() { String::new() } else { "set".to_string() }, true))
                (input("twimlAppSid", "TwiML App SID", keys.twiml_app_sid.clone(), false))
            }
        }
        }
    }
}

/// The providers form as one change of every channel (one left out would go back to
/// the sandbox).
fn providers_patch(form: &Form) -> Result<Vec<(Channel, ProviderPatch)>> {
    let mut providers = Vec::new();
    for channel in [Channel::Sms, Channel::Voice, Channel::Email] {
        let get = |f: &str| form.text(&format!("{}-{f}", channel.as_str())).to_string();
        let given = |f: &str| Some(get(f)).filter(|v| !v.is_empty());
        let invalid =
            |f: &str| Error::invalid_field(&format!("providers.{}.{f}", channel.as_str()));
        let kind = get("kind");
        let patch = match ProviderKind::parse(channel, Some(&kind))? {
            ProviderKind::Sandbox => ProviderPatch::sandbox(),
            ProviderKind::Twilio => {
                let mut p = TwilioPatch::new(channel);
                if let Some(sid) = given("accountSid") {
                    p.account_sid(&sid)?;
                }
                if let Some(from) = given("from") {
                    p.from(Some(&from))?;
                }
                if let Some(sid) = given("messagingServiceSid") {
                    p.messaging_service_sid(Some(&sid))?;
                }
                if let Some(token) = given("authToken") {
                    p.auth_token(&token)?;
                }
                if channel == Channel::Voice {
                    if let Some(sid) = given("apiKeySid") {
                        p.api_key_sid(&sid)?;
                    }
                    if let Some(secret) = given("apiKeySecret") {
                        p.api_key_secret(&secret)?;
                    }
                    if let Some(sid) = given("twimlAppSid") {
                        p.twiml_app_sid(&sid)?;
                    }
                }
                if let Some(rate) = given("ratePerSecond") {
                    match rate.parse::<f64>() {
                        // JSON has no such number: the form's used to arrive as `null`.
                        Ok(rate) if !rate.is_finite() => p.rate_per_second(None)?,
                        Ok(rate) => p.rate_per_second(Some(rate))?,
                        Err(_) => return Err(invalid("ratePerSecond")),
                    }
                }
                ProviderPatch::Twilio(p.checked()?)
            }
            ProviderKind::Smtp => {
                let mut p = SmtpPatch::default();
                p.host(&get("host"))?;
                match get("port").parse::<u64>() {
                    Ok(port) => p.port(port)?,
                    Err(_) => return Err(invalid("port")),
                }
                p.security(&get("security"))?;
                if let Some(username) = given("username") {
                    p.username(Some(&username))?;
                }
                if let Some(password) = given("password") {
                    p.password(Some(&password))?;
                }
                p.from(&get("from"))?;
                ProviderPatch::Smtp(p.checked()?)
            }
        };
        providers.push((channel, patch));
    }
    Ok(providers)
}
