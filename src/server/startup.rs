//! What runs once at start-up, after the store opened and before the first request:
//! sweeping what a crash left half-done (recording uploads, messages cut short while
//! being sent) and reading the secrets handlers need.

use crate::api::recordings::Settings as RecordingSettings;
use crate::config::Config;
use crate::domain::records::recordings::LinkKey;
use crate::store::Store;

/// The console's address for the start log: under `public_url` when set, else this
/// machine's name for the listening address (`localhost` for a wildcard or loopback).
pub fn console_url(config: &Config, local_addr: std::net::SocketAddr) -> String {
    if let Some(url) = &config.public_url {
        return format!("{}/console/", url.trim_end_matches('/'));
    }
    let scheme = if config.insecure_http {
        "http"
    } else {
        "https"
    };
    let ip = local_addr.ip();
    let host = if ip.is_unspecified() || ip.is_loopback() {
        "localhost".to_string()
    } else {
        std::net::SocketAddr::new(ip, 0)
            .to_string()
            .trim_end_matches(":0")
            .to_string()
    };
    format!("{scheme}://{host}:{}/console/", local_addr.port())
}

/// The first run: while the server has no user, a new one-time setup link (its token
/// stored hashed, valid 24 h or until used), printed once in the log and on stderr.
pub async fn first_run(store: &Store, console_url: &str) -> Result<(), String> {
    let now = crate::time::now_micros();
    let token = store
        .write(move |tx| crate::domain::people::setup::issue(tx, now))
        .await
        .map_err(|e| format!("preparing the first run: {}", e.to_string_for_logs()))?;
    if let Some(token) = token {
        let link = format!("{console_url}setup?token={token}");
        tracing::info!(%link, "no user yet: create the first admin with this one-time setup link (valid 24 hours)");
        eprintln!(
            "No user yet. Create the first admin with this one-time link (valid 24 hours): {link}"
        );
    }
    Ok(())
}

/// Reads (or creates) the recording link secret and discards uploads a crash cut short.
pub async fn prepare_recordings(
    store: &Store,
    config: &Config,
) -> Result<RecordingSettings, String> {
    let (secret, swept) = store
        .write(|tx| {
            let swept = tx.discard_all_recording_uploads()?;
            Ok((tx.recording_secret()?, swept))
        })
        .await
        .map_err(|e| format!("preparing recordings: {}", e.to_string_for_logs()))?;
    if swept > 0 {
        tracing::info!(uploads = swept, "discarded unfinished recording uploads");
    }
    Ok(RecordingSettings {
        link_key: LinkKey::new(secret),
        link_ttl_secs: config.recording_link_ttl_secs,
        max_bytes: config.recording_max_bytes,
        public_url: config
            .public_url
            .as_ref()
            .map(|u| u.trim_end_matches('/').to_string()),
        scheme: if config.insecure_http {
            "http"
        } else {
            "https"
        },
    })
}

/// Messages a crash left `sending` become `unknown`; they are never sent again.
pub async fn prepare_engine(store: &Store) -> Result<(), String> {
    crate::engine::mark_interrupted_sends(store)
        .await
        .map(|_| ())
        .map_err(|e| format!("preparing the engine: {}", e.to_string_for_logs()))
}

/// Removes import files (console uploads, refused rows) an hour after they were last
/// written, every few minutes until the server stops (`domain::import::files`).
pub async fn sweep_imports(
    data_dir: std::path::PathBuf,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    use crate::domain::import::files;
    let root = files::root(&data_dir);
    loop {
        let sweep_root = root.clone();
        let removed = tokio::task::spawn_blocking(move || files::sweep(&sweep_root))
            .await
            .unwrap_or(0);
        if removed > 0 {
            tracing::info!(files = removed, "removed import files older than an hour");
        }
        tokio::select! {
            _ = tokio::time::sleep(files::SWEEP_EVERY) => {}
            _ = stopped.changed() => return,
        }
    }
}
