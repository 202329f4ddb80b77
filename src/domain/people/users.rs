//! Users: created with a role and a password hash, listed, given another role,
//! disabled, given a new password. Disabling a user or changing its password ends its
//! sessions in the same write.

use crate::domain::people::sessions;
use crate::domain::records::leads::is_plausible_email;
use crate::domain::records::limits;
use crate::error::{Error, Result};
use crate::store::rows::{Role, UserRecord};
use crate::store::{ReadTx, Reader, WriteTx};
use crate::time::now_micros;

fn not_found(email: &str) -> Error {
    Error::NotFound(format!("Resource not found: User {email}"))
}

/// A new user of organization `org_id`; an email (any case) taken in the same
/// organization is 409 `User exists`, one taken in another organization 400
/// `Invalid format for field: email`, like an address that is not one.
pub fn create(
    tx: &mut WriteTx,
    org_id: &str,
    email: &str,
    name: &str,
    role: Role,
    password_hash: String,
) -> Result<UserRecord> {
    let email = email.trim();
    let name = name.trim();
    if email.is_empty() {
        return Err(Error::BadRequest("Missing required field: email".into()));
    }
    limits::text("email", email, limits::EMAIL_CHARS)?;
    if !is_plausible_email(email) {
        return Err(Error::invalid_field("email"));
    }
    if name.is_empty() {
        return Err(Error::BadRequest("Missing required field: name".into()));
    }
    limits::text("name", name, limits::NAME_CHARS)?;
    if tx.org(org_id)?.is_none() {
        return Err(Error::NotFound(format!(
            "Resource not found: Organization {org_id}"
        )));
    }
    match tx.user_by_email(email)? {
        Some(taken) if taken.org_id == org_id => {
            return Err(Error::Conflict(format!("User exists: {email}")));
        }
        // Another organization's person: refused like any address that cannot be
        // used, without saying that it exists (nor taking it over).
        Some(_) => return Err(Error::invalid_field("email")),
        None => {}
    }
    let user = UserRecord {
        id: crate::ids::generate("usr"),
        org_id: org_id.to_string(),
        email: email.to_string(),
        name: name.to_string(),
        role,
        password_hash,
        created_at: now_micros(),
        disabled_at: None,
        notify: false,
    };
    tx.put_user(&user, None)?;
    Ok(user)
}

/// The user with `email` (any case).
pub fn find_by_email(read: &impl Reader, email: &str) -> Result<Option<UserRecord>> {
    read.user_by_email(email)
}

/// Every user, or one organization's, by email.
pub fn list(read: &ReadTx, org_id: Option<&str>) -> Result<Vec<UserRecord>> {
    read.users(org_id)
}

fn change(
    tx: &mut WriteTx,
    email: &str,
    end_sessions: bool,
    edit: impl FnOnce(&mut UserRecord),
) -> Result<UserRecord> {
    let old = tx.user_by_email(email)?.ok_or_else(|| not_found(email))?;
    let mut user = old.clone();
    edit(&mut user);
    if user != old {
        tx.put_user(&user, Some(&old))?;
    }
    if end_sessions {
        sessions::end_all(tx, &user.id)?;
    }
    Ok(user)
}

pub fn set_role(tx: &mut WriteTx, email: &str, role: Role) -> Result<UserRecord> {
    change(tx, email, false, |u| u.role = role)
}

/// Disables a user: it can no longer sign in, and its sessions end.
pub fn disable(tx: &mut WriteTx, email: &str) -> Result<UserRecord> {
    let now = now_micros();
    change(tx, email, true, |u| {
        u.disabled_at.get_or_insert(now);
    })
}

/// A new password (its hash); the user's sessions end.
pub fn set_password(tx: &mut WriteTx, email: &str, password_hash: String) -> Result<UserRecord> {
    change(tx, email, true, |u| u.password_hash = password_hash)
}

/// The user of `email`, if it is one of organization `org`'s (another's is not found:
/// a console admin changes only their own organization's people).
pub fn of_org(read: &impl Reader, org: &str, email: &str) -> Result<UserRecord> {
    find_by_email(read, email)?
        .filter(|u| u.org_id == org)
        .ok_or_else(|| not_found(email))
}

/// The user's own email notifications setting.
pub fn set_notify(tx: &mut WriteTx, user_id: &str, on: bool) -> Result<UserRecord> {
    let old = tx.user(user_id)?.ok_or_else(|| not_found(user_id))?;
    let email = old.email.clone();
    change(tx, &email, false, |u| u.notify = on)
}
