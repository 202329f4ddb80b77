//! The CalDAV write queue (`calendar_sync`): one row per meeting whose booking, move or
//! cancellation is still owed to its calendar's CalDAV collection, shaped like the
//! webhook outbox: queued in the meeting's own write ([`WriteTx::queue_calendar_sync`]),
//! read when due by the sync worker (`engine::calendar_sync`), and replaced, rescheduled
//! or removed by the write that records an attempt.

use redb::ReadableTable;

use super::read::ReadTx;
use super::tables::CALENDAR_SYNC;
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

/// A meeting's queued CalDAV write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRow {
    /// When it is due.
    pub due: Micros,
    /// Attempts that failed since it was queued.
    pub attempts: u32,
    /// The meeting's `updatedAt` when it was queued: a newer change queues it again.
    pub version: Micros,
}

/// A due row: the organization, the meeting and the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueSync {
    pub org: String,
    pub meeting: String,
    pub row: SyncRow,
}

impl WriteTx<'_> {
    /// Queues (or re-queues, due now) the CalDAV write of meeting `id` at `version`.
    pub fn queue_calendar_sync(&mut self, org: &str, id: &str, version: Micros) -> Result<()> {
        let row = SyncRow {
            due: crate::time::now_micros(),
            attempts: 0,
            version,
        };
        self.put_calendar_sync(org, id, row)
    }

    /// Writes meeting `id`'s row as it is.
    pub fn put_calendar_sync(&mut self, org: &str, id: &str, row: SyncRow) -> Result<()> {
        self.open_write(CALENDAR_SYNC)?
            .insert((org, id), (row.due, row.attempts, row.version))?;
        self.calendar_sync_added = true;
        Ok(())
    }

    /// Meeting `id`'s row, if a write is owed.
    pub fn calendar_sync_row(&self, org: &str, id: &str) -> Result<Option<SyncRow>> {
        let table = self.open_read(CALENDAR_SYNC)?;
        let row = table.get((org, id))?.map(|v| {
            let (due, attempts, version) = v.value();
            SyncRow {
                due,
                attempts,
                version,
            }
        });
        Ok(row)
    }

    /// Nothing more is owed for meeting `id`.
    pub fn remove_calendar_sync(&mut self, org: &str, id: &str) -> Result<()> {
        self.open_write(CALENDAR_SYNC)?.remove((org, id))?;
        Ok(())
    }
}

impl ReadTx {
    /// Up to `max` rows due at `now` (but those `skip` says are in flight), and the
    /// earliest due time of the rest.
    pub fn due_calendar_syncs(
        &self,
        now: Micros,
        max: usize,
        skip: impl Fn(&str, &str) -> bool,
    ) -> Result<(Vec<DueSync>, Option<Micros>)> {
        let table = self.open_read(CALENDAR_SYNC)?;
        let mut due = Vec::new();
        let mut next: Option<Micros> = None;
        for row in table.iter()? {
            let (key, value) = row?;
            let (org, meeting) = key.value();
            let (at, attempts, version) = value.value();
            if skip(org, meeting) {
                continue;
            }
            if at > now || due.len() >= max {
                next = Some(next.map_or(at, |n| n.min(at)));
                continue;
            }
            due.push(DueSync {
                org: org.to_string(),
                meeting: meeting.to_string(),
                row: SyncRow {
                    due: at,
                    attempts,
                    version,
                },
            });
        }
        Ok((due, next))
    }
}
