//! The console's people: users with roles and argon2id passwords, their sessions, and
//! the sign-in throttle. Users are for people; API keys stay for integrators.

pub mod notifications;
pub mod passwords;
pub mod sessions;
pub mod setup;
pub mod throttle;
pub mod users;

use std::net::IpAddr;

use crate::error::Result;
use crate::store::{Reader, Store};
use crate::time::now_micros;
use passwords::{Busy, Work};
use sessions::NewSession;
use throttle::Throttle;

/// Why a sign-in failed. Every failure of the credentials is one [`SignInError::Wrong`],
/// so the answer tells nobody which emails exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInError {
    Wrong,
    /// Too many failures for this email or from this address: wait this many minutes.
    Throttled {
        minutes: u64,
    },
    /// Every password check is taken and the queue is full: nothing was checked.
    Busy,
}

/// Signs a person in: the throttle first (the attempt counted before its check), then
/// the password through the server's bounded [`Work`] (off the async threads and never
/// in a write job: argon2 is slow on purpose), then a new session. An unknown email is
/// checked against a fixed hash too, so it takes as long.
pub async fn sign_in(
    store: &Store,
    throttle: &Throttle,
    work: &Work,
    email: &str,
    password: &str,
    addr: IpAddr,
) -> Result<std::result::Result<NewSession, SignInError>> {
    let now = now_micros();
    if let Err(minutes) = throttle.attempt(email, addr, now) {
        return Ok(Err(SignInError::Throttled { minutes }));
    }
    let user = store.read()?.user_by_email(email)?;
    let hash = user.as_ref().map(|u| u.password_hash.clone());
    let matches = match work.verify(password.to_string(), hash).await? {
        Ok(matches) => matches,
        Err(Busy) => {
            throttle.forget(email, addr, now);
            return Ok(Err(SignInError::Busy));
        }
    };
    let user = match user {
        Some(user) if matches && user.disabled_at.is_none() => user,
        _ => return Ok(Err(SignInError::Wrong)),
    };
    throttle.forget(email, addr, now);
    let session = store.write(move |tx| sessions::start(tx, &user)).await?;
    Ok(Ok(session))
}
