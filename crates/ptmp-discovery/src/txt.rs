//! The TXT record of one announced port: what it holds, how it is checked,
//! and the optional signature made with a shared secret.

use hmac::{KeyInit, Mac};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

/// The version of the TXT layout below; an announcement with another
/// version is counted as malformed, so a future layout is never misread.
pub const TXT_VERSION: &str = "1";

/// The version of what a signature covers, the TXT key `sv` of every
/// signed announcement. Version 2 adds to the fields of the layout the
/// instance name (`inst`), the host's addresses (`ips`) and the signing
/// time (`t`), so that a signed announcement cannot be replayed under
/// another name, from another address, or long after it was made. An
/// announcement signed without `sv` (ptmp before version 2 signatures) or
/// with another version is counted as forged: it is never misread as one
/// that covers more than it does.
pub const SIGNATURE_VERSION: &str = "2";

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

/// Adds what a version 2 signature covers beyond the layout's fields:
/// `sv`, the instance name `inst` (`NODE/PORT#TAG`, without the service
/// type), the host's addresses `ips` (comma separated, as announced in its
/// address records) and the signing time `t` (seconds since 1970), then
/// the signature `sig` over all of them.
pub fn seal(
    secret: &[u8],
    fields: &mut BTreeMap<String, String>,
    instance: &str,
    ips: &[IpAddr],
    time: u64,
) {
    let ips: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
    fields.insert("sv".into(), SIGNATURE_VERSION.into());
    fields.insert("inst".into(), instance.into());
    fields.insert("ips".into(), ips.join(","));
    fields.insert("t".into(), time.to_string());
    fields.remove("sig");
    let sig = sign(secret, fields);
    fields.insert("sig".into(), sig);
}

/// Why a signed announcement is not trusted (all counted as forged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Untrusted {
    /// No `sig`, or one that does not match under the secret.
    Signature,
    /// Signed, but not with version [`SIGNATURE_VERSION`].
    OldSignature,
    /// Signed for another instance name: a replay under a new name.
    OtherInstance,
    /// Signed longer ago (or further ahead) than the freshness window.
    Stale,
    /// Its `ips` or `t` field is unreadable (made by a secret holder, but
    /// not usable).
    Unreadable,
}

/// Checks a signed announcement: its signature, version, instance name and
/// signing time within `max_age` of `now` (either way). Returns the
/// signing time and the addresses it vouches for.
pub(crate) fn check_sealed(
    secret: &[u8],
    fields: &BTreeMap<String, String>,
    instance: &str,
    now: u64,
    max_age: Duration,
) -> Result<(u64, Vec<IpAddr>), Untrusted> {
    if !signature_ok(secret, fields) {
        return Err(Untrusted::Signature);
    }
    if fields.get("sv").map(String::as_str) != Some(SIGNATURE_VERSION) {
        return Err(Untrusted::OldSignature);
    }
    if fields.get("inst").map(String::as_str) != Some(instance) {
        return Err(Untrusted::OtherInstance);
    }
    let time: u64 = fields
        .get("t")
        .and_then(|t| t.parse().ok())
        .ok_or(Untrusted::Unreadable)?;
    if time.abs_diff(now) > max_age.as_secs() {
        return Err(Untrusted::Stale);
    }
    let ips = fields
        .get("ips")
        .ok_or(Untrusted::Unreadable)?
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<IpAddr>().map_err(|_| Untrusted::Unreadable))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((time, ips))
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

    fn sealed(time: u64) -> BTreeMap<String, String> {
        let mut f = fields();
        let ips = ["127.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap()];
        seal(b"k", &mut f, "apa1/out#0a0b0c0d", &ips, time);
        f
    }

    #[test]
    fn a_seal_covers_instance_addresses_and_time() {
        let day = Duration::from_secs(60);
        let f = sealed(1000);
        let (t, ips) = check_sealed(b"k", &f, "apa1/out#0a0b0c0d", 1010, day).unwrap();
        assert_eq!(t, 1000);
        assert_eq!(ips.len(), 2);
        let other = check_sealed(b"k", &f, "apa1/out#00000000", 1010, day);
        assert_eq!(other, Err(Untrusted::OtherInstance));
        assert_eq!(
            check_sealed(b"k", &f, "apa1/out#0a0b0c0d", 1061, day),
            Err(Untrusted::Stale)
        );
        assert_eq!(
            check_sealed(b"k", &f, "apa1/out#0a0b0c0d", 939, day),
            Err(Untrusted::Stale)
        );
        for (k, v) in [("ips", "10.6.6.6"), ("t", "1009"), ("inst", "x")] {
            let mut g = f.clone();
            g.insert(k.into(), v.into());
            let r = check_sealed(b"k", &g, "apa1/out#0a0b0c0d", 1010, day);
            assert_eq!(r, Err(Untrusted::Signature), "{k} altered");
        }
    }

    #[test]
    fn a_signature_of_the_first_version_is_not_taken_for_a_seal() {
        let mut f = fields();
        let sig = sign(b"k", &f);
        f.insert("sig".into(), sig);
        let r = check_sealed(b"k", &f, "apa1/out#0a0b0c0d", 0, Duration::from_secs(60));
        assert_eq!(r, Err(Untrusted::OldSignature));
    }

    #[test]
    fn names_are_checked() {
        assert!(name_problem("node", "apa1-tcs").is_none());
        assert!(name_problem("node", "").is_some());
        assert!(name_problem("node", "a/b").is_some());
        assert!(name_problem("port", &"x".repeat(MAX_NAME_BYTES + 1)).is_some());
    }
}
