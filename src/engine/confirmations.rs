//! A meeting's confirmation to the lead (`JobKind::MeetingConfirmation`, scheduled by
//! engagement's reaction to every booking, move and cancellation, whoever made it): the
//! text (`records::meetings::confirmation_text`) in the lead's zone, on SMS when the
//! lead has a phone, else by email; the job then goes through the gate like a reply
//! (`jobs`), on the workers' floor, never from the writer.

use super::Engine;
use crate::channel::Channel;
use crate::domain::contact::quiet_hours;
use crate::domain::engagement::agenda::{self, JobKey};
use crate::domain::records::meetings;
use crate::domain::settings::org::business_name;
use crate::error::Result;
use crate::ics::Method;
use crate::providers::{Outgoing, Provider, SendOutcome};
use crate::store::calendars::CalendarReader;
use crate::store::rows::MeetingChange;
use crate::store::Reader;

impl Engine {
    /// The channel and text of the confirmation of `change` of meeting `meeting_id`;
    /// none for a meeting or lead that is gone, or a lead with neither phone nor email.
    pub(super) fn confirmation(
        &self,
        org: &str,
        lead_id: &str,
        meeting_id: &str,
        change: MeetingChange,
    ) -> Result<Option<(Channel, String)>> {
        let read = self.store.read()?;
        let Some(lead) = read.lead(org, lead_id)? else {
            return Ok(None);
        };
        let Some(meeting) = read.meeting(org, meeting_id)? else {
            return Ok(None);
        };
        let channel = if !lead.phone.is_empty() {
            Channel::Sms
        } else if !lead.email.is_empty() {
            Channel::Email
        } else {
            return Ok(None);
        };
        let org_zone = read.engine_settings(org)?.time_zone;
        let zone = quiet_hours::zone_of(&lead, &org_zone);
        let business = business_name(&read, org)?;
        let text =
            meetings::confirmation_text(change, meeting.start, zone, &business, &meeting.location);
        Ok(Some((channel, text)))
    }

    /// The iTIP invitation of meeting `meeting_id` (`METHOD:REQUEST`, or `CANCEL` when
    /// `change` is a cancellation; its `SEQUENCE` the meeting's), by email through the
    /// organization's SMTP provider, to the lead (with an email address it has not
    /// unsubscribed) and to the calendar's owner. Nothing with the sandbox or no SMTP.
    pub(super) async fn invite(
        &self,
        org: &str,
        lead_id: &str,
        meeting_id: &str,
        change: MeetingChange,
        text: &str,
    ) -> Result<()> {
        let (settings, lead, meeting, calendar, business) = {
            let read = self.store.read()?;
            let (Some(lead), Some(meeting)) =
                (read.lead(org, lead_id)?, read.meeting(org, meeting_id)?)
            else {
                return Ok(());
            };
            let Some(calendar) = read.calendar(org, &meeting.calendar)? else {
                return Ok(());
            };
            let business = business_name(&read, org)?;
            (
                read.engine_settings(org)?,
                lead,
                meeting,
                calendar,
                business,
            )
        };
        // The calendar's CalDAV server sends them (`invitations: "server"`).
        if calendar.server_schedules {
            return Ok(());
        }
        let Provider::Smtp(smtp) = Provider::for_channel(&settings, Channel::Email) else {
            return Ok(());
        };
        let sender = meetings::invitation_sender(&self.store.read()?, org)?;
        let document = meetings::document(&calendar, &meeting, &lead, &business, sender.as_ref());
        let method = match change {
            MeetingChange::Canceled => Method::Cancel,
            MeetingChange::Booked | MeetingChange::Moved => Method::Request,
        };
        let ics = crate::ics::invitation(method, &document);
        let subject = match method {
            Method::Cancel => format!("Canceled: {}", document.summary),
            Method::Request => format!("Invitation: {}", document.summary),
        };
        let mut to = Vec::new();
        if !lead.email.is_empty() && !Channel::Email.is_unsubscribed(&lead.subscriptions) {
            to.push(lead.email.clone());
        }
        if !calendar.owner_email.is_empty() {
            to.push(calendar.owner_email.clone());
        }
        for address in to {
            let outgoing = Outgoing {
                to: address,
                text: text.to_string(),
                subject: Some(subject.clone()),
                unsubscribe_url: None,
                status_callback: None,
                thread: None,
            };
            let outcome = smtp
                .send_invitation(self.client.trust(), &outgoing, method, &ics)
                .await;
            if !matches!(outcome, SendOutcome::Accepted { .. }) {
                tracing::warn!(
                    org,
                    meeting = meeting_id,
                    ?outcome,
                    "a meeting invitation was not sent"
                );
            }
        }
        Ok(())
    }

    /// Removes the agenda row `key` without running it.
    pub(super) async fn drop_job(&self, key: JobKey) -> Result<()> {
        self.store
            .write(move |tx| agenda::take(tx, &key).map(|_| ()))
            .await
    }
}
