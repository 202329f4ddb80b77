//! Configuration: built-in defaults < TOML file < `ENGAGED_*` environment < flags.
//!
//! clap resolves a flag or its environment variable into one `Option`; a `None` falls
//! back to the TOML file, then to the default. `engaged serve` with no file at all runs.
//! `config/engaged.toml` in the repository documents every key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8443";
pub const DEFAULT_DATA_DIR: &str = "./data";
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// redb's page cache by default: a quarter of redb's own 1 GiB. Half of it is redb's
/// buffer of pages written between checkpoints; with less than the pages a busy
/// two seconds changes, redb writes pages out between checkpoints and reads them back
/// (docs/performance.md: 64 MiB cost a tenth of `POST` events' throughput).
pub const DEFAULT_CACHE_BYTES: usize = 256 * 1024 * 1024;
pub const DEFAULT_CACHE_MIB: usize = DEFAULT_CACHE_BYTES / (1024 * 1024);
/// The largest recording accepted by default.
pub const DEFAULT_RECORDING_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// How long a recording's download link lives by default.
pub const DEFAULT_RECORDING_LINK_TTL_SECS: u64 = 15 * 60;
/// The largest file an import reads by default (the API's body, the console's upload).
pub const DEFAULT_MAX_IMPORT_BYTES: u64 = 1 << 30;
/// The disk an organization's waiting import files may take by default.
pub const DEFAULT_IMPORT_QUOTA_BYTES: u64 = 2 << 30;

/// The resolved configuration of a server.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// Serve plain HTTP (behind a TLS-terminating proxy only).
    pub insecure_http: bool,
    /// Certificate chain and private key (PEM). When both are unset, a self-signed
    /// certificate is generated in `<data_dir>/tls/` on first start.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Host names and IP addresses the generated certificate covers besides `localhost`,
    /// `127.0.0.1`, `::1` and the machine's host name.
    pub tls_names: Vec<String>,
    pub max_body_bytes: usize,
    /// redb's page cache, in MiB.
    pub cache_mib: usize,
    pub limits: Limits,
    pub webhooks: WebhookConfig,
    /// Extra PEM CA certificates trusted, beside the webpki roots, by every outbound
    /// client (SMTP, webhooks, the model, the compliance service, Twilio). TOML key
    /// `outbound_ca_file`, or its old name `webhook_ca_file`.
    pub outbound_ca_file: Option<PathBuf>,
    /// Whether organizations' settings may point outbound clients (calendars,
    /// webhooks, providers, the model, the compliance service) at loopback, link-local
    /// and private addresses (`outbound_address`). `true` by default: one team's
    /// servers often live on its own network; a machine hosting several teams sets
    /// `false`.
    pub outbound_allow_private: bool,
    /// Scheme, host and optional path prefix under which clients reach this server
    /// (behind a proxy); recording links start with it. `None`: from each request.
    pub public_url: Option<String>,
    /// Largest accepted recording, in bytes.
    pub recording_max_bytes: u64,
    /// How long a recording download link stays valid, in seconds.
    pub recording_link_ttl_secs: u64,
    /// Largest import file (the API's body, the console's upload, `engaged import`).
    pub max_import_bytes: u64,
    /// Disk an organization's import files (console uploads waiting, refused rows) may
    /// take in the data directory.
    pub import_quota_bytes: u64,
    /// Continuous replication to object storage; `None` (off) unless a url is set.
    pub replica: Option<ReplicaConfig>,
}

/// What protects the server from slow, greedy or too many clients.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time a client has to send a request's headers; also how long an idle HTTP/1.1
    /// keep-alive connection is kept.
    pub header_read_timeout: Duration,
    /// Connections served at once; further clients wait in the kernel's backlog, which
    /// is as long.
    pub max_connections: usize,
    /// Connections one client address (an IPv6 /64) may hold at once; 0: no cap.
    /// Beyond it, new connections from that address are closed at once.
    pub max_connections_per_ip: usize,
    /// Time a request's body has to arrive whole (408 and a closed connection after).
    pub body_read_timeout: Duration,
    /// The least average rate of every request body past its first five seconds.
    pub body_min_bytes_per_second: u64,
    /// The least average rate of a recording upload past its first `body_read_timeout`.
    pub recording_min_bytes_per_second: u64,
    /// Requests per second allowed per API key (token bucket), `None` for no limit.
    pub rate_limit_per_second: Option<f64>,
    /// Requests a key may make in a burst above the rate.
    pub rate_limit_burst: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_connections_per_ip: 256,
            body_read_timeout: Duration::from_secs(30),
            body_min_bytes_per_second: 1024,
            recording_min_bytes_per_second: 8 * 1024,
            rate_limit_per_second: None,
            rate_limit_burst: 100,
        }
    }
}

impl Limits {
    fn resolve(file: &FileConfig, over: &Overrides) -> Result<Limits, String> {
        let defaults = Limits::default();
        let duration = |name: &str, value: Option<&String>, default: Duration| match value {
            Some(text) => crate::duration::parse(text).map_err(|e| format!("{name}: {e}")),
            None => Ok(default),
        };
        let header_read_timeout = duration(
            "header_read_timeout",
            over.header_read_timeout
                .as_ref()
                .or(file.header_read_timeout.as_ref()),
            defaults.header_read_timeout,
        )?;
        let body_read_timeout = duration(
            "body_read_timeout",
            over.body_read_timeout
                .as_ref()
                .or(file.body_read_timeout.as_ref()),
            defaults.body_read_timeout,
        )?;
        let limits = Limits {
            header_read_timeout,
            max_connections: over
                .max_connections
                .or(file.max_connections)
                .unwrap_or(defaults.max_connections),
            max_connections_per_ip: over
                .max_connections_per_ip
                .or(file.max_connections_per_ip)
                .unwrap_or(defaults.max_connections_per_ip),
            body_read_timeout,
            body_min_bytes_per_second: over
                .body_min_bytes_per_second
                .or(file.body_min_bytes_per_second)
                .unwrap_or(defaults.body_min_bytes_per_second),
            recording_min_bytes_per_second: over
                .recording_min_bytes_per_second
                .or(file.recording_min_bytes_per_second)
                .unwrap_or(defaults.recording_min_bytes_per_second),
            rate_limit_per_second: over.rate_limit_per_second.or(file.rate_limit_per_second),
            rate_limit_burst: over
                .rate_limit_burst
                .or(file.rate_limit_burst)
                .unwrap_or(defaults.rate_limit_burst),
        };
        if limits.max_connections == 0 || limits.rate_limit_burst == 0 {
            return Err("max_connections and rate_limit_burst must be positive".into());
        }
        if limits
            .rate_limit_per_second
            .is_some_and(|r| !(r > 0.0 && r.is_finite()))
        {
            return Err("rate_limit_per_second must be a positive number".into());
        }
        if limits.header_read_timeout.is_zero() {
            return Err("header_read_timeout must be positive".into());
        }
        if limits.body_read_timeout.is_zero() {
            return Err("body_read_timeout must be positive".into());
        }
        if limits.body_min_bytes_per_second == 0 {
            return Err("body_min_bytes_per_second must be positive".into());
        }
        if limits.recording_min_bytes_per_second == 0 {
            return Err("recording_min_bytes_per_second must be positive".into());
        }
        Ok(limits)
    }
}

/// How webhooks are delivered.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// Delay before each retry after the first attempt; jittered by ±20 %.
    pub retry_schedule: Vec<Duration>,
    /// Time allowed for one attempt, connection to last body byte.
    pub timeout: Duration,
    /// Attempts in flight at once to one endpoint.
    pub max_in_flight_per_endpoint: usize,
    /// How long finished deliveries and their attempts are kept.
    pub retention: Duration,
}

pub const DEFAULT_RETRY_SCHEDULE: [&str; 7] = ["5s", "5m", "30m", "2h", "5h", "10h", "10h"];

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            retry_schedule: DEFAULT_RETRY_SCHEDULE
                .iter()
                .filter_map(|d| crate::duration::parse(d).ok())
                .collect(),
            timeout: Duration::from_secs(15),
            max_in_flight_per_endpoint: 8,
            retention: Duration::from_secs(30 * 86_400),
        }
    }
}

impl WebhookConfig {
    fn resolve(file: &FileConfig, over: &Overrides) -> Result<WebhookConfig, String> {
        let defaults = WebhookConfig::default();
        let duration = |name: &str, value: Option<&String>, default: Duration| match value {
            Some(text) => crate::duration::parse(text).map_err(|e| format!("{name}: {e}")),
            None => Ok(default),
        };
        let schedule = match over
            .webhook_retry_schedule
            .as_ref()
            .or(file.webhook_retry_schedule.as_ref())
        {
            Some(list) => list
                .iter()
                .map(|d| {
                    crate::duration::parse(d).map_err(|e| format!("webhook_retry_schedule: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => defaults.retry_schedule,
        };
        let max_in_flight = over
            .webhook_max_in_flight
            .or(file.webhook_max_in_flight)
            .unwrap_or(defaults.max_in_flight_per_endpoint);
        if max_in_flight == 0 {
            return Err("webhook_max_in_flight must be positive".into());
        }
        Ok(WebhookConfig {
            retry_schedule: schedule,
            timeout: duration(
                "webhook_timeout",
                over.webhook_timeout
                    .as_ref()
                    .or(file.webhook_timeout.as_ref()),
                defaults.timeout,
            )?,
            max_in_flight_per_endpoint: max_in_flight,
            retention: duration(
                "webhook_retention",
                over.webhook_retention
                    .as_ref()
                    .or(file.webhook_retention.as_ref()),
                defaults.retention,
            )?,
        })
    }
}

/// The TOML file's keys, all optional.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub insecure_http: Option<bool>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_names: Option<Vec<String>>,
    pub max_body_bytes: Option<usize>,
    pub cache_mib: Option<usize>,
    pub header_read_timeout: Option<String>,
    pub max_connections: Option<usize>,
    pub max_connections_per_ip: Option<usize>,
    pub body_read_timeout: Option<String>,
    pub body_min_bytes_per_second: Option<u64>,
    pub recording_min_bytes_per_second: Option<u64>,
    pub rate_limit_per_second: Option<f64>,
    pub rate_limit_burst: Option<u32>,
    pub webhook_retry_schedule: Option<Vec<String>>,
    pub webhook_timeout: Option<String>,
    pub webhook_max_in_flight: Option<usize>,
    pub webhook_retention: Option<String>,
    /// The old name of `outbound_ca_file`, still accepted.
    pub webhook_ca_file: Option<PathBuf>,
    pub outbound_ca_file: Option<PathBuf>,
    pub outbound_allow_private: Option<bool>,
    pub public_url: Option<String>,
    pub recording_max_bytes: Option<u64>,
    pub recording_link_ttl_secs: Option<u64>,
    pub max_import_bytes: Option<u64>,
    pub import_quota_bytes: Option<u64>,
    /// `[replica]`: continuous replication to S3-compatible object storage.
    pub replica: Option<ReplicaFile>,
}

/// The `[replica]` table's keys (and their `ENGAGED_REPLICA_*` variables and
/// `--replica-*` flags), all optional.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaFile {
    pub url: Option<String>,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub secret_access_key_file: Option<PathBuf>,
    pub sync_interval: Option<String>,
    pub snapshot_interval: Option<String>,
    pub retention: Option<String>,
    pub encryption_key_file: Option<PathBuf>,
    pub spool_max: Option<u64>,
}

/// A secret read from the configuration: never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Where the replica lives and how often it is written (`crate::replica`).
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// `s3://bucket/prefix`.
    pub url: String,
    /// The S3 endpoint (`https://s3.example.com`); `None`: AWS's for the region.
    pub endpoint: Option<String>,
    pub region: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<Secret>,
    /// Batches reach the replica at least this often.
    pub sync_interval: Duration,
    /// A new snapshot (and generation) at least this often.
    pub snapshot_interval: Duration,
    /// Generations whose successor's snapshot is older than this are deleted.
    pub retention: Duration,
    /// 32 bytes (64 hexadecimal digits): everything uploaded is encrypted with it.
    pub encryption_key_file: Option<PathBuf>,
    /// The most bytes of batches waiting for upload; past it, replication pauses
    /// until a new snapshot.
    pub spool_max: u64,
    /// A snapshot is uploaded (and restored) in parts of at most this many bytes, so
    /// neither holds more than a part in memory: [`REPLICA_SNAPSHOT_PART_BYTES`]
    /// (smaller in tests, to exercise several parts).
    pub snapshot_part_bytes: u64,
}

/// The size of a snapshot's parts: small enough to hold in memory while it is sealed
/// and sent, large enough that a 10 GB database is 160 requests.
pub const REPLICA_SNAPSHOT_PART_BYTES: u64 = 64 << 20;

pub const DEFAULT_REPLICA_SYNC_INTERVAL: Duration = Duration::from_secs(1);
pub const DEFAULT_REPLICA_SNAPSHOT_INTERVAL: Duration = Duration::from_secs(24 * 3600);
pub const DEFAULT_REPLICA_RETENTION: Duration = Duration::from_secs(30 * 86_400);
pub const DEFAULT_REPLICA_SPOOL_MAX: u64 = 1 << 30;

impl ReplicaConfig {
    /// The `[replica]` table under its variables and flags; `None` unless a `url` is
    /// set. `from` (the `--from` of `restore` and `follow`) stands for the url.
    pub fn resolve(
        file: Option<&ReplicaFile>,
        over: Option<&ReplicaFile>,
        from: Option<&str>,
    ) -> Result<Option<ReplicaConfig>, String> {
        let empty = ReplicaFile::default();
        let (file, over) = (file.unwrap_or(&empty), over.unwrap_or(&empty));
        let url = from
            .map(str::to_string)
            .or_else(|| over.url.clone())
            .or_else(|| file.url.clone());
        let Some(url) = url else {
            return Ok(None);
        };
        if split_s3_url(&url).is_none() {
            return Err(format!(
                "replica url: {url:?} is not a URL such as s3://bucket/prefix"
            ));
        }
        let duration =
            |name: &str, over: &Option<String>, file: &Option<String>, default| match over
                .as_ref()
                .or(file.as_ref())
            {
                Some(text) => match crate::duration::parse(text) {
                    Ok(d) if !d.is_zero() => Ok(d),
                    Ok(_) => Err(format!("replica {name} must be positive")),
                    Err(e) => Err(format!("replica {name}: {e}")),
                },
                None => Ok(default),
            };
        let secret = match (
            over.secret_access_key
                .as_ref()
                .or(file.secret_access_key.as_ref()),
            over.secret_access_key_file
                .as_ref()
                .or(file.secret_access_key_file.as_ref()),
        ) {
            (Some(_), Some(_)) => {
                return Err("replica secret_access_key and secret_access_key_file: set one".into())
            }
            (Some(secret), None) => Some(Secret(secret.clone())),
            (None, Some(path)) => Some(Secret(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("replica secret_access_key_file {}: {e}", path.display()))?
                    .trim()
                    .to_string(),
            )),
            (None, None) => None,
        };
        let endpoint = over.endpoint.clone().or_else(|| file.endpoint.clone());
        if let Some(endpoint) = &endpoint {
            let uri: hyper::Uri = endpoint
                .parse()
                .map_err(|_| format!("replica endpoint: {endpoint:?} is not a URL"))?;
            if !matches!(uri.scheme_str(), Some("http") | Some("https")) || uri.host().is_none() {
                return Err(format!(
                    "replica endpoint: {endpoint:?} is not a URL such as https://s3.example.com"
                ));
            }
        }
        let spool_max = over
            .spool_max
            .or(file.spool_max)
            .unwrap_or(DEFAULT_REPLICA_SPOOL_MAX);
        if spool_max == 0 {
            return Err("replica spool_max must be positive".into());
        }
        Ok(Some(ReplicaConfig {
            url,
            endpoint,
            region: over
                .region
                .clone()
                .or_else(|| file.region.clone())
                .unwrap_or_else(|| "us-east-1".into()),
            access_key_id: over
                .access_key_id
                .clone()
                .or_else(|| file.access_key_id.clone()),
            secret_access_key: secret,
            sync_interval: duration(
                "sync_interval",
                &over.sync_interval,
                &file.sync_interval,
                DEFAULT_REPLICA_SYNC_INTERVAL,
            )?,
            snapshot_interval: duration(
                "snapshot_interval",
                &over.snapshot_interval,
                &file.snapshot_interval,
                DEFAULT_REPLICA_SNAPSHOT_INTERVAL,
            )?,
            retention: duration(
                "retention",
                &over.retention,
                &file.retention,
                DEFAULT_REPLICA_RETENTION,
            )?,
            encryption_key_file: over
                .encryption_key_file
                .clone()
                .or_else(|| file.encryption_key_file.clone()),
            spool_max,
            snapshot_part_bytes: REPLICA_SNAPSHOT_PART_BYTES,
        }))
    }

    /// The bucket and the prefix (without slashes at its ends; may be empty).
    pub fn bucket_and_prefix(&self) -> (&str, &str) {
        split_s3_url(&self.url).unwrap_or(("", ""))
    }
}

/// `s3://bucket/prefix` as its bucket and prefix.
fn split_s3_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("s3://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let ok = !bucket.is_empty()
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    ok.then_some((bucket, prefix.trim_matches('/')))
}

/// What flags and environment said: the same keys as the file, each `None` when
/// neither said anything.
pub type Overrides = FileConfig;

impl FileConfig {
    pub fn load(path: Option<&Path>) -> Result<FileConfig, String> {
        let Some(path) = path else {
            return Ok(FileConfig::default());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl Config {
    pub fn resolve(file: FileConfig, over: Overrides) -> Result<Config, String> {
        let webhooks = WebhookConfig::resolve(&file, &over)?;
        let limits = Limits::resolve(&file, &over)?;
        let outbound_ca_file = match outbound_ca_file(&over)? {
            Some(path) => Some(path),
            None => outbound_ca_file(&file)?,
        };
        let replica = ReplicaConfig::resolve(file.replica.as_ref(), over.replica.as_ref(), None)?;
        let listen = over
            .listen
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
        let listen = listen.parse().map_err(|_| {
            format!("listen: {listen:?} is not an address such as {DEFAULT_LISTEN}")
        })?;
        let config = Config {
            listen,
            data_dir: over
                .data_dir
                .or(file.data_dir)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR)),
            insecure_http: over.insecure_http.or(file.insecure_http).unwrap_or(false),
            tls_cert: over.tls_cert.or(file.tls_cert),
            tls_key: over.tls_key.or(file.tls_key),
            tls_names: over.tls_names.or(file.tls_names).unwrap_or_default(),
            max_body_bytes: over
                .max_body_bytes
                .or(file.max_body_bytes)
                .unwrap_or(DEFAULT_MAX_BODY_BYTES),
            webhooks,
            outbound_ca_file,
            outbound_allow_private: over
                .outbound_allow_private
                .or(file.outbound_allow_private)
                .unwrap_or(true),
            limits,
            cache_mib: over
                .cache_mib
                .or(file.cache_mib)
                .unwrap_or(DEFAULT_CACHE_MIB),
            public_url: over.public_url.or(file.public_url),
            recording_max_bytes: over
                .recording_max_bytes
                .or(file.recording_max_bytes)
                .unwrap_or(DEFAULT_RECORDING_MAX_BYTES),
            recording_link_ttl_secs: over
                .recording_link_ttl_secs
                .or(file.recording_link_ttl_secs)
                .unwrap_or(DEFAULT_RECORDING_LINK_TTL_SECS),
            max_import_bytes: over
                .max_import_bytes
                .or(file.max_import_bytes)
                .unwrap_or(DEFAULT_MAX_IMPORT_BYTES),
            import_quota_bytes: over
                .import_quota_bytes
                .or(file.import_quota_bytes)
                .unwrap_or(DEFAULT_IMPORT_QUOTA_BYTES),
            replica,
        };
        if config.max_import_bytes == 0 || config.import_quota_bytes == 0 {
            return Err("max_import_bytes and import_quota_bytes must be positive".into());
        }
        if let Some(url) = &config.public_url {
            check_public_url(url)?;
        }
        if config.recording_max_bytes == 0 {
            return Err("recording_max_bytes must be positive".into());
        }
        if config.recording_link_ttl_secs == 0 {
            return Err("recording_link_ttl_secs must be positive".into());
        }
        if config.tls_cert.is_some() != config.tls_key.is_some() {
            return Err("tls_cert and tls_key must be given together".into());
        }
        for name in &config.tls_names {
            if rustls::pki_types::ServerName::try_from(name.as_str()).is_err() {
                return Err(format!(
                    "tls_names: {name:?} is neither a host name nor an IP address"
                ));
            }
        }
        if config.cache_mib == 0 {
            return Err("cache_mib must be positive".into());
        }
        if config.max_body_bytes == 0 {
            return Err("max_body_bytes must be positive".into());
        }
        Ok(config)
    }

    /// A server on an ephemeral loopback port with data in `data_dir`: for tests (and
    /// benches), through the `testkit` feature; not part of the API.
    #[cfg(any(test, feature = "testkit"))]
    pub fn for_tests(data_dir: PathBuf) -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
            insecure_http: false,
            tls_cert: None,
            tls_key: None,
            tls_names: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            webhooks: WebhookConfig::default(),
            outbound_ca_file: None,
            outbound_allow_private: true,
            limits: Limits::default(),
            cache_mib: DEFAULT_CACHE_MIB,
            public_url: None,
            recording_max_bytes: DEFAULT_RECORDING_MAX_BYTES,
            recording_link_ttl_secs: DEFAULT_RECORDING_LINK_TTL_SECS,
            max_import_bytes: DEFAULT_MAX_IMPORT_BYTES,
            import_quota_bytes: DEFAULT_IMPORT_QUOTA_BYTES,
            replica: None,
        }
    }

    pub fn database_path(&self) -> PathBuf {
        database_path(&self.data_dir)
    }
}

/// `outbound_ca_file` of one layer, under its name or its old name `webhook_ca_file`
/// (both at once must agree).
fn outbound_ca_file(layer: &FileConfig) -> Result<Option<PathBuf>, String> {
    match (&layer.outbound_ca_file, &layer.webhook_ca_file) {
        (Some(new), Some(old)) if new != old => Err(format!(
            "outbound_ca_file ({}) and its old name webhook_ca_file ({}) differ: set one",
            new.display(),
            old.display()
        )),
        (new, old) => Ok(new.clone().or_else(|| old.clone())),
    }
}

/// `public_url` must be an absolute http(s) URL without query or fragment.
fn check_public_url(url: &str) -> Result<(), String> {
    let bad = || format!("public_url: {url:?} is not a URL such as https://engaged.example.com");
    let uri: hyper::Uri = url.parse().map_err(|_| bad())?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http") | Some("https"));
    let host_ok = uri.host().is_some_and(|h| !h.is_empty());
    if !scheme_ok || !host_ok || uri.query().is_some() || url.contains('#') || url.contains('@') {
        return Err(bad());
    }
    Ok(())
}

/// Creates the data directory, readable by its owner only (mode 0700, whatever the
/// umask): it holds leads' personal data and every secret of the service.
pub fn create_data_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

pub fn database_path(data_dir: &Path) -> PathBuf {
    data_dir.join("engaged.redb")
}

/// Refuses a data directory that holds no database, for every command but `serve`
/// (which creates one) and `restore` (which wants none): a mistyped `--data-dir` must
/// not quietly become a new, empty service.
pub fn require_database(data_dir: &Path) -> Result<(), String> {
    let db = database_path(data_dir);
    match std::fs::metadata(&db) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(_) => Err(format!("{} is not a file", db.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = data_dir.display();
            Err(format!(
                "no database at {}: is --data-dir right? `engaged --data-dir {dir} serve` \
                 creates one on its first start (`engaged --data-dir {dir} init` creates an \
                 empty one without serving), and `engaged --data-dir {dir} restore FILE` \
                 restores a backup into an empty directory",
                db.display()
            ))
        }
        Err(e) => Err(format!(
            "cannot read {}: {e} (run as the service's user, or root)",
            db.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_apply_in_order() {
        let file: FileConfig = toml::from_str(
            "listen = \"127.0.0.1:9000\"\ndata_dir = \"/srv/x\"\ninsecure_http = true",
        )
        .unwrap();
        let over = Overrides {
            data_dir: Some("/flag".into()),
            insecure_http: Some(false),
            ..Default::default()
        };
        let c = Config::resolve(file, over).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9000");
        assert_eq!(c.data_dir, PathBuf::from("/flag"));
        assert!(!c.insecure_http);
        let d = Config::resolve(FileConfig::default(), Overrides::default()).unwrap();
        assert_eq!(d.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(d.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
        assert_eq!(d.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
        assert_eq!(d.recording_max_bytes, 256 * 1024 * 1024);
        assert_eq!(d.recording_link_ttl_secs, 900);
        assert_eq!(d.public_url, None);
        assert_eq!(d.max_import_bytes, 1 << 30);
        assert_eq!(d.import_quota_bytes, 2 << 30);
        let file: FileConfig =
            toml::from_str("max_import_bytes = 1000\nimport_quota_bytes = 5000").unwrap();
        let over = Overrides {
            max_import_bytes: Some(2000),
            ..Default::default()
        };
        let c = Config::resolve(file, over).unwrap();
        assert_eq!((c.max_import_bytes, c.import_quota_bytes), (2000, 5000));
        let over = Overrides {
            max_import_bytes: Some(0),
            ..Default::default()
        };
        assert!(Config::resolve(FileConfig::default(), over).is_err());
    }

    #[test]
    fn recording_settings_are_checked() {
        let file: FileConfig = toml::from_str(
            "public_url = \"https://crm.example.com/engaged/\"\nrecording_max_bytes = 10\nrecording_link_ttl_secs = 60",
        )
        .unwrap();
        let c = Config::resolve(file, Overrides::default()).unwrap();
        assert_eq!(
            c.public_url.as_deref(),
            Some("https://crm.example.com/engaged/")
        );
        assert_eq!((c.recording_max_bytes, c.recording_link_ttl_secs), (10, 60));
        for bad in ["crm.example.com", "ftp://x", "https://x/?a=1", "https://"] {
            let over = Overrides {
                public_url: Some(bad.into()),
                ..Default::default()
            };
            assert!(
                Config::resolve(FileConfig::default(), over).is_err(),
                "{bad}"
            );
        }
        let over = Overrides {
            recording_link_ttl_secs: Some(0),
            ..Default::default()
        };
        assert!(Config::resolve(FileConfig::default(), over).is_err());
    }

    #[test]
    fn the_example_file_is_valid_and_resolves() {
        let file: FileConfig = toml::from_str(include_str!("../config/engaged.toml")).unwrap();
        let config = Config::resolve(file, Overrides::default()).unwrap();
        assert_eq!(config.listen.to_string(), DEFAULT_LISTEN);
    }

    #[test]
    fn edge_limits_and_tls_names_resolve_and_are_checked() {
        let d = Config::resolve(FileConfig::default(), Overrides::default()).unwrap();
        assert!(d.tls_names.is_empty());
        assert_eq!(d.limits.max_connections_per_ip, 256);
        assert_eq!(d.limits.body_read_timeout, Duration::from_secs(30));
        assert_eq!(d.limits.recording_min_bytes_per_second, 8192);
        let file: FileConfig = toml::from_str(
            "tls_names = [\"engaged.corp.example\", \"10.0.0.5\", \"fd00::5\"]\n\
             max_connections_per_ip = 0\nbody_read_timeout = \"5s\"\n\
             recording_min_bytes_per_second = 1000",
        )
        .unwrap();
        let c = Config::resolve(file, Overrides::default()).unwrap();
        assert_eq!(c.tls_names, ["engaged.corp.example", "10.0.0.5", "fd00::5"]);
        assert_eq!(c.limits.max_connections_per_ip, 0);
        assert_eq!(c.limits.body_read_timeout, Duration::from_secs(5));
        assert_eq!(c.limits.recording_min_bytes_per_second, 1000);
        let refused = |over: Overrides| Config::resolve(FileConfig::default(), over).unwrap_err();
        for bad in ["", "not a name", "https://x.example"] {
            let e = refused(Overrides {
                tls_names: Some(vec![bad.into()]),
                ..Default::default()
            });
            assert!(e.starts_with("tls_names: "), "{e}");
        }
        let e = refused(Overrides {
            body_read_timeout: Some("0s".into()),
            ..Default::default()
        });
        assert!(e.starts_with("body_read_timeout"), "{e}");
        let e = refused(Overrides {
            recording_min_bytes_per_second: Some(0),
            ..Default::default()
        });
        assert!(e.starts_with("recording_min_bytes_per_second"), "{e}");
    }

    #[test]
    fn outbound_ca_file_takes_its_old_name() {
        let file: FileConfig = toml::from_str("webhook_ca_file = \"/etc/old.pem\"").unwrap();
        let c = Config::resolve(file, Overrides::default()).unwrap();
        assert_eq!(c.outbound_ca_file, Some(PathBuf::from("/etc/old.pem")));
        let file: FileConfig = toml::from_str("outbound_ca_file = \"/etc/new.pem\"").unwrap();
        let over = Overrides {
            webhook_ca_file: Some("/flag.pem".into()),
            ..Default::default()
        };
        let c = Config::resolve(file, over).unwrap();
        assert_eq!(c.outbound_ca_file, Some(PathBuf::from("/flag.pem")));
        let file: FileConfig =
            toml::from_str("outbound_ca_file = \"/a.pem\"\nwebhook_ca_file = \"/b.pem\"").unwrap();
        let e = Config::resolve(file, Overrides::default()).unwrap_err();
        assert!(e.starts_with("outbound_ca_file"), "{e}");
        let d = Config::resolve(FileConfig::default(), Overrides::default()).unwrap();
        assert_eq!(d.outbound_ca_file, None);
    }

    #[test]
    fn outbound_allow_private_is_on_unless_turned_off() {
        let d = Config::resolve(FileConfig::default(), Overrides::default()).unwrap();
        assert!(d.outbound_allow_private);
        let file: FileConfig = toml::from_str("outbound_allow_private = false").unwrap();
        let c = Config::resolve(file.clone(), Overrides::default()).unwrap();
        assert!(!c.outbound_allow_private);
        let over = Overrides {
            outbound_allow_private: Some(true),
            ..Default::default()
        };
        assert!(Config::resolve(file, over).unwrap().outbound_allow_private);
    }

    #[test]
    fn refuses_unknown_keys_and_half_tls() {
        assert!(toml::from_str::<FileConfig>("colour = 1").is_err());
        let over = Overrides {
            tls_cert: Some("c.pem".into()),
            ..Default::default()
        };
        assert!(Config::resolve(FileConfig::default(), over).is_err());
        let over = Overrides {
            listen: Some("nowhere".into()),
            ..Default::default()
        };
        assert!(Config::resolve(FileConfig::default(), over).is_err());
    }

    #[test]
    fn the_replica_is_off_unless_a_url_is_set_and_layers_like_every_setting() {
        let none = Config::resolve(FileConfig::default(), Overrides::default()).unwrap();
        assert!(none.replica.is_none());
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "from-a-file\n").unwrap();
        let file: FileConfig = toml::from_str(&format!(
            "[replica]\nurl = \"s3://backups/acme/\"\nsync_interval = \"5s\"\nregion = \"eu-west-1\"\nsecret_access_key_file = {:?}\n",
            secret.display().to_string()
        ))
        .unwrap();
        let over = Overrides {
            replica: Some(ReplicaFile {
                sync_interval: Some("2s".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let replica = Config::resolve(file.clone(), over)
            .unwrap()
            .replica
            .unwrap();
        assert_eq!(replica.bucket_and_prefix(), ("backups", "acme"));
        assert_eq!(
            replica.sync_interval,
            Duration::from_secs(2),
            "the flag wins"
        );
        assert_eq!(replica.region, "eu-west-1");
        assert_eq!(
            replica.secret_access_key,
            Some(Secret("from-a-file".into()))
        );
        assert_eq!(replica.retention, DEFAULT_REPLICA_RETENTION);
        assert!(
            !format!("{replica:?}").contains("from-a-file"),
            "the secret is not printed"
        );
        for bad in [
            "[replica]\nurl = \"https://backups\"\n",
            "[replica]\nurl = \"s3://b\"\nsync_interval = \"0s\"\n",
            "[replica]\nurl = \"s3://b\"\nsecret_access_key = \"x\"\nsecret_access_key_file = \"/x\"\n",
            "[replica]\nurl = \"s3://b\"\nendpoint = \"ftp://x\"\n",
        ] {
            let file: FileConfig = toml::from_str(bad).unwrap();
            assert!(Config::resolve(file, Overrides::default()).is_err(), "{bad}");
        }
        assert!(toml::from_str::<FileConfig>("[replica]\nnope = 1\n").is_err());
    }
}
