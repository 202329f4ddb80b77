//! Users: created with a role and a password hash, listed, given another role,
//! disabled, given a new password. Disabling a user or changing its password ends its
//! sessions in the same write. A role change or a disabling goes through
//! `change_person`, which holds who may do it (an admin never to themself).

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

/// Who changes a person's role or disables them: the server's operator (`engaged user`,
/// through the admin socket or on the file: every organization, and no person of its
/// own), or a signed-in admin of the console, who reaches only their own organization's
/// people and never themself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangedBy<'a> {
    Operator,
    Admin { org_id: &'a str, user_id: &'a str },
}

/// A change of a person: another role, disabled, or enabled again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonChange {
    SetRole(Role),
    Disable,
    Enable,
}

/// The refusal of an admin's change of themself.
pub const SELF_CHANGE_REFUSED: &str = "You cannot change your own role or disable yourself here";

/// Whether `by` may change the person of `email`: an admin only their own
/// organization's people (another's is not found), and not themself (409), so that an
/// organization always keeps the admin who is looking. The operator may change anyone.
pub fn may_change(read: &impl Reader, by: ChangedBy, email: &str) -> Result<()> {
    match by {
        ChangedBy::Operator => Ok(()),
        ChangedBy::Admin { org_id, user_id } => {
            if of_org(read, org_id, email)?.id == user_id {
                return Err(Error::Conflict(SELF_CHANGE_REFUSED.into()));
            }
            Ok(())
        }
    }
}

/// Changes the person of `email` as `by` may (`may_change`): the console's "Change
/// role" and "Disable", and `engaged user set-role` and `disable`.
pub fn change_person(
    tx: &mut WriteTx,
    by: ChangedBy,
    email: &str,
    change: PersonChange,
) -> Result<UserRecord> {
    may_change(tx, by, email)?;
    match change {
        PersonChange::SetRole(role) => set_role(tx, email, role),
        PersonChange::Disable => disable(tx, email),
        PersonChange::Enable => enable(tx, email),
    }
}

fn set_role(tx: &mut WriteTx, email: &str, role: Role) -> Result<UserRecord> {
    change(tx, email, false, |u| u.role = role)
}

/// Disables a user: it can no longer sign in, and its sessions end.
fn disable(tx: &mut WriteTx, email: &str) -> Result<UserRecord> {
    let now = now_micros();
    change(tx, email, true, |u| {
        u.disabled_at.get_or_insert(now);
    })
}

/// Enables a disabled user again: they sign in with their password.
fn enable(tx: &mut WriteTx, email: &str) -> Result<UserRecord> {
    change(tx, email, false, |u| u.disabled_at = None)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::{OrgRecord, OrgSettings};
    use crate::store::Store;

    #[test]
    fn an_admin_cannot_change_or_disable_themself_nor_reach_another_org() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let (boss, pat) = store
            .write_blocking(|tx| {
                for id in ["o1", "o2"] {
                    tx.put_org(&OrgRecord {
                        id: id.into(),
                        name: id.into(),
                        created_at: 0,
                        settings: OrgSettings::default(),
                    })?;
                }
                let boss = create(tx, "o1", "boss@example.com", "Bo", Role::Admin, "h".into())?;
                let pat = create(tx, "o1", "pat@example.com", "Pat", Role::Agent, "h".into())?;
                create(tx, "o2", "lee@example.com", "Lee", Role::Admin, "h".into())?;
                Ok((boss, pat))
            })
            .unwrap();
        let as_boss = |email: &'static str, change: PersonChange| {
            let boss_id = boss.id.clone();
            store.write_blocking(move |tx| {
                let me = ChangedBy::Admin {
                    org_id: "o1",
                    user_id: &boss_id,
                };
                change_person(tx, me, email, change)
            })
        };
        for change in [PersonChange::SetRole(Role::Viewer), PersonChange::Disable] {
            let refused = as_boss("BOSS@example.com", change).unwrap_err();
            assert_eq!(refused.to_string(), SELF_CHANGE_REFUSED);
            assert!(matches!(refused, Error::Conflict(_)));
            let elsewhere = as_boss("lee@example.com", change).unwrap_err();
            assert!(matches!(elsewhere, Error::NotFound(_)), "{elsewhere:?}");
        }
        let changed = as_boss("pat@example.com", PersonChange::SetRole(Role::Viewer)).unwrap();
        assert_eq!((changed.id, changed.role), (pat.id, Role::Viewer));
        // The operator (`engaged user`) has no self: it changes anyone, in any organization.
        let boss_now = store
            .write_blocking(|tx| {
                change_person(
                    tx,
                    ChangedBy::Operator,
                    "boss@example.com",
                    PersonChange::Disable,
                )
            })
            .unwrap();
        assert!(boss_now.disabled_at.is_some());
        let read = store.read().unwrap();
        assert_eq!(
            find_by_email(&read, "boss@example.com")
                .unwrap()
                .unwrap()
                .role,
            Role::Admin,
            "the refused changes changed nothing"
        );
    }
}
