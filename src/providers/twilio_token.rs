//! Twilio's Access Token for the Voice JavaScript SDK: a JWT (HS256) signed with an API
//! key's secret, header `cty: twilio-fpa;v=1`, claims `jti` (`<apiKeySid>-<now>`), `iss`
//! (the API key), `sub` (the account), `iat`, `exp`, and `grants`: the `identity` and a
//! voice grant whose outgoing calls go to a TwiML App (`application_sid`), incoming ones
//! not allowed. What a web chat visitor's browser is given to place its call.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

/// How long a token is good for, in seconds.
pub const TTL_SECONDS: i64 = 600;

/// What a token is made of.
#[derive(Clone, Copy)]
pub struct Grant<'a> {
    pub account_sid: &'a str,
    pub api_key_sid: &'a str,
    pub api_key_secret: &'a str,
    pub twiml_app_sid: &'a str,
    pub identity: &'a str,
}

impl std::fmt::Debug for Grant<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("account_sid", &self.account_sid)
            .field("api_key_sid", &self.api_key_sid)
            .field("twiml_app_sid", &self.twiml_app_sid)
            .field("identity", &self.identity)
            .finish()
    }
}

/// The token for `grant`, issued at `now` (Unix seconds), good until `now` +
/// [`TTL_SECONDS`].
pub fn access_token(grant: Grant<'_>, now: i64) -> String {
    let header = json!({"alg": "HS256", "typ": "JWT", "cty": "twilio-fpa;v=1"});
    let claims = json!({
        "jti": format!("{}-{now}", grant.api_key_sid),
        "iss": grant.api_key_sid,
        "sub": grant.account_sid,
        "iat": now,
        "exp": now + TTL_SECONDS,
        "grants": {
            "identity": grant.identity,
            "voice": {
                "outgoing": {"application_sid": grant.twiml_app_sid},
                "incoming": {"allow": false},
            },
        },
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    // HMAC takes a key of any length: `new_from_slice` cannot refuse one.
    let signature = match Hmac::<Sha256>::new_from_slice(grant.api_key_secret.as_bytes()) {
        Ok(mut mac) => {
            mac.update(signing_input.as_bytes());
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        }
        Err(_) => String::new(),
    };
    format!("{signing_input}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_three_parts_whose_signature_is_the_secrets_hmac() {
        let grant = Grant {
            account_sid: "AC0123456789abcdef0123456789abcdef",
            api_key_sid: "SK0123456789abcdef0123456789abcdef",
            api_key_secret: "secret",
            twiml_app_sid: "AP0123456789abcdef0123456789abcdef",
            identity: "web_wcs_1",
        };
        let token = access_token(grant, 1_700_000_000);
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            claims["jti"],
            json!("SK0123456789abcdef0123456789abcdef-1700000000")
        );
        assert_eq!(claims["exp"], json!(1_700_000_600));
        let mut mac = Hmac::<Sha256>::new_from_slice(b"secret").unwrap();
        mac.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
        assert_eq!(
            URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            mac.finalize().into_bytes().to_vec()
        );
        assert!(!format!("{grant:?}").contains("secret\""));
    }
}
