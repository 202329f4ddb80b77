//! Console sessions: a random 256-bit token in the `__Host-engaged_session` cookie,
//! stored only as its SHA-256 with the session's CSRF token and times. A session ends
//! after 12 hours without use or 7 days in all, when its person signs out, and when the
//! user is disabled or its password changes.

use std::time::Duration;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::store::rows::{SessionRecord, UserRecord};
use crate::store::{Reader, WriteTx};
use crate::time::{now_micros, Micros};

/// The session cookie's name (`__Host-`: Secure, Path=/, no Domain).
pub const COOKIE: &str = "__Host-engaged_session";
/// A session unused this long has ended.
pub const IDLE: Duration = Duration::from_secs(12 * 3600);
/// No session lasts longer than this.
pub const ABSOLUTE: Duration = Duration::from_secs(7 * 24 * 3600);
/// A session's last use is written at most this often.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

fn micros(d: Duration) -> Micros {
    d.as_micros() as Micros
}

/// A session just started: the cookie's value and what is stored.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub token: String,
    pub record: SessionRecord,
}

/// A request's valid session and its user.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user: UserRecord,
    pub session: SessionRecord,
    pub token_hash: [u8; 32],
}

/// The SHA-256 of a cookie's token.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn expired(session: &SessionRecord, now: Micros) -> bool {
    now - session.last_seen_at > micros(IDLE) || now - session.created_at > micros(ABSOLUTE)
}

/// Whether a session is still valid at `now` (not past its idle or absolute expiry).
pub fn is_valid(session: &SessionRecord, now: Micros) -> bool {
    !expired(session, now)
}

/// Starts a session for `user` (its expired ones are removed on the way).
pub fn start(tx: &mut WriteTx, user: &UserRecord) -> Result<NewSession> {
    let now = now_micros();
    for hash in tx.user_sessions(&user.id)? {
        if tx.session(&hash)?.is_none_or(|s| expired(&s, now)) {
            tx.remove_session(&hash)?;
        }
    }
    let token =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(crate::ids::random_bytes::<32>());
    let record = SessionRecord {
        user_id: user.id.clone(),
        org_id: user.org_id.clone(),
        csrf: hex::encode(crate::ids::random_bytes::<32>()),
        created_at: now,
        last_seen_at: now,
    };
    tx.put_session(&token_hash(&token), &record)?;
    Ok(NewSession { token, record })
}

/// The session of cookie value `token`, if it is valid at `now`: known, not past its
/// idle or absolute expiry, its user present, enabled and of the same organization.
pub fn authenticate(read: &impl Reader, token: &str, now: Micros) -> Result<Option<SignedIn>> {
    if token.is_empty() || token.len() > 128 {
        return Ok(None);
    }
    let hash = token_hash(token);
    let Some(session) = read.session(&hash)? else {
        return Ok(None);
    };
    if expired(&session, now) {
        return Ok(None);
    }
    let Some(user) = read.user(&session.user_id)? else {
        return Ok(None);
    };
    if user.disabled_at.is_some() || user.org_id != session.org_id {
        return Ok(None);
    }
    Ok(Some(SignedIn {
        user,
        session,
        token_hash: hash,
    }))
}

/// Whether the session's last use is old enough to be written again.
pub fn needs_touch(session: &SessionRecord, now: Micros) -> bool {
    now - session.last_seen_at > micros(TOUCH_EVERY)
}

/// Records a use of the session (its idle time starts again).
pub fn touch(tx: &mut WriteTx, hash: &[u8; 32]) -> Result<()> {
    if let Some(mut session) = tx.session(hash)? {
        session.last_seen_at = now_micros();
        tx.put_session(hash, &session)?;
    }
    Ok(())
}

/// Signs out: the session is gone from the server.
pub fn end(tx: &mut WriteTx, hash: &[u8; 32]) -> Result<()> {
    tx.remove_session(hash)
}

/// Ends every session of a user.
pub fn end_all(tx: &mut WriteTx, user_id: &str) -> Result<()> {
    for hash in tx.user_sessions(user_id)? {
        tx.remove_session(&hash)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(created: Micros, seen: Micros) -> SessionRecord {
        SessionRecord {
            user_id: "u".into(),
            org_id: "o".into(),
            csrf: String::new(),
            created_at: created,
            last_seen_at: seen,
        }
    }

    #[test]
    fn a_session_ends_after_12_idle_hours_or_7_days() {
        let hour = 3_600_000_000;
        assert!(!expired(&session(0, 0), 11 * hour));
        assert!(expired(&session(0, 0), 13 * hour));
        assert!(!expired(&session(0, 6 * 24 * hour), 6 * 24 * hour + hour));
        assert!(expired(&session(0, 7 * 24 * hour), 7 * 24 * hour + hour));
    }

    #[test]
    fn a_use_is_written_at_most_once_a_minute() {
        assert!(!needs_touch(&session(0, 0), 30_000_000));
        assert!(needs_touch(&session(0, 0), 61_000_000));
    }
}
