//! One-shot values carried across a redirect (Post/Redirect/Get): what a refused form
//! shows (its refusals, what was typed, a draft) is kept here for the person's session
//! and the page's path, and the `GET` that follows the `303` takes it once. Kept in
//! memory, at most [`MOST`] at a time and for [`KEPT_FOR`]: a restart, or a person who
//! never follows the redirect, only loses a notice, never a write.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a value waits for its `GET`.
const KEPT_FOR: Duration = Duration::from_secs(600);

/// The most values kept at once (each a form's state: a few KiB at most).
const MOST: usize = 2_000;

/// Whose and for which page: a session's token hash and a path.
type Key = ([u8; 32], String);

/// A value and when it was kept.
type Kept = (Instant, Box<dyn Any + Send>);

/// The values waiting for their `GET`.
#[derive(Default)]
pub struct Flash {
    kept: Mutex<HashMap<Key, Kept>>,
}

impl Flash {
    /// Keeps `value` for session `session`'s next `GET` of `path` (replacing one kept
    /// before). When [`MOST`] are waiting after the expired ones went, it is dropped.
    pub fn put<T: Any + Send>(&self, session: [u8; 32], path: &str, value: T) {
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        let now = Instant::now();
        if kept.len() >= MOST {
            kept.retain(|_, (at, _)| now.duration_since(*at) < KEPT_FOR);
        }
        if kept.len() < MOST {
            kept.insert((session, path.to_string()), (now, Box::new(value)));
        }
    }

    /// The value kept for session `session` and `path`, once (none, or one of another
    /// type or expired: `None`).
    pub fn take<T: Any + Send>(&self, session: [u8; 32], path: &str) -> Option<T> {
        let mut kept = self.kept.lock().ok()?;
        let (at, value) = kept.remove(&(session, path.to_string()))?;
        if at.elapsed() >= KEPT_FOR {
            return None;
        }
        value.downcast::<T>().ok().map(|value| *value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_taken_once_by_its_session_and_path_only() {
        let flash = Flash::default();
        let (mine, theirs) = ([1; 32], [2; 32]);
        flash.put(mine, "/console/leads/a", String::from("refused"));
        assert_eq!(flash.take::<String>(theirs, "/console/leads/a"), None);
        assert_eq!(flash.take::<String>(mine, "/console/leads/b"), None);
        assert_eq!(
            flash.take::<u32>(mine, "/console/leads/a"),
            None,
            "another type"
        );
        flash.put(mine, "/console/leads/a", String::from("refused"));
        assert_eq!(
            flash.take::<String>(mine, "/console/leads/a").as_deref(),
            Some("refused")
        );
        assert_eq!(flash.take::<String>(mine, "/console/leads/a"), None, "once");
    }

    #[test]
    fn it_holds_at_most_its_bound() {
        let flash = Flash::default();
        for i in 0..MOST + 10 {
            flash.put([0; 32], &format!("/p/{i}"), i);
        }
        assert_eq!(flash.kept.lock().unwrap().len(), MOST);
    }
}
