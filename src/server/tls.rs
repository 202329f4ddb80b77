//! TLS: the certificate the server presents.
//!
//! With no certificate configured, the first start writes a self-signed certificate to
//! `<data_dir>/tls/cert.pem` and `key.pem` (mode 0600) and every later start reuses it,
//! so clients can pin it with `--cacert`. It covers `localhost`, `127.0.0.1`, `::1`, the
//! machine's host name and every `tls_names` entry, as of its generation: a later start
//! whose names it does not cover says so in the log (and how to get a new one) rather
//! than replace a certificate clients may have pinned.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;

use crate::config::Config;

/// Where the certificate and key are: configured, or generated in the data directory.
pub fn paths(config: &Config) -> Result<(PathBuf, PathBuf), String> {
    if let (Some(cert), Some(key)) = (&config.tls_cert, &config.tls_key) {
        return Ok((cert.clone(), key.clone()));
    }
    let dir = config.data_dir.join("tls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let names = certificate_names(config);
    if !cert.exists() || !key.exists() {
        generate_self_signed(&dir, &cert, &key, &names)?;
    } else {
        // Only ever a warning: the certificate itself is loaded (or refused) below.
        match uncovered_names(&cert, &names) {
            Ok(uncovered) if !uncovered.is_empty() => tracing::warn!(
                cert = %cert.display(),
                names = %uncovered.join(","),
                "the generated certificate does not cover these names; to get one that does, move {} away and restart (clients then need the new cert.pem)",
                dir.display()
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot tell which names the certificate covers"),
        }
    }
    Ok((cert, key))
}

/// What a generated certificate covers: the local names, this machine's host name, and
/// the configured `tls_names`.
pub fn certificate_names(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(|n| n.to_string())
        .collect();
    names.extend(host_name());
    for name in &config.tls_names {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// The machine's host name, when a certificate can hold it.
fn host_name() -> Option<String> {
    let name = fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_ascii_lowercase();
    let usable = !name.is_empty()
        && name != "localhost"
        && matches!(
            ServerName::try_from(name.as_str()),
            Ok(ServerName::DnsName(_))
        );
    usable.then_some(name)
}

/// The names among `names` that the certificate at `cert` is not valid for.
fn uncovered_names(cert: &Path, names: &[String]) -> Result<Vec<String>, String> {
    let pem = fs::read(cert).map_err(|e| format!("cannot read {}: {e}", cert.display()))?;
    let Some(Ok(der)) = rustls_pemfile::certs(&mut pem.as_slice()).next() else {
        return Err(format!("{}: no certificate found", cert.display()));
    };
    let end_entity =
        webpki::EndEntityCert::try_from(&der).map_err(|e| format!("{}: {e}", cert.display()))?;
    Ok(names
        .iter()
        .filter(|name| match ServerName::try_from(name.as_str()) {
            Ok(server_name) => end_entity
                .verify_is_valid_for_subject_name(&server_name)
                .is_err(),
            Err(_) => true,
        })
        .cloned()
        .collect())
}

fn generate_self_signed(
    dir: &Path,
    cert_path: &Path,
    key_path: &Path,
    names: &[String],
) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let generated = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| format!("certificate generation: {e}"))?;
    write_file(
        key_path,
        generated.key_pair.serialize_pem().as_bytes(),
        0o600,
    )?;
    write_file(cert_path, generated.cert.pem().as_bytes(), 0o644)?;
    tracing::info!(cert = %cert_path.display(), names = %names.join(","), "generated a self-signed certificate");
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The certificate presented to new connections, swappable at run time: SIGHUP reloads
/// the files without touching established connections.
#[derive(Debug)]
pub struct CertStore {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertStore {
    pub fn load(cert: &Path, key: &Path) -> Result<Arc<CertStore>, String> {
        let current = RwLock::new(certified_key(cert, key)?);
        Ok(Arc::new(CertStore {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            current,
        }))
    }

    /// Reads the files again; on any error the old certificate stays in use.
    pub fn reload(&self) -> Result<(), String> {
        let fresh = certified_key(&self.cert, &self.key)?;
        let mut current = self
            .current
            .write()
            .map_err(|_| "certificate lock poisoned".to_string())?;
        *current = fresh;
        Ok(())
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|c| c.clone())
    }
}

fn certified_key(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, String> {
    let cert_pem = fs::read(cert).map_err(|e| format!("cannot read {}: {e}", cert.display()))?;
    let key_pem = fs::read(key).map_err(|e| format!("cannot read {}: {e}", key.display()))?;
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate found", cert.display()));
    }
    let key_der: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| format!("{}: {e}", key.display()))?
        .ok_or_else(|| format!("{}: no private key found", key.display()))?;
    let signing_key = rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| format!("{}: {e}", key.display()))?;
    Ok(Arc::new(CertifiedKey::new(chain, signing_key)))
}

/// The rustls configuration presenting `certs`, offering HTTP/2 and HTTP/1.1.
pub fn server_config(certs: Arc<CertStore>) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
