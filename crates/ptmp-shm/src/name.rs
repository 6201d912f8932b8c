//! Channel names: the one rule for what a channel may be called.
//!
//! A name becomes part of a file name in the segment directory, so it may not
//! hold a path separator, be empty, or be longer than a file name allows;
//! keeping it to a small alphabet also keeps it safe in shells and URLs
//! (`shm://NAME`).

use crate::error::{Result, ShmError};
use std::fmt;
use std::str::FromStr;

/// Longest channel name, in bytes.
pub const MAX_NAME_LEN: usize = 200;

/// The channel-name rule in words, as error messages give it.
pub const NAME_RULE: &str = "1-200 letters, digits, '.', '_' or '-'";

/// A channel name that follows the rule: 1 to [`MAX_NAME_LEN`] ASCII
/// letters, digits, `.`, `_` or `-`. Build one with [`ChannelName::new`] or
/// `str::parse`; every function that takes a name checks it this way.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelName(String);

impl ChannelName {
    /// Check `name` against the rule; [`ShmError::BadName`] if it breaks it.
    pub fn new(name: &str) -> Result<ChannelName> {
        let ok = !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !ok {
            return Err(ShmError::BadName {
                name: name.into(),
                rule: NAME_RULE,
            });
        }
        Ok(ChannelName(name.into()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ChannelName {
    type Err = ShmError;
    fn from_str(s: &str) -> Result<Self> {
        ChannelName::new(s)
    }
}

impl fmt::Display for ChannelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ChannelName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        for good in ["a", "frames-1", "x.y_z", &"n".repeat(MAX_NAME_LEN)] {
            assert_eq!(ChannelName::new(good).unwrap().as_str(), good);
        }
        for bad in ["", "a/b", "a b", "é", "..\0", &"n".repeat(MAX_NAME_LEN + 1)] {
            assert!(matches!(
                ChannelName::new(bad),
                Err(ShmError::BadName { .. })
            ));
            assert!(bad.parse::<ChannelName>().is_err());
        }
    }
}
