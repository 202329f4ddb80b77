//! Typed access to the tables inside the writer's transaction.
//!
//! Domain code changes the store only through these methods, inside a job given to
//! `Store::write`. Each `put_*` keeps a record's index rows in step with the record, so
//! no caller can forget one. Every timestamp that orders rows comes from [`WriteTx::tick`].

use std::cell::{Cell, RefCell, RefMut};
use std::ops::{Deref, DerefMut};

use redb::{
    AccessGuard, Key, ReadableTable, Table, TableDefinition, TableHandle, Value, WriteTransaction,
};

use super::codec::{decode, encode};
use super::lead_view;
use super::rows::{
    email_key, CallRecord, EventRecord, HandlingRecord, KeyRecord, LeadRecord, OrgRecord,
};
use super::tables::*;
use super::wal::OpLog;
use crate::error::{Error, Result};
use crate::time::{now_micros, Micros};

/// Names one event: the lead it belongs to and its (type, id).
#[derive(Debug, Clone, Copy)]
pub struct EventKey<'a> {
    pub org: &'a str,
    pub lead: &'a str,
    pub kind: &'a str,
    pub id: &'a str,
}

/// A table as a handle of the write transaction holds it: opened for that handle
/// alone, or one of the tables the transaction keeps open ([`Kept`]), borrowed.
pub(super) enum Held<'a, 't, K: Key + 'static, V: Value + 'static> {
    Own(Table<'t, K, V>),
    Kept(RefMut<'a, Table<'t, K, V>>),
}

impl<'t, K: Key + 'static, V: Value + 'static> Deref for Held<'_, 't, K, V> {
    type Target = Table<'t, K, V>;

    fn deref(&self) -> &Self::Target {
        match self {
            Held::Own(table) => table,
            Held::Kept(table) => table,
        }
    }
}

impl<K: Key + 'static, V: Value + 'static> DerefMut for Held<'_, '_, K, V> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Held::Own(table) => table,
            Held::Kept(table) => table,
        }
    }
}

/// A table of the write transaction opened for reading only (see [`WriteTx::open_read`]).
pub(super) struct ReadOnly<'a, 't, K: Key + 'static, V: Value + 'static>(Held<'a, 't, K, V>);

impl<'t, K: Key + 'static, V: Value + 'static> Deref for ReadOnly<'_, 't, K, V> {
    type Target = Table<'t, K, V>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// A table of the write transaction opened to change it: each change is recorded in
/// the transaction's log of operations (the write-ahead log's record of the batch,
/// `wal`) as it is made. Reads go through `Deref`; redb changes a table only through
/// `&mut`, which only these methods have.
pub(super) struct Logged<'a, 't, K: Key + 'static, V: Value + 'static> {
    table: Held<'a, 't, K, V>,
    /// Names the table in the log (`None` with `log`).
    def: Option<TableDefinition<'a, K, V>>,
    /// `None` for a migration's tables: it commits durably at open, before the log.
    log: Option<&'a RefCell<OpLog>>,
}

impl<'t, K: Key + 'static, V: Value + 'static> Deref for Logged<'_, 't, K, V> {
    type Target = Table<'t, K, V>;

    fn deref(&self) -> &Self::Target {
        &self.table
    }
}

impl<'a, 't, K: Key + 'static, V: Value + 'static> Logged<'a, 't, K, V> {
    /// A table changed outside the writer's batches (a migration at open), whose
    /// changes are not logged.
    pub(super) fn unlogged(table: Table<'t, K, V>) -> Self {
        Logged {
            table: Held::Own(table),
            def: None,
            log: None,
        }
    }

    fn record(&self, key: &[u8], value: Option<&[u8]>) {
        if let (Some(log), Some(def)) = (self.log, &self.def) {
            log.borrow_mut().record(def.name(), key, value);
        }
    }

    /// `Table::insert`, recorded.
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl std::borrow::Borrow<K::SelfType<'k>>,
        value: impl std::borrow::Borrow<V::SelfType<'v>>,
    ) -> std::result::Result<Option<AccessGuard<'_, V>>, redb::StorageError> {
        let (key, value) = (key.borrow(), value.borrow());
        self.record(K::as_bytes(key).as_ref(), Some(V::as_bytes(value).as_ref()));
        self.table.insert(key, value)
    }

    /// `Table::remove`, recorded.
    pub fn remove<'k>(
        &mut self,
        key: impl std::borrow::Borrow<K::SelfType<'k>>,
    ) -> std::result::Result<Option<AccessGuard<'_, V>>, redb::StorageError> {
        let key = key.borrow();
        self.record(K::as_bytes(key).as_ref(), None);
        self.table.remove(key)
    }

    /// Removes every row whose key is in `range`, each recorded.
    pub fn remove_range<'k, KR>(
        &mut self,
        range: impl std::ops::RangeBounds<KR> + 'k,
    ) -> Result<u64>
    where
        KR: std::borrow::Borrow<K::SelfType<'k>> + 'k,
    {
        let keys: Vec<Vec<u8>> = self
            .table
            .range(range)?
            .map(|row| row.map(|(k, _)| K::as_bytes(&k.value()).as_ref().to_vec()))
            .collect::<std::result::Result<_, _>>()?;
        for key in &keys {
            self.remove(K::from_bytes(key))?;
        }
        Ok(keys.len() as u64)
    }
}

/// One table the transaction keeps open once a job has used it ([`Kept`]).
struct Slot<'t, K: Key + 'static, V: Value + 'static> {
    table: TableDefinition<'static, K, V>,
    open: RefCell<Option<Table<'t, K, V>>>,
}

impl<'t, K: Key + 'static, V: Value + 'static> Slot<'t, K, V> {
    fn new(table: TableDefinition<'static, K, V>) -> Self {
        Slot {
            table,
            open: RefCell::new(None),
        }
    }

    /// The table, opened in `txn` if it is not open yet. Fails like redb's second
    /// open of a table while a handle of it is held.
    fn get(&self, txn: &'t WriteTransaction) -> Result<Held<'_, 't, K, V>> {
        let held = || Error::Internal(format!("table {} is open already", self.table.name()));
        let mut open = self.open.try_borrow_mut().map_err(|_| held())?;
        if open.is_none() {
            *open = Some(txn.open_table(self.table)?);
        }
        RefMut::filter_map(open, Option::as_mut)
            .map(Held::Kept)
            .map_err(|_| held())
    }

    /// Closes the table if it is open here, so that it can be opened elsewhere.
    fn close(&self) -> Result<()> {
        match self.open.try_borrow_mut() {
            Ok(mut open) => {
                open.take();
                Ok(())
            }
            Err(_) => Err(Error::Internal(format!(
                "table {} is open already",
                self.table.name()
            ))),
        }
    }
}

/// The tables every event's write uses (its lead and its handling read, the event and
/// its key row, the lead and its `updatedAt` row written), opened at their first use and
/// kept open until the transaction finishes, instead of once for each use: redb's
/// open of a table (a lookup in its table of tables and a comparison of the types'
/// names) was 12 % of the writer's time under a load of events, six opens to an event.
/// Any other open of one of them ([`WriteTx::open_write`], [`WriteTx::open_read`])
/// closes it here first, so there is only ever one handle of a table, as redb requires.
struct Kept<'t> {
    leads: Slot<'t, (&'static str, &'static str), &'static [u8]>,
    leads_by_updated: Slot<'t, (&'static str, i64, &'static str), &'static [u8]>,
    events: Slot<'t, (&'static str, &'static str, i64, &'static str, &'static str), &'static [u8]>,
    event_keys: Slot<'t, (&'static str, &'static str, &'static str, &'static str), i64>,
    lead_handling: Slot<'t, (&'static str, &'static str), &'static [u8]>,
}

impl Kept<'_> {
    fn new() -> Self {
        Kept {
            leads: Slot::new(LEADS),
            leads_by_updated: Slot::new(LEADS_BY_UPDATED),
            events: Slot::new(EVENTS),
            event_keys: Slot::new(EVENT_KEYS),
            lead_handling: Slot::new(LEAD_HANDLING),
        }
    }

    /// Closes table `name` if it is one of these.
    fn close(&self, name: &str) -> Result<()> {
        match name {
            n if n == LEADS.name() => self.leads.close(),
            n if n == LEADS_BY_UPDATED.name() => self.leads_by_updated.close(),
            n if n == EVENTS.name() => self.events.close(),
            n if n == EVENT_KEYS.name() => self.event_keys.close(),
            n if n == LEAD_HANDLING.name() => self.lead_handling.close(),
            _ => Ok(()),
        }
    }
}

/// The writer's transaction, as jobs see it. The redb transaction is private to this
/// file: a table opened to change it comes only from `WriteTx::open_write` (or one of
/// the `Kept` tables' methods), which counts, so the writer knows whether a job
/// changed anything (see `writer`).
pub struct WriteTx<'t> {
    txn: &'t WriteTransaction,
    kept: Kept<'t>,
    /// How many times a table was opened to be changed.
    writes: Cell<u64>,
    /// Every change made so far, for the write-ahead log (`wal`).
    log: RefCell<OpLog>,
    clock: Micros,
    clock_moved: bool,
    /// Set when the transaction queued a webhook delivery, to wake the dispatcher.
    pub(super) outbox_added: bool,
    /// Set when the transaction added an agenda row, to wake the scheduler.
    pub(super) agenda_added: bool,
    /// Set when the transaction queued a CalDAV write, to wake its worker.
    pub(super) calendar_sync_added: bool,
    /// Set when the transaction changed an API key, to empty the key cache.
    pub(super) keys_changed: bool,
    /// The (org, lead) pairs whose lead, engagement or handling changed: their search
    /// index rows are re-derived before the commit (`lead_index`).
    pub(super) marked_leads: std::collections::BTreeSet<(String, String)>,
    /// The (org, lead) pairs whose lead changed only its `lastActivityAt` and
    /// `updatedAt` (an event on it), with the newest `lastActivityAt`: their facets
    /// stand, only their activity rows move (`lead_index`), unless they are marked too.
    pub(super) activity_moved: std::collections::BTreeMap<(String, String), Micros>,
    /// The (org, session) pairs whose web chat changed, for the console's live streams.
    pub(super) marked_webchats: std::collections::BTreeSet<(String, String)>,
    /// Set when the transaction ended a session, for the console's live streams.
    pub(super) sessions_ended: bool,
}

impl<'t> WriteTx<'t> {
    /// A job's view of `txn`, its changes recorded into `log` (empty).
    pub(crate) fn new(txn: &'t WriteTransaction, clock: Micros, log: OpLog) -> Self {
        WriteTx {
            txn,
            kept: Kept::new(),
            writes: Cell::new(0),
            log: RefCell::new(log),
            clock,
            clock_moved: false,
            outbox_added: false,
            agenda_added: false,
            calendar_sync_added: false,
            keys_changed: false,
            marked_leads: std::collections::BTreeSet::new(),
            activity_moved: std::collections::BTreeMap::new(),
            marked_webchats: std::collections::BTreeSet::new(),
            sessions_ended: false,
        }
    }

    pub(crate) fn clock(&self) -> Micros {
        self.clock
    }

    /// How many times a table was opened to be changed so far: the writer compares it
    /// before and after a job.
    pub(crate) fn writes(&self) -> u64 {
        self.writes.get()
    }

    /// Opens `table` to change it. Every change of the store goes through here (or
    /// [`WriteTx::kept_write`]).
    pub(super) fn open_write<'a, K: Key + 'static, V: Value + 'static>(
        &'a self,
        table: TableDefinition<'a, K, V>,
    ) -> Result<Logged<'a, 't, K, V>> {
        self.kept.close(table.name())?;
        Ok(self.logged(table, Held::Own(self.txn.open_table(table)?)))
    }

    /// Opens `table` to read it: the handle gives out only `&Table`, and redb changes a
    /// table only through `&mut`.
    pub(super) fn open_read<'a, K: Key + 'static, V: Value + 'static>(
        &'a self,
        table: TableDefinition<'a, K, V>,
    ) -> Result<ReadOnly<'a, 't, K, V>> {
        self.kept.close(table.name())?;
        Ok(ReadOnly(Held::Own(self.txn.open_table(table)?)))
    }

    /// One of the [`Kept`] tables, to change it.
    fn kept_write<K: Key + 'static, V: Value + 'static>(
        &self,
        slot: impl for<'k> FnOnce(&'k Kept<'t>) -> &'k Slot<'t, K, V>,
    ) -> Result<Logged<'_, 't, K, V>> {
        let slot = slot(&self.kept);
        Ok(self.logged(slot.table, slot.get(self.txn)?))
    }

    /// One of the [`Kept`] tables, to read it.
    fn kept_read<K: Key + 'static, V: Value + 'static>(
        &self,
        slot: impl for<'k> FnOnce(&'k Kept<'t>) -> &'k Slot<'t, K, V>,
    ) -> Result<ReadOnly<'_, 't, K, V>> {
        Ok(ReadOnly(slot(&self.kept).get(self.txn)?))
    }

    fn logged<'a, K: Key + 'static, V: Value + 'static>(
        &'a self,
        def: TableDefinition<'a, K, V>,
        table: Held<'a, 't, K, V>,
    ) -> Logged<'a, 't, K, V> {
        self.writes.set(self.writes.get() + 1);
        Logged {
            table,
            def: Some(def),
            log: Some(&self.log),
        }
    }

    /// Lead `id`'s record, read through the kept `leads` table.
    pub(super) fn kept_lead(&self, org: &str, id: &str) -> Result<Option<LeadRecord>> {
        let leads = self.kept_read(|k| &k.leads)?;
        let found = leads.get((org, id))?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// Lead `id`'s handling record, read through the kept `lead_handling` table.
    pub(super) fn kept_handling(&self, org: &str, id: &str) -> Result<Option<HandlingRecord>> {
        let handling = self.kept_read(|k| &k.lead_handling)?;
        let found = handling.get((org, id))?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// Marks a lead whose search index rows must be re-derived before the commit.
    pub(super) fn mark_lead(&mut self, org: &str, lead: &str) {
        self.marked_leads
            .insert((org.to_string(), lead.to_string()));
    }

    /// The (org, lead) pairs this transaction changed so far, for the console's live
    /// streams: those marked and those whose activity moved.
    pub(crate) fn changed_leads(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self.marked_leads.iter().cloned().collect();
        out.extend(
            self.activity_moved
                .keys()
                .filter(|k| !self.marked_leads.contains(*k))
                .cloned(),
        );
        out
    }

    /// Brings the marked leads' index rows up to date, persists the clock's high-water
    /// mark and answers the log of the transaction's changes. The kept tables close
    /// here, so the caller can commit the transaction.
    pub(crate) fn finish(mut self) -> Result<OpLog> {
        self.refresh_marked_leads()?;
        if self.clock_moved {
            let mut meta = self.open_write(META)?;
            meta.insert("clock", &self.clock.to_le_bytes()[..])?;
        }
        Ok(self.log.into_inner())
    }

    /// The next commit-ordered timestamp: wall-clock time, but always strictly above
    /// every timestamp handed out before in this database, even across restarts and a
    /// clock stepped backwards. One writer and one transaction at a time make the
    /// order of ticks the order of commits.
    pub fn tick(&mut self) -> Micros {
        self.clock = now_micros().max(self.clock + 1);
        self.clock_moved = true;
        self.clock
    }

    // Organizations and keys.

    pub fn org_id_by_name(&self, name: &str) -> Result<Option<String>> {
        let table = self.open_read(ORG_NAMES)?;
        let found = table.get(name)?;
        Ok(found.map(|v| v.value().to_string()))
    }

    pub fn put_org(&mut self, org: &OrgRecord) -> Result<()> {
        let bytes = encode(org)?;
        self.open_write(ORGS)?
            .insert(org.id.as_str(), bytes.as_slice())?;
        self.open_write(ORG_NAMES)?
            .insert(org.name.as_str(), org.id.as_str())?;
        Ok(())
    }

    pub fn key_hash_by_id(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let table = self.open_read(API_KEY_IDS)?;
        let found = table.get(id)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    pub fn put_key(&mut self, hash: &[u8], key: &KeyRecord) -> Result<()> {
        self.keys_changed = true;
        let bytes = encode(key)?;
        self.open_write(API_KEYS)?.insert(hash, bytes.as_slice())?;
        self.open_write(API_KEY_IDS)?
            .insert(key.id.as_str(), hash)?;
        Ok(())
    }

    // Leads.

    /// Writes `lead` and moves its index rows from where `old` had them.
    pub fn put_lead(
        &mut self,
        org: &str,
        lead: &LeadRecord,
        old: Option<&LeadRecord>,
    ) -> Result<()> {
        let id = lead.id.as_str();
        match old {
            // An event on the lead: its facets stand, its activity rows move.
            Some(old) if only_times_moved(old, lead) => {
                self.activity_moved
                    .insert((org.to_string(), id.to_string()), lead.last_activity_at);
            }
            _ => self.mark_lead(org, id),
        }
        let bytes = encode(lead)?;
        self.kept_write(|k| &k.leads)?
            .insert((org, id), bytes.as_slice())?;

        let mut by_updated = self.kept_write(|k| &k.leads_by_updated)?;
        if let Some(old) = old.filter(|old| old.updated_at != lead.updated_at) {
            by_updated.remove((org, old.updated_at, id))?;
        }
        let view = lead_view::index_value(lead)?;
        by_updated.insert((org, lead.updated_at, id), view.as_slice())?;
        drop(by_updated);

        if old.map(|o| o.created_at) != Some(lead.created_at) {
            let mut by_created = self.open_write(LEADS_BY_CREATED)?;
            if let Some(old) = old {
                by_created.remove((org, old.created_at, id))?;
            }
            by_created.insert((org, lead.created_at, id), ())?;
        }

        // The contact indexes hold live leads only: a deleted lead's phone and email
        // are free again.
        let live = |l: &&LeadRecord| l.deleted_at.is_none();
        let old_live = old.filter(live);
        let new_live = Some(lead).filter(live);
        let old_phone = old_live.map_or("", |o| o.phone.as_str());
        let new_phone = new_live.map_or("", |l| l.phone.as_str());
        self.move_contact_row(LEADS_BY_PHONE, org, id, old_phone, new_phone)?;
        let old_email = old_live.map(|o| email_key(&o.email)).unwrap_or_default();
        let new_email = new_live.map(|l| email_key(&l.email)).unwrap_or_default();
        self.move_contact_row(LEADS_BY_EMAIL, org, id, &old_email, &new_email)
    }

    /// Moves lead `id`'s row of a contact index from value `old` to `new` ("": none).
    fn move_contact_row(
        &self,
        table: TableDefinition<(&str, &str, &str), ()>,
        org: &str,
        id: &str,
        old: &str,
        new: &str,
    ) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let mut index = self.open_write(table)?;
        if !old.is_empty() {
            index.remove((org, old, id))?;
        }
        if !new.is_empty() {
            index.insert((org, new, id), ())?;
        }
        Ok(())
    }

    // Events and the message projection.

    /// The `updatedAt` and record of an event, if it exists.
    pub fn event(&self, key: EventKey) -> Result<Option<(Micros, EventRecord)>> {
        let EventKey {
            org,
            lead,
            kind,
            id,
        } = key;
        let keys = self.kept_read(|k| &k.event_keys)?;
        let Some(updated_at) = keys.get((org, lead, kind, id))?.map(|v| v.value()) else {
            return Ok(None);
        };
        let events = self.kept_read(|k| &k.events)?;
        let found = events.get((org, lead, updated_at, kind, id))?;
        match found {
            Some(v) => Ok(Some((updated_at, decode(v.value())?))),
            None => Err(crate::error::Error::Internal(format!(
                "event index points at a missing event: {org}/{lead}/{kind}/{id}"
            ))),
        }
    }

    /// Writes event `key` at `updated_at` with the record `build` makes of the event as
    /// it was (its `updatedAt` and record; `None`: a new event), moving its row from
    /// where it was; answers the event as it was. One lookup: the key row's insert
    /// answers the old `updatedAt`.
    pub fn upsert_event(
        &mut self,
        key: EventKey,
        updated_at: Micros,
        build: impl FnOnce(Option<&(Micros, EventRecord)>) -> EventRecord,
    ) -> Result<(Option<(Micros, EventRecord)>, EventRecord)> {
        let EventKey {
            org,
            lead,
            kind,
            id,
        } = key;
        let old_at = self
            .kept_write(|k| &k.event_keys)?
            .insert((org, lead, kind, id), updated_at)?
            .map(|v| v.value());
        let mut events = self.kept_write(|k| &k.events)?;
        let existing = match old_at {
            Some(at) => match events.remove((org, lead, at, kind, id))? {
                Some(v) => Some((at, decode::<EventRecord>(v.value())?)),
                None => {
                    return Err(crate::error::Error::Internal(format!(
                        "event index points at a missing event: {org}/{lead}/{kind}/{id}"
                    )))
                }
            },
            None => None,
        };
        let record = build(existing.as_ref());
        let bytes = encode(&record)?;
        events.insert((org, lead, updated_at, kind, id), bytes.as_slice())?;
        Ok((existing, record))
    }

    /// A lead's latest message event (by `createdAt`): its type and record.
    pub fn last_message(&self, org: &str, lead: &str) -> Result<Option<(String, EventRecord)>> {
        let messages = self.open_read(MESSAGES_BY_CREATED)?;
        let from = (org, lead, i64::MIN, "", "");
        let to = (org, lead, i64::MAX, "\u{10FFFF}", "\u{10FFFF}");
        let last = messages
            .range::<(&str, &str, i64, &str, &str)>(from..=to)?
            .next_back();
        let Some(row) = last else {
            return Ok(None);
        };
        let (key, _) = row?;
        let (_, _, _, kind, id) = key.value();
        let kind = kind.to_string();
        let found = self.event(EventKey {
            org,
            lead,
            kind: &kind,
            id,
        })?;
        Ok(found.map(|(_, record)| (kind, record)))
    }

    /// The newest message to the lead (owner `user`) among its last `look_back` messages
    /// (by `createdAt`): its record, if any.
    pub fn last_outbound_message(
        &self,
        org: &str,
        lead: &str,
        look_back: usize,
    ) -> Result<Option<EventRecord>> {
        let keys: Vec<(String, String)> = {
            let messages = self.open_read(MESSAGES_BY_CREATED)?;
            let from = (org, lead, i64::MIN, "", "");
            let to = (org, lead, i64::MAX, "\u{10FFFF}", "\u{10FFFF}");
            let mut keys = Vec::new();
            for row in messages
                .range::<(&str, &str, i64, &str, &str)>(from..=to)?
                .rev()
                .take(look_back)
            {
                let (key, _) = row?;
                let (_, _, _, kind, id) = key.value();
                keys.push((kind.to_string(), id.to_string()));
            }
            keys
        };
        for (kind, id) in &keys {
            let found = self.event(EventKey {
                org,
                lead,
                kind,
                id,
            })?;
            if let Some((_, record)) = found {
                if record
                    .data
                    .0
                    .get("owner")
                    .and_then(serde_json::Value::as_str)
                    != Some("lead")
                {
                    return Ok(Some(record));
                }
            }
        }
        Ok(None)
    }

    /// The lead's newest email of its own (`read::last_lead_email_in`), if any.
    pub fn last_lead_email(&self, org: &str, lead: &str) -> Result<Option<EventRecord>> {
        super::read::last_lead_email_in(
            &*self.open_read(MESSAGES_BY_CREATED)?,
            &*self.open_read(EVENT_KEYS)?,
            &*self.open_read(EVENTS)?,
            org,
            lead,
        )
    }

    /// Adds or removes the message-projection row of an event created at `created_at`.
    pub fn set_message_row(
        &mut self,
        key: EventKey,
        created_at: Micros,
        present: bool,
    ) -> Result<()> {
        let EventKey {
            org,
            lead,
            kind,
            id,
        } = key;
        let mut messages = self.open_write(MESSAGES_BY_CREATED)?;
        if present {
            messages.insert((org, lead, created_at, kind, id), ())?;
        } else {
            messages.remove((org, lead, created_at, kind, id))?;
        }
        Ok(())
    }

    // Calls.

    pub fn put_call(&mut self, org: &str, call: &CallRecord) -> Result<()> {
        let bytes = encode(call)?;
        self.open_write(CALLS)?
            .insert((org, call.id.as_str()), bytes.as_slice())?;
        Ok(())
    }
}

/// Whether `new` differs from `old` in its `updatedAt` and `lastActivityAt` only: what
/// the search index derives from a lead (`lead_index::facets`) is then unchanged.
fn only_times_moved(old: &LeadRecord, new: &LeadRecord) -> bool {
    old.deleted_at.is_none()
        && LeadRecord {
            updated_at: new.updated_at,
            last_activity_at: new.last_activity_at,
            ..old.clone()
        } == *new
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::reader::Reader;
    use crate::store::Store;

    fn lead(updated_at: Micros) -> LeadRecord {
        LeadRecord {
            id: "l1".into(),
            phone: "+15125551099".into(),
            created_at: 10,
            updated_at,
            last_activity_at: updated_at,
            ..LeadRecord::default()
        }
    }

    /// A kept table and an open of the same table elsewhere take turns within one
    /// transaction, every change is counted and logged, and a second handle of a table
    /// while one is held is an error, as redb's own second open is.
    #[tokio::test]
    async fn a_kept_table_and_another_open_of_it_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let logged = store
            .write(|tx| {
                let before = tx.writes();
                tx.put_lead("o", &lead(10), None)?;
                assert!(tx.writes() > before, "a kept table's change is counted");
                // Kept, then opened elsewhere (the generic read closes the kept one),
                // then kept again.
                assert_eq!(tx.lead("o", "l1")?.map(|l| l.updated_at), Some(10));
                let generic: Option<LeadRecord> = tx.record(LEADS, ("o", "l1"))?;
                assert_eq!(generic.map(|l| l.updated_at), Some(10));
                tx.put_lead("o", &lead(20), Some(&lead(10)))?;
                assert_eq!(tx.lead("o", "l1")?.map(|l| l.updated_at), Some(20));
                // A handle held: another of the same table is refused, not a panic.
                let held = tx.kept_read(|k| &k.leads)?;
                assert!(tx.open_write(LEADS).is_err());
                drop(held);
                let mut leads = tx.open_write(LEADS)?;
                assert!(leads.get(("o", "l1"))?.is_some());
                assert!(tx.lead("o", "l1").is_err(), "the generic handle is held");
                leads.remove(("o", "missing"))?;
                drop(leads);
                Ok(tx.log.borrow().bytes().len())
            })
            .await
            .unwrap();
        assert!(logged > 0);
        let read = store.read().unwrap();
        assert_eq!(
            read.lead("o", "l1").unwrap().map(|l| l.updated_at),
            Some(20)
        );
        assert_eq!(store.check().unwrap(), Vec::<String>::new());
    }
}
