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

use std::collections::BTreeSet;
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
    /// More leads changed than a window names: take every lead as changed.
    pub every_lead: bool,
    /// Some session ended (a sign-out, a user disabled, a password changed).
    pub sessions_ended: bool,
}

impl Commit {
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
    every_lead: bool,
    sessions_ended: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.leads.is_empty() && !self.every_lead && !self.sessions_ended
    }
}

/// The channel windows are published on.
#[derive(Debug)]
pub struct Changes {
    sender: broadcast::Sender<Arc<Commit>>,
    seq: AtomicU64,
    pending: Mutex<Pending>,
    ready: Notify,
}

impl Default for Changes {
    fn default() -> Self {
        let (sender, _) = broadcast::channel(CAPACITY);
        Changes {
            sender,
            seq: AtomicU64::new(0),
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

    /// Hands over a commit's changes; never waits beyond merging them. Without a
    /// listener they are dropped (still counted, so that a page reconnecting later with
    /// an older `Last-Event-ID` catches up).
    pub(crate) fn publish(&self, leads: Vec<(String, String)>, sessions_ended: bool) {
        if leads.is_empty() && !sessions_ended {
            return;
        }
        if self.sender.receiver_count() == 0 {
            self.seq.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        let was_empty = pending.is_empty();
        for lead in leads {
            if pending.leads.len() >= MAX_LEADS {
                pending.every_lead = true;
                break;
            }
            pending.leads.insert(lead);
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
        let _ = self.sender.send(Arc::new(Commit {
            seq,
            leads: taken.leads.into_iter().collect(),
            every_lead: taken.every_lead,
            sessions_ended: taken.sessions_ended,
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
        changes.publish(lead(0), false); // nobody listens: dropped, still numbered
        let mut slow = changes.subscribe();
        for n in 1..=CAPACITY + 10 {
            changes.publish(lead(n), false);
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
        changes.publish(Vec::new(), false);
        changes.flush();
        assert!(listener.try_recv().is_err());
        changes.publish(Vec::new(), true);
        changes.flush();
        assert!(listener.try_recv().expect("a session ended").sessions_ended);
        let commit = Commit {
            seq: 1,
            leads: vec![("acme".into(), "a".into()), ("globex".into(), "g".into())],
            every_lead: false,
            sessions_ended: false,
        };
        assert_eq!(commit.leads_of("acme").collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn the_commits_of_one_window_are_published_as_one_naming_each_lead_once() {
        let changes = Changes::default();
        let mut listener = changes.subscribe();
        changes.publish(lead(1), false);
        changes.publish(lead(2), false);
        changes.publish(lead(1), true);
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
    fn a_window_naming_too_many_leads_says_every_lead_changed() {
        let changes = Changes::default();
        let mut listener = changes.subscribe();
        changes.publish((0..MAX_LEADS + 5).flat_map(lead).collect(), false);
        changes.flush();
        let window = listener.try_recv().expect("one window");
        assert!(window.every_lead);
        assert_eq!(window.leads.len(), MAX_LEADS);
    }

    #[tokio::test]
    async fn the_runner_publishes_a_window_after_its_first_change_and_stops_when_told() {
        let changes = Arc::new(Changes::default());
        let mut listener = changes.subscribe();
        let (stop, stopped) = watch::channel(false);
        let runner = tokio::spawn(changes.clone().run(stopped));
        changes.publish(lead(7), false);
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
