//! The presence of this process, turned on once, by whichever front end
//! asks first: a configuration's top-level `"discovery"` key (`ptmp run`,
//! a graph's part, Python's `ptmp.run`, C's `ptmp_run_start`; beside one
//! socket's `"socket"`, Python's `Sender` and `Receiver`, C's
//! `ptmp_sender_new` and `ptmp_receiver_new`, `ptmp send` and `recv`
//! `--config`: [`for_socket`]), or the explicit calls
//! (`ptmp.use_discovery`, `ptmp_use_discovery`). One
//! definition of what the key means, so that every front end reads it the
//! same way and none ignores it.
//!
//! The key is `true`, or an object with any of `group` (default
//! `default`), `secret_file`, `timeout` (seconds a `name://` connect waits
//! for its peer, default 30), `liveness_timeout` (seconds, default 2) and
//! `announce` (true: announce every fixed tcp or ipc address an agent
//! binds). Absent, `false` or `null`: no presence is asked for.

use crate::{name_problem, Config, Discovery, NameService, DEFAULT_RESOLVE_TIMEOUT};
use serde_json::Value;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What went wrong turning presence on for a configuration.
#[derive(Debug, thiserror::Error)]
pub enum PresenceError {
    /// The configuration's `"discovery"` key is wrong, or asks for a
    /// presence other than the one this process has on.
    #[error("{0}")]
    Settings(String),
    /// Presence could not start (multicast DNS, a name held elsewhere).
    #[error("{0}")]
    Start(String),
}

/// What a configuration's `"discovery"` key asks for, checked without
/// starting anything.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Presence's own settings.
    pub config: Config,
    /// How long a `name://` connect waits for its peer.
    pub timeout: Duration,
    /// The fixed binds to announce, `(agent, port, address)`.
    pub binds: Vec<(String, String, String)>,
}

/// The process's presence and the group and secret it was turned on with.
struct On {
    service: NameService,
    group: String,
    secret: Option<Vec<u8>>,
}

static ON: OnceLock<On> = OnceLock::new();
/// Held while presence is being turned on, so two callers at once do not
/// both start one.
static TURNING: Mutex<()> = Mutex::new(());

/// The process's presence, when it is on.
pub fn service() -> Option<&'static NameService> {
    ON.get().map(|o| &o.service)
}

/// Turns presence on for this process with `config`, `name://` connects
/// waiting up to `timeout`. Once per process: a second call is refused
/// (`Settings`, "already on").
pub fn turn_on(config: Config, timeout: Duration) -> Result<&'static NameService, PresenceError> {
    let _turning = TURNING.lock().unwrap_or_else(|p| p.into_inner());
    if ON.get().is_some() || ptmp::names::installed() {
        return Err(PresenceError::Settings(
            "presence for names is already on in this process".into(),
        ));
    }
    let (group, secret) = (config.group.clone(), config.secret.clone());
    let d = Discovery::start(config).map_err(|e| PresenceError::Start(e.to_string()))?;
    let installed = crate::install(d, timeout).map_err(|e| PresenceError::Start(e.to_string()))?;
    let _ = ON.set(On {
        service: installed,
        group,
        secret,
    });
    service().ok_or_else(|| PresenceError::Start("presence did not stay on".into()))
}

/// The names this process announces now, `node/port` (none while
/// presence is off): taken before a run, given to [`withdraw_since`] after.
pub fn announced_now() -> Vec<String> {
    service().map(|s| s.announced()).unwrap_or_default()
}

/// Withdraws the names announced since `before` ([`announced_now`]) was
/// taken: a run's agents have ended, their names go now rather than at
/// their peers' next liveness check; names announced before stay.
pub fn withdraw_since(before: &[String]) {
    if let Some(s) = service() {
        let new: Vec<String> = s
            .announced()
            .into_iter()
            .filter(|n| !before.contains(n))
            .collect();
        s.withdraw(&new);
    }
}

/// Presence for the sockets of a configuration that asks for it with its
/// `"discovery"` key: the process's presence, turned on with the key's
/// settings when it is not on yet (when it is, the key must ask for the
/// same group and secret), and the agents' fixed binds announced when the
/// key says `announce`. `None` when the key does not ask for presence.
/// `origin` names the configuration in errors. The names the agents
/// announce stay until [`NameService::withdraw`] or the process ends.
pub fn for_config(
    config: &Value,
    origin: &str,
) -> Result<Option<&'static NameService>, PresenceError> {
    let Some(s) = settings(config, origin)? else {
        return Ok(None);
    };
    let service = match ON.get() {
        Some(on) => {
            if on.group != s.config.group || on.secret != s.config.secret {
                return Err(PresenceError::Settings(format!(
                    "{origin}: discovery: presence is already on in this process with group {:?}{}; this configuration asks for group {:?}{}",
                    on.group,
                    if on.secret.is_some() { " and a secret" } else { "" },
                    s.config.group,
                    if s.config.secret.is_some() { " and a secret" } else { "" },
                )));
            }
            &on.service
        }
        None => turn_on(s.config, s.timeout)
            .map_err(|e| PresenceError::Start(format!("{origin}: {e}")))?,
    };
    for (node, port, address) in s.binds {
        service
            .announce(&node, &port, &address)
            .map_err(|e| PresenceError::Start(format!("{origin}: agent {node}: {e}")))?;
    }
    Ok(Some(service))
}

/// Presence for one socket made from a configuration (`config_text`,
/// `{"socket": {...}}`) with a `"discovery"` key beside its `"socket"`, as
/// every front end's socket constructor reads it (Python's `Sender` and
/// `Receiver`, C's `ptmp_sender_new` and `ptmp_receiver_new`, `ptmp send`
/// and `ptmp recv --config`): the key and its rules are a run's
/// ([`for_config`]: presence turned on with its settings, or the same
/// group and secret as the presence already on), except `announce`, which
/// names agents' binds and is refused here (a socket binds under a name
/// with `"bind": ["name://NODE/PORT"]`). Call it before the socket is
/// made, so that its names are resolved and announced. `None` when the key
/// does not ask for presence; text that is not a JSON object is left to
/// the socket configuration's own parsing, which says what is wrong.
pub fn for_socket(
    config_text: &str,
    origin: &str,
) -> Result<Option<&'static NameService>, PresenceError> {
    let Ok(config) = serde_json::from_str::<Value>(config_text) else {
        return Ok(None);
    };
    let announce = config.get("discovery").and_then(|d| d.get("announce"));
    if let Some(v) = announce.filter(|v| **v != Value::Bool(false)) {
        return Err(PresenceError::Settings(format!(
            "{origin}: discovery.announce = {v}: announces the fixed binds of a run's agents, \
             not of one socket; bind a socket under a name with \"bind\": [\"name://NODE/PORT\"]"
        )));
    }
    for_config(&config, origin)
}

/// Reads and checks a configuration's `"discovery"` key (`None` when
/// presence is not asked for); errors name `origin` and the key.
pub fn settings(config: &Value, origin: &str) -> Result<Option<Settings>, PresenceError> {
    let bad = |key: &str, v: &Value, why: &str| {
        PresenceError::Settings(format!("{origin}: discovery.{key} = {v}: {why}"))
    };
    let empty = serde_json::Map::new();
    let o = match config.get("discovery") {
        None | Some(Value::Bool(false)) | Some(Value::Null) => return Ok(None),
        Some(Value::Bool(true)) => &empty,
        Some(Value::Object(o)) => o,
        Some(v) => {
            return Err(PresenceError::Settings(format!(
                "{origin}: discovery = {v}: give true or an object {{group, secret_file, timeout, liveness_timeout, announce}}"
            )))
        }
    };
    let mut c = Config::default();
    let mut timeout = DEFAULT_RESOLVE_TIMEOUT;
    let mut announce = false;
    let secs = |k: &str, v: &Value| -> Result<Duration, PresenceError> {
        v.as_f64()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .filter(|d| !d.is_zero() && *d <= Duration::from_secs(86_400))
            .ok_or_else(|| bad(k, v, "give a number of seconds above zero, at most a day"))
    };
    for (k, v) in o {
        match k.as_str() {
            "group" => {
                let g = v.as_str().ok_or_else(|| bad(k, v, "must be a string"))?;
                if let Some(p) = name_problem("group", g) {
                    return Err(bad(k, v, &p));
                }
                c.group = g.to_string();
            }
            "secret_file" => {
                let f = v.as_str().ok_or_else(|| bad(k, v, "must be a file name"))?;
                let s = ptmp::files::read_secret(f.as_ref(), ptmp::files::SECRET_LIMIT)
                    .map_err(|e| bad(k, v, &e.to_string()))?;
                let s = s.trim_ascii().to_vec();
                if s.is_empty() {
                    return Err(bad(k, v, "the file is empty"));
                }
                c.secret = Some(s);
            }
            "timeout" => timeout = secs(k, v)?,
            "announce" => {
                announce = v
                    .as_bool()
                    .ok_or_else(|| bad(k, v, "must be true or false"))?
            }
            "liveness_timeout" => c.liveness_timeout = secs(k, v)?,
            _ => {
                return Err(PresenceError::Settings(format!(
                    "{origin}: discovery.{k}: unknown key (known: group, secret_file, timeout, liveness_timeout, announce)"
                )))
            }
        }
    }
    let binds = if announce {
        bound_ports(config).map_err(|e| PresenceError::Settings(format!("{origin}: {e}")))?
    } else {
        Vec::new()
    };
    Ok(Some(Settings {
        config: c,
        timeout,
        binds,
    }))
}

/// With `"discovery": {"announce": true}`: every address an agent binds
/// over tcp or ipc at a fixed place, as `(agent, port, address)`; the port
/// is the socket's key in the agent's data (`output`), with `-N` added
/// when the socket binds more than one address. Binds on a port the
/// system picks are announced with a `name://AGENT/PORT` bind instead;
/// inproc and shm addresses are of no use to other processes.
fn bound_ports(config: &Value) -> Result<Vec<(String, String, String)>, String> {
    let mut out = Vec::new();
    let proxies = config.get("proxies").and_then(|p| p.as_array());
    for p in proxies.into_iter().flatten() {
        let Some(node) = p.get("name").and_then(|n| n.as_str()) else {
            continue;
        };
        let Some(data) = p.get("data").and_then(|d| d.as_object()) else {
            continue;
        };
        for (key, v) in data {
            let Some(bind) = v.get("socket").and_then(|s| s.get("bind")) else {
                continue;
            };
            let list: Vec<&str> = match bind {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
                _ => continue,
            };
            let fixed: Vec<&str> = list
                .into_iter()
                .filter(|a| {
                    (a.starts_with("tcp://") && !a.ends_with(":*") && !a.ends_with(":0"))
                        || (a.starts_with("ipc://") && *a != "ipc://*")
                })
                .collect();
            for (i, a) in fixed.iter().enumerate() {
                let port = if fixed.len() == 1 {
                    key.clone()
                } else {
                    format!("{key}-{i}")
                };
                for (what, s) in [("node", node), ("port", port.as_str())] {
                    if let Some(p) = name_problem(what, s) {
                        return Err(format!("cannot announce agent {node}'s {key}: {p}"));
                    }
                }
                out.push((node.to_string(), port, a.to_string()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announce_takes_the_fixed_binds_of_each_agent() {
        let v = serde_json::json!({"proxies": [
            {"name": "snk", "type": "sink", "data": {"input": {"socket":
                {"type": "PULL", "bind": "tcp://*:7000"}}}},
            {"name": "w", "type": "worker", "data": {
                "input": {"socket": {"type": "PULL", "connect": "tcp://h:1"}},
                "output": {"socket": {"type": "PUSH",
                    "bind": ["tcp://*:7001", "ipc:///tmp/w.ipc", "tcp://*:*", "inproc://x"]}}}}
        ]});
        assert_eq!(
            bound_ports(&v).unwrap(),
            [
                ("snk".into(), "input".into(), "tcp://*:7000".into()),
                ("w".into(), "output-0".into(), "tcp://*:7001".into()),
                ("w".into(), "output-1".into(), "ipc:///tmp/w.ipc".into()),
            ]
        );
        let bad = serde_json::json!({"proxies": [{"name": "a b", "data":
            {"output": {"socket": {"type": "PUSH", "bind": "tcp://*:7"}}}}]});
        let e = bound_ports(&bad).unwrap_err();
        assert!(e.contains("agent a b") && e.contains("output"), "{e}");
    }

    #[test]
    fn a_socket_config_without_the_key_asks_for_nothing_and_announce_is_refused() {
        // None of these turns presence on.
        for text in [
            r#"{"socket": {"type": "PUSH", "bind": "tcp://*:7"}}"#,
            r#"{"socket": {}, "discovery": false}"#,
            "not json",
            "[1]",
        ] {
            assert!(for_socket(text, "config").unwrap().is_none(), "{text}");
        }
        let refused = |text: &str, origin: &str| match for_socket(text, origin) {
            Ok(_) => panic!("{text} was accepted"),
            Err(e) => e.to_string(),
        };
        let e = refused(
            r#"{"socket": {}, "discovery": {"announce": true}}"#,
            "config",
        );
        assert!(
            e.starts_with("config: discovery.announce = true") && e.contains("name://NODE/PORT"),
            "{e}"
        );
        let e = refused(
            r#"{"socket": {}, "discovery": {"grup": "x"}}"#,
            "json_config",
        );
        assert!(
            e.contains("json_config: discovery.grup: unknown key"),
            "{e}"
        );
        assert!(service().is_none());
    }

    #[test]
    fn the_discovery_key_is_checked_naming_what_is_wrong() {
        let check = |v: serde_json::Value| match settings(&v, "f.json") {
            Ok(s) => Ok(s.map(|s| (s.config.group, s.timeout))),
            Err(e) => Err(e.to_string()),
        };
        assert_eq!(check(serde_json::json!({})), Ok(None));
        assert_eq!(check(serde_json::json!({"discovery": false})), Ok(None));
        assert_eq!(
            check(serde_json::json!({"discovery": true})),
            Ok(Some(("default".into(), Duration::from_secs(30))))
        );
        assert_eq!(
            check(serde_json::json!({"discovery": {"group": "exp1", "timeout": 2.5}})),
            Ok(Some(("exp1".into(), Duration::from_millis(2500))))
        );
        for (v, want) in [
            (serde_json::json!({"discovery": 3}), "discovery = 3"),
            (
                serde_json::json!({"discovery": {"group": "a b"}}),
                "discovery.group",
            ),
            (
                serde_json::json!({"discovery": {"timeout": -1}}),
                "discovery.timeout = -1",
            ),
            (
                serde_json::json!({"discovery": {"grup": "x"}}),
                "discovery.grup: unknown key",
            ),
            (
                serde_json::json!({"discovery": {"announce": 1}}),
                "discovery.announce = 1",
            ),
            (
                serde_json::json!({"discovery": {"secret_file": "/nonexistent/k"}}),
                "discovery.secret_file",
            ),
        ] {
            let e = check(v).unwrap_err();
            assert!(e.starts_with("f.json: ") && e.contains(want), "{e}");
        }
    }
}
