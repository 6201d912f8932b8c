//! The `curve` object of a socket configuration (see [`crate::curve`]).

use super::*;
use crate::curve::{Allow, Curve};

const CURVE_KEYS: &[&str] = &["secret_key_file", "allow", "server_key"];

/// Read `socket.curve`, if given.
pub(super) fn parse(s: &Object<'_>) -> Result<Option<Curve>> {
    let Some(c) = s.object("curve").map_err(field_error)? else {
        return Ok(None);
    };
    c.only(CURVE_KEYS).map_err(field_error)?;
    let secret = c.str("secret_key_file").map_err(field_error)?;
    let secret_key_file = c
        .required("secret_key_file", secret)
        .map_err(field_error)?
        .into();
    let server_key = c.str("server_key").map_err(field_error)?;
    let allow = match c.get("allow") {
        None => None,
        Some(Value::String(a)) if a == "any" => Some(Allow::Any),
        Some(Value::String(a)) => Some(Allow::Listed(vec![a.clone()])),
        Some(v) => {
            let list = c.strings_of("allow", v, Empty::Refused).map_err(|e| {
                Error::config(
                    e.location(),
                    e.value,
                    "must be \"any\", a key, a certificate file or directory, or a list of those",
                )
            })?;
            Some(Allow::Listed(list.iter().map(|k| k.to_string()).collect()))
        }
    };
    match (allow, server_key) {
        (Some(allow), None) => Ok(Some(Curve::Server {
            secret_key_file,
            allow,
        })),
        (None, Some(k)) => Ok(Some(Curve::Client {
            secret_key_file,
            server_key: k.to_string(),
        })),
        (Some(_), Some(_)) => Err(Error::config(
            "socket.curve",
            c.show(s.map().get("curve").unwrap_or(&Value::Null)),
            "give \"allow\" (this socket is the CURVE server) or \"server_key\" (it is a client), not both",
        )),
        (None, None) => Err(Error::config(
            "socket.curve",
            c.show(s.map().get("curve").unwrap_or(&Value::Null)),
            "give \"allow\" (the client keys this CURVE server admits, or \"any\") or \"server_key\" (the public key of the server this client reaches)",
        )),
    }
}

/// The checks of `curve` against the rest of the configuration.
pub(super) fn check(c: &SocketConfig) -> Result<()> {
    let Some(curve) = &c.curve else {
        return Ok(());
    };
    let shown = || {
        format!(
            "{{\"secret_key_file\": {:?}, ...}}",
            curve.secret_key_file().display().to_string()
        )
    };
    if curve.secret_key_file().as_os_str().is_empty() {
        return Err(Error::config(
            "socket.curve.secret_key_file",
            "\"\"",
            "must name this socket's secret certificate (NAME.key_secret)",
        ));
    }
    if !crate::curve::available() {
        return Err(Error::config(
            "socket.curve",
            shown(),
            "this build of ptmp has no CURVE (its libzmq was built without libsodium)",
        ));
    }
    if matches!(curve, Curve::Client { server_key, .. } if server_key == crate::curve::ANNOUNCED) {
        if let Some((_, e)) = c
            .endpoints()
            .find(|(a, e)| *a != Attach::Connect || crate::names::parse(&e.address).is_none())
        {
            return Err(Error::config(
                "socket.curve.server_key",
                "\"announced\"",
                format!(
                    "takes each server's key from where its name is announced: connect by name (name://NODE/PORT) only; {} is not",
                    e.address
                ),
            ));
        }
    }
    if let Some((_, e)) = c
        .endpoints()
        .find(|(_, e)| matches!(e.transport, Transport::Inproc | Transport::Shm))
    {
        return Err(Error::config(
            "socket.curve",
            shown(),
            format!(
                "CURVE secures tcp and ipc connections; {} is {} (guarded by process and file permissions): give that endpoint its own socket without curve",
                e.address,
                e.transport.scheme()
            ),
        ));
    }
    Ok(())
}

/// `curve` as JSON, as [`parse`] reads it.
pub(super) fn to_json(curve: &Curve) -> Value {
    match curve {
        Curve::Server {
            secret_key_file,
            allow,
        } => serde_json::json!({
            "secret_key_file": secret_key_file.display().to_string(),
            "allow": match allow {
                Allow::Any => Value::from("any"),
                Allow::Listed(l) => Value::from(l.clone()),
            },
        }),
        Curve::Client {
            secret_key_file,
            server_key,
        } => serde_json::json!({
            "secret_key_file": secret_key_file.display().to_string(),
            "server_key": server_key,
        }),
    }
}
