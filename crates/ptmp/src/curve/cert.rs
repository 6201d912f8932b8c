//! Certificate files in the ZeroMQ format, as czmq's `zcert` and pyzmq's
//! `zmq.auth` write them: reading any of them, making new ones.

use super::{key_from_z85, Certificate, KeyPair, PublicKey};
use std::path::{Path, PathBuf};

/// Why a certificate file could not be read or made; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// The file could not be read (missing, unreadable, too large).
    #[error("cannot read {}: {err}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        err: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{} is not a text certificate file", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// A `public-key` or `secret-key` line does not hold 40 characters of
    /// Z85.
    #[error("{}: {line} is not a key in Z85 (40 characters)", path.display())]
    BadKey {
        /// The file.
        path: PathBuf,
        /// The line's name: `public-key` or `secret-key`.
        line: String,
    },
    /// The file holds a secret key but others may read it, or it belongs
    /// to another user: the error says which, and how to mend it.
    #[error("{} holds a secret key, but {err}", path.display())]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// The owner or mode found, and the fix.
        err: std::io::Error,
    },
    /// The file has no `public-key` line.
    #[error("{} has no public-key line: not a ZeroMQ certificate file", path.display())]
    NoPublicKey {
        /// The file.
        path: PathBuf,
    },
    /// A certificate name that is not a plain file name.
    #[error("{name:?} is not a certificate name: give a file name without '/' that does not start with '.'")]
    BadName {
        /// The name as given.
        name: String,
    },
    /// The directory for new certificates could not be made.
    #[error("cannot make the directory {}: {err}", dir.display())]
    MakeDir {
        /// The directory.
        dir: PathBuf,
        /// What the system said.
        err: std::io::Error,
    },
    /// A file of that name is there already; it is never replaced.
    #[error("{} exists; it is left as it is", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// A new certificate file could not be written.
    #[error("cannot write {}: {err}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the system said.
        err: std::io::Error,
    },
    /// No key pair could be made.
    #[error("{0}")]
    Keys(Box<crate::Error>),
}

/// The longest certificate file read: czmq's are a few hundred bytes.
const CERTIFICATE_LIMIT: u64 = 64 << 10;

/// Read a certificate file in the ZeroMQ format (czmq, pyzmq): a
/// `curve` section with `public-key = "Z85"` and, in a secret certificate,
/// `secret-key = "Z85"`. Comments (`#`) and other sections are skipped.
/// A secret certificate whose public key does not belong to its secret key
/// cannot be told apart here; libzmq refuses its handshakes.
///
/// A file holding a secret key is refused unless it is private to the
/// user reading it: owned by that user, with no access for its group or
/// others (mode 0600 or 0400; [`crate::files::check_private`]), as OpenSSH
/// asks of a private key. [`write_certificates`] writes it so.
pub fn read_certificate(path: &Path) -> Result<Certificate, CertificateError> {
    checked(path, crate::files::read_given_stat(path, CERTIFICATE_LIMIT))
}

/// A certificate found by listing a directory: read only if it is a
/// regular file, opened without waiting, so a FIFO there is refused
/// naming it rather than waited on. A secret one is checked as
/// [`read_certificate`] checks it.
pub(crate) fn read_listed_certificate(path: &Path) -> Result<Certificate, CertificateError> {
    checked(
        path,
        crate::files::read_regular_stat(path, CERTIFICATE_LIMIT),
    )
}

/// The certificate in the file `path` read as `read`, a secret one only
/// if the file is private to this process's user.
fn checked(
    path: &Path,
    read: std::io::Result<(Vec<u8>, std::fs::Metadata)>,
) -> Result<Certificate, CertificateError> {
    let (bytes, meta) = read.map_err(|e| CertificateError::Read {
        path: path.into(),
        err: e,
    })?;
    let c = parse(path, bytes)?;
    if let Certificate::Secret(_) = c {
        crate::files::check_private(path, &meta).map_err(|e| CertificateError::NotPrivate {
            path: path.into(),
            err: e,
        })?;
    }
    Ok(c)
}

/// The keys in a certificate file's text.
fn parse(path: &Path, bytes: Vec<u8>) -> Result<Certificate, CertificateError> {
    let text =
        String::from_utf8(bytes).map_err(|_| CertificateError::NotText { path: path.into() })?;
    let (mut public, mut secret) = (None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        let slot = match name.trim() {
            "public-key" => &mut public,
            "secret-key" => &mut secret,
            _ => continue,
        };
        let key = key_from_z85(value).ok_or_else(|| CertificateError::BadKey {
            path: path.into(),
            line: name.trim().into(),
        })?;
        *slot = Some(key);
    }
    match (public, secret) {
        (Some(p), None) => Ok(Certificate::Public(PublicKey(p))),
        (Some(p), Some(s)) => Ok(Certificate::Secret(KeyPair {
            public: PublicKey(p),
            secret: s,
        })),
        (None, _) => Err(CertificateError::NoPublicKey { path: path.into() }),
    }
}

/// Make a new key pair and write it as `DIR/NAME.key` (the public
/// certificate, mode 0644) and `DIR/NAME.key_secret` (mode 0600), never
/// replacing a file or following a link there; DIR is made (mode 0700)
/// if it is missing. Returns both paths.
pub fn write_certificates(dir: &Path, name: &str) -> Result<(PathBuf, PathBuf), CertificateError> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(CertificateError::BadName { name: name.into() });
    }
    // A directory made here is private; an existing one is used as it is.
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(dir)
        .map_err(|e| CertificateError::MakeDir {
            dir: dir.into(),
            err: e,
        })?;
    let pair = KeyPair::new().map_err(|e| CertificateError::Keys(Box::new(e)))?;
    let public = dir.join(format!("{name}.key"));
    let secret = dir.join(format!("{name}.key_secret"));
    for p in [&public, &secret] {
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(CertificateError::Exists { path: p.clone() });
        }
    }
    let s = zmq::z85_encode(pair.secret()).expect("32 bytes encode in Z85");
    let body = |kind: &str, keys: String| {
        format!(
            "#   ZeroMQ CURVE {kind} Certificate, made by ptmp keys\n\
             #   (the format of czmq's zcert and pyzmq's zmq.auth)\n\n\
             metadata\ncurve\n{keys}"
        )
    };
    let pub_line = format!("    public-key = \"{}\"\n", pair.public.z85());
    write_mode(
        &secret,
        0o600,
        &body(
            "**Secret**",
            format!("{pub_line}    secret-key = \"{s}\"\n"),
        ),
    )?;
    write_mode(&public, 0o644, &body("Public", pub_line))?;
    Ok((public, secret))
}

fn write_mode(path: &Path, mode: u32, text: &str) -> Result<(), CertificateError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CertificateError::Write {
            path: path.into(),
            err: e,
        })
}
