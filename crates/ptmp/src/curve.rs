//! CURVE: encrypted ZeroMQ connections whose servers admit only the
//! clients they know.
//!
//! ZeroMQ's CURVE mechanism (ZMTP 3, RFC 26) gives every connection
//! encryption and authenticates the server to its clients by the server's
//! public key; the server learns each client's public key in the handshake
//! and asks a ZAP handler (RFC 27) of its context whether to let it in.
//! This module holds the pieces:
//!
//! * [`KeyPair`] and [`PublicKey`]: Curve25519 keys, written in Z85 (40
//!   characters) as ZeroMQ does;
//! * certificate files in the format czmq's `zcert` and pyzmq's
//!   `zmq.auth.create_certificates` write (`NAME.key` with the public key,
//!   `NAME.key_secret` with both, mode 0600), read by [`read_certificate`]
//!   and made by [`write_certificates`]; a secret one is read only if it is
//!   private to the user reading it (mode 0600 or 0400, that user's own);
//! * [`Curve`]: a socket's part in it, the `curve` object of PTMP's JSON
//!   socket configuration;
//! * the ZAP handler (`zap`), one per ZeroMQ context, which admits or
//!   refuses each client by the allow-list of the server socket it
//!   connects to, and counts both;
//! * the refusal counter (`watch`), which counts the clients a server
//!   turns away before the handler hears of them: plaintext, wrong server
//!   key, bytes that are not ZeroMQ.
//!
//! libzmq is built here with libsodium (the workspace's `zmq-sys` patch);
//! [`available`] says whether this build has CURVE.

mod cert;
pub(crate) mod watch;
mod zap;

pub use cert::{read_certificate, write_certificates, CertificateError};

pub use zap::Admitted;
pub(crate) use zap::{admit, Admission};

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Whether the linked libzmq can do CURVE (it is built with libsodium).
pub fn available() -> bool {
    zmq::has("curve").unwrap_or(false)
}

/// A Curve25519 public key: 32 bytes, shown as 40 Z85 characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; 32]);

impl PublicKey {
    /// The key written as 40 Z85 characters, or `None` for anything else.
    pub fn from_z85(text: &str) -> Option<PublicKey> {
        key_from_z85(text).map(PublicKey)
    }

    /// The key in Z85 (40 characters).
    pub fn z85(&self) -> String {
        zmq::z85_encode(&self.0).expect("32 bytes encode in Z85")
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.z85())
    }
}

fn key_from_z85(text: &str) -> Option<[u8; 32]> {
    if text.len() != 40 {
        return None;
    }
    let raw = zmq::z85_decode(text).ok()?;
    raw.try_into().ok()
}

/// A Curve25519 key pair. Its `Debug` shows the public key only.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyPair {
    /// The key others use to reach or admit this one.
    pub public: PublicKey,
    secret: [u8; 32],
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyPair {{ public: {} }}", self.public.z85())
    }
}

impl KeyPair {
    /// A new random key pair (libsodium's generator, through libzmq).
    pub fn new() -> Result<KeyPair> {
        let p = zmq::CurveKeyPair::new().map_err(Error::zmq("curve keypair"))?;
        Ok(KeyPair {
            public: PublicKey(p.public_key),
            secret: p.secret_key,
        })
    }

    /// The secret half (for a socket option of a raw libzmq socket).
    pub fn secret(&self) -> &[u8; 32] {
        &self.secret
    }
}

/// What a certificate file holds: a public key, and the secret one when it
/// is a secret certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Certificate {
    /// A public certificate (`NAME.key`).
    Public(PublicKey),
    /// A secret certificate (`NAME.key_secret`): the whole pair.
    Secret(KeyPair),
}

impl Certificate {
    /// The public key either kind holds.
    pub fn public(&self) -> PublicKey {
        match self {
            Certificate::Public(p) => *p,
            Certificate::Secret(k) => k.public,
        }
    }
}

/// Whom a CURVE server admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Any client that completes the handshake: encryption without
    /// authentication (`"allow": "any"`).
    Any,
    /// Clients whose public key is given, as Z85 keys, certificate files
    /// or directories of public certificates (`*.key`), read when the
    /// socket is made.
    Listed(Vec<String>),
}

/// A socket's part in CURVE: the `curve` object of a socket configuration.
///
/// ```json
/// "curve": {"secret_key_file": "server.key_secret", "allow": ["client.key"]}
/// "curve": {"secret_key_file": "client.key_secret", "server_key": "server.key"}
/// ```
///
/// A server (`allow`) is usually the binding end, a client (`server_key`,
/// a certificate file or the Z85 key) the connecting one, but either end
/// may take either part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Curve {
    /// The server: its secret certificate and whom it admits.
    Server {
        /// Path of its secret certificate.
        secret_key_file: PathBuf,
        /// Whom it admits.
        allow: Allow,
    },
    /// A client: its secret certificate and the server's public key.
    Client {
        /// Path of its secret certificate.
        secret_key_file: PathBuf,
        /// The server's public key: Z85, a certificate file's path, or
        /// [`ANNOUNCED`].
        server_key: String,
    },
}

/// The `server_key` of a client that connects by name (`name://NODE/PORT`)
/// and takes each server's public key from its announcement, which the
/// group's secret must have signed (see [`crate::names`]).
pub const ANNOUNCED: &str = "announced";

impl Curve {
    /// The secret certificate's path.
    pub fn secret_key_file(&self) -> &Path {
        match self {
            Curve::Server {
                secret_key_file, ..
            }
            | Curve::Client {
                secret_key_file, ..
            } => secret_key_file,
        }
    }

    /// This socket's key pair, read from its secret certificate; errors
    /// are [`Error::Config`] naming `socket.curve.secret_key_file`.
    pub(crate) fn key_pair(&self) -> Result<KeyPair> {
        let path = self.secret_key_file();
        let bad = |why: String| {
            Error::config(
                "socket.curve.secret_key_file",
                format!("{:?}", path.display().to_string()),
                why,
            )
        };
        match read_certificate(path).map_err(|e| bad(e.to_string()))? {
            Certificate::Secret(k) => Ok(k),
            Certificate::Public(_) => Err(bad(format!(
                "{} is a public certificate (no secret-key line): give the NAME.key_secret file",
                path.display()
            ))),
        }
    }

    /// The server's public key of a client; errors name
    /// `socket.curve.server_key`.
    pub(crate) fn server_public(given: &str) -> Result<PublicKey> {
        resolve_key(given)
            .map_err(|why| Error::config("socket.curve.server_key", format!("{given:?}"), why))
    }
}

/// A key given as Z85 or as a certificate file's path.
fn resolve_key(given: &str) -> std::result::Result<PublicKey, String> {
    if let Some(k) = PublicKey::from_z85(given) {
        return Ok(k);
    }
    read_certificate(Path::new(given))
        .map(|c| c.public())
        .map_err(|e| format!("neither a key in Z85 (40 characters) nor a certificate file: {e}"))
}

/// The public keys an allow-list names: each entry a Z85 key, a
/// certificate file, or a directory whose `*.key` files are read (secret
/// certificates and other files there are skipped; a `*.key` that is not
/// a regular file, a FIFO say, is refused). Errors name
/// `socket.curve.allow[i]`.
pub(crate) fn allowed_keys(list: &[String]) -> Result<Vec<PublicKey>> {
    let mut keys = Vec::new();
    for (i, given) in list.iter().enumerate() {
        let bad = |why: String| {
            Error::config(
                format!("socket.curve.allow[{i}]"),
                format!("{given:?}"),
                why,
            )
        };
        let p = Path::new(given);
        if PublicKey::from_z85(given).is_none() && p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| bad(format!("cannot list the directory: {e}")))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "key"))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(bad(
                    "the directory holds no public certificate (NAME.key)".into()
                ));
            }
            // Each entry is opened without waiting and must be a regular
            // file: a FIFO named NAME.key is refused, naming it.
            for f in files {
                keys.push(
                    cert::read_listed_certificate(&f)
                        .map_err(|e| bad(e.to_string()))?
                        .public(),
                );
            }
        } else {
            keys.push(resolve_key(given).map_err(bad)?);
        }
    }
    Ok(keys)
}

/// Give `sock` (in context `ctx`, `private` to it or the shared one) its
/// CURVE part: a server's keys and its place with the context's ZAP
/// handler (returned: keep it until the socket is closed), or a client's
/// keys and the server's. Call before the socket binds or connects.
/// Sets `sock`'s CURVE options. Returns the server's admission (its ZAP
/// rules) and, for a server, its public key (announced with a name it
/// binds). A client whose server key is [`ANNOUNCED`] gets it per
/// connection, from [`server_key_for`].
pub(crate) fn secure(
    ctx: &zmq::Context,
    private: bool,
    sock: &zmq::Socket,
    curve: &Curve,
) -> Result<(Option<Admission>, Option<PublicKey>)> {
    let pair = curve.key_pair()?;
    let set = |r: zmq::Result<()>| r.map_err(Error::zmq("set curve option"));
    match curve {
        Curve::Server { allow, .. } => {
            let keys = match allow {
                Allow::Any => None,
                Allow::Listed(list) => Some(allowed_keys(list)?),
            };
            let admission = admit(ctx, private, keys)?;
            set(sock.set_zap_domain(admission.domain()))?;
            set(sock.set_curve_server(true))?;
            set(sock.set_curve_secretkey(pair.secret()))?;
            Ok((Some(admission), Some(pair.public)))
        }
        Curve::Client { server_key, .. } => {
            if server_key != ANNOUNCED {
                let server = Curve::server_public(server_key)?;
                set(sock.set_curve_serverkey(&server.0))?;
            }
            set(sock.set_curve_publickey(&pair.public.0))?;
            set(sock.set_curve_secretkey(pair.secret()))?;
            Ok((None, None))
        }
    }
}

/// For a client whose server key is [`ANNOUNCED`], the key to reach the
/// server at `at` (where `given`, a name, was found): the one its signed
/// announcement carries. `None` for every other socket.
pub(crate) fn server_key_for(
    curve: Option<&Curve>,
    given: &str,
    at: &crate::names::Located,
) -> Result<Option<PublicKey>> {
    match curve {
        Some(Curve::Client { server_key, .. }) if server_key == ANNOUNCED => {}
        _ => return Ok(None),
    }
    let refuse = |reason: String| Error::Connect {
        endpoint: crate::names::shown(given),
        reason,
    };
    let Some(key) = &at.curve_key else {
        return Err(refuse(
            "its announcement carries no CURVE key: the server there is not secured (or the address was not found by name)".to_string(),
        ));
    };
    if !at.signed {
        return Err(refuse(
            "its CURVE key is announced without a signature, and anyone could have announced it: give presence the group's secret (a discovery secret file) on both sides".to_string(),
        ));
    }
    PublicKey::from_z85(key).map(Some).ok_or_else(|| {
        refuse(format!(
            "its announced CURVE key {key:?} is not 40 Z85 characters"
        ))
    })
}
