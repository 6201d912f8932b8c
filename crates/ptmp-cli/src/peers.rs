//! `ptmp peers`: who is present on the local network (DNS-SD over
//! multicast DNS), and optionally announce ports while listening.

use crate::common::{stopping, CliError};
use clap::Args;
use ptmp_discovery::{
    name_problem, Config, Counters, Discovery, Event, Peer, PortSpec, DEFAULT_GROUP,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

type CliResult<T> = Result<T, CliError>;

#[derive(Args)]
pub struct PeersArgs {
    /// List only peers of this group (and announce in it).
    #[arg(long, default_value = DEFAULT_GROUP)]
    group: String,
    /// A file whose contents are the group's shared secret: only
    /// announcements signed with it are listed, and ours are signed.
    #[arg(long, value_name = "FILE")]
    secret_file: Option<PathBuf>,
    /// Listen this many seconds before listing who is present (and, with
    /// --announce, at least this long before claiming the names, so a name
    /// already present is seen and refused).
    /// (e.g. 500ms; a bare number is seconds).
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = ptmp::duration::secs)]
    wait: Duration,
    /// Print join and leave events as they happen (and counts of ignored
    /// announcements when they change), until interrupted.
    #[arg(long)]
    watch: bool,
    /// With --watch, or while announcing: stop after this long (e.g. 30s;
    /// a bare number is seconds).
    #[arg(long = "for", value_name = "DURATION", value_parser = ptmp::duration::secs_positive)]
    run_for: Option<Duration>,
    /// Announce this node's ports (given with --port) while running.
    #[arg(long, value_name = "NODE")]
    announce: Option<String>,
    /// A port to announce, as NAME=ADDRESS (for example out=tcp://*:5000).
    #[arg(long = "port", value_name = "NAME=ADDRESS", requires = "announce")]
    ports: Vec<String>,
    /// JSON instead of text: the list as one array of ports, --watch as one
    /// object a line ({"event": "joined"|"left"|"duplicate"|"ignored", ...}).
    #[arg(long)]
    json: bool,
    /// How long without an answer before a silent peer is dropped (e.g.
    /// 1500ms; a bare number is seconds).
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = ptmp::duration::secs_positive)]
    liveness_timeout: Duration,
}

fn config(a: &PeersArgs) -> CliResult<Config> {
    let secret = match &a.secret_file {
        None => None,
        Some(p) => {
            let s = ptmp::files::read_given(p, ptmp::files::SECRET_LIMIT)
                .map_err(|e| CliError::usage(format!("--secret-file {}: {e}", p.display())))?;
            let s = s.trim_ascii().to_vec();
            if s.is_empty() {
                return Err(CliError::usage(format!(
                    "--secret-file {}: the file is empty",
                    p.display()
                )));
            }
            Some(s)
        }
    };
    let d = Config::default();
    Ok(Config {
        group: a.group.clone(),
        secret,
        liveness_timeout: a.liveness_timeout,
        settle: d.settle.max(a.wait),
        ..d
    })
}

fn port_specs(a: &PeersArgs) -> CliResult<Vec<PortSpec>> {
    a.ports
        .iter()
        .map(|p| match p.split_once('=') {
            Some((n, addr)) if !n.is_empty() && !addr.is_empty() => Ok(PortSpec {
                name: n.to_string(),
                address: addr.to_string(),
                curve_key: None,
            }),
            _ => Err(CliError::usage(format!(
                "--port {p:?}: give NAME=ADDRESS, for example out=tcp://*:5000"
            ))),
        })
        .collect()
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86400, (s % 86400) / 3600),
    }
}

fn port_text(p: &Peer) -> String {
    format!("{}={}", p.port, p.endpoint())
}

/// One line per process: its ports gathered.
fn table(peers: &[Peer]) -> String {
    let mut rows: BTreeMap<(String, String, u32), (Vec<String>, Duration)> = BTreeMap::new();
    for p in peers {
        let row = rows
            .entry((p.node.clone(), p.host.clone(), p.pid))
            .or_insert_with(|| (Vec::new(), p.uptime()));
        row.0.push(port_text(p));
    }
    let mut lines = vec![(
        "NAME".to_string(),
        "PORTS".to_string(),
        "HOST".to_string(),
        "PID".to_string(),
        "UPTIME".to_string(),
    )];
    for ((node, host, pid), (ports, up)) in rows {
        lines.push((node, ports.join(" "), host, pid.to_string(), human(up)));
    }
    let w = |f: fn(&(String, String, String, String, String)) -> &String| {
        lines.iter().map(|l| f(l).len()).max().unwrap_or(0)
    };
    let (w0, w1, w2, w3) = (w(|l| &l.0), w(|l| &l.1), w(|l| &l.2), w(|l| &l.3));
    let mut out = String::new();
    for l in &lines {
        out.push_str(&format!(
            "{:w0$}  {:w1$}  {:w2$}  {:>w3$}  {}\n",
            l.0, l.1, l.2, l.3, l.4
        ));
    }
    out
}

fn peer_json(p: &Peer) -> serde_json::Value {
    serde_json::json!({
        "name": p.name(), "node": p.node, "port": p.port, "address": p.address,
        "endpoint": p.endpoint(), "transport": p.transport, "host": p.host,
        "pid": p.pid, "start": p.start, "uptime": p.uptime().as_secs(), "group": p.group,
        "curve_key": p.curve_key,
    })
}

fn event_json(e: &Event) -> String {
    let v = match e {
        Event::Joined(p) => serde_json::json!({"event": "joined", "peer": peer_json(p)}),
        Event::Left(p) => serde_json::json!({"event": "left", "peer": peer_json(p)}),
        Event::Duplicate { kept, refused } => serde_json::json!({
            "event": "duplicate", "peer": peer_json(kept), "refused": peer_json(refused),
        }),
    };
    v.to_string()
}

fn counters_json(c: &Counters) -> String {
    serde_json::json!({
        "event": "ignored", "malformed": c.malformed, "forged": c.forged,
        "oversized": c.oversized, "other_group": c.other_group,
        "duplicates": c.duplicates, "table_full": c.table_full,
    })
    .to_string()
}

fn event_line(e: &Event) -> String {
    match e {
        Event::Joined(p) => format!(
            "joined {} {} host {} pid {}",
            p.name(),
            p.endpoint(),
            p.host,
            p.pid
        ),
        Event::Left(p) => format!("left {} host {} pid {}", p.name(), p.host, p.pid),
        Event::Duplicate { kept, refused } => format!(
            "duplicate {}: kept {}, refused {}",
            kept.name(),
            kept.location(),
            refused.location()
        ),
    }
}

fn counters_line(c: &Counters) -> String {
    format!(
        "ignored announcements: malformed {} forged {} oversized {} other-group {} duplicate {} table-full {}",
        c.malformed, c.forged, c.oversized, c.other_group, c.duplicates, c.table_full
    )
}

fn emit(out: &mut impl Write, text: &str) -> CliResult<()> {
    match writeln!(out, "{text}").and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(CliError::closed()),
        Err(e) => Err(CliError::fail(format!("writing to standard output: {e}"))),
    }
}

/// Why a listing may be empty, said under an empty table: what was looked
/// for, for how long, and the announcements that were heard but refused.
fn nobody(a: &PeersArgs, c: &ptmp_discovery::Counters, announcing: bool) -> String {
    let others = if announcing { "other " } else { "" };
    let mut s = format!(
        "no {others}peers of group {:?} announced themselves within {:?}",
        a.group, a.wait
    );
    let heard = [
        (
            c.forged,
            "refused as forged (a different or missing secret)",
        ),
        (c.other_group, "of other groups"),
        (c.malformed, "malformed"),
    ];
    for (n, what) in heard {
        if n > 0 {
            s += &format!("; {n} announcement(s) heard {what}");
        }
    }
    s + " (peers must be on this network segment, in the same group, with the same secret; \
         --wait gives them longer)"
}

pub fn run(a: &PeersArgs) -> CliResult<()> {
    let cfg = config(a)?;
    let wait = a.wait;
    let run_for = a.run_for;
    let ports = port_specs(a)?;
    if a.announce.is_some() && ports.is_empty() {
        return Err(CliError::usage("--announce needs at least one --port"));
    }
    // Names are checked before anything is sent on the network.
    let names = std::iter::once(("group", a.group.as_str()))
        .chain(a.announce.as_deref().map(|n| ("node", n)))
        .chain(ports.iter().map(|p| ("port", p.name.as_str())));
    for (what, name) in names {
        if let Some(p) = name_problem(what, name) {
            return Err(CliError::usage(p));
        }
    }
    let d = Discovery::start(cfg).map_err(|e| match e {
        ptmp_discovery::Error::Config(_) => CliError::usage(e.to_string()),
        e => CliError::fail(e.to_string()),
    })?;
    let events = d.subscribe();
    let t0 = Instant::now();
    let mut out = std::io::stdout().lock();
    let announcement = match &a.announce {
        Some(node) => {
            let ann = d.announce(node, &ports).map_err(|e| match e {
                ptmp_discovery::Error::Config(_) => CliError::usage(e.to_string()),
                e => CliError::fail(e.to_string()),
            })?;
            if !a.json {
                emit(&mut out, &format!("announced {node}"))?;
            }
            Some(ann)
        }
        None => None,
    };
    let over = |now: Instant| run_for.is_some_and(|r| now.duration_since(t0) >= r);
    if !a.watch {
        while t0.elapsed() < wait && !stopping() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let peers = d.peers();
        if a.json {
            let list: Vec<serde_json::Value> = peers.iter().map(peer_json).collect();
            emit(&mut out, &serde_json::Value::Array(list).to_string())?;
        } else {
            emit(&mut out, table(&peers).trim_end())?;
            if peers.is_empty() {
                tracing::info!("{}", nobody(a, &d.counters(), announcement.is_some()));
            }
        }
        if announcement.is_some() {
            // Keep the announcement up until told to stop.
            while !stopping() && !over(Instant::now()) {
                if let Some(why) = announcement.as_ref().and_then(|a| a.refused()) {
                    return Err(CliError::fail(why));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        return Ok(());
    }
    let mut last = Counters::default();
    while !stopping() && !over(Instant::now()) {
        if let Ok(e) = events.recv_timeout(Duration::from_millis(100)) {
            let line = if a.json {
                event_json(&e)
            } else {
                event_line(&e)
            };
            emit(&mut out, &line)?;
        }
        let c = d.counters();
        if c != last {
            let line = if a.json {
                counters_json(&c)
            } else {
                counters_line(&c)
            };
            emit(&mut out, &line)?;
            last = c;
        }
        if let Some(why) = announcement.as_ref().and_then(|a| a.refused()) {
            return Err(CliError::fail(why));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptimes_read_plainly() {
        assert_eq!(human(Duration::from_secs(5)), "5s");
        assert_eq!(human(Duration::from_secs(125)), "2m05s");
        assert_eq!(human(Duration::from_secs(7260)), "2h01m");
        assert_eq!(human(Duration::from_secs(90000)), "1d01h");
    }
}

/// Presence for the sockets of a configuration (`ptmp run`, a graph's
/// part) that asks for it with a top-level `"discovery"` key: `true`, or
/// an object with any of `group` (default `default`), `secret_file`,
/// `timeout` (seconds a `name://` connect waits for its peer, default 30),
/// `liveness_timeout` (seconds, default 2) and `announce` (true: announce
/// every fixed tcp or ipc address an agent binds). Absent or `false`: `None`,
/// and nothing is sent or listened to. `origin` names the configuration in
/// errors. Keep the service while the sockets live; withdraw its names
/// before exiting.
pub fn presence_for(
    config: &serde_json::Value,
    origin: &str,
) -> CliResult<Option<ptmp_discovery::NameService>> {
    let Some(s) = discovery_settings(config, origin)? else {
        return Ok(None);
    };
    let d = Discovery::start(s.config).map_err(|e| CliError::fail(format!("{origin}: {e}")))?;
    let service = ptmp_discovery::install(d, s.timeout)
        .map_err(|e| CliError::fail(format!("{origin}: {e}")))?;
    for (node, port, address) in s.binds {
        service
            .announce(&node, &port, &address)
            .map_err(|e| CliError::fail(format!("{origin}: agent {node}: {e}")))?;
    }
    Ok(Some(service))
}

/// What a configuration's `"discovery"` key asks for (see
/// [`presence_for`]), checked without starting anything.
pub struct DiscoverySettings {
    /// Presence's own settings.
    pub config: Config,
    /// How long a `name://` connect waits for its peer.
    pub timeout: Duration,
    /// The fixed binds to announce, `(agent, port, address)`.
    pub binds: Vec<(String, String, String)>,
}

/// Reads and checks a configuration's `"discovery"` key (`None` when
/// presence is not asked for); errors name `origin` and the key.
pub fn discovery_settings(
    config: &serde_json::Value,
    origin: &str,
) -> CliResult<Option<DiscoverySettings>> {
    use serde_json::Value;
    let bad = |key: &str, v: &Value, why: &str| {
        CliError::usage(format!("{origin}: discovery.{key} = {v}: {why}"))
    };
    let empty = serde_json::Map::new();
    let o = match config.get("discovery") {
        None | Some(Value::Bool(false)) | Some(Value::Null) => return Ok(None),
        Some(Value::Bool(true)) => &empty,
        Some(Value::Object(o)) => o,
        Some(v) => {
            return Err(CliError::usage(format!(
                "{origin}: discovery = {v}: give true or an object {{group, secret_file, timeout, liveness_timeout, announce}}"
            )))
        }
    };
    let mut c = Config::default();
    let mut timeout = ptmp_discovery::DEFAULT_RESOLVE_TIMEOUT;
    let mut announce = false;
    let secs = |k: &str, v: &Value| -> CliResult<Duration> {
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
                let s = ptmp::files::read_given(f.as_ref(), ptmp::files::SECRET_LIMIT)
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
                return Err(CliError::usage(format!(
                    "{origin}: discovery.{k}: unknown key (known: group, secret_file, timeout, liveness_timeout, announce)"
                )))
            }
        }
    }
    let binds = if announce {
        bound_ports(config).map_err(|e| CliError::usage(format!("{origin}: {e}")))?
    } else {
        Vec::new()
    };
    Ok(Some(DiscoverySettings {
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
fn bound_ports(config: &serde_json::Value) -> Result<Vec<(String, String, String)>, String> {
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
                serde_json::Value::String(s) => vec![s.as_str()],
                serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
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
mod announce_tests {
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
    fn the_discovery_key_is_checked_naming_what_is_wrong() {
        let check = |v: serde_json::Value| match discovery_settings(&v, "f.json") {
            Ok(s) => Ok(s.map(|s| (s.config.group, s.timeout))),
            Err(e) => Err(e.msg),
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
