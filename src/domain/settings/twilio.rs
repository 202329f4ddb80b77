//! The `twilio` kind of an SMS (or voice) provider in the organization's settings:
//! parsing `providers.sms` or `providers.voice` into [`TwilioSettings`] and its view.
//! `authToken` is write-only: the view says `authTokenSet`, and a later `PATCH` without
//! it keeps the stored one. Messages may go out through a messaging service instead of a
//! `from` number; calls cannot, so the voice slot needs `from`. Twilio's ids are checked
//! when saved (`accountSid` `AC` and `messagingServiceSid` `MG`, each followed by 32 hex
//! digits): a typo is a 400 now, not every send refused later. A `PATCH`'s members
//! (or the console's form) make a `TwilioPatch`, checked as it is built.
//!
//! The voice slot also holds the keys of calls from the browser (web chat's "Call"):
//! `apiKeySid` (`SK` + 32 hex), `apiKeySecret` (write-only: the view says
//! `apiKeySecretSet`) and `twimlAppSid` (`AP` + 32 hex), stored in a record of their own
//! (`BrowserCallKeys`). A member left out keeps its value, `null` clears it; the secret
//! is bound to its place, the provider's `baseUrl` and `accountSid`, by the rule of every
//! secret ([`crate::domain::settings::bound_secret`]).

use serde_json::{json, Map, Value};

use crate::channel::Channel;
use crate::error::{Error, Result};
use crate::store::browser_calls::BrowserCallKeys;
use crate::store::rows::TwilioSettings;

/// The message of a `PATCH` that configures twilio on a server without `public_url`.
pub const NEEDS_PUBLIC_URL: &str = "public_url must be set to use the twilio provider";

pub const DEFAULT_BASE_URL: &str = "https://api.twilio.com";

/// A `twilio` provider as a `PATCH` gives it for one channel, each member checked when
/// set; [`TwilioPatch::settings`] merges it with what the channel had (the auth token
/// kept when absent).
#[derive(Clone, PartialEq)]
pub struct TwilioPatch {
    channel: Channel,
    account_sid: Option<String>,
    auth_token: Option<String>,
    from: String,
    messaging_service_sid: String,
    base_url: String,
    rate_per_second: Option<f64>,
    browser: BrowserPatch,
}

/// A member of the browser's keys as a patch gives it: `None` keeps what was stored,
/// `Some(None)` (`null`) clears it.
type Member = Option<Option<String>>;

/// The keys of calls from the browser as a `PATCH` of `providers.voice` gives them.
#[derive(Clone, Default, PartialEq)]
pub struct BrowserPatch {
    api_key_sid: Member,
    api_key_secret: Member,
    twiml_app_sid: Member,
}

impl std::fmt::Debug for BrowserPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserPatch")
            .field("api_key_sid", &self.api_key_sid)
            .field(
                "api_key_secret",
                &self
                    .api_key_secret
                    .as_ref()
                    .map(|s| s.as_ref().map(|_| "(set)")),
            )
            .field("twiml_app_sid", &self.twiml_app_sid)
            .finish()
    }
}

/// Where the API key secret is used: the voice provider's `baseUrl` and account.
fn place(settings: &TwilioSettings) -> crate::domain::settings::Endpoint {
    crate::domain::settings::Endpoint::url(&format!(
        "{}/Accounts/{}",
        settings.base_url.trim_end_matches('/'),
        settings.account_sid
    ))
}

impl BrowserPatch {
    /// The keys after a save: this patch over `stored`, the keys before, whose provider
    /// was `previous`; `now` is the provider saved. The secret stays only while the
    /// place (`baseUrl`, `accountSid`) does.
    pub fn keys(
        &self,
        stored: &BrowserCallKeys,
        previous: Option<&TwilioSettings>,
        now: &TwilioSettings,
    ) -> BrowserCallKeys {
        let member = |given: &Member, before: &str| match given {
            None => before.to_string(),
            Some(value) => value.clone().unwrap_or_default(),
        };
        let given_secret = self
            .api_key_secret
            .as_ref()
            .map(|s| s.clone().unwrap_or_default());
        let was = previous.map(place);
        let secret = crate::domain::settings::bound_secret(
            given_secret,
            was.as_ref().map(|at| (at, stored.api_key_secret.clone())),
            &place(now),
        )
        .unwrap_or_default();
        BrowserCallKeys {
            api_key_sid: member(&self.api_key_sid, &stored.api_key_sid),
            api_key_secret: secret,
            twiml_app_sid: member(&self.twiml_app_sid, &stored.twiml_app_sid),
        }
    }
}

impl std::fmt::Debug for TwilioPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioPatch")
            .field("channel", &self.channel)
            .field("account_sid", &self.account_sid)
            .field("auth_token", &self.auth_token.as_ref().map(|_| "(set)"))
            .field("from", &self.from)
            .field("messaging_service_sid", &self.messaging_service_sid)
            .field("base_url", &self.base_url)
            .field("rate_per_second", &self.rate_per_second)
            .field("browser", &self.browser)
            .finish()
    }
}

impl TwilioPatch {
    /// The provider of `channel` (sms or voice) with no member set yet.
    pub fn new(channel: Channel) -> TwilioPatch {
        TwilioPatch {
            channel,
            account_sid: None,
            auth_token: None,
            from: String::new(),
            messaging_service_sid: String::new(),
            base_url: DEFAULT_BASE_URL.to_string(),
            rate_per_second: None,
            browser: BrowserPatch::default(),
        }
    }

    /// The keys of calls from the browser this patch gives (the voice slot's only).
    pub fn browser(&self) -> &BrowserPatch {
        &self.browser
    }

    /// `{"kind": "twilio", "accountSid", "authToken", "from" | "messagingServiceSid",
    /// "baseUrl"?, "ratePerSecond"?}`: the provider of `channel` (voice needs `from`).
    pub fn from_json(channel: Channel, members: &Map<String, Value>) -> Result<TwilioPatch> {
        let mut patch = TwilioPatch::new(channel);
        for (member, value) in members {
            match (member.as_str(), value) {
                ("kind", _) => {}
                ("accountSid", Value::String(sid)) => patch.account_sid(sid)?,
                ("ratePerSecond", value) => {
                    patch.rate_per_second =
                        crate::domain::settings::rate(&format!("{}.{member}", patch.path()), value)?
                }
                ("authToken", Value::String(token)) => patch.auth_token(token)?,
                ("from", Value::Null) => patch.from(None)?,
                ("from", Value::String(from)) => patch.from(Some(from))?,
                ("messagingServiceSid", Value::Null) => patch.messaging_service_sid(None)?,
                ("messagingServiceSid", Value::String(sid)) => {
                    patch.messaging_service_sid(Some(sid))?
                }
                ("baseUrl", Value::String(url)) => patch.base_url(url)?,
                ("apiKeySid", Value::Null) if channel == Channel::Voice => {
                    patch.browser.api_key_sid = Some(None)
                }
                ("apiKeySid", Value::String(sid)) if channel == Channel::Voice => {
                    patch.api_key_sid(sid)?
                }
                ("apiKeySecret", Value::Null) if channel == Channel::Voice => {
                    patch.browser.api_key_secret = Some(None)
                }
                ("apiKeySecret", Value::String(secret)) if channel == Channel::Voice => {
                    patch.api_key_secret(secret)?
                }
                ("twimlAppSid", Value::Null) if channel == Channel::Voice => {
                    patch.browser.twiml_app_sid = Some(None)
                }
                ("twimlAppSid", Value::String(sid)) if channel == Channel::Voice => {
                    patch.twiml_app_sid(sid)?
                }
                ("apiKeySid" | "apiKeySecret" | "twimlAppSid", _) if channel == Channel::Voice => {
                    return Err(patch.invalid(member))
                }
                ("accountSid" | "authToken" | "from" | "messagingServiceSid" | "baseUrl", _) => {
                    return Err(patch.invalid(member))
                }
                (other, _) => {
                    return Err(Error::unknown_field(&format!("{}.{other}", patch.path())))
                }
            }
        }
        patch.checked()
    }

    /// `providers.sms` or `providers.voice`: where the refusals point.
    fn path(&self) -> String {
        format!("providers.{}", self.channel.as_str())
    }

    fn invalid(&self, member: &str) -> Error {
        Error::invalid_field(&format!("{}.{member}", self.path()))
    }

    /// A member's text: not blank, at most 256 bytes, trimmed.
    fn text(&self, member: &str, value: &str) -> Result<String> {
        if !value.trim().is_empty() && value.len() <= 256 {
            Ok(value.trim().to_string())
        } else {
            Err(self.invalid(member))
        }
    }

    /// `accountSid`: `AC` and 32 hex digits.
    pub fn account_sid(&mut self, sid: &str) -> Result<()> {
        let sid = self.text("accountSid", sid)?;
        if !is_sid(&sid, "AC") {
            return Err(self.invalid("accountSid"));
        }
        self.account_sid = Some(sid);
        Ok(())
    }

    /// `apiKeySid` (voice): `SK` and 32 hex digits.
    pub fn api_key_sid(&mut self, sid: &str) -> Result<()> {
        let sid = self.text("apiKeySid", sid)?;
        if !is_sid(&sid, "SK") {
            return Err(self.invalid("apiKeySid"));
        }
        self.browser.api_key_sid = Some(Some(sid));
        Ok(())
    }

    /// `apiKeySecret` (voice): the API key's secret, write-only.
    pub fn api_key_secret(&mut self, secret: &str) -> Result<()> {
        self.browser.api_key_secret = Some(Some(self.text("apiKeySecret", secret)?));
        Ok(())
    }

    /// `twimlAppSid` (voice): `AP` and 32 hex digits.
    pub fn twiml_app_sid(&mut self, sid: &str) -> Result<()> {
        let sid = self.text("twimlAppSid", sid)?;
        if !is_sid(&sid, "AP") {
            return Err(self.invalid("twimlAppSid"));
        }
        self.browser.twiml_app_sid = Some(Some(sid));
        Ok(())
    }

    pub fn auth_token(&mut self, token: &str) -> Result<()> {
        self.auth_token = Some(self.text("authToken", token)?);
        Ok(())
    }

    /// `from`: a phone number (normalized); `None` clears it.
    pub fn from(&mut self, from: Option<&str>) -> Result<()> {
        self.from = match from {
            None => String::new(),
            Some(s) => crate::phone::normalize(s).ok_or_else(|| self.invalid("from"))?,
        };
        Ok(())
    }

    /// `messagingServiceSid`: `MG` and 32 hex digits; `None` clears it.
    pub fn messaging_service_sid(&mut self, sid: Option<&str>) -> Result<()> {
        self.messaging_service_sid = match sid {
            None => String::new(),
            Some(sid) => {
                let sid = self.text("messagingServiceSid", sid)?;
                if !is_sid(&sid, "MG") {
                    return Err(self.invalid("messagingServiceSid"));
                }
                sid
            }
        };
        Ok(())
    }

    pub fn base_url(&mut self, url: &str) -> Result<()> {
        if !crate::domain::records::webhook_endpoints::is_valid_url(url) {
            return Err(self.invalid("baseUrl"));
        }
        self.base_url = url.trim_end_matches('/').to_string();
        Ok(())
    }

    /// `ratePerSecond`; `None`: the kind's default.
    pub fn rate_per_second(&mut self, rate: Option<f64>) -> Result<()> {
        self.rate_per_second = match rate {
            None => None,
            Some(rate) => Some(crate::domain::settings::checked_rate(
                &format!("{}.ratePerSecond", self.path()),
                rate,
            )?),
        };
        Ok(())
    }

    /// The patch once every member is set: a `from` number (or, for messages, a
    /// messaging service) and an account.
    pub fn checked(self) -> Result<TwilioPatch> {
        if self.from.is_empty()
            && (self.messaging_service_sid.is_empty() || self.channel == Channel::Voice)
        {
            return Err(self.invalid("from"));
        }
        if self.account_sid.is_none() {
            return Err(self.invalid("accountSid"));
        }
        Ok(self)
    }

    /// The settings: this patch over `previous`, the channel's twilio settings before
    /// (whose auth token stays when the patch has none and `baseUrl` is the same; a
    /// changed `baseUrl` without a token clears it: `authTokenSet` false, and nothing
    /// is sent until one is given). A first twilio setting needs the token.
    pub fn settings(self, previous: Option<&TwilioSettings>) -> Result<TwilioSettings> {
        let endpoint = |url: &str| crate::domain::settings::Endpoint::url(url);
        let stored = previous.map(|p| (endpoint(&p.base_url), p.auth_token.clone()));
        let auth_token = match &stored {
            None => self.auth_token.clone(),
            Some((at, token)) => Some(
                crate::domain::settings::bound_secret(
                    self.auth_token.clone(),
                    Some((at, token.clone())),
                    &endpoint(&self.base_url),
                )
                .unwrap_or_default(),
            ),
        };
        let checked = self.checked()?;
        Ok(TwilioSettings {
            account_sid: checked
                .account_sid
                .clone()
                .ok_or_else(|| checked.invalid("accountSid"))?,
            auth_token: auth_token.ok_or_else(|| checked.invalid("authToken"))?,
            from: checked.from,
            messaging_service_sid: checked.messaging_service_sid,
            base_url: checked.base_url,
            rate_per_second: checked.rate_per_second,
        })
    }
}

/// Whether `sid` is one of Twilio's ids of the kind `prefix` names: the prefix and 32
/// hex digits (`^AC[0-9a-fA-F]{32}$` for an account).
pub fn is_sid(sid: &str, prefix: &str) -> bool {
    sid.strip_prefix(prefix)
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

pub fn view(s: &TwilioSettings) -> Value {
    let text = |t: &str| (!t.is_empty()).then(|| t.to_string());
    json!({
        "kind": "twilio",
        "accountSid": s.account_sid,
        "authTokenSet": !s.auth_token.is_empty(),
        "from": text(&s.from),
        "messagingServiceSid": text(&s.messaging_service_sid),
        "baseUrl": s.base_url,
    })
}

/// The voice provider's view with the keys of calls from the browser: `apiKeySid`,
/// `apiKeySecretSet`, `twimlAppSid` (`null` when not set).
pub fn with_browser_keys(mut view: Value, keys: &BrowserCallKeys) -> Value {
    let text = |t: &str| (!t.is_empty()).then(|| t.to_string());
    if let Value::Object(members) = &mut view {
        members.insert("apiKeySid".into(), json!(text(&keys.api_key_sid)));
        members.insert(
            "apiKeySecretSet".into(),
            json!(!keys.api_key_secret.is_empty()),
        );
        members.insert("twimlAppSid".into(), json!(text(&keys.twiml_app_sid)));
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNT: &str = "AC0123456789abcdef0123456789ABCDEF";
    const SERVICE: &str = "MG0123456789abcdef0123456789abcdef";

    fn members(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// What a `PATCH` makes of the provider at `path` of `channel`.
    fn parse(
        _path: &str,
        channel: Channel,
        members: Map<String, Value>,
        previous: Option<&TwilioSettings>,
    ) -> Result<TwilioSettings> {
        TwilioPatch::from_json(channel, &members)?.settings(previous)
    }

    #[test]
    fn required_members_are_named_and_the_token_is_kept() {
        let path = "providers.sms";
        let err = |v: Value| {
            parse(path, Channel::Sms, members(v), None)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"kind": "twilio", "authToken": "t", "from": "+15550100000"})),
            "Invalid format for field: providers.sms.accountSid"
        );
        assert_eq!(
            err(json!({"kind": "twilio", "accountSid": ACCOUNT, "from": "+15550100000"})),
            "Invalid format for field: providers.sms.authToken"
        );
        assert_eq!(
            err(json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t"})),
            "Invalid format for field: providers.sms.from"
        );
        let first = parse(
            path,
            Channel::Sms,
            members(json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "secret", "from": "+1 555 010 0000"})),
            None,
        )
        .unwrap();
        assert_eq!(first.from, "+15550100000");
        let again = parse(
            path,
            Channel::Sms,
            members(json!({"kind": "twilio", "accountSid": ACCOUNT, "from": "+15550100000"})),
            Some(&first),
        )
        .unwrap();
        assert_eq!(again.auth_token, "secret");
        assert!(!view(&again).to_string().contains("secret"));
        assert!(!format!("{again:?}").contains("secret"));
        // A new baseUrl without the token clears it; with it, the new one is kept.
        let moved = parse(
            path,
            Channel::Sms,
            members(
                json!({"kind": "twilio", "accountSid": ACCOUNT, "from": "+15550100000",
                "baseUrl": "https://twilio.evil.example"}),
            ),
            Some(&again),
        )
        .unwrap();
        assert_eq!(moved.auth_token, "");
        assert_eq!(view(&moved)["authTokenSet"], json!(false));
        let given = parse(
            path,
            Channel::Sms,
            members(
                json!({"kind": "twilio", "accountSid": ACCOUNT, "from": "+15550100000",
                "baseUrl": "https://twilio.other.example", "authToken": "new"}),
            ),
            Some(&again),
        )
        .unwrap();
        assert_eq!(given.auth_token, "new");
    }

    #[test]
    fn calls_need_a_from_number() {
        let service = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t", "messagingServiceSid": SERVICE});
        assert!(parse(
            "providers.sms",
            Channel::Sms,
            members(service.clone()),
            None
        )
        .is_ok());
        assert_eq!(
            parse("providers.voice", Channel::Voice, members(service), None)
                .unwrap_err()
                .to_string(),
            "Invalid format for field: providers.voice.from"
        );
        let voice = parse(
            "providers.voice",
            Channel::Voice,
            members(json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t", "from": "+15550100000"})),
            None,
        )
        .unwrap();
        assert_eq!(voice.from, "+15550100000");
    }

    #[test]
    fn twilio_ids_and_the_rate_are_checked_when_saved() {
        let parse_sms = |v: Value| parse("providers.sms", Channel::Sms, members(v), None);
        let parse_voice = |v: Value| parse("providers.voice", Channel::Voice, members(v), None);
        for bad in [
            "AC1",
            "AC0123456789abcdef0123456789ABCDE",
            "AC0123456789abcdef0123456789ABCDEF0",
            "AC0123456789abcdef0123456789ABCDEG",
            "MG0123456789abcdef0123456789abcdef",
            "ac0123456789abcdef0123456789abcdef",
        ] {
            let body = json!({"kind": "twilio", "accountSid": bad, "authToken": "t", "from": "+15550100000"});
            assert_eq!(
                parse_sms(body.clone()).unwrap_err().to_string(),
                "Invalid format for field: providers.sms.accountSid",
                "{bad}"
            );
            assert_eq!(
                parse_voice(body).unwrap_err().to_string(),
                "Invalid format for field: providers.voice.accountSid",
                "{bad}"
            );
        }
        for bad in ["MG1", "AC0123456789abcdef0123456789abcdef", "MGxyz"] {
            let body = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t", "messagingServiceSid": bad});
            assert_eq!(
                parse_sms(body).unwrap_err().to_string(),
                "Invalid format for field: providers.sms.messagingServiceSid",
                "{bad}"
            );
        }
        for bad in [json!(0), json!(-1), json!(1001), json!("10"), json!(true)] {
            let body = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
                "from": "+15550100000", "ratePerSecond": bad});
            assert_eq!(
                parse_voice(body).unwrap_err().to_string(),
                "Invalid format for field: providers.voice.ratePerSecond",
                "{bad}"
            );
        }
        let paced = parse_sms(
            json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
            "messagingServiceSid": SERVICE, "ratePerSecond": 0.5}),
        )
        .unwrap();
        assert_eq!(paced.rate_per_second, Some(0.5));
        let default = parse_sms(
            json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
            "from": "+15550100000", "ratePerSecond": null}),
        )
        .unwrap();
        assert_eq!(default.rate_per_second, None);
        assert_eq!(
            crate::store::rows::ProviderSettings::Twilio(default).rate_per_second(),
            Some(10.0)
        );
    }

    #[test]
    fn the_browsers_keys_are_voice_only_kept_when_left_out_and_the_secret_follows_its_place() {
        const KEY: &str = "SK0123456789abcdef0123456789abcdef";
        const APP: &str = "AP0123456789abcdef0123456789abcdef";
        let voice = |extra: Value| {
            let mut body = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
                                  "from": "+15550100000"});
            if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
                b.extend(e);
            }
            TwilioPatch::from_json(Channel::Voice, &members(body))
        };
        for (member, bad) in [
            ("apiKeySid", json!("SK1")),
            ("apiKeySid", json!(APP)),
            ("twimlAppSid", json!(KEY)),
            ("apiKeySecret", json!("")),
            ("apiKeySecret", json!(1)),
        ] {
            assert_eq!(
                voice(json!({ member: bad })).unwrap_err().to_string(),
                format!("Invalid format for field: providers.voice.{member}")
            );
        }
        let sms = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
                         "from": "+15550100000", "apiKeySid": KEY});
        assert!(TwilioPatch::from_json(Channel::Sms, &members(sms)).is_err());

        let given =
            voice(json!({"apiKeySid": KEY, "apiKeySecret": "s3cret", "twimlAppSid": APP})).unwrap();
        assert!(!format!("{given:?}").contains("s3cret"));
        let first = given.clone().settings(None).unwrap();
        let keys = given
            .browser()
            .keys(&BrowserCallKeys::default(), None, &first);
        assert_eq!(
            (
                keys.api_key_sid.as_str(),
                keys.api_key_secret.as_str(),
                keys.twiml_app_sid.as_str()
            ),
            (KEY, "s3cret", APP)
        );
        // Left out: kept; the same place keeps the secret.
        let again = voice(json!({})).unwrap();
        let kept = again.browser().keys(&keys, Some(&first), &first);
        assert_eq!(kept, keys);
        // `null` clears a member.
        let cleared = voice(json!({"twimlAppSid": null})).unwrap();
        assert_eq!(
            cleared
                .browser()
                .keys(&keys, Some(&first), &first)
                .twiml_app_sid,
            ""
        );
        // Another account or base URL without the secret: it stays behind.
        for moved in [
            json!({"accountSid": "AC0123456789abcdef0123456789abcdee"}),
            json!({"baseUrl": "https://twilio.other.example"}),
        ] {
            let patch = voice(moved).unwrap();
            let now = patch.clone().settings(Some(&first)).unwrap();
            let after = patch.browser().keys(&keys, Some(&first), &now);
            assert_eq!(after.api_key_secret, "");
            assert_eq!(after.api_key_sid, KEY);
        }
        let view = with_browser_keys(view(&first), &keys);
        assert_eq!(view["apiKeySecretSet"], json!(true));
        assert!(!view.to_string().contains("s3cret"));
    }
}
