//! `ptmp peers`: who is present on the local network (DNS-SD over
//! multicast DNS), and optionally announce ports while listening.

use crate::common::{stopping, CliError, SockArgs};
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
    /// announcements signed with it are listed, and ours are signed. It
    /// must be your own and private (chmod 600 FILE).
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
            let s = ptmp::files::read_secret(p, ptmp::files::SECRET_LIMIT)
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

/// Presence for the sockets of a configuration (`ptmp run`, a graph's
/// part) that asks for it with a top-level `"discovery"` key (see
/// [`ptmp_discovery::process`]): the process's presence, its fixed binds
/// announced when asked; `None` when the key does not ask. A wrong key is
/// a usage error (exit 2). Withdraw its names before exiting.
pub fn presence_for(
    config: &serde_json::Value,
    origin: &str,
) -> CliResult<Option<&'static ptmp_discovery::NameService>> {
    ptmp_discovery::process::for_config(config, origin).map_err(presence_error)
}

/// Checks a configuration's `"discovery"` key without starting anything.
pub fn check_discovery(config: &serde_json::Value, origin: &str) -> CliResult<()> {
    ptmp_discovery::process::settings(config, origin)
        .map(|_| ())
        .map_err(presence_error)
}

fn presence_error(e: ptmp_discovery::process::PresenceError) -> CliError {
    match e {
        ptmp_discovery::process::PresenceError::Settings(m) => CliError::usage(m),
        ptmp_discovery::process::PresenceError::Start(m) => CliError::fail(m),
    }
}

impl SockArgs {
    /// Presence for the names in `cfg`, when asked for with --discovery
    /// or a top-level "discovery" key in the --config JSON (the keys of
    /// `ptmp run`'s); `None` when not asked for. A name in `cfg` without
    /// presence is a usage error naming it and the switch. Keep the
    /// service while the socket lives, and withdraw its names at the end.
    pub fn presence(
        &self,
        cfg: &ptmp::SocketConfig,
    ) -> CliResult<Option<&'static ptmp_discovery::NameService>> {
        let text = self.config_text()?;
        let in_config = text
            .as_deref()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .is_some_and(|v| v.get("discovery").is_some());
        let settings = match (&self.discovery, in_config) {
            (Some(_), true) => return Err(CliError::usage(
                "--discovery: the --config JSON has a \"discovery\" key already; give one of them",
            )),
            (Some(group), false) => {
                let timeout = self.name_timeout.as_secs_f64();
                let mut o = serde_json::json!({"group": group, "timeout": timeout});
                if let Some(f) = &self.secret_file {
                    o["secret_file"] = f.to_string_lossy().into();
                }
                o
            }
            // The key beside "socket", read as Python's and C's sockets
            // read it.
            (None, true) => {
                let text = text.unwrap_or_default();
                return ptmp_discovery::process::for_socket(&text, "--config")
                    .map_err(presence_error);
            }
            (None, false) => {
                let named = cfg
                    .endpoints()
                    .find(|(_, e)| ptmp::names::parse(&e.address).is_some());
                return match named {
                    Some((_, e)) => Err(CliError::usage(format!(
                        "{}: a name needs presence on the network, which is off: \
                         turn it on with --discovery GROUP (or a \"discovery\" key in the --config JSON)",
                        e.address
                    ))),
                    None => Ok(None),
                };
            }
        };
        presence_for(&serde_json::json!({ "discovery": settings }), "--discovery")
    }
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
