//! The settings page's "API keys" section: the organization's keys through
//! `records::auth` (created with the key shown once, revoked).

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::records::auth;
use crate::error::{Error, Result};
use crate::store::rows::{KeyRecord, Scope};
use crate::store::ReadTx;

/// What the section shows: every key of the organization, times in its zone.
pub(super) struct KeysSectionView {
    keys: Vec<KeyRecord>,
    zone: String,
}

impl KeysSectionView {
    pub(super) fn of(read: &ReadTx, org_id: &str, zone: &str) -> Result<KeysSectionView> {
        Ok(KeysSectionView {
            keys: auth::keys_of(read, org_id)?,
            zone: zone.to_string(),
        })
    }

    pub(super) fn view(&self, visitor: &Visitor) -> Markup {
        html! {
            section.panel aria-labelledby="keys-heading" {
                h2 #keys-heading { "API keys" }
                @if self.keys.is_empty() { p.muted { "No key yet." } } @else {
                    div.table-wrap {
                        table.cards {
                            thead { tr { th scope="col" { "Name" } th scope="col" { "Scope" } th scope="col" { "Created" } th scope="col" { "State" } th scope="col" { "Actions" } } }
                            tbody {
                                @for k in &self.keys {
                                    tr {
                                        td data-label="Name" { (k.name) } td data-label="Scope" { (k.scope.as_str()) }
                                        td data-label="Created" { (layout::time(k.created_at, &self.zone)) }
                                        td data-label="State" { @if k.revoked_at.is_some() { "Revoked" } @else { "Active" } }
                                        td {
                                            @if k.revoked_at.is_none() {
                                                form.inline method="post" action=(super::path(SettingsAction::RevokeKey)) {
                                                    (layout::csrf_field(visitor))
                                                    input type="hidden" name="id" value=(k.id);
                                                    button.danger type="submit" {
                                                        @if k.name.is_empty() { "Revoke this " (k.scope.as_str()) " key" } @else { "Revoke " (k.name) }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                h3 { "Create a key" }
                form.stack method="post" action=(super::path(SettingsAction::CreateKey)) {
                    (layout::csrf_field(visitor))
                    div { label for="key-name" { "Key name" } input #key-name type="text" name="name" required; }
                    div {
                        label for="key-scope" { "Scope" }
                        select #key-scope name="scope" {
                            option value="read" { "read" } option value="write" selected { "write" } option value="admin" { "admin" }
                        }
                    }
                    div.actions { button type="submit" { "Create key" } }
                }
            }
        }
    }
}

/// `POST /console/settings/keys`: a new key, shown once.
pub(super) async fn create(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let org_id = visitor.org().to_string();
    let name = form.text("name").to_string();
    let scope = Scope::parse(form.text("scope")).ok_or_else(|| Error::invalid_field("scope"))?;
    let (record, key) = state
        .store
        .write(move |tx| auth::create_key(tx, &org_id, scope, &name))
        .await?;
    Ok(Outcome::shown(Shown::secret(
        format!("The new {} key \"{}\".", record.scope.as_str(), record.name),
        key,
    )))
}

/// `POST /console/settings/revoke`.
pub(super) async fn revoke(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let org_id = visitor.org().to_string();
    let id = form.text("id").to_string();
    let record = state
        .store
        .write(move |tx| auth::revoke_key(tx, Some(&org_id), &id))
        .await?;
    Ok(Outcome::shown(Shown::notice(format!(
        "The key \"{}\" is revoked.",
        record.name
    ))))
}
