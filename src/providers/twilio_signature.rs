//! Twilio's request signature (`X-Twilio-Signature`): base64 of HMAC-SHA1, keyed with
//! the account's auth token, over the full URL Twilio called followed by every POST
//! parameter's name and value, sorted by name. Compared in constant time.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

/// The signature Twilio sends for a POST of `params` to `url`.
pub fn sign(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut data = String::from(url);
    for (name, value) in sorted {
        data.push_str(name);
        data.push_str(value);
    }
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(auth_token.as_bytes()) else {
        return String::new();
    };
    mac.update(data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `signature` is Twilio's for this request.
pub fn verify(auth_token: &str, url: &str, params: &[(String, String)], signature: &str) -> bool {
    let expected = sign(auth_token, url, params);
    let (a, b) = (expected.as_bytes(), signature.as_bytes());
    // Constant time for equal lengths; the length itself is no secret.
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilios_published_example_verifies() {
        let params: Vec<(String, String)> = [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+14158675310"),
            ("Digits", "1234"),
            ("From", "+14158675310"),
            ("To", "+18005551212"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        assert_eq!(sign("12345", url, &params), "GvWf1cFY/Q7PnoempGyD5oXAezc=");
        assert!(verify(
            "12345",
            url,
            &params,
            "GvWf1cFY/Q7PnoempGyD5oXAezc="
        ));
        assert!(!verify(
            "12345",
            url,
            &params,
            "GvWf1cFY/Q7PnoempGyD5oXAezd="
        ));
        assert!(!verify(
            "54321",
            url,
            &params,
            "GvWf1cFY/Q7PnoempGyD5oXAezc="
        ));
    }
}
