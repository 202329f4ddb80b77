//! The reactions of engagement to a write of records or settings, in one place: a lead
//! written (enrolment, the stop rules, pause and resume: `enrolment::on_lead_written`),
//! an event written (a campaign's counters: `campaigns::on_event`), a message from the
//! lead (its cadence stops, `replied`), a number added to the DNC list
//! (`enrolment::on_dnc`), quiet hours or the time zone changed
//! (`agenda::recompute_deferred`), a profile deleted (`enrolment::on_profile_deleted`), a
//! meeting booked (the cadence stops, `meeting_booked`, and the campaign counts it), a
//! meeting booked or moved (its reminders: `reminders::schedule`), a meeting booked,
//! moved or canceled (its confirmation to the lead is scheduled, `MeetingConfirmation`).
//!
//! Records and settings never call engagement: their writes return a
//! `records::written::Written` owing these reactions, and `after` (or `.react(tx)`) is
//! the only way to its value. Only this module reacts to a write.

use crate::domain::engagement::{agenda, campaigns, enrolment, reminders};
use crate::domain::records::written::{Reaction, Written};
use crate::error::Result;
use crate::store::rows::{JobKind, StopReason};
use crate::store::WriteTx;

/// Runs the reactions `written` owes, in the order of its writes, in this transaction;
/// the write's value.
pub fn after<T>(tx: &mut WriteTx, written: Written<T>) -> Result<T> {
    let (value, owed) = written.into_value_and_reactions();
    for reaction in owed {
        react_to(tx, reaction)?;
    }
    Ok(value)
}

fn react_to(tx: &mut WriteTx, reaction: Reaction) -> Result<()> {
    match reaction {
        Reaction::Lead { org, old, new } => {
            enrolment::on_lead_written(tx, &org, old.as_deref(), &new)
        }
        Reaction::Event {
            org,
            lead,
            kind,
            old,
            new,
            created_at,
        } => campaigns::on_event(tx, &org, &lead, &kind, old.as_ref(), &new, created_at),
        // Any message from the lead stops its cadence.
        Reaction::Replied { org, lead } => enrolment::stop(tx, &org, &lead, StopReason::Replied),
        Reaction::Dnc { org, phone } => enrolment::on_dnc(tx, &org, &phone),
        // In the same write: the work quiet hours deferred follows the new window.
        Reaction::QuietHoursChanged { org } => agenda::recompute_deferred(tx, &org, None),
        Reaction::ProfileDeleted { org, profile } => {
            enrolment::on_profile_deleted(tx, &org, &profile)
        }
        // A booked meeting is what the cadence was for.
        Reaction::MeetingBooked { org, lead } => {
            campaigns::on_meeting_booked(tx, &org, &lead)?;
            enrolment::stop(tx, &org, &lead, StopReason::MeetingBooked)
        }
        Reaction::MeetingTimed { org, meeting } => {
            reminders::schedule(tx, &org, &meeting, crate::time::now_micros())
        }
        // Sent by the engine, through the gate, never from this writer.
        Reaction::MeetingChanged {
            org,
            lead,
            meeting,
            change,
        } => {
            let kind = JobKind::MeetingConfirmation {
                meeting_id: meeting,
                change,
            };
            agenda::schedule(tx, &org, &lead, crate::time::now_micros(), kind).map(|_| ())
        }
    }
}

/// `after` as a method: `leads::update(tx, ..).react(tx)?`.
pub trait React<T> {
    /// Runs the reactions owed (see `after`); the write's value.
    fn react(self, tx: &mut WriteTx) -> Result<T>;
}

impl<T> React<T> for Written<T> {
    fn react(self, tx: &mut WriteTx) -> Result<T> {
        after(tx, self)
    }
}

impl<T> React<T> for Result<Written<T>> {
    fn react(self, tx: &mut WriteTx) -> Result<T> {
        after(tx, self?)
    }
}
