//! Administration of organizations and API keys, for the command line.
//!
//! `engaged org ...` and `engaged key ...` must work whether the server runs or not. A
//! running server holds redb's file lock, so the command line then sends its
//! [`AdminRequest`] over a Unix socket in the data directory (mode 0600: whoever can
//! read the data can already do anything); otherwise it opens the store itself. Both
//! paths end in [`run`].

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config;
use crate::error::{Error, Result};
use crate::store::rows::{Role, Scope};
use crate::store::Reader;
use crate::store::{OpenError, Store};

pub const SOCKET_NAME: &str = "admin.sock";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "kebab-case")]
pub enum AdminRequest {
    OrgCreate {
        name: String,
    },
    OrgList,
    KeyCreate {
        org: String,
        scope: Scope,
        name: Option<String>,
    },
    KeyList {
        org: Option<String>,
    },
    KeyRevoke {
        id: String,
    },
    /// Writes a consistent snapshot to a new file at `path` (absolute).
    Backup {
        path: std::path::PathBuf,
    },
    /// The store's consistency check (redb's own check needs the server stopped).
    Check,
    /// A console user; the CLI hashes the password (argon2 is slow: never in the writer).
    UserCreate {
        org: String,
        email: String,
        name: String,
        role: Role,
        password_hash: String,
    },
    UserList {
        org: Option<String>,
    },
    UserSetRole {
        email: String,
        role: Role,
    },
    UserDisable {
        email: String,
    },
    UserEnable {
        email: String,
    },
    /// A new password hash; the user's sessions end.
    UserSetPassword {
        email: String,
        password_hash: String,
    },
    /// Imports a file of leads into `org`; on the socket the file's bytes follow this
    /// line (`engaged import`), and the answer is the import's report.
    Import {
        org: String,
        ndjson: bool,
        dry_run: bool,
        create_only: bool,
        /// What a row matching a lead does to it.
        #[serde(default)]
        on_match: crate::domain::import::OnMatch,
        /// The profile of rows that name none.
        #[serde(default)]
        profile: Option<String>,
    },
}

/// One row of `user list` (and `user create`'s answer).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserListed {
    pub id: String,
    pub org: String,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub disabled: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct UserList {
    pub users: Vec<UserListed>,
}

fn user_listed(user: &crate::store::rows::UserRecord, org: String) -> UserListed {
    UserListed {
        id: user.id.clone(),
        org,
        email: user.email.clone(),
        name: user.name.clone(),
        role: user.role,
        disabled: user.disabled_at.is_some(),
    }
}

fn user_list(store: &Store, org: Option<&str>) -> Result<Value> {
    let read = store.read()?;
    let orgs = read.orgs()?;
    let org_id = match org {
        Some(name) => Some(
            orgs.iter()
                .find(|o| o.name == name)
                .map(|o| o.id.clone())
                .ok_or_else(|| Error::NotFound(format!("Organization not found: {name}")))?,
        ),
        None => None,
    };
    let names: std::collections::HashMap<String, String> =
        orgs.into_iter().map(|o| (o.id, o.name)).collect();
    let users = crate::domain::people::users::list(&read, org_id.as_deref())?
        .iter()
        .map(|u| user_listed(u, names.get(&u.org_id).cloned().unwrap_or_default()))
        .collect();
    to_value(UserList { users })
}

fn org_id_of(tx: &crate::store::WriteTx, name: &str) -> Result<String> {
    tx.org_id_by_name(name)?
        .ok_or_else(|| Error::NotFound(format!("Organization not found: {name}")))
}

/// `org create`'s answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct OrgCreated {
    pub id: String,
    pub name: String,
}

/// `key create`'s answer: the key itself is shown this once.
#[derive(Debug, Serialize, Deserialize)]
pub struct KeyCreated {
    pub id: String,
    pub key: String,
    pub org: String,
    pub scope: Scope,
    pub name: String,
}

/// One row of `key list`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyListed {
    pub id: String,
    pub org: String,
    pub scope: Scope,
    pub name: String,
    pub created_at: String,
    pub revoked: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct KeyList {
    pub keys: Vec<KeyListed>,
}

/// One row of `org list`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrgListed {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct OrgList {
    pub orgs: Vec<OrgListed>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct KeyRevoked {
    pub id: String,
    pub revoked: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BackupDone {
    pub path: std::path::PathBuf,
    pub rows: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CheckDone {
    pub problems: Vec<String>,
    /// Live leads sharing a phone or email (`Store::shared_contacts`).
    #[serde(default)]
    pub shared: Vec<String>,
    /// Organizations whose calls are not checked for consent (`Store::consent_notices`).
    #[serde(default)]
    pub notices: Vec<String>,
}

fn to_value(answer: impl Serialize) -> Result<Value> {
    serde_json::to_value(answer).map_err(|e| Error::Internal(format!("admin answer: {e}")))
}

/// The socket's answer: exactly one of the two.
#[derive(Debug, Serialize, Deserialize)]
pub struct AdminResponse {
    pub ok: Option<Value>,
    pub error: Option<String>,
}

pub async fn run(store: &Store, request: AdminRequest) -> Result<Value> {
    match request {
        AdminRequest::KeyList { org } => key_list(store, org.as_deref()),
        AdminRequest::UserList { org } => user_list(store, org.as_deref()),
        AdminRequest::OrgList => org_list(store),
        // Both read the whole database: keep them off the async workers where the
        // runtime allows it (a current-thread runtime has no other worker to hand to).
        AdminRequest::Backup { .. } | AdminRequest::Check => {
            let flavor = tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor());
            if matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::MultiThread)) {
                tokio::task::block_in_place(|| run_blocking(store, request))
            } else {
                run_blocking(store, request)
            }
        }
        write => {
            let job = move |tx: &mut crate::store::WriteTx| apply(tx, write.clone());
            store.write(job).await
        }
    }
}

/// [`run`] outside an async runtime.
pub fn run_blocking(store: &Store, request: AdminRequest) -> Result<Value> {
    match request {
        AdminRequest::KeyList { org } => key_list(store, org.as_deref()),
        AdminRequest::UserList { org } => user_list(store, org.as_deref()),
        AdminRequest::OrgList => org_list(store),
        AdminRequest::Backup { path } => {
            let rows = store.backup_to(&path)?;
            to_value(BackupDone { path, rows })
        }
        AdminRequest::Check => to_value(CheckDone {
            problems: store.check()?,
            shared: store.shared_contacts()?,
            notices: store.consent_notices()?,
        }),
        write => store.write_blocking(move |tx| apply(tx, write.clone())),
    }
}

fn apply(tx: &mut crate::store::WriteTx, request: AdminRequest) -> Result<Value> {
    use crate::domain::people::users;
    match request {
        AdminRequest::UserCreate {
            org,
            email,
            name,
            role,
            password_hash,
        } => {
            let org_id = org_id_of(tx, &org)?;
            let user = users::create(tx, &org_id, &email, &name, role, password_hash)?;
            to_value(user_listed(&user, org))
        }
        AdminRequest::UserSetRole { email, role } => {
            let change = users::PersonChange::SetRole(role);
            let user = users::change_person(tx, users::ChangedBy::Operator, &email, change)?;
            to_value(user_listed(&user, String::new()))
        }
        AdminRequest::UserDisable { email } => {
            let change = users::PersonChange::Disable;
            let user = users::change_person(tx, users::ChangedBy::Operator, &email, change)?;
            to_value(user_listed(&user, String::new()))
        }
        AdminRequest::UserEnable { email } => {
            let change = users::PersonChange::Enable;
            let user = users::change_person(tx, users::ChangedBy::Operator, &email, change)?;
            to_value(user_listed(&user, String::new()))
        }
        AdminRequest::UserSetPassword {
            email,
            password_hash,
        } => {
            let user = users::set_password(tx, &email, password_hash)?;
            to_value(user_listed(&user, String::new()))
        }
        AdminRequest::OrgCreate { name } => {
            let org = crate::domain::settings::org::create(tx, &name)?;
            to_value(OrgCreated {
                id: org.id,
                name: org.name,
            })
        }
        AdminRequest::KeyCreate { org, scope, name } => {
            let org_id = tx
                .org_id_by_name(&org)?
                .ok_or_else(|| Error::NotFound(format!("Organization not found: {org}")))?;
            let (record, key) = crate::domain::records::auth::create_key(
                tx,
                &org_id,
                scope,
                &name.unwrap_or_default(),
            )?;
            to_value(KeyCreated {
                id: record.id,
                key,
                org,
                scope,
                name: record.name,
            })
        }
        AdminRequest::KeyRevoke { id } => {
            crate::domain::records::auth::revoke_key(tx, None, &id)?;
            to_value(KeyRevoked { id, revoked: true })
        }
        AdminRequest::KeyList { .. }
        | AdminRequest::UserList { .. }
        | AdminRequest::OrgList
        | AdminRequest::Backup { .. }
        | AdminRequest::Check => Err(Error::Internal("not a write".into())),
        AdminRequest::Import { .. } => Err(Error::BadRequest(
            "an import's file follows its request on the admin socket".into(),
        )),
    }
}

fn org_list(store: &Store) -> Result<Value> {
    let mut orgs = store.read()?.orgs()?;
    orgs.sort_by_key(|o| o.created_at);
    to_value(OrgList {
        orgs: orgs
            .into_iter()
            .map(|o| OrgListed {
                created_at: crate::time::format(o.created_at),
                id: o.id,
                name: o.name,
            })
            .collect(),
    })
}

fn key_list(store: &Store, org: Option<&str>) -> Result<Value> {
    let read = store.read()?;
    let mut keys = Vec::new();
    for key in read.keys()? {
        let org_name = read.org(&key.org_id)?.map(|o| o.name).unwrap_or_default();
        if org.is_some_and(|wanted| wanted != org_name) {
            continue;
        }
        keys.push((
            key.created_at,
            KeyListed {
                id: key.id,
                org: org_name,
                scope: key.scope,
                name: key.name,
                created_at: crate::time::format(key.created_at),
                revoked: key.revoked_at.is_some(),
            },
        ));
    }
    keys.sort_by_key(|(created, _)| *created);
    to_value(KeyList {
        keys: keys.into_iter().map(|(_, k)| k).collect(),
    })
}

/// Sends one request to a running server's admin socket. `Ok(None)` when no server
/// answers there (no socket, or a stale one).
pub fn call_socket(
    data_dir: &Path,
    request: &AdminRequest,
) -> std::io::Result<Option<AdminResponse>> {
    let path = data_dir.join(SOCKET_NAME);
    let mut stream = match UnixStream::connect(&path) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer)?;
    let response = serde_json::from_str(&answer)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok(Some(response))
}

/// Runs `request` through a running server's admin socket, or on the store itself when
/// no server runs, and reads the answer as `T`. Errors are the operator's text.
pub fn administer<T: DeserializeOwned>(
    data_dir: &Path,
    request: AdminRequest,
) -> Result<T, String> {
    let value = administer_value(data_dir, request)?;
    serde_json::from_value(value).map_err(|e| format!("unexpected answer: {e}"))
}

fn administer_value(data_dir: &Path, request: AdminRequest) -> Result<Value, String> {
    if let Some(response) =
        call_socket(data_dir, &request).map_err(|e| format!("admin socket: {e}"))?
    {
        return match (response.ok, response.error) {
            (Some(value), _) => Ok(value),
            (None, Some(error)) => Err(error),
            (None, None) => Err("the server sent an empty answer".into()),
        };
    }
    let store = Store::open(&config::database_path(data_dir)).map_err(|e| match e {
        OpenError::InUse => format!(
            "the database in {} is in use, but no server answers on its admin socket",
            data_dir.display()
        ),
        OpenError::Other(msg) | OpenError::Refused(msg) => msg,
    })?;
    run_blocking(&store, request).map_err(|e| e.to_string_for_logs())
}

/// `engaged import`: imports `input` into organization `org` (its name) with the
/// options of an [`AdminRequest::Import`], as `POST /v1/leads/import` does.
pub async fn import<R>(
    store: &std::sync::Arc<Store>,
    request: &AdminRequest,
    input: R,
) -> Result<crate::domain::import::Report>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
{
    use crate::domain::import::{self, Format, Options};
    let AdminRequest::Import {
        org,
        ndjson,
        dry_run,
        create_only,
        on_match,
        profile,
    } = request
    else {
        return Err(Error::Internal("not an import".into()));
    };

    let name = org.clone();
    let org_id = store.write(move |tx| org_id_of(tx, &name)).await?;
    let options = Options {
        format: if *ndjson { Format::Ndjson } else { Format::Csv },
        dry_run: *dry_run,
        create_only: *create_only,
        on_match: *on_match,
        profile: profile.clone().filter(|p| !p.is_empty()),
        fields: None,
        refused_to: Some(import::files::refused_path(
            store.dir(),
            &org_id,
            &import::files::new_token(),
        )),
    };
    let caller = crate::domain::Caller::system(&org_id);
    import::run(store, &caller, &options, input, |_| {}).await
}
