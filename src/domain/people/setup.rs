//! The first run (`../shared/spec/console.md`, "First run"): while the server has no
//! user, each start issues a one-time setup link whose random 256-bit token is stored
//! only as its SHA-256 with an expiry 24 hours on (`issue`); the setup page checks it
//! (`check`) and its form creates the first admin (`create_first_admin`), which uses
//! the token up in the same write. Once any user exists there is nothing to set up.
//!
//! The first admin belongs to an organization: the one the form names, created the way
//! `engaged org create` creates one when no organization has that name (the form offers
//! the server's only organization when there is exactly one).

use std::time::Duration;

use base64::Engine as _;

use crate::domain::people::{sessions, users};
use crate::error::{Error, Result};
use crate::store::rows::{Role, SetupTokenRecord, UserRecord};
use crate::store::{ReadTx, Reader, WriteTx};
use crate::time::Micros;

/// How long a setup link works, unless used first.
pub const VALID: Duration = Duration::from_secs(24 * 3600);

/// What a setup token is worth at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// A user exists: there is nothing to set up (the page is 404).
    Done,
    /// The token is the stored one and has not expired.
    Open,
    /// Wrong, used or expired (403).
    Refused,
}

/// Issues a new setup token when the server has no user (replacing any earlier one),
/// and answers it; with a user, removes a token left over and answers `None`.
pub fn issue(tx: &mut WriteTx, now: Micros) -> Result<Option<String>> {
    if tx.any_user()? {
        tx.remove_setup_token()?;
        return Ok(None);
    }
    let token =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(crate::ids::random_bytes::<32>());
    tx.put_setup_token(&SetupTokenRecord {
        hash: sessions::token_hash(&token),
        expires_at: now.saturating_add(VALID.as_micros() as Micros),
    })?;
    Ok(Some(token))
}

/// Whether the server still waits for its first user (the login page's hint).
pub fn pending(read: &ReadTx) -> Result<bool> {
    Ok(!read.any_user()?)
}

fn judge(any_user: bool, stored: Option<SetupTokenRecord>, token: &str, now: Micros) -> Setup {
    if any_user {
        return Setup::Done;
    }
    let Some(stored) = stored else {
        return Setup::Refused;
    };
    if token.is_empty() || token.len() > 128 || now >= stored.expires_at {
        return Setup::Refused;
    }
    let given = sessions::token_hash(token);
    // Constant time: the token is the only secret the page has.
    let differs = given
        .iter()
        .zip(stored.hash.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if differs == 0 {
        Setup::Open
    } else {
        Setup::Refused
    }
}

/// What `token` is worth at `now`.
pub fn check(read: &ReadTx, token: &str, now: Micros) -> Result<Setup> {
    Ok(judge(read.any_user()?, read.setup_token()?, token, now))
}

/// The setup form: the organization's name, the first admin's email and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FirstAdmin {
    pub organization: String,
    pub email: String,
    pub name: String,
}

/// The refusal of a token that is wrong, used or expired, in words.
pub const REFUSED: &str =
    "This setup link is not valid: it was used already, it expired, or it is not the one the server printed. Restart the server for a new one, or ask whoever runs it.";

/// Creates the first admin with `password_hash` (hashed outside the writer) and signs
/// them in: the token checked again in this write (404 once a user exists, 403 when
/// wrong, used or expired), the organization found by name or created, the user
/// created, the token removed, a session started.
pub fn create_first_admin(
    tx: &mut WriteTx,
    token: &str,
    input: &FirstAdmin,
    password_hash: String,
    now: Micros,
) -> Result<(UserRecord, sessions::NewSession)> {
    match judge(tx.any_user()?, tx.setup_token()?, token, now) {
        Setup::Done => return Err(Error::NotFound("Not found".into())),
        Setup::Refused => return Err(Error::Forbidden),
        Setup::Open => {}
    }
    let organization = input.organization.trim();
    if organization.is_empty() {
        return Err(Error::field(
            "organization",
            "Missing required field: organization",
        ));
    }
    // Every check of the user before anything is written: a refused job leaves no trace.
    if input.email.trim().is_empty() {
        return Err(Error::field("email", "Missing required field: email"));
    }
    crate::domain::records::limits::text(
        "email",
        input.email.trim(),
        crate::domain::records::limits::EMAIL_CHARS,
    )?;
    if !crate::domain::records::leads::is_plausible_email(input.email.trim()) {
        return Err(Error::invalid_field("email"));
    }
    if input.name.trim().is_empty() {
        return Err(Error::field("name", "Missing required field: name"));
    }
    crate::domain::records::limits::text(
        "name",
        input.name.trim(),
        crate::domain::records::limits::NAME_CHARS,
    )?;
    let org_id = match tx.org_id_by_name(organization)? {
        Some(id) => id,
        None => crate::domain::settings::org::create(tx, organization)?.id,
    };
    let user = users::create(
        tx,
        &org_id,
        &input.email,
        &input.name,
        Role::Admin,
        password_hash,
    )?;
    tx.remove_setup_token()?;
    let session = sessions::start(tx, &user)?;
    Ok((user, session))
}

/// The name the setup form offers for the organization: the server's only one, when
/// there is exactly one.
pub fn suggested_organization(read: &ReadTx) -> Result<Option<String>> {
    let orgs = read.orgs()?;
    Ok(match orgs.as_slice() {
        [only] => Some(only.name.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn admin() -> FirstAdmin {
        FirstAdmin {
            organization: "Acme Solar".into(),
            email: "ana@acme.example".into(),
            name: "Ana Ruiz".into(),
        }
    }

    #[test]
    fn a_token_works_once_within_a_day_and_a_new_start_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let first = store
            .write_blocking(|tx| issue(tx, 0))
            .unwrap()
            .expect("no user: a token");
        let second = store
            .write_blocking(|tx| issue(tx, 0))
            .unwrap()
            .expect("a new start: a new token");
        let read = store.read().unwrap();
        assert_eq!(check(&read, &first, 1).unwrap(), Setup::Refused);
        assert_eq!(check(&read, &second, 1).unwrap(), Setup::Open);
        assert_eq!(check(&read, "", 1).unwrap(), Setup::Refused);
        let day = VALID.as_micros() as Micros;
        assert_eq!(check(&read, &second, day).unwrap(), Setup::Refused);
        drop(read);

        let (f, s) = (first.clone(), second.clone());
        let wrong =
            store.write_blocking(move |tx| create_first_admin(tx, &f, &admin(), "h".into(), 1));
        assert!(matches!(wrong, Err(Error::Forbidden)), "{wrong:?}");
        let (user, _) = store
            .write_blocking(move |tx| create_first_admin(tx, &s, &admin(), "h".into(), 1))
            .unwrap();
        assert_eq!(user.role, Role::Admin);
        let s = second.clone();
        let again =
            store.write_blocking(move |tx| create_first_admin(tx, &s, &admin(), "h".into(), 2));
        assert!(matches!(again, Err(Error::NotFound(_))), "{again:?}");
        let read = store.read().unwrap();
        assert_eq!(check(&read, &second, 2).unwrap(), Setup::Done);
        assert!(read.setup_token().unwrap().is_none(), "used up");
        assert_eq!(
            suggested_organization(&read).unwrap().as_deref(),
            Some("Acme Solar")
        );
        drop(read);
        assert_eq!(store.write_blocking(|tx| issue(tx, 3)).unwrap(), None);
    }
}
