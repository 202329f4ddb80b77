//! What the engine adds to an email before its provider sends it: the one-click
//! unsubscribe link (`{public_url}/v1/unsubscribe/{token}`), which only the engine can
//! build (it knows `public_url`, the organization and the lead), signed with the
//! server's link secret ([`UnsubscribeKey`]), read from the store once.

use super::Engine;
use crate::channel::Channel;
use crate::domain::conversation::unsubscribe_links::UnsubscribeKey;
use crate::domain::engagement::outbound::Attempt;
use crate::error::Result;
use crate::providers::{Provider, SendOutcome};

/// The error code of an SMTP email that could not carry its unsubscribe link.
pub const NO_UNSUBSCRIBE_LINK: &str = "no-unsubscribe-link";

impl Engine {
    /// The key that signs unsubscribe links (the recording link secret, under its own
    /// domain prefix), read or created on first use.
    pub async fn unsubscribe_key(&self) -> Result<UnsubscribeKey> {
        self.unsubscribe_key
            .get_or_try_init(|| async {
                let secret = self.store.write(|tx| tx.recording_secret()).await?;
                Ok(UnsubscribeKey::new(secret))
            })
            .await
            .cloned()
    }

    /// The one-click unsubscribe URL of `lead`'s email channel, when `public_url` is set.
    async fn unsubscribe_url(&self, org: &str, lead: &str) -> Result<Option<String>> {
        let Some(base) = self.public_url() else {
            return Ok(None);
        };
        let token = self
            .unsubscribe_key()
            .await?
            .token(org, lead, Channel::Email)?;
        Ok(Some(crate::providers::callbacks::unsubscribe(base, &token)))
    }

    /// Sends an email attempt through `provider`; a real (SMTP) email always carries
    /// its unsubscribe link, and is refused without one.
    pub(super) async fn send_email(&self, provider: &Provider, attempt: &Attempt) -> SendOutcome {
        if matches!(provider, Provider::Sandbox(_)) {
            return provider.send_email(&self.client, &attempt.outgoing).await;
        }
        let mut outgoing = attempt.outgoing.clone();
        match self
            .unsubscribe_url(&attempt.row.org_id, &attempt.row.lead_id)
            .await
        {
            Ok(Some(url)) => outgoing.unsubscribe_url = Some(url),
            Ok(None) => {
                tracing::warn!("an email was not sent: public_url is not set, so it could not carry an unsubscribe link");
                return SendOutcome::Refused {
                    code: NO_UNSUBSCRIBE_LINK.into(),
                    do_not_contact: false,
                };
            }
            Err(e) => {
                tracing::error!(cause = %e.to_string_for_logs(), "an email's unsubscribe link");
                return SendOutcome::Refused {
                    code: NO_UNSUBSCRIBE_LINK.into(),
                    do_not_contact: false,
                };
            }
        }
        provider.send_email(&self.client, &outgoing).await
    }
}
