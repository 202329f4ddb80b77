//! Backups and the consistency check.
//!
//! redb has no file-level backup, and copying the file while the writer commits can
//! catch it half-written. A backup is therefore one read transaction, a consistent
//! snapshot, copied table by table into a new redb file. The check verifies that every
//! index row points at its record, every record has its index rows, and every lead's
//! stored JSON is what its record renders to. Beside the problems, `engaged check`
//! lists live leads that share a phone or email (`shared_contacts`): stored before
//! duplicates were refused, they are not damage, but someone should merge them. It also
//! names each organization that requires no consent (`consent_notices`): one from
//! before the consent policy keeps `consentRequired` empty.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition,
};

use super::codec::decode;
use super::lead_view;
use super::rows::{
    email_key, DeliveryRecord, DeliveryState, EngineSettings, KeyRecord, LeadRecord, OrgRecord,
};
use super::tables::*;
use super::Store;
use crate::error::{Error, Result};

impl Store {
    /// Writes a consistent snapshot of the whole database to a new file at `target`.
    pub fn backup_to(&self, target: &Path) -> Result<u64> {
        // The backup holds personal data and webhook secrets: readable by its owner
        // only (mode 0600), like the database. Creating it here, exclusively, also
        // makes sure an existing file is never overwritten.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(target)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => {
                    Error::Conflict(format!("{} already exists", target.display()))
                }
                _ => Error::Internal(format!("cannot create {}: {e}", target.display())),
            })?;
        let snapshot = self.shared.db()?.begin_read()?;
        let copy = Database::create(target)?;
        let txn = copy.begin_write()?;
        let mut rows = 0u64;
        macro_rules! copy_table {
            ($table:ident) => {
                rows += copy_rows(&snapshot, &txn, $table)?;
            };
        }
        all_tables!(copy_table);
        // A restored copy is a new database: its first open makes its own id and log.
        {
            let mut meta = txn.open_table(META)?;
            for key in super::wal::NOT_COPIED {
                if meta.remove(key)?.is_some() {
                    rows -= 1;
                }
            }
        }
        txn.commit()?;
        Ok(rows)
    }

    /// Problems found by the consistency check; empty when the store is sound.
    pub fn check(&self) -> Result<Vec<String>> {
        check_snapshot(&self.shared.db()?.begin_read()?)
    }

    /// Live leads sharing a phone or email, as `shared_contacts` lists them.
    pub fn shared_contacts(&self) -> Result<Vec<String>> {
        shared_contacts(&self.shared.db()?.begin_read()?)
    }

    /// A line for each organization whose `consentRequired` is empty.
    pub fn consent_notices(&self) -> Result<Vec<String>> {
        consent_notices(&self.shared.db()?.begin_read()?)
    }
}

/// Applies replicated batches (each a write-ahead log record's operations) to a
/// database being restored, in one durable transaction.
pub fn apply_batches<'a>(db: &Database, batches: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
    let txn = db.begin_write()?;
    for ops in batches {
        super::wal::apply_record(&txn, ops)?;
    }
    txn.commit()?;
    Ok(())
}

/// How many leads a database holds (deleted ones included).
pub fn lead_count(db: &Database) -> Result<u64> {
    let read = db.begin_read()?;
    match read.open_table(LEADS) {
        Ok(leads) => Ok(leads.len()?),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

fn copy_rows<K: redb::Key + 'static, V: redb::Value + 'static>(
    source: &ReadTransaction,
    target: &redb::WriteTransaction,
    table: TableDefinition<K, V>,
) -> Result<u64> {
    let from = source.open_table(table)?;
    let mut to = target.open_table(table)?;
    let mut n = 0;
    for row in from.iter()? {
        let (k, v) = row?;
        to.insert(k.value(), v.value())?;
        n += 1;
    }
    Ok(n)
}

/// Runs redb's own integrity check on a closed database file with no log (a backup),
/// then ours. An error names the file.
pub fn check_file(path: &Path) -> Result<Vec<String>> {
    let mut db = open_closed(path)?;
    check_open(&mut db).map(|(problems, _, _)| problems)
}

fn open_closed(path: &Path) -> Result<Database> {
    match Database::open(path) {
        Ok(db) => Ok(db),
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
            Err(Error::Conflict(format!("{} is in use", path.display())))
        }
        Err(e) => Err(Error::Internal(format!("{}: {e}", path.display()))),
    }
}

/// redb's integrity check, ours, the live leads sharing a phone or email
/// (`shared_contacts`) and the organizations requiring no consent (`consent_notices`).
fn check_open(db: &mut Database) -> Result<(Vec<String>, Vec<String>, Vec<String>)> {
    let mut problems = Vec::new();
    if !db.check_integrity()? {
        problems.push("redb integrity check repaired or found damage".to_string());
    }
    let read = db.begin_read()?;
    problems.extend(check_snapshot(&read)?);
    Ok((problems, shared_contacts(&read)?, consent_notices(&read)?))
}

/// What `engaged check` finds in a stopped server's data directory.
pub struct StoppedCheck {
    /// The database's identity and state, and what its log holds (`store::wal`).
    pub log: Vec<String>,
    /// Damage, and a log the next start refuses.
    pub problems: Vec<String>,
    /// Live leads sharing a phone or email.
    pub shared: Vec<String>,
    /// Organizations requiring no consent.
    pub notices: Vec<String>,
}

/// Checks the database at `db_path` and its write-ahead log as the next start would
/// find them, writing neither: both are copied into a temporary directory (`$TMPDIR`),
/// where redb repairs a file a crash left and the log is applied, and checked there.
pub fn check_stopped(db_path: &Path) -> Result<StoppedCheck> {
    let scratch = Scratch::new()?;
    let copy = scratch.0.join("engaged.redb");
    std::fs::copy(db_path, &copy).map_err(|e| {
        Error::Internal(format!(
            "cannot copy {} to {}: {e}",
            db_path.display(),
            copy.display()
        ))
    })?;
    let wal = super::wal::path_of(db_path);
    if wal.exists() {
        std::fs::copy(&wal, super::wal::path_of(&copy))
            .map_err(|e| Error::Internal(format!("cannot copy {}: {e}", wal.display())))?;
    }
    let mut db = open_closed(&copy).map_err(|e| {
        Error::Internal(
            e.to_string_for_logs()
                .replace(&copy.display().to_string(), &db_path.display().to_string()),
        )
    })?;
    let (inspection, _) = super::wal::inspect_files(&db, &copy)?;
    let log = inspection.describe(db_path);
    let mut problems = Vec::new();
    match inspection.refusal() {
        Some(refusal) => problems.push(format!(
            "the next start refuses: {}",
            refusal.explain(db_path)
        )),
        None => {
            if let Err(e) = super::wal::open(&db, &copy) {
                let why = match e {
                    super::wal::OpenFailure::Refused(why) => why,
                    super::wal::OpenFailure::Failed(e) => e.to_string_for_logs(),
                };
                problems.push(format!("the log cannot be applied: {why}"));
            }
        }
    }
    let (found, shared, notices) = check_open(&mut db)?;
    problems.extend(found);
    Ok(StoppedCheck {
        log,
        problems,
        shared,
        notices,
    })
}

/// A private temporary directory, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        let path = std::env::temp_dir().join(format!(
            "engaged-check-{}",
            hex::encode(crate::ids::random_bytes::<8>())
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| Error::Internal(format!("cannot create {}: {e}", path.display())))?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `engaged recover --accept-loss`: opens the database at `db_path` (server stopped)
/// with the log [`Store::open`] refuses, applies the log's good batches, records a
/// clean stop and moves the log aside. Answers what it did, a line each.
pub fn recover_accepting_loss(
    db_path: &Path,
) -> std::result::Result<Vec<String>, super::OpenError> {
    use super::wal::{accept_loss, Loss, Recovered};
    let db = match Database::builder().create(db_path) {
        Ok(db) => db,
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => return Err(super::OpenError::InUse),
        Err(e) => {
            return Err(super::OpenError::Other(format!(
                "{}: {e}",
                db_path.display()
            )))
        }
    };
    let wal = super::wal::path_of(db_path);
    let mut lines = Vec::new();
    match accept_loss(&db, db_path)? {
        Recovered::Sound => lines.push(format!(
            "nothing to recover: {} and its log {} go together and are sound",
            db_path.display(),
            wal.display()
        )),
        Recovered::Accepted {
            refusal,
            applied,
            lost,
            moved_to,
        } => {
            lines.push(refusal);
            lines.push(format!(
                "applied {applied} batch(es) from {}",
                wal.display()
            ));
            lines.push(match lost {
                Loss::Batches(n) => format!("dropped {n} answered batch(es)"),
                Loss::Unknown => "dropped the batches answered since the last checkpoint (how many, nothing says: their log is not there)".to_string(),
            });
            if let Some(aside) = moved_to {
                lines.push(format!("moved the log to {}", aside.display()));
            }
            lines.push(format!(
                "{} is consistent and stopped cleanly: the next start begins a new log",
                db_path.display()
            ));
        }
    }
    let problems = check_snapshot(&db.begin_read().map_err(Error::from)?)?;
    if !problems.is_empty() {
        lines.push(format!(
            "engaged check finds {} problem(s) in what it holds: run it for the list",
            problems.len()
        ));
    }
    Ok(lines)
}

fn check_snapshot(read: &ReadTransaction) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    check_orgs_and_keys(read, &mut problems)?;
    check_leads(read, &mut problems)?;
    check_events(read, &mut problems)?;
    check_deliveries(read, &mut problems)?;
    check_facet_counts(read, &mut problems)?;
    Ok(problems)
}

/// Every facet count (the lead search's totals, the inbox's tabs, a campaign's numbers
/// by lead) equals the number of live leads whose facet list holds it.
fn check_facet_counts(read: &ReadTransaction, problems: &mut Vec<String>) -> Result<()> {
    let lists = read.open_table(LEAD_FACET_LIST)?;
    let mut want: std::collections::BTreeMap<(String, String), u64> = Default::default();
    for row in lists.iter()? {
        let (key, value) = row?;
        let (org, _) = key.value();
        let facets: Vec<String> = decode(value.value())?;
        for facet in facets {
            *want.entry((org.to_string(), facet)).or_default() += 1;
        }
    }
    let counts = read.open_table(LEAD_FACET_COUNTS)?;
    for row in counts.iter()? {
        let (key, value) = row?;
        let (org, facet) = key.value();
        let stored = value.value();
        let expected = want
            .remove(&(org.to_string(), facet.to_string()))
            .unwrap_or(0);
        if stored != expected {
            problems.push(format!(
                "org {org}: facet {facet} counts {stored}, its leads are {expected}"
            ));
        }
    }
    for ((org, facet), expected) in want {
        problems.push(format!(
            "org {org}: facet {facet} has {expected} leads and no count"
        ));
    }
    Ok(())
}

fn check_orgs_and_keys(read: &ReadTransaction, problems: &mut Vec<String>) -> Result<()> {
    let orgs = read.open_table(ORGS)?;
    let names = read.open_table(ORG_NAMES)?;
    for row in orgs.iter()? {
        let (_, v) = row?;
        let org: OrgRecord = decode(v.value())?;
        if names.get(org.name.as_str())?.map(|n| n.value().to_string()) != Some(org.id.clone()) {
            problems.push(format!("org {} has no name row", org.id));
        }
    }
    let keys = read.open_table(API_KEYS)?;
    let key_ids = read.open_table(API_KEY_IDS)?;
    for row in keys.iter()? {
        let (hash, v) = row?;
        let key: KeyRecord = decode(v.value())?;
        if key_ids.get(key.id.as_str())?.map(|h| h.value().to_vec()) != Some(hash.value().to_vec())
        {
            problems.push(format!("key {} has no id row", key.id));
        }
        if orgs.get(key.org_id.as_str())?.is_none() {
            problems.push(format!(
                "key {} belongs to a missing org {}",
                key.id, key.org_id
            ));
        }
    }
    Ok(())
}

fn check_leads(read: &ReadTransaction, problems: &mut Vec<String>) -> Result<()> {
    let leads = read.open_table(LEADS)?;
    let by_updated = read.open_table(LEADS_BY_UPDATED)?;
    let by_created = read.open_table(LEADS_BY_CREATED)?;
    let by_phone = read.open_table(LEADS_BY_PHONE)?;
    let by_email = read.open_table(LEADS_BY_EMAIL)?;
    let order = read.open_table(LEAD_ORDER)?;
    let by_activity = read.open_table(LEADS_BY_ACTIVITY)?;
    let (mut count, mut live_count) = (0u64, 0u64);
    for row in leads.iter()? {
        let (key, v) = row?;
        let (org, id) = key.value();
        let lead: LeadRecord = decode(v.value())?;
        count += 1;
        match by_updated.get((org, lead.updated_at, id))? {
            None => problems.push(format!("lead {org}/{id} missing from leads_by_updated")),
            Some(v) => {
                // A row of another view format is rendered on read, so never stale.
                let stale = lead_view::parse(v.value()).is_some_and(|indexed| {
                    indexed.created_at != lead.created_at
                        || lead_view::render(&lead).ok().as_deref() != Some(indexed.json)
                });
                if stale {
                    problems.push(format!(
                        "lead {org}/{id} has stale JSON in leads_by_updated"
                    ));
                }
            }
        }
        if by_created.get((org, lead.created_at, id))?.is_none() {
            problems.push(format!("lead {org}/{id} missing from leads_by_created"));
        }
        let live = lead.deleted_at.is_none();
        if live {
            // The search's sort keys: what the lead's record says, and its activity row.
            live_count += 1;
            let sort_keys = (lead.created_at, lead.last_activity_at);
            if order.get((org, id))?.map(|v| v.value()) != Some(sort_keys) {
                problems.push(format!("lead {org}/{id} has stale sort keys in lead_order"));
            }
            if by_activity.get((org, lead.last_activity_at, id))?.is_none() {
                problems.push(format!("lead {org}/{id} missing from leads_by_activity"));
            }
        }
        if live && !lead.phone.is_empty() && by_phone.get((org, lead.phone.as_str(), id))?.is_none()
        {
            problems.push(format!("lead {org}/{id} missing from leads_by_phone"));
        }
        let email = email_key(&lead.email);
        if live && !email.is_empty() && by_email.get((org, email.as_str(), id))?.is_none() {
            problems.push(format!("lead {org}/{id} missing from leads_by_email"));
        }
    }
    // Every index row points at a lead with that value; equal counts then mean no
    // stray rows either.
    for (name, rows, leads) in [
        ("leads_by_updated", by_updated.len()?, count),
        ("leads_by_created", by_created.len()?, count),
        ("lead_order", order.len()?, live_count),
        ("leads_by_activity", by_activity.len()?, live_count),
    ] {
        if rows != leads {
            problems.push(format!("{name} has {rows} rows for {leads} leads"));
        }
    }
    for (name, index, value_of) in [
        (
            "leads_by_phone",
            &by_phone,
            (|l: &LeadRecord| l.phone.clone()) as fn(&LeadRecord) -> String,
        ),
        ("leads_by_email", &by_email, |l: &LeadRecord| {
            email_key(&l.email)
        }),
    ] {
        for row in index.iter()? {
            let (key, _) = row?;
            let (org, value, id) = key.value();
            let points = match leads.get((org, id))? {
                Some(v) => {
                    let lead = decode::<LeadRecord>(v.value())?;
                    lead.deleted_at.is_none() && value_of(&lead) == value
                }
                None => false,
            };
            if !points {
                problems.push(format!(
                    "{name} row {org}/{value}/{id} points at no such live lead"
                ));
            }
        }
    }
    Ok(())
}

/// Live leads that share a phone or email within their organization (stored before
/// duplicates were refused), one line per shared value: `org phone +1555...: id, id`.
/// Walks the contact indexes, whose order puts such leads side by side.
/// Calls with the assistant's voice are checked for consent only when `consentRequired`
/// says so: a line for each organization whose list is empty (a row in an older layout,
/// before the file is migrated, is not read).
fn consent_notices(read: &ReadTransaction) -> Result<Vec<String>> {
    let orgs = read.open_table(ORGS)?;
    let engine = read.open_table(ENGINE_SETTINGS)?;
    let mut lines = Vec::new();
    for row in orgs.iter()? {
        let (id, _) = row?;
        let id = id.value();
        let Some(settings) = engine.get(id)? else {
            continue; // The default requires consent for voice marketing.
        };
        let Ok(settings) = decode::<EngineSettings>(settings.value()) else {
            continue;
        };
        if settings.consent_required.0.is_empty() {
            lines.push(format!(
                "organization {id}: calls with the assistant's voice are not checked for consent (consentRequired is empty); set it in the console's Settings (Consent) or with PATCH /v1/org {{\"consentRequired\": [{{\"channel\": \"voice\", \"purpose\": \"marketing\"}}]}}"
            ));
        }
    }
    Ok(lines)
}

fn shared_contacts(read: &ReadTransaction) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for (what, table) in [("phone", LEADS_BY_PHONE), ("email", LEADS_BY_EMAIL)] {
        let index = read.open_table(table)?;
        let mut group: Option<(String, String, Vec<String>)> = None;
        let mut flush = |group: Option<(String, String, Vec<String>)>| {
            if let Some((org, value, ids)) = group.filter(|(_, _, ids)| ids.len() > 1) {
                lines.push(format!("{org} {what} {value}: {}", ids.join(", ")));
            }
        };
        for row in index.iter()? {
            let (key, _) = row?;
            let (org, value, id) = key.value();
            match &mut group {
                Some((o, v, ids)) if o == org && v == value => ids.push(id.to_string()),
                _ => flush(group.replace((org.into(), value.into(), vec![id.to_string()]))),
            }
        }
        flush(group);
    }
    Ok(lines)
}

fn check_events(read: &ReadTransaction, problems: &mut Vec<String>) -> Result<()> {
    let events = read.open_table(EVENTS)?;
    let keys = read.open_table(EVENT_KEYS)?;
    for row in events.iter()? {
        let (key, _) = row?;
        let (org, lead, updated, kind, id) = key.value();
        if keys.get((org, lead, kind, id))?.map(|t| t.value()) != Some(updated) {
            problems.push(format!(
                "event {org}/{lead}/{kind}/{id} has no matching event_keys row"
            ));
        }
    }
    if events.len()? != keys.len()? {
        problems.push(format!(
            "events has {} rows, event_keys {}",
            events.len()?,
            keys.len()?
        ));
    }
    let messages = read.open_table(MESSAGES_BY_CREATED)?;
    for row in messages.iter()? {
        let (key, _) = row?;
        let (org, lead, _, kind, id) = key.value();
        if keys.get((org, lead, kind, id))?.is_none() {
            problems.push(format!(
                "message row {org}/{lead}/{kind}/{id} points at no event"
            ));
        }
    }
    Ok(())
}

fn check_deliveries(read: &ReadTransaction, problems: &mut Vec<String>) -> Result<()> {
    let deliveries = read.open_table(DELIVERIES)?;
    let by_endpoint = read.open_table(DELIVERIES_BY_ENDPOINT)?;
    let outbox = read.open_table(OUTBOX)?;
    for row in deliveries.iter()? {
        let (_, v) = row?;
        let d: DeliveryRecord = decode(v.value())?;
        if by_endpoint
            .get((d.endpoint_id.as_str(), d.created_at, d.id.as_str()))?
            .is_none()
        {
            problems.push(format!(
                "delivery {} missing from deliveries_by_endpoint",
                d.id
            ));
        }
        if let (DeliveryState::Pending, Some(due)) = (d.state, d.next_attempt_at) {
            if outbox
                .get((d.endpoint_id.as_str(), due, d.id.as_str()))?
                .is_none()
            {
                problems.push(format!("pending delivery {} has no outbox row", d.id));
            }
        }
    }
    for row in outbox.iter()? {
        let (key, _) = row?;
        let (endpoint, due, id) = key.value();
        let sound = match deliveries.get(id)? {
            Some(v) => {
                let d: DeliveryRecord = decode(v.value())?;
                d.state == DeliveryState::Pending
                    && d.next_attempt_at == Some(due)
                    && d.endpoint_id == endpoint
            }
            None => false,
        };
        if !sound {
            problems.push(format!(
                "outbox row {endpoint}/{due}/{id} points at no pending delivery"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::encode;

    #[test]
    fn a_lead_whose_stored_json_differs_from_its_record_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("check.redb")).unwrap();
        let lead = LeadRecord {
            id: "lead-1".into(),
            first_name: "Ann".into(),
            created_at: 1,
            updated_at: 2,
            ..LeadRecord::default()
        };
        let write = |indexed: &LeadRecord| {
            let txn = db.begin_write().unwrap();
            let key = ("org", lead.id.as_str());
            let record = encode(&lead).unwrap();
            txn.open_table(LEADS)
                .unwrap()
                .insert(key, record.as_slice())
                .unwrap();
            let view = lead_view::index_value(indexed).unwrap();
            txn.open_table(LEADS_BY_UPDATED)
                .unwrap()
                .insert(("org", 2, "lead-1"), view.as_slice())
                .unwrap();
            txn.open_table(LEADS_BY_CREATED)
                .unwrap()
                .insert(("org", 1, "lead-1"), ())
                .unwrap();
            txn.open_table(LEADS_BY_PHONE).unwrap();
            txn.open_table(LEADS_BY_EMAIL).unwrap();
            txn.open_table(LEAD_ORDER)
                .unwrap()
                .insert(key, (lead.created_at, lead.last_activity_at))
                .unwrap();
            txn.open_table(LEADS_BY_ACTIVITY)
                .unwrap()
                .insert(("org", lead.last_activity_at, "lead-1"), ())
                .unwrap();
            txn.commit().unwrap();
        };
        let problems = || {
            let mut found = Vec::new();
            check_leads(&db.begin_read().unwrap(), &mut found).unwrap();
            found
        };

        write(&lead);
        assert_eq!(problems(), Vec::<String>::new());
        let renamed = LeadRecord {
            first_name: "Bob".into(),
            ..lead.clone()
        };
        write(&renamed);
        assert_eq!(
            problems(),
            vec!["lead org/lead-1 has stale JSON in leads_by_updated".to_string()]
        );

        // Its activity row moved without its record, then its sort keys with it.
        write(&lead);
        let txn = db.begin_write().unwrap();
        let mut by_activity = txn.open_table(LEADS_BY_ACTIVITY).unwrap();
        by_activity.remove(("org", 0, "lead-1")).unwrap();
        by_activity.insert(("org", 5, "lead-1"), ()).unwrap();
        drop(by_activity);
        txn.commit().unwrap();
        assert_eq!(
            problems(),
            vec!["lead org/lead-1 missing from leads_by_activity".to_string()]
        );
        let txn = db.begin_write().unwrap();
        txn.open_table(LEAD_ORDER)
            .unwrap()
            .insert(("org", "lead-1"), (1, 5))
            .unwrap();
        txn.commit().unwrap();
        assert_eq!(
            problems(),
            vec![
                "lead org/lead-1 has stale sort keys in lead_order".to_string(),
                "lead org/lead-1 missing from leads_by_activity".to_string()
            ]
        );
    }

    #[test]
    fn an_org_requiring_no_consent_gets_one_notice() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("notices.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut orgs = txn.open_table(ORGS).unwrap();
            let mut engine = txn.open_table(ENGINE_SETTINGS).unwrap();
            for id in ["old", "new", "set"] {
                let org = OrgRecord {
                    id: id.into(),
                    name: id.into(),
                    created_at: 1,
                    settings: Default::default(),
                };
                orgs.insert(id, encode(&org).unwrap().as_slice()).unwrap();
            }
            let none = EngineSettings {
                consent_required: crate::store::rows::ConsentRequired(Vec::new()),
                ..EngineSettings::default()
            };
            engine
                .insert("old", encode(&none).unwrap().as_slice())
                .unwrap();
            let set = encode(&EngineSettings::default()).unwrap();
            engine.insert("set", set.as_slice()).unwrap();
        }
        txn.commit().unwrap();
        let notices = consent_notices(&db.begin_read().unwrap()).unwrap();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].starts_with(
            "organization old: calls with the assistant's voice are not checked for consent"
        ));
        assert!(notices[0].contains("consentRequired"));
    }
}
