//! What the commits changed, told to whoever listens (the console's live streams, the
//! notifier), without ever making the writer wait.
//!
//! The writer hands each committed batch's changed leads (their record, engagement or
//! handling) and ended sessions to `Changes::publish`, which only merges them into
//! the pending window under a short lock. [`Changes::run`] publishes each window as
//! one [`Commit`], at most every [`WINDOW`], into a bounded broadcast channel: a busy
//! writer (a commit every few milliseconds) wakes every listener once per window, not
//! once per commit, and a listener that falls more than [`CAPACITY`] windows behind
//! learns that it lagged (the console then tells its page to reload).
//!
//! Web chats changed in a commit (`WriteTx::put_webchat_session`) are named the same
//! way, so a console page showing web chats refreshes when a visitor who is not yet a
//! lead writes.
//!
//! Each organization's windows are numbered on their own ([`Commit::seq_of`]): a live
//! stream's event ids count its organization's changes only, and tell nothing about
//! how much any other organization writes.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch, Notify};

/// Windows a listener may fall behind before it is told it lagged.
pub const CAPACITY: usize = 256;
/// The longest a change waits before it is published (the live inbox's delay).
pub const WINDOW: Duration = Duration::from_millis(100);
/// Leads one window names at most; beyond, its commit says `every_lead`.
const MAX_LEADS: usize = 10_000;

/// One window's changes.
#[derive(Debug)]
pub struct Commit {
    /// Increases by one with every published window (the streams' event ids).
    pub seq: u64,
    /// The (organization, lead) pairs whose lead, engagement or handling changed.
    pub leads: Vec<(String, String)>,
    /// The (organization, session) pairs whose web chat changed (a line, a take-over).
    pub webchats: Vec<(String, String)>,
    /// More leads changed than a window names: take every lead as changed.
    pub every_lead: bool,
    /// Some session ended (a sign-out, a user disabled, a password changed).
    pub sessions_ended: bool,
    /// Each organization this window changed (a lead or a web chat), with its own
    /// window number.
    pub org_seqs: Vec<(String, u64)>,
}

impl Commit {
    /// `org`'s window number, when this window changed one of its leads.
    pub fn seq_of(&self, org: &str) -> Option<u64> {
        self.org_seqs
            .iter()
            .find(|(o, _)| o == org)
            .map(|(_, seq)| *seq)
    }

    /// The ids of `org`'s web chats this window changed.
    pub fn webchats_of<'a>(&'a self, org: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.webchats
            .iter()
            .filter(move |(o, _)| o == org)
            .map(|(_, session)| session.as_str())
    }

    /// The ids of `org`'s leads this window changed.
    pub fn leads_of<'a>(&'a self, org: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.leads
            .iter()
            .filter(move |(o, _)| o == org)
            .map(|(_, lead)| lead.as_str())
    }
}

/// What the writer handed over since the last published window.
#[derive(Debug, Default)]
struct Pending {
    leads: BTreeSet<(String, String)>,
    webchats: BTreeSet<(String, String)>,
    /// The organizations of the leads and web chats, even past `MAX_LEADS`.
    orgs: BTreeSet<String>,
    every_lead: bool,
    sessions_ended: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.leads.is_empty()
            && self.webchats.is_empty()
            && !self.every_lead
            && !self.sessions_ended
    }
}

/// The channel windows are published on.
#[derive(Debug)]
pub struct Changes {
    sender: broadcast::Sender<Arc<Commit>>,
    seq: AtomicU64,
    /// Each organization's last window number.
    org_seqs: Mutex<HashMap<String, u64>>,
    pending: Mutex<Pending>,
    ready: Notify,
}

impl Default for Changes {
    fn default() -> Self {
        let (sender, _) = broadcast::channel(CAPACITY);
        Changes {
            sender,
            seq: AtomicU64::new(0),
            org_seqs: Mutex::default(),
            pending: Mutex::default(),
            ready: Notify::new(),
        }
    }
}

impl Changes {
    /// A listener of the windows from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Commit>> {
        self.sender.subscribe()
    }

    /// The sequence number of the last window published (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    /// The number of `org`'s last window (0: none yet): a stream's event ids.
    pub fn last_seq_of(&self, org: &str) -> u64 {
        self.org_seqs
            .lock()
            .ok()
            .and_then(|seqs| seqs.get(org).copied())
            .unwrap_or(0)
    }

    /// Numbers one more window of each of `orgs`.
    fn count<'a>(&self, orgs: impl Iterator<Item = &'a str>) -> Vec<(String, u64)> {
        let Ok(mut seqs) = self.org_seqs.lock() else {
            return Vec::new();
        };
        orgs.map(|org| {
            let seq = seqs.entry(org.to_string()).or_default();
            *seq += 1;
            (org.to_string(), *seq)
        })
        .collect()
    }

    /// Hands over a commit's changes; never waits beyond merging them. Without a
    /// listener they are dropped (still counted, so that a page reconnecting later with
    /// an older `Last-Event-ID` catches up).
    pub(crate) fn publish(
        &self,
        leads: Vec<(String, String)>,
        webchats: Vec<(String, String)>,
        sessions_ended: bool,
    ) {
        if leads.is_empty() && webchats.is_empty() && !sessions_ended {
            return;
        }
        if self.sender.receiver_count() == 0 {
            self.seq.fetch_add(1, Ordering::Relaxed);
            let orgs: BTreeSet<&str> = leads
                .iter()
                .chain(&webchats)
                .map(|(org, _)| org.as_str())
                .collect();
            self.count(orgs.into_iter());
            return;
        }
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        let was_empty = pending.is_empty();
        for lead in leads {
            if !pending.orgs.contains(&lead.0) {
                pending.orgs.insert(lead.0.clone());
            }
            if pending.leads.len() >= MAX_LEADS {
                pending.every_lead = true;
                continue;
            }
            pending.leads.insert(lead);
        }
        for chat in webchats {
            if !pending.orgs.contains(&chat.0) {
                pending.orgs.insert(chat.0.clone());
            }
            // A window names as many web chats as leads at most; past that, the
            // organization's pages refresh as for every lead.
            if pending.webchats.len() >= MAX_LEADS {
                pending.every_lead = true;
                continue;
            }
            pending.webchats.insert(chat);
        }
        pending.sessions_ended |= sessions_ended;
        drop(pending);
        if was_empty {
            self.ready.notify_one();
        }
    }

    /// Publishes the pending window now, if anything is pending.
    pub fn flush(&self) {
        let taken = match self.pending.lock() {
            Ok(mut pending) => std::mem::take(&mut *pending),
            Err(_) => return,
        };
        if taken.is_empty() {
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let org_seqs = self.count(taken.orgs.iter().map(String::as_str));
        let _ = self.sender.send(Arc::new(Commit {
            seq,
            leads: taken.leads.into_iter().collect(),
            webchats: taken.webchats.into_iter().collect(),
            every_lead: taken.every_lead,
            sessions_ended: taken.sessions_ended,
            org_seqs,
        }));
    }

    /// Publishes each window [`WINDOW`] after its first change, until `stop` turns true
    /// (then what is pending, at once). The server runs one.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            tokio::select! {
                _ = self.ready.notified() => {}
                _ = stop.changed() => break,
            }
            tokio::select! {
                _ = tokio::time::sleep(WINDOW) => {}
                _ = stop.changed() => {}
            }
            self.flush();
        }
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead(n: usize) -> Vec<(String, String)> {
        vec![("acme".to_string(), format!("l-{n}"))]
    }

    #[test]
    fn publishing_never_waits_and_a_listener_too_far_behind_is_told_it_lagged() {
        let changes = Changes::default();
        changes.publish(lead(0), Vec::new(), false); // nobody listens: dropped, still numbered
        let mut slow = changes.subscribe();
        for n in 1..=CAPACITY + 10 {
            changes.publish(lead(n), Vec::new(), false);
            changes.flush();
        }
        assert_eq!(changes.last_seq(), (CAPACITY + 11) as u64);
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(10))
        ));
        let next = slow.try_recv().expect("the oldest kept commit");
        assert_eq!(next.seq, 12);
    }

    #[test]
    fn a_commit_without_a_lead_or_a_session_is_not_published() {
        let changes = Changes::default();
        let mut listener = changes.subscribe();
        changes.publish(Vec::new(), Vec::new(), false);
        changes.flush();
        assert!(listener.try_recv().is_err());
        changes.publish(Vec::new(), Vec::new(), true);
        changes.flush();
        assert!(listener.try_recv().expect("a session ended").sessions_ended);
        let commit = Commit {
            seq: 1,
            leads: vec![("acme".into(), "a".into()), ("globex".into(), "g".into())],
            webchats: Vec::new(),
            every_lead: false,
            sessions_ended: false,
            org_seqs: vec![("acme".into(), 4)],
        };
        assert_eq!(commit.leads_of("acme").collect::<Vec<_>>(), ["a"]);
        assert_eq!(
            (commit.seq_of("acme"), commit.seq_of("globex")),
            (Some(4), None)
        );
    }

    #[test]
    fn each_organization_numbers_its_own_windows() {
        let changes = Changes::default();
        changes.publish(lead(0), Vec::new(), false); // nobody listens: still numbered
        let mut listener = changes.subscribe();
        for n in 0..5 {
            changes.publish(
                vec![("globex".to_string(), format!("g-{n}"))],
                Vec::new(),
                false,
            );
            changes.flush();
        }
        changes.publish(lead(1), Vec::new(), false);
        changes.flush();
        assert_eq!(changes.last_seq_of("acme"), 2);
        assert_eq!(changes.last_seq_of("globex"), 5);
        assert_eq!(changes.last_seq_of("initech"), 0);
        let last = std::iter::from_fn(|| listener.try_recv().ok()).last();
        let last = last.expect("windows");
        assert_eq!(
            (last.seq_of("acme"), last.seq_of("globex")),
            (Some(2), None)
        );
    }

    #[test]
    fn the_commits_of_one_window_are_published_as_one_naming_each_lead_once() {
        let changes = Changes::default();
        let mut listener = changes.subscribe();
        changes.publish(lead(1), Vec::new(), false);
        changes.publish(lead(2), Vec::new(), false);
        changes.publish(lead(1), Vec::new(), true);
        assert!(
            listener.try_recv().is_err(),
            "nothing before the window ends"
        );
        changes.flush();
        let window = listener.try_recv().expect("one window");
        assert_eq!(window.seq, 1);
        assert_eq!(window.leads_of("acme").collect::<Vec<_>>(), ["l-1", "l-2"]);
        assert!(window.sessions_ended && !window.every_lead);
        changes.flush();
        assert!(
            listener.try_recv().is_err(),
            "an empty window is not published"
        );
    }

    #[test]
    fn a_web_chat_without_a_lead_is_a_change_of_its_organization() {
        let changes = Changes::default();
        let mut listener = changes.subscribe();
        changes.publish(
            Vec::new(),
            vec![("acme".to_string(), "wcs_1".to_string())],
            false,
        );
        changes.flush();
        let window = listener.try_recv().expect("one window");
        assert_eq!(window.webchats_of("acme").collect::<Vec<_>>(), ["wcs_1"]);
        assert_eq!(window.leads_of("acme").count(), 0);
        assert_eq!(window.seq_of("acme"), Some(1));
        assert_eq!(window.seq_of("globex"), None);
    }

    #[test]
    fn a_window_naming_too_many_leads_says_every_lead_changed() {
        let changes = Changes::default();
        let mut listener = changes.subscribe();
        changes.publish(
            (0..MAX_LEADS + 5).flat_map(lead).collect(),
            Vec::new(),
            false,
        );
        changes.flush();
        let window = listener.try_recv().expect("one window");
        assert!(window.every_lead);
        assert_eq!(window.leads.len(), MAX_LEADS);
        assert_eq!(window.seq_of("acme"), Some(1));
    }

    #[tokio::test]
    async fn the_runner_publishes_a_window_after_its_first_change_and_stops_when_told() {
        let changes = Arc::new(Changes::default());
        let mut listener = changes.subscribe();
        let (stop, stopped) = watch::channel(false);
        let runner = tokio::spawn(changes.clone().run(stopped));
        changes.publish(lead(7), Vec::new(), false);
        let window = tokio::time::timeout(WINDOW * 20, listener.recv())
            .await
            .expect("within the window")
            .expect("a window");
        assert_eq!(window.leads_of("acme").collect::<Vec<_>>(), ["l-7"]);
        stop.send(true).expect("the runner listens");
        tokio::time::timeout(WINDOW * 20, runner)
            .await
            .expect("it stops")
            .expect("no panic");
    }
}
