//! Standard Webhooks signatures.
//!
//! `webhook-signature` is `v1,` + base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")),
//! where the key is the base64-decoded part of the `whsec_` secret.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};

pub const SECRET_PREFIX: &str = "whsec_";

/// A new endpoint secret: `whsec_` + base64 of 32 random bytes.
pub fn new_secret() -> String {
    format!(
        "{SECRET_PREFIX}{}",
        STANDARD.encode(crate::ids::random_bytes::<32>())
    )
}

pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    let key = STANDARD
        .decode(encoded)
        .map_err(|e| Error::Internal(format!("webhook secret is not base64: {e}")))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key)
        .map_err(|e| Error::Internal(format!("hmac key: {e}")))?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_webhooks_test_vector() {
        let signature = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        )
        .unwrap();
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_are_fresh_and_usable() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with(SECRET_PREFIX));
        assert!(sign(&a, "msg_1", 1, b"{}").is_ok());
    }
}
