//! `Written`: what a write of records or settings gives back, with the reactions of
//! engagement it owes (a lead or an event written, a number added to the DNC list,
//! quiet hours changed, a profile deleted).
//!
//! Records and settings sit below engagement: they never call it. Their writes that
//! engagement reacts to return a `Written<T>` instead of a `T`, and the only way to the
//! `T` is `engagement::reactions::after` (or its `.react(tx)`), which runs the owed
//! reactions in the order of the writes, in the same transaction. `Written` is
//! `#[must_use]`: a write whose reactions were forgotten does not build.

use serde_json::Value;

use crate::error::Result;
use crate::store::rows::LeadRecord;
use crate::time::Micros;

/// The value of a write and the reactions it owes, in the order of its writes.
#[derive(Debug)]
#[must_use = "a write's reactions run only through `reactions::after` (`.react(tx)`)"]
pub struct Written<T> {
    value: T,
    owed: Vec<Reaction>,
}

/// One write engagement reacts to.
#[derive(Debug)]
pub enum Reaction {
    /// A lead created, changed or deleted, with the lead as it was (none when created).
    Lead {
        org: String,
        old: Option<Box<LeadRecord>>,
        new: Box<LeadRecord>,
    },
    /// An event (type `kind`) of `lead` written: its data before (none when new) and now.
    Event {
        org: String,
        lead: String,
        kind: String,
        old: Option<Value>,
        new: Value,
        created_at: Micros,
    },
    /// A message from the lead was written.
    Replied { org: String, lead: String },
    /// `phone` joined the DNC list.
    Dnc { org: String, phone: String },
    /// The organization's quiet window or time zone changed.
    QuietHoursChanged { org: String },
    /// A profile was deleted.
    ProfileDeleted { org: String, profile: String },
    /// A meeting was booked for the lead: its cadence stops (`meeting_booked`).
    MeetingBooked { org: String, lead: String },
    /// Meeting `meeting` was booked or moved to a new start: its reminders.
    MeetingTimed { org: String, meeting: String },
    /// A meeting was booked, moved or canceled: the lead is sent its confirmation.
    MeetingChanged {
        org: String,
        lead: String,
        meeting: String,
        change: crate::store::rows::MeetingChange,
    },
}

impl<T> Written<T> {
    /// A write that owes `reaction`.
    pub(in crate::domain) fn owing(value: T, reaction: Reaction) -> Written<T> {
        Written {
            value,
            owed: vec![reaction],
        }
    }

    /// A write that owes nothing (it changed nothing engagement reacts to).
    pub(in crate::domain) fn owing_nothing(value: T) -> Written<T> {
        Written {
            value,
            owed: Vec::new(),
        }
    }

    /// The same reactions owed, with `reaction` after them.
    pub(in crate::domain) fn and_owing(mut self, reaction: Reaction) -> Written<T> {
        self.owed.push(reaction);
        self
    }

    /// The value changed by `f`, the same reactions owed.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Written<U> {
        Written {
            value: f(self.value),
            owed: self.owed,
        }
    }

    /// A further write from this one's value: its reactions owed after these.
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Result<Written<U>>) -> Result<Written<U>> {
        let mut next = f(self.value)?;
        let mut owed = self.owed;
        owed.append(&mut next.owed);
        next.owed = owed;
        Ok(next)
    }

    /// The value and the reactions owed: for `engagement::reactions::after` alone,
    /// which runs them (`tests/architecture.rs` holds every other file to not call it).
    pub(in crate::domain) fn into_value_and_reactions(self) -> (T, Vec<Reaction>) {
        (self.value, self.owed)
    }
}
