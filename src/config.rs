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
    pub max_body_bytes: usize,
    pub webhooks: WebhookConfig,
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
    /// Extra PEM CA certificates trusted for https receivers, besides the webpki roots.
    pub ca_file: Option<PathBuf>,
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
            ca_file: None,
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
            ca_file: over
                .webhook_ca_file
                .clone()
                .or(file.webhook_ca_file.clone()),
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
    pub max_body_bytes: Option<usize>,
    pub webhook_retry_schedule: Option<Vec<String>>,
    pub webhook_timeout: Option<String>,
    pub webhook_max_in_flight: Option<usize>,
    pub webhook_retention: Option<String>,
    pub webhook_ca_file: Option<PathBuf>,
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
            max_body_bytes: over
                .max_body_bytes
                .or(file.max_body_bytes)
                .unwrap_or(DEFAULT_MAX_BODY_BYTES),
            webhooks,
        };
        if config.tls_cert.is_some() != config.tls_key.is_some() {
            return Err("tls_cert and tls_key must be given together".into());
        }
        if config.max_body_bytes == 0 {
            return Err("max_body_bytes must be positive".into());
        }
        Ok(config)
    }

    /// A server on an ephemeral loopback port with data in `data_dir`: for tests.
    pub fn for_tests(data_dir: PathBuf) -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
            insecure_http: false,
            tls_cert: None,
            tls_key: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            webhooks: WebhookConfig::default(),
        }
    }

    pub fn database_path(&self) -> PathBuf {
        database_path(&self.data_dir)
    }
}

pub fn database_path(data_dir: &Path) -> PathBuf {
    data_dir.join("engaged.redb")
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
}
