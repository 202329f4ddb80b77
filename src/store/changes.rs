//! What each commit changed, told after the commit to whoever listens (the console's
//! live streams), without ever making the writer wait.
//!
//! The writer publishes one [`Commit`] per committed batch that changed a lead (its
//! record, engagement or handling) or ended a session, into a bounded broadcast
//! channel: sending never blocks, and a listener that falls more than [`CAPACITY`]
//! commits behind learns that it lagged (the console then tells its page to reload).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::broadcast;

/// Commits a listener may fall behind before it is told it lagged.
pub const CAPACITY: usize = 256;

/// One committed batch's changes.
#[derive(Debug)]
pub struct Commit {
    /// Increases by one with every published commit (the streams' event ids).
    pub seq: u64,
    /// The (organization, lead) pairs whose lead, engagement or handling changed.
    pub leads: Vec<(String, String)>,
    /// Some session ended (a sign-out, a user disabled, a password changed).
    pub sessions_ended: bool,
}

impl Commit {
    /// The ids of `org`'s leads this commit changed.
    pub fn leads_of<'a>(&'a self, org: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.leads
            .iter()
            .filter(move |(o, _)| o == org)
            .map(|(_, lead)| lead.as_str())
    }
}

/// The channel commits are published on.
#[derive(Debug)]
pub struct Changes {
    sender: broadcast::Sender<Arc<Commit>>,
    seq: AtomicU64,
}

impl Default for Changes {
    fn default() -> Self {
        let (sender, _) = broadcast::channel(CAPACITY);
        Changes {
            sender,
            seq: AtomicU64::new(0),
        }
    }
}

impl Changes {
    /// A listener of the commits from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Commit>> {
        self.sender.subscribe()
    }

    /// The sequence number of the last commit published (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    /// Publishes a commit's changes; never blocks (without listeners it is dropped).
    pub(crate) fn publish(&self, leads: Vec<(String, String)>, sessions_ended: bool) {
        if leads.is_empty() && !sessions_ended {
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let _ = self.sender.send(Arc::new(Commit {
            seq,
            leads,
            sessions_ended,
        }));
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
        assert!(listener.try_recv().is_err());
        changes.publish(Vec::new(), true);
        assert!(listener.try_recv().expect("a session ended").sessions_ended);
        let commit = Commit {
            seq: 1,
            leads: vec![("acme".into(), "a".into()), ("globex".into(), "g".into())],
            sessions_ended: false,
        };
        assert_eq!(commit.leads_of("acme").collect::<Vec<_>>(), ["a"]);
    }
}
