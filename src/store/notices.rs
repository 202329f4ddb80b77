//! The queue of "Needs attention" notices and the log of the emails they became.
//!
//! **A lead entering "Needs attention" queues its notice in the same commit** (the
//! index refresh sees the `attn` facet appear), at most one per lead per hour
//! (`lead_notified`). The notifier (`engine::notices`) reads the queue after commits,
//! sends outside the writer, and removes each notice with the log of what it sent.

use redb::ReadableTable;

use super::codec::{decode, encode};
use super::read::ReadTx;
use super::rows::NotificationRecord;
use super::tables::*;
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

/// The least time between two notices about one lead.
pub const NOTICE_INTERVAL_MICROS: Micros = 3_600_000_000;

/// A queued notice: lead `lead` of `org` entered "Needs attention" at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub at: Micros,
    pub org: String,
    pub lead: String,
}

impl WriteTx<'_> {
    /// Lead `lead` just entered "Needs attention" at `now`: queues a notice unless one
    /// was queued in the last hour.
    pub(super) fn attention_entered(&mut self, org: &str, lead: &str, now: Micros) -> Result<()> {
        let mut notified = self.open_write(LEAD_NOTIFIED)?;
        let last = notified.get((org, lead))?.map(|v| v.value());
        if last.is_some_and(|last| now - last < NOTICE_INTERVAL_MICROS) {
            return Ok(());
        }
        notified.insert((org, lead), now)?;
        drop(notified);
        self.open_write(ATTENTION_NOTICES)?
            .insert((now, org, lead), ())?;
        Ok(())
    }

    /// Removes a notice and logs the emails it became, keeping the newest
    /// [`NOTIFICATIONS_KEPT`] of the organization.
    pub fn notice_done(&mut self, notice: &Notice, sent: &[NotificationRecord]) -> Result<()> {
        let org = notice.org.as_str();
        self.open_write(ATTENTION_NOTICES)?
            .remove((notice.at, org, notice.lead.as_str()))?;
        let mut log = self.open_write(NOTIFICATIONS)?;
        for record in sent {
            log.insert(
                (org, record.sent_at, record.id.as_str()),
                encode(record)?.as_slice(),
            )?;
        }
        let kept: Vec<(i64, String)> = {
            let rows = log.range((org, i64::MIN, "")..=(org, i64::MAX, "\u{10FFFF}"))?;
            let mut keys = Vec::new();
            for row in rows.rev().skip(NOTIFICATIONS_KEPT) {
                let (key, _) = row?;
                let (_, at, id) = key.value();
                keys.push((at, id.to_string()));
            }
            keys
        };
        for (at, id) in kept {
            log.remove((org, at, id.as_str()))?;
        }
        Ok(())
    }
}

impl ReadTx {
    /// The oldest queued notices, at most `limit`.
    pub fn notices(&self, limit: usize) -> Result<Vec<Notice>> {
        let table = self.open_read(ATTENTION_NOTICES)?;
        let mut out = Vec::new();
        for row in table.iter()?.take(limit) {
            let (key, _) = row?;
            let (at, org, lead) = key.value();
            out.push(Notice {
                at,
                org: org.to_string(),
                lead: lead.to_string(),
            });
        }
        Ok(out)
    }

    /// An organization's notification emails, newest first, at most `limit`.
    pub fn notifications(&self, org: &str, limit: usize) -> Result<Vec<NotificationRecord>> {
        let table = self.open_read(NOTIFICATIONS)?;
        let mut out = Vec::new();
        let rows = table.range((org, i64::MIN, "")..=(org, i64::MAX, "\u{10FFFF}"))?;
        for row in rows.rev().take(limit) {
            let (_, value) = row?;
            out.push(decode(value.value())?);
        }
        Ok(out)
    }
}
