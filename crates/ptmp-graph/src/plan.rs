//! Choosing transports and assigning addresses: a [`Graph`] becomes one
//! ptmper configuration per process.
//!
//! Transport of an edge, unless the edge pins `transport` or `address`:
//! * all its nodes in one process: `inproc`;
//! * all on one host: `shm` when the edge can be a single-writer ring —
//!   one output, and either pubsub (every reader gets every message, as
//!   SUBs do) or a single input (pushpull or pubsub) — else `ipc`. A pushpull
//!   fan-out stays on ipc because zmq's PUSH deals messages round-robin,
//!   while every reader of an shm ring sees every message; pair stays on
//!   ipc because shm has no PAIR. One socket cannot mix shm with zmq
//!   transports, so an shm edge meeting zmq edges at a multi-edge port
//!   (a zipper's input) falls back to ipc;
//! * across hosts: `tcp`.
//!
//! Binding: the single output of an edge binds and its inputs connect; an
//! edge fanning in binds at its single input; a pushpull fan-out binds at
//! every input and its output connects to each (see [`Plan::make`]); an
//! edge with `"bind": "in"` binds at its inputs too (zmq only). Addresses are a function of
//! the graph, its run directory and `port_base` only, so every host and
//! every restarted process computes the same ones: inproc
//! `inproc://GRAPH/LABEL`, ipc `ipc://RUNDIR/LABEL.ipc`, shm
//! `shm://GRAPH.HASH.LABEL` (HASH of the run directory, so two runs of one
//! graph from different directories do not share rings), tcp
//! `tcp://HOSTADDR:PORT` with PORT = `port_base` + the rank of the binding
//! among all tcp bindings (edge order), HOSTADDR the binding node's host. LABEL is
//! `NODE-PORT-eINDEX` of the binding port.

use crate::rundir::docs::{Discovery, NodePlan, PartConfig};
use crate::{Error, Graph, Pattern, PortRef, Result};
use ptmp::{Attach, Endpoint, ShmSettings, SocketConfig, Transport};
use ptmp_agents::{Kind, Plugins, Proxy};
use serde_json::{Map, Value};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An edge with its transport and addresses.
#[derive(Debug, Clone)]
pub struct Link {
    /// The transport the edge uses, pinned or chosen.
    pub transport: Transport,
    /// The ports that bind, each with its address; the edge's other ports
    /// connect to all of them.
    pub binds: Vec<(PortRef, String)>,
    /// Whether the transport was chosen by the runner (not pinned).
    pub auto: bool,
}

impl Link {
    /// The addresses the edge's binding ports bind (and its other ports
    /// connect to).
    pub fn addresses(&self) -> Vec<String> {
        self.binds.iter().map(|(_, a)| a.clone()).collect()
    }
}

/// The wiring of a whole graph and each process's agent configuration.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Per edge, in [`Graph::edges`](crate::Graph::edges) order.
    pub links: Vec<Link>,
    /// Per process (graph order): its ptmper configuration, as its plan
    /// file gives it.
    pub configs: Vec<PartConfig>,
    /// Per process: whether it ends by itself (has a finite node).
    pub finite: Vec<bool>,
    /// Where ipc sockets, plan files and status files go.
    pub run_dir: PathBuf,
}

/// How long a graph node writing an shm edge waits for a reader that does
/// not read (a stalled process, SIGSTOP): a day, where a lone sender's
/// default is 10 s. In a graph the supervisor looks after processes: a dead
/// reader is noticed by its pid and dropped at once, so a reader that is
/// alive but slow must slow its writer down (back-pressure), not make it
/// fail and be restarted. The nodes wait in slices, so a stop still ends
/// the wait within the usual drain time.
pub const SHM_BLOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(86_400);

/// How long a writer of a graph's shm edge keeps the place of a reader
/// whose process died, waiting for the supervisor to restart it: far more
/// than a restart takes, so the restarted reader resumes where its
/// predecessor stopped handing sets on and nothing is lost. Each shm input
/// of a worker, proxy or sink reads under the identity `GRAPH/NODE/PORT`.
pub const SHM_READER_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Why `f` cannot be a node's output (dump) file, if it cannot: a file
/// there already that is not a regular file (a device, a FIFO, a
/// directory), or a path in `/proc`, `/sys` or `/dev` (`/dev/null` aside),
/// also through links. A sink writing `/proc/self/mem` would fail at
/// every write and be restarted for ever.
pub fn output_file_problem(f: &Path) -> Option<String> {
    let special = |p: &Path| {
        p != Path::new("/dev/null") && ["/proc", "/sys", "/dev"].iter().any(|d| p.starts_with(d))
    };
    let abs = std::path::absolute(f).unwrap_or_else(|_| f.to_path_buf());
    let real = std::fs::canonicalize(f).ok();
    if real.as_deref() == Some(Path::new("/dev/null")) {
        return None;
    }
    if special(&abs) || real.as_deref().is_some_and(special) {
        return Some(
            "is in /proc, /sys or /dev; an output file must be a regular file (or /dev/null)"
                .into(),
        );
    }
    match std::fs::metadata(f) {
        Ok(m) if !m.is_file() => Some(format!(
            "is {}; an output file must be a regular file",
            ptmp::files::kind_of(m.file_type())
        )),
        _ => None,
    }
}

/// How a node's `ofile` names a file in the graph's run directory:
/// `{run_dir}/NAME`.
pub const RUN_DIR_PREFIX: &str = "{run_dir}/";

/// Every output file (`ofile`) of the plan's nodes, as the parts open them.
pub fn output_files(plan: &Plan) -> Vec<PathBuf> {
    plan.configs
        .iter()
        .flat_map(|c| &c.proxies)
        .filter_map(|p| p.ofile().map(PathBuf::from))
        .collect()
}

/// The default run directory of graph `name`: `ptmp-graph-NAME` in this
/// user's private directory, [`crate::rundir::user_dir`].
pub fn default_run_dir(name: &str) -> PathBuf {
    crate::rundir::user_dir().join(format!("ptmp-graph-{name}"))
}

/// FNV-1a of the run directory, 6 hex digits, for shm channel names.
fn dir_hash(p: &Path) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in p.as_os_str().as_encoded_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{:06x}", h & 0xff_ffff)
}

/// An error of graph `g`: it is invalid, for the reason given.
fn invalid(g: &Graph) -> impl Fn(String) -> Error + '_ {
    |msg| Error::Invalid {
        graph: g.name.clone(),
        msg,
    }
}

/// What every node's configuration is made from.
struct Sources<'a> {
    links: &'a [Link],
    pe: &'a BTreeMap<PortRef, Vec<usize>>,
    counted: &'a [bool],
    shared: &'a [bool],
    run_dir: &'a Path,
    plugins: &'a Plugins,
}

impl Plan {
    /// Wire `g` for running from `run_dir`; validates every node's agent
    /// configuration (with its sockets) so nothing starts when any is bad.
    pub fn make(g: &Graph, run_dir: &Path) -> Result<Plan> {
        Self::make_keeping(g, run_dir, None)
    }

    /// As [`Plan::make`], but an edge `keep` says an earlier plan of this
    /// run already wired (same ends, pattern and transport) keeps its
    /// addresses, and every other edge gets an address the earlier plan did
    /// not use: a running graph changed by `ptmp graph apply` leaves the
    /// processes of unchanged edges alone (their configurations are the
    /// same) and never hands a new edge an old edge's ring or socket.
    pub fn make_keeping(g: &Graph, run_dir: &Path, keep: Option<&Keep>) -> Result<Plan> {
        let err = invalid(g);
        let pe = g.port_edges();
        let mut links: Vec<Link> = Vec::with_capacity(g.edges.len());
        let mut tcp_rank = 0u32;
        for i in 0..g.edges.len() {
            links.push(Self::link(g, i, run_dir, keep, &mut tcp_rank)?);
        }
        Self::unmix_shm(g, &pe, &mut links, run_dir, keep)?;
        // Each node's data with its sockets.
        let counted = counted_streams(g);
        // Nodes fed by a pushpull edge that deals sets out among several
        // receivers.
        let mut shared = vec![false; g.nodes.len()];
        for e in g
            .edges
            .iter()
            .filter(|e| e.pattern == Pattern::PushPull && e.to.len() > 1)
        {
            for t in &e.to {
                shared[t.node] = true;
            }
        }
        let mut configs = Vec::new();
        let mut finite = Vec::new();
        let plugins = Plugins::load(&g.plugins).map_err(|e| err(e.to_string()))?;
        let sources = Sources {
            links: &links,
            pe: &pe,
            counted: &counted,
            shared: &shared,
            run_dir,
            plugins: &plugins,
        };
        for p in &g.processes {
            let mut proxies = Vec::new();
            let mut fin = false;
            for &k in &p.nodes {
                let (proxy, ends) = Self::node_config(g, k, &sources)?;
                fin |= ends;
                proxies.push(proxy);
            }
            configs.push(PartConfig {
                discovery: discovery(g, &links),
                name: format!("{}/{}", g.name, p.name),
                plugins: g.plugins.clone(),
                proxies,
            });
            finite.push(fin);
        }
        Ok(Plan {
            links,
            configs,
            finite,
            run_dir: run_dir.to_path_buf(),
        })
    }

    /// Edge `i`'s transport (pinned, or chosen from where its nodes run),
    /// checked against the placement, and its bound addresses.
    fn link(
        g: &Graph,
        i: usize,
        run_dir: &Path,
        keep: Option<&Keep>,
        tcp_rank: &mut u32,
    ) -> Result<Link> {
        let err = invalid(g);
        let e = &g.edges[i];
        let label = g.edge_label(i);
        let ends: Vec<PortRef> = e.from.iter().chain(&e.to).copied().collect();
        let procs: Vec<usize> = ends.iter().map(|r| g.nodes[r.node].process).collect();
        let hosts: Vec<usize> = procs.iter().map(|&p| g.processes[p].host).collect();
        let one_proc = procs.iter().all(|&p| p == procs[0]);
        let one_host = hosts.iter().all(|&h| h == hosts[0]);
        let shm_ok = e.pattern != Pattern::Pair
            && !e.bind_inputs
            && e.from.len() == 1
            && (e.pattern == Pattern::PubSub || e.to.len() == 1);
        let pinned = match &e.address {
            Some(a) => {
                let p = Endpoint::parse(a, Attach::Connect, "address")
                    .map_err(|x| err(format!("{label}: address: {x}")))?;
                // Some port binds it: never over a file that is not a
                // socket (the bind and the run's end would delete it).
                ptmp::check_ipc_bind("address", &p.address)
                    .map_err(|x| err(format!("{label}: {x}")))?;
                Some(p)
            }
            None => None,
        };
        let wanted = pinned.as_ref().map(|p| p.transport).or(e.transport);
        if let (Some(p), Some(t)) = (&pinned, e.transport) {
            if p.transport != t {
                return Err(err(format!(
                    "{label}: transport {} but address {} is {}",
                    t.scheme(),
                    p.address,
                    p.transport.scheme()
                )));
            }
        }
        let transport = match wanted {
            None if one_proc => Transport::Inproc,
            None if one_host && shm_ok => Transport::Shm,
            None if one_host => Transport::Ipc,
            None => Transport::Tcp,
            Some(t) => t,
        };
        Self::check_reach(g, i, transport, shm_ok)?;
        let binds = Self::binds(g, i, transport, pinned.as_ref(), run_dir, keep, tcp_rank)?;
        Ok(Link {
            transport,
            binds,
            auto: wanted.is_none(),
        })
    }

    /// Whether edge `i` can reach all its nodes over `transport`: inproc
    /// within one process, ipc and shm within one host, shm only where one
    /// writer's ring serves it.
    fn check_reach(g: &Graph, i: usize, transport: Transport, shm_ok: bool) -> Result<()> {
        let err = invalid(g);
        let e = &g.edges[i];
        let label = g.edge_label(i);
        let ends: Vec<PortRef> = e.from.iter().chain(&e.to).copied().collect();
        let procs: Vec<usize> = ends.iter().map(|r| g.nodes[r.node].process).collect();
        let hosts: Vec<usize> = procs.iter().map(|&p| g.processes[p].host).collect();
        let place = |r: &PortRef| {
            let n = &g.nodes[r.node];
            let p = &g.processes[n.process];
            format!(
                "{} in process {} on host {}",
                n.name, p.name, g.hosts[p.host].name
            )
        };
        let (a, b) = (
            &ends[0],
            ends.iter().find(|r| {
                let pr = g.nodes[r.node].process;
                match transport {
                    Transport::Inproc => pr != procs[0],
                    _ => g.processes[pr].host != hosts[0],
                }
            }),
        );
        match (transport, b) {
            (Transport::Inproc, Some(b)) => {
                return Err(err(format!(
                    "{label}: unreachable placement: inproc joins only nodes of one process, but {} and {}",
                    place(a),
                    place(b)
                )))
            }
            (Transport::Ipc | Transport::Shm, Some(b)) => {
                return Err(err(format!(
                    "{label}: unreachable placement: {} joins only processes of one host, but {} and {}",
                    transport.scheme(),
                    place(a),
                    place(b)
                )))
            }
            _ => {}
        }
        if transport == Transport::Shm && !shm_ok {
            return Err(err(format!(
                "{label}: shm cannot carry this edge: {}",
                if e.bind_inputs {
                    "an shm ring is made by its writer, so the output binds"
                } else if e.pattern == Pattern::Pair {
                    "shm has no pair pattern"
                } else if e.from.len() > 1 {
                    "an shm ring has one writer; fan in over ipc or tcp"
                } else {
                    "every reader of an shm ring gets every message, not zmq's round-robin; use pubsub, or ipc"
                }
            )));
        }
        Ok(())
    }

    /// The ports of edge `i` that bind, each with its address: pinned,
    /// kept from the plan being changed, or fresh.
    fn binds(
        g: &Graph,
        i: usize,
        transport: Transport,
        pinned: Option<&Endpoint>,
        run_dir: &Path,
        keep: Option<&Keep>,
        tcp_rank: &mut u32,
    ) -> Result<Vec<(PortRef, String)>> {
        let err = invalid(g);
        let e = &g.edges[i];
        let label = g.edge_label(i);
        // Who binds: the single output (one to one, pubsub fan-out,
        // pair); the single input of a fan-in; every input of a
        // pushpull fan-out, the output connecting to each, so that zmq
        // makes all of PUSH's pipes at once and deals round-robin from
        // the first message (binding there would hand everything sent
        // before the other inputs connect to the first one that did).
        // Across hosts without addresses (see `named`): every output
        // binds a name, and inputs connect to the names, so that only
        // receivers ever have to follow a node that moves.
        let named = crate::named::by_name(g, transport, &e.from) && pinned.is_none();
        let binders: Vec<PortRef> = if named {
            e.from.clone()
        } else if e.from.len() > 1 {
            vec![e.to[0]]
        } else if (e.to.len() > 1 && e.pattern == Pattern::PushPull && pinned.is_none())
            || e.bind_inputs
        {
            e.to.clone()
        } else {
            vec![e.from[0]]
        };
        let mut binds = Vec::new();
        for b in binders {
            let a = match &pinned {
                Some(p) => p.address.clone(),
                None => match keep.and_then(|k| k.kept(i, transport, b)) {
                    Some(a) => a,
                    None => fresh(g, run_dir, transport, b, i, tcp_rank, keep)
                        .map_err(|m| err(format!("{label}: {m}")))?,
                },
            };
            binds.push((b, a));
        }
        Ok(binds)
    }

    /// One socket, one transport family: shm with zmq at a multi-edge port
    /// falls back to ipc (auto edges) or is an error (pinned).
    fn unmix_shm(
        g: &Graph,
        pe: &BTreeMap<PortRef, Vec<usize>>,
        links: &mut [Link],
        run_dir: &Path,
        keep: Option<&Keep>,
    ) -> Result<()> {
        let err = invalid(g);
        for (r, list) in pe {
            if list.len() < 2 {
                continue;
            }
            let shm = list
                .iter()
                .filter(|&&i| links[i].transport == Transport::Shm)
                .count();
            if shm == 0 || shm == list.len() {
                continue;
            }
            for &i in list {
                let l = &mut links[i];
                if l.transport != Transport::Shm {
                    continue;
                }
                if !l.auto {
                    return Err(err(format!(
                        "node {}: port {}: {} is shm, but other edges at this port are not; one socket cannot mix shm with zmq transports",
                        g.nodes[r.node].name,
                        r.port,
                        g.edge_label(i)
                    )));
                }
                l.transport = Transport::Ipc;
                for (b, a) in &mut l.binds {
                    *a = match keep.and_then(|k| k.kept(i, Transport::Ipc, *b)) {
                        Some(a) => a,
                        None => fresh(g, run_dir, Transport::Ipc, *b, i, &mut 0, keep)
                            .map_err(|m| err(format!("{}: {m}", g.edge_label(i))))?,
                    };
                }
            }
        }
        Ok(())
    }

    /// Node `k`'s proxy configuration `{data, name, type}` with its sockets
    /// filled in and checked by its agent, and whether it ends by itself.
    fn node_config(g: &Graph, k: usize, w: &Sources<'_>) -> Result<(NodePlan, bool)> {
        let err = invalid(g);
        let (links, pe, counted, shared, run_dir, plugins) =
            (w.links, w.pe, w.counted, w.shared, w.run_dir, w.plugins);
        let node = &g.nodes[k];
        let mut data = node.data.clone();
        for (r, list) in pe.range(
            PortRef { node: k, port: "" }..=PortRef {
                node: k,
                port: "\u{10FFFF}",
            },
        ) {
            let spec = node.port(r.port).expect("validated");
            let sock = socket(g, links, r, list, run_dir)?;
            data.insert(spec.key.into(), sock);
            // A zipper counts its streams by its input's endpoints,
            // and a fan-in arrives at one: tell it how many senders
            // there are, or it would release the first stream's
            // sets before the others' first ones arrive.
            if node.kind == Kind::Zipper && spec.key == "input" {
                let senders: usize = list.iter().map(|&e| g.edges[e].from.len()).sum();
                if senders > 1 {
                    data.entry("streams").or_insert(Value::from(senders));
                }
            }
        }
        if counted[k] && node.kind.commits_inputs() {
            data.entry("dedup").or_insert(Value::Bool(true));
            // A round-robin share: numbers it never sees went to a
            // sibling, and are not reported as missing.
            if shared[k] {
                data.entry("share").or_insert(Value::Bool(true));
            }
        }
        // An output file named from the run directory, so a graph
        // can keep its outputs beside its status files whatever
        // directory it was started from.
        if let Some(rest) = data
            .get("ofile")
            .and_then(Value::as_str)
            .and_then(|f| f.strip_prefix(RUN_DIR_PREFIX))
        {
            let f = run_dir.join(rest).to_string_lossy().into_owned();
            data.insert("ofile".into(), Value::from(f));
        }
        if let Some(f) = data.get("ofile").and_then(Value::as_str) {
            output_file_problem(Path::new(f)).map_or(Ok(()), |why| {
                Err(err(format!("node {}: ofile = {f:?}: {why}", node.name)))
            })?;
        }
        let v = Value::Object(data);
        let proxy = Proxy::parse_data(&node.name, node.kind, &v, plugins).map_err(|source| {
            Error::Agent {
                graph: g.name.clone(),
                node: node.name.clone(),
                source: Box::new(source),
            }
        })?;
        // A graph is ptmp's own format, written for ptmp: a key its
        // agent does not read is a mistake, not another program's.
        if let Some(k) = proxy.unread.first() {
            return Err(Error::Agent {
                graph: g.name.clone(),
                node: node.name.clone(),
                source: Box::new(ptmp_agents::Error::config(
                    &node.name,
                    k,
                    v.get(k.as_str()).unwrap_or(&Value::Null).to_string(),
                    format!("unknown key for a {} node", node.type_name),
                )),
            });
        }
        let data = match v {
            Value::Object(data) => data,
            _ => Map::new(),
        };
        let node_plan = NodePlan {
            data,
            name: node.name.clone(),
            kind: node.type_name.clone(),
        };
        Ok((node_plan, proxy.finite()))
    }

    /// The shm channel names and ipc socket paths the processes of `host` bind.
    pub fn bound_here(&self, g: &Graph, host: usize) -> (Vec<String>, Vec<PathBuf>) {
        let mut rings = Vec::new();
        let mut sockets = Vec::new();
        for l in &self.links {
            for (b, a) in &l.binds {
                if g.processes[g.nodes[b.node].process].host != host {
                    continue;
                }
                match l.transport {
                    Transport::Shm => rings.extend(a.strip_prefix("shm://").map(str::to_string)),
                    Transport::Ipc => sockets.extend(a.strip_prefix("ipc://").map(PathBuf::from)),
                    _ => {}
                }
            }
        }
        (rings, sockets)
    }

    /// shm channel names this graph uses (for removal after a run).
    pub fn shm_channels(&self) -> Vec<String> {
        self.links
            .iter()
            .filter(|l| l.transport == Transport::Shm)
            .flat_map(|l| &l.binds)
            .filter_map(|(_, a)| a.strip_prefix("shm://").map(str::to_string))
            .collect()
    }
}

/// The shm rings the processes of `host` write (their sockets binding
/// `shm://`), each with the bytes it takes in the shm directory.
pub fn shm_rings_on(g: &Graph, plan: &Plan, host: usize) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, _) in g
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.host == host)
    {
        for s in plan.configs[i].proxies.iter().flat_map(NodePlan::sockets) {
            let Some(ring) = s.socket.bind.iter().find(|a| a.starts_with("shm://")) else {
                continue;
            };
            if let Ok(c) = ptmp::SocketConfig::from_value(s.config) {
                out.push((ring.clone(), c.shm().ring_bytes()));
            }
        }
    }
    out
}

/// Refuse to start `host`'s processes when the shm rings they write do
/// not fit in the shm directory together: said once, before anything
/// starts, with what to do, rather than by each process that cannot make
/// its ring.
pub fn check_shm_space(g: &Graph, plan: &Plan, host: usize) -> Result<()> {
    let rings = shm_rings_on(g, plan, host);
    let need: u64 = rings.iter().map(|(_, b)| *b as u64).sum();
    let Ok(free) = ptmp_shm::shm_dir_free() else {
        return Ok(());
    };
    if need <= free {
        return Ok(());
    }
    Err(Error::Invalid {
        graph: g.name.clone(),
        msg: format!(
            "its {} shm ring(s) on this host need {need} bytes in {} together, but {free} are free: give it more room (a container: a larger --shm-size; Docker's default is 64 MiB), make the rings smaller (an edge's \"shm_slots\" or \"shm_max_message\"; a default ring takes {} bytes), or carry some edges over ipc (\"transport\": \"ipc\" on the edge)",
            rings.len(),
            ptmp_shm::shm_dir().display(),
            ptmp::DEFAULT_SHM_RING_BYTES
        ),
    })
}

/// An edge's transport and the addresses its ports bind.
pub type Wiring = (Transport, Vec<(PortRef, String)>);

/// The addresses an earlier plan of the same run gave, for
/// [`Plan::make_keeping`].
#[derive(Debug, Clone, Default)]
pub struct Keep {
    /// Per edge of the new graph: its transport and bind addresses in the
    /// earlier plan (ports in the new graph's numbering), when the earlier
    /// graph had the same edge.
    pub links: Vec<Option<Wiring>>,
    /// Every address the earlier plan bound; no other edge gets one.
    pub taken: std::collections::BTreeSet<String>,
}

impl Keep {
    /// The address edge `i` bound at port `b` over `t` before, if it did.
    fn kept(&self, i: usize, t: Transport, b: PortRef) -> Option<String> {
        let (lt, binds) = self.links.get(i)?.as_ref()?;
        if *lt != t {
            return None;
        }
        binds.iter().find(|(r, _)| *r == b).map(|(_, a)| a.clone())
    }
}

/// The address port `b` binds for edge `i` over `t`, never one `keep`
/// marks as taken: a label gets `-gN` appended, a tcp port moves on.
fn fresh(
    g: &Graph,
    run_dir: &Path,
    t: Transport,
    b: PortRef,
    i: usize,
    tcp_rank: &mut u32,
    keep: Option<&Keep>,
) -> std::result::Result<String, String> {
    let Some(k) = keep else {
        return address(g, run_dir, t, b, i, tcp_rank);
    };
    if t == Transport::Tcp {
        let ports: std::collections::BTreeSet<&str> = k
            .taken
            .iter()
            .filter_map(|a| a.strip_prefix("tcp://")?.rsplit_once(':').map(|x| x.1))
            .collect();
        loop {
            let a = address(g, run_dir, t, b, i, tcp_rank)?;
            let port = a.rsplit_once(':').map_or("", |x| x.1);
            if !ports.contains(port) {
                return Ok(a);
            }
        }
    }
    let label = label(g, b, i);
    let a = labelled(g, run_dir, t, b, &label, tcp_rank)?;
    if !k.taken.contains(&a) {
        return Ok(a);
    }
    // Mark the label with a generation.
    for n in 2..=k.taken.len() + 2 {
        let x = labelled(g, run_dir, t, b, &format!("{label}-g{n}"), tcp_rank)?;
        if !k.taken.contains(&x) {
            return Ok(x);
        }
    }
    Err("no free address".to_string())
}

/// The label of the address port `b` binds for edge `i`:
/// `NODE-PORT-eINDEX`.
fn label(g: &Graph, b: PortRef, i: usize) -> String {
    format!("{}-{}-e{i}", g.nodes[b.node].name, b.port)
}

/// The address port `b` binds for edge `i` over `t`.
fn address(
    g: &Graph,
    run_dir: &Path,
    t: Transport,
    b: PortRef,
    i: usize,
    tcp_rank: &mut u32,
) -> std::result::Result<String, String> {
    labelled(g, run_dir, t, b, &label(g, b, i), tcp_rank)
}

/// The address port `b` binds over `t` under `label`.
fn labelled(
    g: &Graph,
    run_dir: &Path,
    t: Transport,
    b: PortRef,
    label: &str,
    tcp_rank: &mut u32,
) -> std::result::Result<String, String> {
    Ok(match t {
        Transport::Inproc => format!("inproc://{}/{label}", g.name),
        Transport::Ipc => {
            let f = crate::rundir::ipc_socket_file(run_dir, label);
            let a = format!("ipc://{}", f.display());
            if a.len() - 6 > 107 {
                return Err(format!(
                    "ipc path {a} is longer than the 107 bytes a Unix socket path may have; use a shorter --run-dir"
                ));
            }
            a
        }
        Transport::Shm => format!("shm://{}.{}.{label}", g.name, dir_hash(run_dir)),
        Transport::Tcp if crate::named::host_unplanned(g, b) => crate::named::address(g, b)?,
        Transport::Tcp => {
            let host = &g.hosts[g.processes[g.nodes[b.node].process].host];
            let port = g.port_base as u32 + *tcp_rank;
            if port > 65535 {
                return Err(format!("tcp port {port} is past 65535; lower port_base"));
            }
            *tcp_rank += 1;
            format!("tcp://{}:{port}", host.address)
        }
    })
}

/// The presence a process joins, `"discovery": {"group": GRAPH}`, when
/// any edge of the graph is wired by name.
fn discovery(g: &Graph, links: &[Link]) -> Option<Discovery> {
    let named = links
        .iter()
        .any(|l| l.binds.iter().any(|(_, a)| crate::named::is_name(a)));
    named.then(|| Discovery {
        group: g.name.clone(),
    })
}

/// The socket configuration of port `r`, which meets edges `list`, for a
/// run from `run_dir`.
fn socket(
    g: &Graph,
    links: &[crate::plan::Link],
    r: &PortRef,
    list: &[usize],
    run_dir: &Path,
) -> Result<Value> {
    let spec = g.nodes[r.node].port(r.port).expect("validated");
    let e0 = &g.edges[list[0]];
    let (st, rt) = e0.pattern.socket_types();
    let stype = if spec.dir == crate::Dir::Out { st } else { rt };
    let mut bind = Vec::new();
    let mut connect = Vec::new();
    let mut hwm: Option<i64> = None;
    let mut heartbeat: Option<i64> = None;
    let mut shape = (None, None);
    for &i in list {
        let (n, m) = g.edges[i].shm;
        shape = (shape.0.max(n), shape.1.max(m));
        let l = &links[i];
        match l.binds.iter().find(|(b, _)| b == r) {
            Some((_, a)) => {
                // Bind the host's address when it is an IPv4 address; a
                // host name may resolve differently on the host itself, so
                // bind all interfaces at the assigned port then.
                let a = match a.strip_prefix("tcp://").and_then(|x| x.rsplit_once(':')) {
                    Some((h, port))
                        if g.edges[i].address.is_none()
                            && h.parse::<std::net::Ipv4Addr>().is_err() =>
                    {
                        format!("tcp://*:{port}")
                    }
                    _ => a.clone(),
                };
                // A port binding one name for several edges binds it once.
                if !bind.contains(&a) {
                    bind.push(a);
                }
            }
            None => {
                for (_, a) in &l.binds {
                    // One connection to a name serves all its edges.
                    if !crate::named::is_name(a) || !connect.contains(a) {
                        connect.push(a.clone());
                    }
                }
            }
        }
        if let Some(h) = g.edges[i].hwm {
            hwm = Some(hwm.map_or(h, |x| x.max(h)));
        }
        // A port on several edges hears the quickest of their heartbeats.
        if let Some(h) = g.edges[i].heartbeat_ms {
            heartbeat = Some(heartbeat.map_or(h, |x| x.min(h)));
        }
    }
    let all_shm = list
        .iter()
        .all(|&i| links[i].transport == ptmp::Transport::Shm);
    let mut b = SocketConfig::builder(stype);
    for a in &bind {
        b = b.bind(a);
    }
    for a in &connect {
        b = b.connect(a);
    }
    if let Some(h) = hwm {
        // The graph reads it as an i32 (`parse.rs`).
        let h = i32::try_from(h).unwrap_or(i32::MAX);
        b = b.hwm(h).sndhwm(h);
    }
    if let Some(ms) = heartbeat {
        b = b.heartbeat(std::time::Duration::from_millis(ms as u64));
    }
    if spec.dir == crate::Dir::Out && all_shm {
        // The writer makes the ring, so the shape goes there.
        let d = ShmSettings::default();
        b = b.shm(ShmSettings {
            slots: shape.0.map_or(d.slots, |n| n as usize),
            max_message: shape.1.map_or(d.max_message, |n| n as usize),
            block_timeout: SHM_BLOCK_TIMEOUT,
            ..d
        });
    }
    // An edge shaped for messages beyond a zmq socket's default bound
    // carries them over zmq too (across hosts, or with "transport": "ipc").
    let wide = shape.1.map(|m| m as usize);
    if let Some(m) = wide.filter(|&m| !all_shm && m > ptmp::DEFAULT_MAX_MESSAGE) {
        b = b.max_message(m);
    }
    // An shm input of a node that commits what it handed on keeps its
    // place in its rings under a name every restart of its process
    // computes alike.
    if spec.dir == crate::Dir::In && g.nodes[r.node].kind.commits_inputs() && all_shm {
        b = b
            .shm_reader_id(format!("{}/{}/{}", g.name, g.nodes[r.node].name, r.port))
            .shm_reader_grace(SHM_READER_GRACE);
    }
    let port = format!("{}.{}", g.nodes[r.node].name, r.port);
    if let Some(c) = crate::curve::secure(g, run_dir, &port, &bind, &connect)? {
        b = b.curve(c);
    }
    let c = b.build().map_err(|e| {
        invalid(g)(format!(
            "node {}: port {}: {e}",
            g.nodes[r.node].name, r.port
        ))
    })?;
    Ok(c.to_json())
}

mod describe;
mod streams;
pub use describe::{describe, describe_json};
pub use streams::{counted_streams, whole_streams};

#[cfg(test)]
mod reader_identity_tests;
