//! The TXT record of one announced port: what it holds, how it is checked,
//! and the optional signature made with a shared secret.

use hmac::{KeyInit, Mac};
use std::collections::BTreeMap;

/// The version of the TXT layout below; an announcement with another
/// version is counted as malformed, so a future layout is never misread.
pub const TXT_VERSION: &str = "1";

/// The largest TXT record accepted, in bytes as sent on the wire (each
/// entry is a length byte, the key, `=` and the value). An honest record is
/// around 200 bytes; anything over this is counted as oversized and ignored.
pub const MAX_TXT_BYTES: usize = 1024;

/// The largest value of one field: an address or host name longer than
/// this is not one ptmp wrote.
pub const MAX_FIELD_BYTES: usize = 200;

/// The longest node or port name, and the characters allowed in them
/// (letters, digits, `_`, `-`, `.`). Names go into the DNS-SD instance name,
/// a DNS label of at most 63 bytes, with a separator and a short tag.
pub const MAX_NAME_BYTES: usize = 24;

/// Why a name is not usable, or `None` when it is.
pub fn name_problem(what: &str, name: &str) -> Option<String> {
    if name.is_empty() {
        return Some(format!("{what} name is empty"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Some(format!(
            "{what} name {name:?} is {} bytes, more than {MAX_NAME_BYTES}",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Some(format!(
            "{what} name {name:?} has {c:?}; use letters, digits, '_', '-' or '.'"
        ));
    }
    None
}

/// The bytes a signature covers: every entry but `sig`, sorted by key, as
/// `key=value\n`. Anyone holding the secret can compute it (the Python test
/// peer does, with the standard `hmac` module).
pub fn signed_text(fields: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    for (k, v) in fields {
        if k != "sig" {
            s.push_str(k);
            s.push('=');
            s.push_str(v);
            s.push('\n');
        }
    }
    s
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn mac(secret: &[u8], fields: &BTreeMap<String, String>) -> HmacSha256 {
    // HMAC takes a key of any length; this cannot fail.
    let mut m = match HmacSha256::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    };
    m.update(signed_text(fields).as_bytes());
    m
}

/// The `sig` value for these fields: HMAC-SHA256 in lowercase hex.
pub fn sign(secret: &[u8], fields: &BTreeMap<String, String>) -> String {
    let tag = mac(secret, fields).finalize().into_bytes();
    tag.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the `sig` field matches the others under this secret (compared
/// in constant time).
pub fn signature_ok(secret: &[u8], fields: &BTreeMap<String, String>) -> bool {
    let Some(sig) = fields.get("sig") else {
        return false;
    };
    let Some(tag) = unhex(sig) else {
        return false;
    };
    mac(secret, fields).verify_slice(&tag).is_ok()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> BTreeMap<String, String> {
        [("node", "apa1"), ("port", "out"), ("group", "g")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_signature_checks_with_its_secret_only() {
        let mut f = fields();
        let sig = sign(b"secret", &f);
        f.insert("sig".into(), sig);
        assert!(signature_ok(b"secret", &f));
        assert!(!signature_ok(b"other", &f));
        f.insert("group".into(), "h".into());
        assert!(!signature_ok(b"secret", &f), "a changed field breaks it");
    }

    #[test]
    fn a_missing_or_garbled_signature_fails() {
        let mut f = fields();
        assert!(!signature_ok(b"s", &f));
        f.insert("sig".into(), "zz".into());
        assert!(!signature_ok(b"s", &f));
        f.insert("sig".into(), "abc".into());
        assert!(!signature_ok(b"s", &f));
    }

    #[test]
    fn names_are_checked() {
        assert!(name_problem("node", "apa1-tcs").is_none());
        assert!(name_problem("node", "").is_some());
        assert!(name_problem("node", "a/b").is_some());
        assert!(name_problem("port", &"x".repeat(MAX_NAME_BYTES + 1)).is_some());
    }
}
