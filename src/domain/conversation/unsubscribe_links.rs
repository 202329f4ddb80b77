//! One-click unsubscribe links (RFC 8058): the token every email carries in
//! `List-Unsubscribe` and in its visible unsubscribe line, and what a `POST` on it does.
//!
//! A token names (organization, lead, channel) and carries an HMAC-SHA256 of the three
//! under the server's link secret (the recording links' secret, with a distinct domain
//! prefix in the MAC input, so neither kind of signature verifies as the other). It has
//! no expiry: an unsubscribe link must keep working. It is URL-safe:
//! `base64url(["org","lead","email"]) . base64url(mac)`. A `POST` unsubscribes through
//! `subscriptions::unsubscribe`, so the lead gets exactly one `lead.opted_out` and a second
//! `POST` changes nothing.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::channel::Channel;
use crate::domain::engagement::reactions::React;
use crate::domain::records::subscriptions;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::WriteTx;

/// Signs and verifies unsubscribe tokens.
#[derive(Clone)]
pub struct UnsubscribeKey([u8; 32]);

impl std::fmt::Debug for UnsubscribeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UnsubscribeKey(..)")
    }
}

/// What a valid token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub org: String,
    pub lead: String,
    pub channel: Channel,
}

impl UnsubscribeKey {
    pub fn new(secret: [u8; 32]) -> Self {
        UnsubscribeKey(secret)
    }

    fn mac(&self, org: &str, lead: &str, channel: Channel) -> Result<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .map_err(|e| Error::Internal(format!("hmac key: {e}")))?;
        // Length-prefixed parts, so ("ab", "c") and ("a", "bc") differ.
        for part in [
            b"unsubscribe-link-v1".as_slice(),
            org.as_bytes(),
            lead.as_bytes(),
            channel.as_str().as_bytes(),
        ] {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        Ok(mac)
    }

    /// The token that unsubscribes `lead` of `org` from `channel`.
    pub fn token(&self, org: &str, lead: &str, channel: Channel) -> Result<String> {
        let payload = serde_json::to_vec(&[org, lead, channel.as_str()])
            .map_err(|e| Error::Internal(format!("unsubscribe token: {e}")))?;
        let sig = self.mac(org, lead, channel)?.finalize().into_bytes();
        Ok(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(sig)
        ))
    }

    /// What `token` names; 403 `Forbidden` unless it is one this server signed.
    pub fn verify(&self, token: &str) -> Result<Target> {
        let (payload, sig) = token.split_once('.').ok_or(Error::Forbidden)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Error::Forbidden)?;
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| Error::Forbidden)?;
        let [org, lead, channel]: [String; 3] =
            serde_json::from_slice(&payload).map_err(|_| Error::Forbidden)?;
        let channel = Channel::parse(&channel).ok_or(Error::Forbidden)?;
        // Constant-time comparison.
        self.mac(&org, &lead, channel)?
            .verify_slice(&sig)
            .map_err(|_| Error::Forbidden)?;
        Ok(Target { org, lead, channel })
    }
}

/// The one-click `POST`: unsubscribes the target's channel (404 when the lead was
/// deleted); answers the channels that were applied.
pub fn one_click(tx: &mut WriteTx, target: &Target) -> Result<Vec<Channel>> {
    let caller = Caller {
        org_id: target.org.clone(),
        key_id: crate::domain::records::consent::UNSUBSCRIBE_LINK_CALLER.to_string(),
        scope: crate::store::rows::Scope::Write,
    };
    subscriptions::unsubscribe(tx, &caller, &target.lead, Some(&[target.channel])).react(tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_and_altered_ones_do_not() {
        let key = UnsubscribeKey::new([7u8; 32]);
        let token = key.token("org_1", "lead.a", Channel::Email).unwrap();
        assert!(token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')));
        assert_eq!(
            key.verify(&token).unwrap(),
            Target {
                org: "org_1".into(),
                lead: "lead.a".into(),
                channel: Channel::Email
            }
        );
        let other = key.token("org_1", "lead.b", Channel::Email).unwrap();
        let (payload, _) = other.split_once('.').unwrap();
        let (_, sig) = token.split_once('.').unwrap();
        for forged in [
            format!("{payload}.{sig}"),
            token.replace('.', ""),
            format!("{token}A"),
            String::new(),
        ] {
            assert!(
                matches!(key.verify(&forged), Err(Error::Forbidden)),
                "{forged}"
            );
        }
        let stranger = UnsubscribeKey::new([8u8; 32]);
        assert!(matches!(stranger.verify(&token), Err(Error::Forbidden)));
    }
}
