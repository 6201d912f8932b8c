//! Presence on the network for C programs: once `ptmp_use_discovery` was
//! called, socket configs may name their peers, `"connect":
//! ["name://NODE/PORT"]`, and bind under a name, `"bind":
//! ["name://NODE/PORT"]`, as Python's `ptmp.use_discovery` allows.

use crate::{c_str, guard, Fail, PTMP_ERR_ARG, PTMP_ERR_CONFIG, PTMP_ERR_IO, PTMP_ERR_STATE};
use crate::{PTMP_ERR_TRANSPORT, PTMP_OK};
use ptmp_discovery::process::{self, PresenceError};
use ptmp_discovery::Config;
use std::ffi::{c_char, c_int};
use std::time::Duration;

/// The longest wait for a name: a day, as Python allows.
const MAX_TIMEOUT_MS: u32 = 86_400_000;

/// A configuration's `"discovery"` key refused ([`PTMP_ERR_CONFIG`]), or
/// presence that could not start ([`PTMP_ERR_TRANSPORT`]).
pub(crate) fn presence_fail(e: PresenceError) -> Fail {
    match e {
        PresenceError::Settings(m) => Fail(PTMP_ERR_CONFIG, m),
        PresenceError::Start(m) => Fail(PTMP_ERR_TRANSPORT, m),
    }
}

/// Presence asked for by a socket's `json_config` with a `"discovery"`
/// key beside its `"socket"` (as `ptmp_run_start`'s key, without
/// `announce`), turned on before the socket is made so that its names
/// are resolved and announced; nothing when the key is absent.
pub(crate) fn for_socket(json: &str) -> Result<(), Fail> {
    process::for_socket(json, "json_config")
        .map(|_| ())
        .map_err(presence_fail)
}

/// The secret in `path`, surrounding white space taken off; an empty one
/// is refused, since it would sign nothing, and so is a file others may
/// read or of another user's, a device, or one over 64 KiB.
fn read_secret(path: &str) -> Result<Vec<u8>, Fail> {
    if path.is_empty() {
        return Err(Fail(
            PTMP_ERR_ARG,
            "secret_file is empty: give a path, or NULL for no secret".into(),
        ));
    }
    // Bounded (`/dev/zero` is refused as a device, a huge file as too
    // large) and private to this user, as every secret file is read.
    let s = ptmp_core::files::read_secret(path.as_ref(), ptmp_core::files::SECRET_LIMIT)
        .map_err(|e| Fail(PTMP_ERR_IO, format!("secret_file {path}: {e}")))?;
    let s = s.trim_ascii().to_vec();
    if s.is_empty() {
        return Err(Fail(
            PTMP_ERR_ARG,
            format!("secret_file {path}: the file is empty"),
        ));
    }
    Ok(s)
}

/// Turns presence on for every socket this process makes from then on, so
/// that their configs may use names: a `"connect": ["name://NODE/PORT"]`
/// waits up to `timeout_ms` milliseconds for a peer announcing that port
/// and fails naming the name if none does; a `"bind":
/// ["name://NODE/PORT"]` binds a tcp port the system picks on every
/// interface and announces it. `group` keeps two experiments on one
/// network apart (`"default"` is the group of programs that set none);
/// with `secret_file` (NULL for none) our announcements are signed with
/// the file's contents and only peers signed with the same secret are
/// seen. Presence speaks multicast DNS on the local network.
///
/// Once per process: a second call fails with [`PTMP_ERR_STATE`] ("presence
/// for names is already on in this process").
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`] (`group`), [`PTMP_ERR_ARG`] (a
/// group that is empty, not UTF-8 or not a valid name; `timeout_ms` 0 or
/// above a day; an empty secret), [`PTMP_ERR_IO`] (the secret file cannot
/// be read: missing, not a regular file or pipe, over 64 KiB, or not
/// private to this user (it must be this user's own, mode 0600 or 0400;
/// the message names the file, its owner or mode, and the fix)),
/// [`PTMP_ERR_STATE`] or [`PTMP_ERR_TRANSPORT`] (multicast DNS
/// could not start).
///
/// Thread-safety: may be called from any thread, and from several at
/// once (one wins, the others fail with [`PTMP_ERR_STATE`]). Call it
/// before making the sockets that use names; sockets made on any thread
/// afterwards see it.
///
/// # Safety
/// `group` is NULL or a NUL-terminated string; `secret_file` is NULL or a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ptmp_use_discovery(
    group: *const c_char,
    secret_file: *const c_char,
    timeout_ms: u32,
) -> c_int {
    guard("ptmp_use_discovery", || {
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let group = unsafe { c_str(group, "group") }?;
        if group.is_empty() {
            return Err(Fail(
                PTMP_ERR_ARG,
                "group is empty: give a group name (\"default\" if in doubt)".into(),
            ));
        }
        if let Some(p) = ptmp_discovery::name_problem("group", group) {
            return Err(Fail(PTMP_ERR_ARG, p));
        }
        if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
            return Err(Fail(
                PTMP_ERR_ARG,
                format!("timeout_ms {timeout_ms}: give milliseconds above zero, at most a day"),
            ));
        }
        let secret = if secret_file.is_null() {
            None
        } else {
            // SAFETY: not NULL, and the caller promises a NUL-terminated
            // string.
            let path = unsafe { c_str(secret_file, "secret_file") }?;
            Some(read_secret(path)?)
        };
        if process::service().is_some() || ptmp_core::names::installed() {
            return Err(already_on());
        }
        let config = Config {
            group: group.to_string(),
            secret,
            ..Config::default()
        };
        match process::turn_on(config, Duration::from_millis(timeout_ms.into())) {
            Ok(_) => Ok(PTMP_OK),
            // Another thread turned it on in between.
            Err(PresenceError::Settings(_)) => Err(already_on()),
            Err(e) => Err(presence_fail(e)),
        }
    })
}

fn already_on() -> Fail {
    Fail(
        PTMP_ERR_STATE,
        "presence for names is already on in this process (call it once)".into(),
    )
}

/// Withdraws every name this process announced for its named binds
/// (goodbye packets), so that its peers see it leave at once rather than
/// at their next liveness check, a few seconds later. Call it before the
/// program exits; nothing calls it for you. The sockets keep working; a
/// named bind made afterwards is announced again. Does nothing when
/// presence is off.
///
/// Returns [`PTMP_OK`] (or [`PTMP_ERR_PANIC`] on a bug).
///
/// Thread-safety: may be called from any thread at any time. It waits up
/// to a second per name for the goodbye to go out.
#[no_mangle]
pub extern "C" fn ptmp_withdraw_names() -> c_int {
    guard("ptmp_withdraw_names", || {
        if let Some(s) = process::service() {
            s.withdraw_all();
        }
        Ok(PTMP_OK)
    })
}

/// How many names this process announces now for its named binds (0 when
/// presence is off, or after `ptmp_withdraw_names`).
///
/// Thread-safety: may be called from any thread at any time.
#[no_mangle]
pub extern "C" fn ptmp_announced_names() -> usize {
    // Nothing here can panic short of a poisoned lock, which the service
    // recovers from; a caught panic reads as none announced.
    std::panic::catch_unwind(|| process::announced_now().len()).unwrap_or(0)
}
