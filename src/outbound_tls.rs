//! What every outbound TLS client trusts, and how a certificate failure is recognised.
//!
//! Every client that leaves the server (SMTP, webhooks, the model, the compliance
//! service, Twilio) trusts the built-in webpki roots plus the server-wide
//! `outbound_ca_file` (PEM; `webhook_ca_file` is its old name), so that a receiver or a
//! mail server with a private CA can be reached. The file is read once, when the server
//! starts; an unreadable file, or one without a certificate, stops the start.
//!
//! A failed certificate check (an unknown issuer, an expired certificate, a name that
//! does not match) cannot succeed when repeated: senders record it as
//! [`TLS_CERTIFICATE`] and do not try again; logs and `lastError` call it `tls`.

use std::error::Error as StdError;
use std::path::Path;
use std::sync::Arc;

use lettre::transport::smtp::client::{Certificate, TlsParameters};
use rustls::pki_types::CertificateDer;

use crate::outbound_address::OutboundPolicy;

/// The error code of a send whose receiver's certificate was not trusted.
pub const TLS_CERTIFICATE: &str = "tls-certificate";

/// The short class of a TLS failure in `lastError` and logs.
pub const TLS_CLASS: &str = "tls";

/// The extra CA certificates trusted beside the webpki roots (none by default), and the
/// addresses a client may reach (`outbound_allow_private`; SMTP resolves through it).
#[derive(Clone, Default)]
pub struct OutboundTrust {
    extra: Arc<Vec<CertificateDer<'static>>>,
    policy: OutboundPolicy,
}

impl std::fmt::Debug for OutboundTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OutboundTrust({} extra CA)", self.extra.len())
    }
}

impl OutboundTrust {
    /// Reads `ca_file` (PEM); `None` trusts the webpki roots alone.
    pub fn load(ca_file: Option<&Path>) -> Result<OutboundTrust, String> {
        let Some(path) = ca_file else {
            return Ok(OutboundTrust::default());
        };
        let bad = |e: &dyn std::fmt::Display| format!("outbound_ca_file {}: {e}", path.display());
        let pem = std::fs::read(path).map_err(|e| bad(&e))?;
        let certs = rustls_pemfile::certs(&mut pem.as_slice())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        if certs.is_empty() {
            return Err(bad(&"no PEM certificate in the file"));
        }
        // Each must be usable as a root, or the file is wrong.
        let mut check = rustls::RootCertStore::empty();
        for cert in &certs {
            check.add(cert.clone()).map_err(|e| bad(&e))?;
        }
        Ok(OutboundTrust {
            extra: Arc::new(certs),
            policy: OutboundPolicy::default(),
        })
    }

    /// The same trust, reaching only the addresses `policy` allows.
    pub fn with_policy(mut self, policy: OutboundPolicy) -> OutboundTrust {
        self.policy = policy;
        self
    }

    /// Which addresses a client may reach.
    pub fn policy(&self) -> OutboundPolicy {
        self.policy
    }

    /// The webpki roots and the extra certificates.
    pub fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for cert in self.extra.iter() {
            // Checked when loaded.
            let _ = roots.add(cert.clone());
        }
        roots
    }

    /// lettre's TLS parameters for an SMTP server named `domain`: its default store (the
    /// webpki roots) and the extra certificates.
    pub fn smtp(&self, domain: &str) -> Result<TlsParameters, lettre::transport::smtp::Error> {
        let mut builder = TlsParameters::builder(domain.to_string());
        for cert in self.extra.iter() {
            builder = builder.add_root_certificate(Certificate::from_der(cert.to_vec())?);
        }
        builder.build_rustls()
    }
}

/// Whether `e`, or an error it wraps, is a failed check of the peer's certificate.
/// rustls's error travels inside an `io::Error`, whose `source` skips it, so each
/// `io::Error` on the way is opened too.
pub fn is_certificate_error(e: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            if matches!(
                tls,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            ) {
                return true;
            }
        }
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            if is_certificate_error(inner) {
                return true;
            }
        }
        next = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_errors_are_found_inside_io_errors() {
        let cert = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, cert);
        assert!(is_certificate_error(&io));
        let other =
            std::io::Error::new(std::io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert!(!is_certificate_error(&other));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(!is_certificate_error(&refused));
    }

    #[test]
    fn a_ca_file_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let e = OutboundTrust::load(Some(&empty)).unwrap_err();
        assert!(e.starts_with("outbound_ca_file "), "{e}");
        assert!(OutboundTrust::load(Some(&dir.path().join("missing.pem"))).is_err());
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".into()]).unwrap();
        let good = dir.path().join("ca.pem");
        std::fs::write(&good, ca.cert.pem()).unwrap();
        let trust = OutboundTrust::load(Some(&good)).unwrap();
        assert_eq!(
            trust.roots().len(),
            webpki_roots::TLS_SERVER_ROOTS.len() + 1
        );
        assert!(trust.smtp("mail.test").is_ok());
    }
}
