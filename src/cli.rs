//! The command line: `engaged serve`, `engaged org ...`, `engaged key ...`.
//!
//! Flags double as `ENGAGED_*` environment variables (clap resolves both into one
//! `Option`), which then override the TOML file (see `config`).

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::admin::{
    administer, AdminRequest, KeyCreated, KeyList, KeyRevoked, OrgCreated, OrgList, UserList,
    UserListed,
};
use crate::config::{self, Config, FileConfig, Overrides};
use crate::domain::people::passwords;
use crate::store::rows::{Role, Scope};

#[derive(Debug, Parser)]
#[command(
    name = "engaged",
    version,
    about = "Lead Engagement Service: leads, events, messages and calls over HTTPS"
)]
pub struct Cli {
    /// TOML configuration file (see config/engaged.toml).
    #[arg(long, global = true, env = "ENGAGED_CONFIG")]
    pub config: Option<PathBuf>,
    /// Directory of the database, TLS material and admin socket [default: ./data].
    #[arg(long, global = true, env = "ENGAGED_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Log format.
    #[arg(
        long,
        global = true,
        env = "ENGAGED_LOG_FORMAT",
        default_value = "text"
    )]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTPS service (its first start creates the database).
    Serve(Box<ServeArgs>),
    /// Create the data directory and an empty database, as a first `serve` would, to
    /// provision organizations and keys before the first start. Does nothing (and says
    /// so) where a database exists.
    Init,
    /// Manage organizations.
    #[command(subcommand)]
    Org(OrgCommand),
    /// Manage API keys (shown once at creation; only a hash is stored).
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage the console's users (people; passwords shown once, stored as argon2id).
    #[command(subcommand)]
    User(UserCommand),
    /// Import leads from a CSV or NDJSON file (`.ndjson`/`.jsonl`) into an organization,
    /// server running or not: updates instead of duplicates, refused rows listed, and
    /// the last line "N created, N updated, N merged, N refused".
    Import {
        /// The organization's name.
        #[arg(long)]
        org: String,
        /// Report what would happen; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Refuse rows matching a live lead or an earlier row instead of updating.
        #[arg(long)]
        create_only: bool,
        /// What a row matching a lead does to it: `update` its fields, `fill` only its
        /// empty fields, or `skip` it.
        #[arg(long, value_parser = on_match, default_value = "update")]
        on_match: crate::domain::import::OnMatch,
        /// Add the imported leads to this profile (campaign): rows that name none.
        #[arg(long)]
        profile: Option<String>,
        /// Also print each matched row and the fields it changes.
        #[arg(long)]
        verbose: bool,
        file: PathBuf,
    },
    /// Write a consistent backup of the database to a new file (server running or not).
    Backup { file: PathBuf },
    /// Restore a backup file, or (with `--from`) the replica in object storage, into an
    /// empty data directory (server stopped).
    Restore {
        /// The backup file (without `--from`).
        #[arg(required_unless_present = "from", conflicts_with = "from")]
        file: Option<PathBuf>,
        /// The replica's `s3://bucket/prefix`; the endpoint, region and keys come from
        /// the `[replica]` table and the `ENGAGED_REPLICA_*` variables, as for `serve`.
        #[arg(long)]
        from: Option<String>,
        /// Restore the store as it was at this time (RFC 3339) [default: the latest].
        #[arg(long, requires = "from")]
        at: Option<String>,
        #[command(flatten)]
        replica: Box<ReplicaArgs>,
    },
    /// A warm standby: restore the replica (`--from`) into an empty data directory,
    /// then keep applying what the primary uploads (polling) until SIGTERM or SIGINT;
    /// `engaged serve` on the directory afterwards makes it the primary.
    Follow {
        /// The replica's `s3://bucket/prefix` (endpoint, region and keys as for
        /// `restore`).
        #[arg(long)]
        from: String,
        #[command(flatten)]
        replica: Box<ReplicaArgs>,
    },
    /// Check the database: redb's integrity (server stopped) and the store's invariants,
    /// and what its write-ahead log holds and whether the next start accepts it; writes
    /// nothing.
    Check,
    /// Start a database whose write-ahead log the server refuses (damaged, missing after
    /// a crash, another database's) from what it holds (server stopped): applies the
    /// log's good batches, prints how many answered batches it drops, records a clean
    /// stop and moves the log aside.
    Recover {
        /// Agree to lose the answered batches the log cannot give back.
        #[arg(long)]
        accept_loss: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8443].
    #[arg(long, env = "ENGAGED_LISTEN")]
    pub listen: Option<String>,
    /// Serve plain HTTP, for use behind a TLS-terminating proxy only.
    #[arg(long, env = "ENGAGED_INSECURE_HTTP", num_args = 0..=1, default_missing_value = "true")]
    pub insecure_http: Option<bool>,
    /// PEM certificate chain (with --tls-key); default: a self-signed one in <data-dir>/tls.
    // The help text is the doc comment as written: `<data-dir>` is no HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, env = "ENGAGED_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key (with --tls-cert).
    #[arg(long, env = "ENGAGED_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Host names and IP addresses the generated certificate covers, comma-separated,
    /// besides localhost, 127.0.0.1, ::1 and this machine's host name.
    #[arg(long, env = "ENGAGED_TLS_NAMES", value_delimiter = ',')]
    pub tls_names: Option<Vec<String>>,
    /// Largest accepted JSON request body, in bytes [default: 1048576].
    #[arg(long, env = "ENGAGED_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// redb's page cache in MiB [default: 256].
    #[arg(long, env = "ENGAGED_CACHE_MIB")]
    pub cache_mib: Option<usize>,
    /// Time to send a request's headers; also the idle keep-alive timeout [default: 30s].
    #[arg(long, env = "ENGAGED_HEADER_READ_TIMEOUT")]
    pub header_read_timeout: Option<String>,
    /// Connections served at once [default: 1024].
    #[arg(long, env = "ENGAGED_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections one client address may hold at once; 0: no cap [default: 256].
    #[arg(long, env = "ENGAGED_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: Option<usize>,
    /// Time a request's body has to arrive whole; later: 408 [default: 30s].
    #[arg(long, env = "ENGAGED_BODY_READ_TIMEOUT")]
    pub body_read_timeout: Option<String>,
    /// Least average rate of every request body after its first 5 s, in bytes per
    /// second [default: 1024].
    #[arg(long, env = "ENGAGED_BODY_MIN_BYTES_PER_SECOND")]
    pub body_min_bytes_per_second: Option<u64>,
    /// Least average rate of a recording upload, in bytes per second [default: 8192].
    #[arg(long, env = "ENGAGED_RECORDING_MIN_BYTES_PER_SECOND")]
    pub recording_min_bytes_per_second: Option<u64>,
    /// Requests per second per API key; unset: no limit.
    #[arg(long, env = "ENGAGED_RATE_LIMIT_PER_SECOND")]
    pub rate_limit_per_second: Option<f64>,
    /// Burst above the rate per API key [default: 100].
    #[arg(long, env = "ENGAGED_RATE_LIMIT_BURST")]
    pub rate_limit_burst: Option<u32>,
    /// Delays before webhook retries, comma-separated [default: 5s,5m,30m,2h,5h,10h,10h].
    #[arg(long, env = "ENGAGED_WEBHOOK_RETRY_SCHEDULE", value_delimiter = ',')]
    pub webhook_retry_schedule: Option<Vec<String>>,
    /// Time allowed for one webhook attempt [default: 15s].
    #[arg(long, env = "ENGAGED_WEBHOOK_TIMEOUT")]
    pub webhook_timeout: Option<String>,
    /// Webhook attempts in flight at once to one endpoint [default: 8].
    #[arg(long, env = "ENGAGED_WEBHOOK_MAX_IN_FLIGHT")]
    pub webhook_max_in_flight: Option<usize>,
    /// How long finished webhook deliveries are kept [default: 30d].
    #[arg(long, env = "ENGAGED_WEBHOOK_RETENTION")]
    pub webhook_retention: Option<String>,
    /// Extra PEM CA certificates trusted, beside the built-in roots, by every outbound
    /// client (SMTP, webhooks, the model, the compliance service, Twilio).
    #[arg(long, env = "ENGAGED_OUTBOUND_CA_FILE")]
    pub outbound_ca_file: Option<PathBuf>,
    /// The old name of --outbound-ca-file.
    #[arg(long, env = "ENGAGED_WEBHOOK_CA_FILE")]
    pub webhook_ca_file: Option<PathBuf>,
    /// Whether organizations' calendars, webhooks, providers and model may point at
    /// loopback, link-local and private addresses; false on a machine hosting several
    /// teams [default: true].
    #[arg(long, env = "ENGAGED_OUTBOUND_ALLOW_PRIVATE", num_args = 0..=1, default_missing_value = "true")]
    pub outbound_allow_private: Option<bool>,
    /// URL clients reach this server under (behind a proxy), for recording links
    /// [default: the scheme and host of each request].
    #[arg(long, env = "ENGAGED_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Largest accepted call recording, in bytes [default: 268435456].
    #[arg(long, env = "ENGAGED_RECORDING_MAX_BYTES")]
    pub recording_max_bytes: Option<u64>,
    /// How long a recording download link stays valid, in seconds [default: 900].
    #[arg(long, env = "ENGAGED_RECORDING_LINK_TTL_SECS")]
    pub recording_link_ttl_secs: Option<u64>,
    /// Largest import file (API body, console upload), in bytes [default: 1073741824].
    #[arg(long, env = "ENGAGED_MAX_IMPORT_BYTES")]
    pub max_import_bytes: Option<u64>,
    /// Disk one organization's waiting import files may take, in bytes
    /// [default: 2147483648].
    #[arg(long, env = "ENGAGED_IMPORT_QUOTA_BYTES")]
    pub import_quota_bytes: Option<u64>,
    #[command(flatten)]
    pub replica: ReplicaArgs,
}

/// The `[replica]` table's keys as flags and `ENGAGED_REPLICA_*` variables.
#[derive(Debug, Default, Args)]
pub struct ReplicaArgs {
    /// Replicate continuously to this `s3://bucket/prefix` [default: off].
    #[arg(long = "replica-url", env = "ENGAGED_REPLICA_URL")]
    pub url: Option<String>,
    /// The S3-compatible endpoint's URL, `https://` and its host [default: AWS].
    #[arg(long = "replica-endpoint", env = "ENGAGED_REPLICA_ENDPOINT")]
    pub endpoint: Option<String>,
    /// The bucket's region [default: us-east-1].
    #[arg(long = "replica-region", env = "ENGAGED_REPLICA_REGION")]
    pub region: Option<String>,
    /// The access key id.
    #[arg(long = "replica-access-key-id", env = "ENGAGED_REPLICA_ACCESS_KEY_ID")]
    pub access_key_id: Option<String>,
    /// The secret access key (better: --replica-secret-access-key-file).
    #[arg(
        long = "replica-secret-access-key",
        env = "ENGAGED_REPLICA_SECRET_ACCESS_KEY",
        hide_env_values = true
    )]
    pub secret_access_key: Option<String>,
    /// A file holding the secret access key.
    #[arg(
        long = "replica-secret-access-key-file",
        env = "ENGAGED_REPLICA_SECRET_ACCESS_KEY_FILE"
    )]
    pub secret_access_key_file: Option<PathBuf>,
    /// Batches reach the replica at least this often [default: 1s].
    #[arg(long = "replica-sync-interval", env = "ENGAGED_REPLICA_SYNC_INTERVAL")]
    pub sync_interval: Option<String>,
    /// A new snapshot at least this often [default: 24h].
    #[arg(
        long = "replica-snapshot-interval",
        env = "ENGAGED_REPLICA_SNAPSHOT_INTERVAL"
    )]
    pub snapshot_interval: Option<String>,
    /// How long snapshots and the batches after them are kept [default: 30d].
    #[arg(long = "replica-retention", env = "ENGAGED_REPLICA_RETENTION")]
    pub retention: Option<String>,
    /// A file of 64 hexadecimal digits (a 256-bit key): the replica is encrypted
    /// with it (XChaCha20-Poly1305) [default: not encrypted].
    #[arg(
        long = "replica-encryption-key-file",
        env = "ENGAGED_REPLICA_ENCRYPTION_KEY_FILE"
    )]
    pub encryption_key_file: Option<PathBuf>,
    /// Bytes of batches that may wait for the object store [default: 1073741824].
    #[arg(long = "replica-spool-max", env = "ENGAGED_REPLICA_SPOOL_MAX")]
    pub spool_max: Option<u64>,
}

impl ReplicaArgs {
    /// The flags and variables as a layer over the `[replica]` table.
    pub fn layer(self) -> config::ReplicaFile {
        config::ReplicaFile {
            url: self.url,
            endpoint: self.endpoint,
            region: self.region,
            access_key_id: self.access_key_id,
            secret_access_key: self.secret_access_key,
            secret_access_key_file: self.secret_access_key_file,
            sync_interval: self.sync_interval,
            snapshot_interval: self.snapshot_interval,
            retention: self.retention,
            encryption_key_file: self.encryption_key_file,
            spool_max: self.spool_max,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an organization; prints its id.
    Create { name: String },
    /// List organizations: id, creation time, name.
    List,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a console user; prints the generated password alone on standard output,
    /// once (with `--password-stdin`, reads the password instead and prints nothing).
    Create {
        /// Name of the organization the user belongs to (see `org list`).
        #[arg(long)]
        org: String,
        /// The user's email, unique across the server; they sign in with it.
        #[arg(long)]
        email: String,
        /// The name people see (in the timeline: "Ana Ruiz took over").
        #[arg(long)]
        name: String,
        /// `viewer` reads everything; `agent` also takes over, replies and changes leads;
        /// `admin` also changes settings, providers, webhooks, keys and people.
        #[arg(long, default_value = "agent", value_parser = ["viewer", "agent", "admin"])]
        role: String,
        /// Read the password from the first line of standard input (12 to 200 characters).
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users: email, name, role, organization, state.
    List {
        /// Only the users of this organization (by name).
        #[arg(long)]
        org: Option<String>,
    },
    /// Give a user another role.
    SetRole {
        email: String,
        #[arg(value_parser = ["viewer", "agent", "admin"])]
        role: String,
    },
    /// Disable a user: they can no longer sign in, and their sessions end.
    Disable { email: String },
    /// Enable a disabled user again: they can sign in with their password.
    Enable { email: String },
    /// Give a user a new generated password, printed alone on standard output; their
    /// sessions end.
    ResetPassword { email: String },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create a key; prints the key alone on standard output, once.
    Create {
        /// Name of the organization the key belongs to (see `org list`).
        #[arg(long)]
        org: String,
        /// What the key may do: `read` (every GET), `write` (also every integrator and
        /// ingest operation) or `admin` (also webhooks, organization settings, DNC
        /// removal, recording deletion, /metrics).
        #[arg(long, default_value = "write", value_parser = ["read", "write", "admin"])]
        scope: String,
        /// A label to recognise the key by.
        #[arg(long)]
        name: Option<String>,
    },
    /// List keys (never the keys themselves).
    List {
        /// Only the keys of this organization (by name).
        #[arg(long)]
        org: Option<String>,
    },
    /// Revoke a key by id.
    Revoke { id: String },
}

/// Runs the parsed command; the error is what to print before exiting with status 1.
pub fn run(cli: Cli) -> Result<(), String> {
    let file = FileConfig::load(cli.config.as_deref())?;
    let file_replica = file.replica.clone();
    // Where the database is, for every command but `serve`, which resolves its own.
    let data_dir = cli
        .data_dir
        .clone()
        .or_else(|| file.data_dir.clone())
        .unwrap_or_else(|| config::DEFAULT_DATA_DIR.into());
    // Only `serve` and `init` create a database, and only `restore` wants none.
    if !matches!(
        cli.command,
        Command::Serve(_) | Command::Init | Command::Restore { .. } | Command::Follow { .. }
    ) {
        config::require_database(&data_dir)?;
    }
    match cli.command {
        Command::Serve(args) => {
            init_logging(cli.log_format, "info");
            let over = Overrides {
                listen: args.listen,
                data_dir: cli.data_dir,
                insecure_http: args.insecure_http,
                tls_cert: args.tls_cert,
                tls_key: args.tls_key,
                tls_names: args.tls_names,
                max_body_bytes: args.max_body_bytes,
                webhook_retry_schedule: args.webhook_retry_schedule,
                webhook_timeout: args.webhook_timeout,
                webhook_max_in_flight: args.webhook_max_in_flight,
                webhook_retention: args.webhook_retention,
                webhook_ca_file: args.webhook_ca_file,
                outbound_ca_file: args.outbound_ca_file,
                outbound_allow_private: args.outbound_allow_private,
                cache_mib: args.cache_mib,
                header_read_timeout: args.header_read_timeout,
                max_connections: args.max_connections,
                max_connections_per_ip: args.max_connections_per_ip,
                body_read_timeout: args.body_read_timeout,
                body_min_bytes_per_second: args.body_min_bytes_per_second,
                recording_min_bytes_per_second: args.recording_min_bytes_per_second,
                rate_limit_per_second: args.rate_limit_per_second,
                rate_limit_burst: args.rate_limit_burst,
                public_url: args.public_url,
                recording_max_bytes: args.recording_max_bytes,
                recording_link_ttl_secs: args.recording_link_ttl_secs,
                max_import_bytes: args.max_import_bytes,
                import_quota_bytes: args.import_quota_bytes,
                replica: Some(args.replica.layer()),
            };
            let config = Config::resolve(file, over)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the runtime: {e}"))?;
            runtime.block_on(crate::server::serve(config))
        }
        Command::Init => {
            init_logging(cli.log_format, "warn");
            crate::maintenance::init(&data_dir)
        }
        Command::Org(OrgCommand::List) => {
            init_logging(cli.log_format, "warn");
            let list: OrgList = administer(&data_dir, AdminRequest::OrgList)?;
            println!("{:<26} {:<28} NAME", "ID", "CREATED");
            for org in list.orgs {
                println!("{:<26} {:<28} {}", org.id, org.created_at, org.name);
            }
            Ok(())
        }
        Command::Org(OrgCommand::Create { name }) => {
            init_logging(cli.log_format, "warn");
            let org: OrgCreated = administer(&data_dir, AdminRequest::OrgCreate { name })?;
            println!("{}", org.id);
            eprintln!("created organization {}", org.name);
            Ok(())
        }
        Command::Key(cmd) => {
            init_logging(cli.log_format, "warn");
            key_command(&data_dir, cmd)
        }
        Command::User(cmd) => {
            init_logging(cli.log_format, "warn");
            user_command(&data_dir, cmd)
        }
        Command::Import {
            org,
            dry_run,
            create_only,
            on_match,
            profile,
            verbose,
            file,
        } => {
            init_logging(cli.log_format, "warn");
            let request = AdminRequest::Import {
                org,
                ndjson: crate::domain::import::Format::of_path(&file)
                    == crate::domain::import::Format::Ndjson,
                dry_run,
                create_only,
                on_match,
                profile,
            };
            crate::import_cli::import(&data_dir, request, &file, verbose)
        }
        Command::Backup { file: target } => {
            init_logging(cli.log_format, "warn");
            crate::maintenance::backup(&data_dir, &target)
        }
        Command::Restore {
            file,
            from,
            at,
            replica,
        } => {
            init_logging(cli.log_format, "warn");
            match (file, from) {
                (Some(source), None) => crate::maintenance::restore(&data_dir, &source),
                (_, Some(from)) => {
                    let settings = config::ReplicaConfig::resolve(
                        file_replica.as_ref(),
                        Some(&replica.layer()),
                        Some(&from),
                    )?
                    .ok_or("--from names no replica")?;
                    let at = match at {
                        Some(at) => Some(
                            chrono::DateTime::parse_from_rfc3339(&at)
                                .map_err(|e| format!("--at {at:?} is not an RFC 3339 time: {e}"))?
                                .timestamp_millis(),
                        ),
                        None => None,
                    };
                    crate::replica::restore::run(&settings, &data_dir, at)
                }
                (None, None) => Err("restore needs a backup file or --from".into()),
            }
        }
        Command::Follow { from, replica } => {
            init_logging(cli.log_format, "warn");
            let settings = config::ReplicaConfig::resolve(
                file_replica.as_ref(),
                Some(&replica.layer()),
                Some(&from),
            )?
            .ok_or("--from names no replica")?;
            crate::replica::follow::run(&settings, &data_dir)
        }
        Command::Check => {
            init_logging(cli.log_format, "warn");
            crate::maintenance::check(&data_dir)
        }
        Command::Recover { accept_loss } => {
            init_logging(cli.log_format, "warn");
            crate::maintenance::recover(&data_dir, accept_loss)
        }
    }
}

fn key_command(data_dir: &Path, cmd: KeyCommand) -> Result<(), String> {
    match cmd {
        KeyCommand::Create { org, scope, name } => {
            let scope = Scope::parse(&scope)
                .ok_or_else(|| format!("unknown scope {scope:?}: use read, write or admin"))?;
            let created: KeyCreated =
                administer(data_dir, AdminRequest::KeyCreate { org, scope, name })?;
            println!("{}", created.key);
            eprintln!(
                "created key {} ({} scope, organization {}); store it now: it is not shown again",
                created.id,
                created.scope.as_str(),
                created.org,
            );
        }
        KeyCommand::List { org } => {
            let list: KeyList = administer(data_dir, AdminRequest::KeyList { org })?;
            println!(
                "{:<26} {:<20} {:<6} {:<8} {:<28} NAME",
                "ID", "ORG", "SCOPE", "STATE", "CREATED"
            );
            for key in list.keys {
                let state = if key.revoked { "revoked" } else { "active" };
                println!(
                    "{:<26} {:<20} {:<6} {:<8} {:<28} {}",
                    key.id,
                    key.org,
                    key.scope.as_str(),
                    state,
                    key.created_at,
                    key.name
                );
            }
        }
        KeyCommand::Revoke { id } => {
            let _: KeyRevoked = administer(data_dir, AdminRequest::KeyRevoke { id: id.clone() })?;
            eprintln!("revoked key {id}");
        }
    }
    Ok(())
}

fn role(name: &str) -> Result<Role, String> {
    Role::parse(name).ok_or_else(|| format!("unknown role {name:?}: use viewer, agent or admin"))
}

/// `--on-match`: `update`, `fill` or `skip`.
fn on_match(value: &str) -> Result<crate::domain::import::OnMatch, String> {
    crate::domain::import::OnMatch::parse(value)
        .ok_or_else(|| format!("{value}: write update, fill or skip"))
}

fn hash_password(password: &str) -> Result<String, String> {
    passwords::check_new(password).map_err(|e| e.to_string())?;
    passwords::hash(password).map_err(|e| e.to_string_for_logs())
}

fn user_command(data_dir: &Path, cmd: UserCommand) -> Result<(), String> {
    match cmd {
        UserCommand::Create {
            org,
            email,
            name,
            role: role_name,
            password_stdin,
        } => {
            let role = role(&role_name)?;
            let (password, generated) = if password_stdin {
                let mut line = String::new();
                std::io::stdin()
                    .read_line(&mut line)
                    .map_err(|e| format!("cannot read the password from standard input: {e}"))?;
                (line.trim_end_matches(['\r', '\n']).to_string(), false)
            } else {
                (passwords::generate(), true)
            };
            let password_hash = hash_password(&password)?;
            let created: UserListed = administer(
                data_dir,
                AdminRequest::UserCreate {
                    org,
                    email,
                    name,
                    role,
                    password_hash,
                },
            )?;
            if generated {
                println!("{password}");
                eprintln!(
                    "created {} {} ({}) in {}; give them this password now: it is not shown again",
                    created.role.as_str(),
                    created.name,
                    created.email,
                    created.org
                );
            } else {
                eprintln!(
                    "created {} {} ({}) in {}",
                    created.role.as_str(),
                    created.name,
                    created.email,
                    created.org
                );
            }
        }
        UserCommand::List { org } => {
            let list: UserList = administer(data_dir, AdminRequest::UserList { org })?;
            println!(
                "{:<32} {:<24} {:<7} {:<9} {:<20}",
                "EMAIL", "NAME", "ROLE", "STATE", "ORG"
            );
            for u in list.users {
                let state = if u.disabled { "disabled" } else { "active" };
                println!(
                    "{:<32} {:<24} {:<7} {:<9} {:<20}",
                    u.email,
                    u.name,
                    u.role.as_str(),
                    state,
                    u.org
                );
            }
        }
        UserCommand::SetRole {
            email,
            role: role_name,
        } => {
            let role = role(&role_name)?;
            let _: UserListed = administer(
                data_dir,
                AdminRequest::UserSetRole {
                    email: email.clone(),
                    role,
                },
            )?;
            eprintln!("{email} is now {}", role.as_str());
        }
        UserCommand::Disable { email } => {
            let _: UserListed = administer(
                data_dir,
                AdminRequest::UserDisable {
                    email: email.clone(),
                },
            )?;
            eprintln!("disabled {email}; their sessions have ended");
        }
        UserCommand::Enable { email } => {
            let _: UserListed = administer(
                data_dir,
                AdminRequest::UserEnable {
                    email: email.clone(),
                },
            )?;
            eprintln!("enabled {email}; they can sign in again");
        }
        UserCommand::ResetPassword { email } => {
            let password = passwords::generate();
            let password_hash = hash_password(&password)?;
            let _: UserListed = administer(
                data_dir,
                AdminRequest::UserSetPassword {
                    email: email.clone(),
                    password_hash,
                },
            )?;
            println!("{password}");
            eprintln!("new password for {email}; their sessions have ended");
        }
    }
    Ok(())
}

/// Runs an admin request through a running server's socket, or on the store directly
/// when no server runs.
fn init_logging(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
