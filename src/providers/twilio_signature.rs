//! Twilio's request signature (`X-Twilio-Signature`): base64 of HMAC-SHA1, keyed with
//! the account's auth token, over the full URL Twilio called followed by every POST
//! parameter's name and value, sorted by name. Compared in constant time.
//!
//! Twilio does not sign consistently with or without the port: its own validators
//! (twilio-python's `RequestValidator.validate`) accept a signature over the URL without
//! its port, or over the URL with the port (the scheme's default, 443 or 80, added when
//! it has none). [`verify_url`] accepts exactly those two forms of a URL.

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

/// Whether `signature` is Twilio's for this request; never without an auth token (a
/// cleared one signs nothing: an empty key is no secret).
pub fn verify(auth_token: &str, url: &str, params: &[(String, String)], signature: &str) -> bool {
    if auth_token.is_empty() {
        return false;
    }
    let expected = sign(auth_token, url, params);
    let (a, b) = (expected.as_bytes(), signature.as_bytes());
    // Constant time for equal lengths; the length itself is no secret.
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `signature` is Twilio's for a POST of `params` to `url`, signed over `url`
/// without its port or with it (the scheme's default port when it has none), as
/// Twilio's own validators accept.
pub fn verify_url(
    auth_token: &str,
    url: &str,
    params: &[(String, String)],
    signature: &str,
) -> bool {
    url_forms(url)
        .iter()
        .any(|form| verify(auth_token, form, params, signature))
}

/// `url` without its port and with it (the scheme's default added when it has none:
/// 443 for `https` and `wss`, 80 otherwise). A URL that is not `scheme://...` is its
/// only form.
pub fn url_forms(url: &str) -> Vec<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return vec![url.to_string()];
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    // The host and port come after any user information.
    let (userinfo, host_port) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    // A port is the digits after the last `:` that is not inside an IPv6 literal.
    let (host, port) = match host_port.rfind(':') {
        Some(colon) if !host_port[colon..].contains(']') => {
            let port = &host_port[colon + 1..];
            if port.bytes().all(|b| b.is_ascii_digit()) {
                (&host_port[..colon], Some(port))
            } else {
                (host_port, None)
            }
        }
        _ => (host_port, None),
    };
    let default_port = if scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("wss")
    {
        "443"
    } else {
        "80"
    };
    // An empty port (`host:`) counts as none, as a URL parser reads it.
    let port = port.filter(|p| !p.is_empty()).unwrap_or(default_port);
    vec![
        format!("{scheme}://{userinfo}{host}{tail}"),
        format!("{scheme}://{userinfo}{host}:{port}{tail}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Vec<(String, String)> {
        [("CallSid", "CA1234567890ABCDE"), ("Digits", "1234")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn a_url_is_checked_without_its_port_and_with_the_default_one() {
        assert_eq!(
            url_forms("https://e.example/v1/x?a=1"),
            [
                "https://e.example/v1/x?a=1",
                "https://e.example:443/v1/x?a=1"
            ]
        );
        assert_eq!(
            url_forms("https://e.example:8443/v1/x"),
            ["https://e.example/v1/x", "https://e.example:8443/v1/x"]
        );
        assert_eq!(
            url_forms("http://e.example"),
            ["http://e.example", "http://e.example:80"]
        );
        assert_eq!(
            url_forms("wss://e.example/relay"),
            ["wss://e.example/relay", "wss://e.example:443/relay"]
        );
        assert_eq!(
            url_forms("https://[::1]:8443/x"),
            ["https://[::1]/x", "https://[::1]:8443/x"]
        );
        assert_eq!(
            url_forms("https://[::1]/x"),
            ["https://[::1]/x", "https://[::1]:443/x"]
        );
        assert_eq!(url_forms("not a url"), ["not a url"]);
    }

    #[test]
    fn each_form_of_the_url_verifies_and_a_wrong_signature_does_not() {
        let params = example();
        for (configured, signed) in [
            ("https://e.example/hook", "https://e.example/hook"),
            ("https://e.example/hook", "https://e.example:443/hook"),
            ("https://e.example:443/hook", "https://e.example/hook"),
            ("https://e.example:8443/hook", "https://e.example/hook"),
            ("https://e.example:8443/hook", "https://e.example:8443/hook"),
        ] {
            let signature = sign("12345", signed, &params);
            assert!(
                verify_url("12345", configured, &params, &signature),
                "{configured} signed as {signed}"
            );
            assert!(!verify_url("54321", configured, &params, &signature));
        }
        // Another port, another path or another host is another URL.
        let signature = sign("12345", "https://e.example:444/hook", &params);
        assert!(!verify_url(
            "12345",
            "https://e.example/hook",
            &params,
            &signature
        ));
        let signature = sign("12345", "https://e.example/other", &params);
        assert!(!verify_url(
            "12345",
            "https://e.example/hook",
            &params,
            &signature
        ));
        // A cleared token verifies nothing, not even a signature made with no key.
        let signature = sign("", "https://e.example/hook", &params);
        assert!(!verify_url(
            "",
            "https://e.example/hook",
            &params,
            &signature
        ));
    }

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
