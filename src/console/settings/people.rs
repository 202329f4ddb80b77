//! The settings page's "People" section: the organization's people (a role changed or
//! disabled through `people::users`, whose rule keeps an admin from doing either to
//! themself) and "Add a person" with a generated password shown once.

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::people::passwords;
use crate::domain::people::users::{self, PersonChange};
use crate::error::{Error, Result};
use crate::store::rows::{Role, UserRecord};
use crate::store::ReadTx;

/// What the section shows: the organization's people, and who is looking (whose own
/// row has no actions).
pub(super) struct PeopleSectionView {
    people: Vec<UserRecord>,
    me: String,
}

impl PeopleSectionView {
    pub(super) fn of(read: &ReadTx, visitor: &Visitor) -> Result<PeopleSectionView> {
        Ok(PeopleSectionView {
            people: users::list(read, Some(visitor.org()))?,
            me: visitor.user.id.clone(),
        })
    }

    pub(super) fn view(&self, visitor: &Visitor) -> Markup {
        html! {
            section.panel aria-labelledby="people-heading" {
                h2 #people-heading { "People" }
                div.table-wrap {
                    table.cards {
                        thead { tr { th scope="col" { "Name" } th scope="col" { "Email" } th scope="col" { "Role" } th scope="col" { "Status" } th scope="col" { "Actions" } } }
                        tbody {
                            @for (i, u) in self.people.iter().enumerate() {
                                tr {
                                    td data-label="Name" { (u.name) } td data-label="Email" { (u.email) }
                                    td data-label="Role" { (u.role.as_str()) }
                                    td data-label="Status" { @if u.disabled_at.is_some() { "Disabled" } @else { "Active" } }
                                    td {
                                        @if u.disabled_at.is_none() && u.id != self.me {
                                            form.inline method="post" action=(super::path(SettingsAction::SetRole)) {
                                                (layout::csrf_field(visitor))
                                                input type="hidden" name="email" value=(u.email);
                                                label.visually-hidden for={ "role-" (i) } { "Role of " (u.name) }
                                                select id={ "role-" (i) } name="role" {
                                                    @for r in ["viewer", "agent", "admin"] {
                                                        option value=(r) selected[u.role.as_str() == r] { (r) }
                                                    }
                                                }
                                                " " button.secondary type="submit" { "Change role" }
                                            }
                                            form.inline method="post" action=(super::path(SettingsAction::DisablePerson)) {
                                                (layout::csrf_field(visitor))
                                                input type="hidden" name="email" value=(u.email);
                                                button.danger type="submit" { "Disable " (u.name) }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                h3 { "Add a person" }
                form.stack method="post" action=(super::path(SettingsAction::AddPerson)) {
                    (layout::csrf_field(visitor))
                    div { label for="person-email" { "Email" } input #person-email type="email" name="email" required; }
                    div { label for="person-name" { "Name" } input #person-name type="text" name="name" required; }
                    div {
                        label for="person-role" { "Role" }
                        select #person-role name="role" {
                            option value="viewer" { "viewer" } option value="agent" selected { "agent" } option value="admin" { "admin" }
                        }
                    }
                    div.actions { button type="submit" { "Add person" } }
                }
            }
        }
    }
}

/// `POST /console/settings/people`: a new person with a generated password, shown once.
pub(super) async fn add(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let org_id = visitor.org().to_string();
    let (email, name) = (
        form.text("email").to_string(),
        form.text("name").to_string(),
    );
    let role = Role::parse(form.text("role")).ok_or_else(|| Error::invalid_field("role"))?;
    let password = passwords::generate();
    let hashed = password.clone();
    let hash = state.passwords.hash(hashed).await?;
    let shown_email = email.clone();
    let added = state
        .store
        .write(move |tx| users::create(tx, &org_id, &email, &name, role, hash.clone()).map(drop))
        .await;
    match added {
        Ok(()) => Ok(Outcome::shown(Shown::secret(
            format!("{shown_email} can sign in with this password."),
            password,
        ))),
        Err(e @ (Error::BadRequest(_) | Error::InvalidField { .. } | Error::Conflict(_))) => {
            Ok(Outcome::shown(Shown::notice(e.to_string())))
        }
        Err(e) => Err(e),
    }
}

/// `POST /console/settings/role`.
pub(super) async fn set_role(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    change(state, visitor, form, false).await
}

/// `POST /console/settings/disable`: the person can no longer sign in; their sessions end.
pub(super) async fn disable(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    change(state, visitor, form, true).await
}

async fn change(
    state: &AppState,
    visitor: &Visitor,
    form: &Form,
    disable: bool,
) -> Result<Outcome> {
    let org_id = visitor.org().to_string();
    let email = form.text("email").to_string();
    let role = Role::parse(form.text("role"));
    let me = visitor.user.id.clone();
    let changed = state
        .store
        .write(move |tx| {
            let by = users::ChangedBy::Admin {
                org_id: &org_id,
                user_id: &me,
            };
            let change = match (disable, role) {
                (true, _) => PersonChange::Disable,
                (false, Some(role)) => PersonChange::SetRole(role),
                (false, None) => {
                    users::may_change(tx, by, &email)?;
                    return Err(Error::invalid_field("role"));
                }
            };
            users::change_person(tx, by, &email, change)
        })
        .await?;
    Ok(Outcome::shown(Shown::notice(if disable {
        format!("{} is disabled; their sessions ended.", changed.name)
    } else {
        format!("{} is now {}.", changed.name, changed.role.as_str())
    })))
}
