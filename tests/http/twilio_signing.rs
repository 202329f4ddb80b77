//! Signing as Twilio signs, written here from Twilio's documentation (independent of the
//! server's code), and spoiling a signature.

/// Twilio's signature of a request to `url` with POST parameters `params` (none for a
/// GET or a WebSocket handshake), computed as Twilio documents it: base64 HMAC-SHA1 with
/// the auth token of the URL followed by each parameter's name and value, sorted by name.
pub fn twilio_signature(token: &str, url: &str, params: &[(&str, &str)]) -> String {
    use base64::Engine as _;
    use hmac::Mac as _;
    let mut sorted = params.to_vec();
    sorted.sort();
    let mut data = url.to_string();
    for (k, v) in sorted {
        data.push_str(k);
        data.push_str(v);
    }
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(token.as_bytes()).expect("any key");
    mac.update(data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Changes one character in the middle of a token (base64 there is fully significant).
pub fn tamper(token: &str) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}
