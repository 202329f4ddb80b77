//! Identifiers: generated ones and the rule client-chosen ones must follow.
//!
//! Generated ids are a short type prefix and 20 random lowercase base-32 characters
//! (100 bits), readable in logs and safe in URLs. Client-chosen ids (lead, event, call)
//! are 1 to 128 characters of `[A-Za-z0-9._:-]` so that they need no escaping in paths.

use rand::Rng;

const ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";

pub fn generate(prefix: &str) -> String {
    // One draw of 128 random bits, five of them per character: every request takes an
    // id, so this stays a single call into the generator.
    let mut bits: u128 = rand::thread_rng().gen();
    let mut id = String::with_capacity(prefix.len() + 21);
    id.push_str(prefix);
    id.push('_');
    for _ in 0..20 {
        id.push(ALPHABET[(bits & 31) as usize] as char);
        bits >>= 5;
    }
    id
}

pub fn is_valid_client_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// Random bytes for secrets and keys.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    rand::thread_rng().fill(&mut out[..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let a = generate("lead");
        let b = generate("lead");
        assert!(a.starts_with("lead_") && a.len() == 25);
        assert_ne!(a, b);
        assert!(is_valid_client_id(&a));
    }

    #[test]
    fn client_ids_are_path_safe() {
        assert!(is_valid_client_id("crm-123:abc.def_9"));
        assert!(!is_valid_client_id(""));
        assert!(!is_valid_client_id("a/b"));
        assert!(!is_valid_client_id("a b"));
        assert!(!is_valid_client_id(&"x".repeat(129)));
    }
}
