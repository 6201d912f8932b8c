//! Reading a graph: its JSON checked key by key, every error naming the
//! graph and the node, edge, process or host at fault.

use crate::{
    graph_types, ports, Dir, Edge, Error, Graph, Host, Node, Pattern, PortRef, Process, Restart,
    Result, DEFAULT_PORT_BASE,
};
use ptmp::fields::{Empty, FieldError, Object, Options, Problem};
use ptmp::Transport;
use ptmp_agents::Kind;
use serde_json::{Map, Value};
use std::time::Duration;

/// How the graph reads its JSON: integers must be written as integers,
/// and values in errors are cut at 60 bytes.
const READ: Options = Options {
    integral_floats: false,
    show_limit: Some(60),
};

fn show(v: &Value) -> String {
    ptmp::fields::abbreviate(&v.to_string(), 60)
}

fn find(nodes: &[Node], n: &str) -> Option<usize> {
    nodes.iter().position(|x| x.name == n)
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

struct P<'a> {
    graph: &'a str,
}

impl P<'_> {
    fn err(&self, msg: impl Into<String>) -> Error {
        Error::Invalid {
            graph: self.graph.to_string(),
            msg: msg.into(),
        }
    }
    /// A reader's error in the graph's wording, at `at` (with the element's
    /// index, if any).
    fn field(&self, at: &str, e: FieldError) -> Error {
        let at = match e.index {
            Some(i) => format!("{at}[{i}]"),
            None => at.to_string(),
        };
        match &e.problem {
            Problem::UnknownKey { known } => {
                let near = ptmp::fields::nearest(&e.key, known.iter().copied())
                    .map(|k| format!(" (did you mean {k:?}?)"))
                    .unwrap_or_default();
                self.err(format!(
                    "{}: unknown key {:?}{near}; known: {}",
                    e.path,
                    e.key,
                    known.join(", ")
                ))
            }
            p => self.err(format!("{at} = {}: {}", e.value, p.reason())),
        }
    }
    fn obj<'v>(&self, at: &str, v: &'v Value) -> Result<Object<'v>> {
        Object::new(at, v, READ).map_err(|e| self.field(at, *e))
    }
    fn keys(&self, o: &Object<'_>, known: &[&'static str]) -> Result<()> {
        o.only(known).map_err(|e| self.field(o.path(), *e))
    }
    fn string<'v>(&self, o: &Object<'v>, k: &str) -> Result<Option<&'v str>> {
        o.str(k).map_err(|e| self.field(&o.key_path(k), *e))
    }
    fn name(&self, o: &Object<'_>) -> Result<String> {
        let at = o.path();
        let n = self
            .string(o, "name")?
            .ok_or_else(|| self.err(format!("{at}: needs a name")))?;
        if !valid_name(n) {
            return Err(self.err(format!(
                "{at}.name = {n:?}: names are 1-64 letters, digits, '_' or '-' (they become parts of addresses)"
            )));
        }
        Ok(n.to_string())
    }
    /// A string or a non-empty list of strings, `at` naming it in errors;
    /// `o` is the object it was found in.
    fn strings(&self, o: &Object<'_>, at: &str, v: &Value) -> Result<Vec<String>> {
        o.strings_of(at, v, Empty::Refused)
            .map(|l| l.into_iter().map(str::to_string).collect())
            .map_err(|e| self.field(at, *e))
    }
    /// An integer from `min` to `max` at key `k` of `o`, `at` naming it in
    /// errors; null counts as absent only when `null_is_absent`.
    fn int(
        &self,
        o: &Object<'_>,
        (k, at): (&str, &str),
        min: i64,
        max: i64,
        null_is_absent: bool,
    ) -> Result<Option<i64>> {
        let refuse = |value: &str| {
            self.err(format!(
                "{at} = {value}: must be an integer from {min} to {max}"
            ))
        };
        if !null_is_absent && o.raw(k).is_some_and(Value::is_null) {
            return Err(refuse("null"));
        }
        o.int_in(k, min, max).map_err(|e| refuse(&e.value))
    }

    /// The graph's hosts: `localhost` alone when it names none.
    fn hosts(&self, top: &Object<'_>) -> Result<Vec<Host>> {
        let p = self;
        let mut hosts = Vec::new();
        match top.get("hosts") {
            None | Some(Value::Null) => hosts.push(Host {
                name: "localhost".into(),
                address: "127.0.0.1".into(),
                feature: String::new(),
            }),
            Some(Value::Array(a)) if !a.is_empty() => {
                for (i, h) in a.iter().enumerate() {
                    let at = format!("hosts[{i}]");
                    let o = p.obj(&at, h)?;
                    p.keys(&o, &["name", "address", "feature"])?;
                    let name = p.name(&o)?;
                    // No address: the host's parts are found by name
                    // (see `plan`), on ports the system picks.
                    let given = p.string(&o, "address")?;
                    let address = given.unwrap_or("").to_string();
                    if given.is_some()
                        && (address.is_empty() || address.contains(['/', ' ', ':', '\0']))
                    {
                        return Err(p.err(format!(
                            "host {name}: address = {address:?}: give an IPv4 address or a host name"
                        )));
                    }
                    if hosts.iter().any(|x: &Host| x.name == name) {
                        return Err(p.err(format!("hosts[{i}]: host {name} is named twice")));
                    }
                    let feature = p.string(&o, "feature")?;
                    if let Some(f) = feature.filter(|f| {
                        f.is_empty()
                            || !f
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
                    }) {
                        return Err(p.err(format!(
                            "host {name}: feature = {f:?}: give one node feature's name (letters, digits, _ - .)"
                        )));
                    }
                    let feature = feature.unwrap_or("").to_string();
                    hosts.push(Host {
                        name,
                        address,
                        feature,
                    });
                }
            }
            Some(v) => {
                return Err(p.err(format!(
                    "hosts = {}: must be a non-empty list of {{name, address}}",
                    show(v)
                )))
            }
        }
        Ok(hosts)
    }

    /// The nodes, each checked against its type's ports (not yet placed).
    fn nodes(&self, top: &Object<'_>) -> Result<Vec<Node>> {
        let p = self;
        let list = match top.raw("nodes") {
            Some(Value::Array(a)) if !a.is_empty() => a,
            Some(v) => {
                return Err(p.err(format!(
                    "nodes = {}: must be a non-empty list of {{name, type, data}}",
                    show(v)
                )))
            }
            None => return Err(p.err("nodes: missing; a graph needs nodes")),
        };
        let mut nodes: Vec<Node> = Vec::new();
        for (i, n) in list.iter().enumerate() {
            let at = format!("nodes[{i}]");
            let o = p.obj(&at, n)?;
            p.keys(&o, &["name", "type", "data"])?;
            let name = p.name(&o)?;
            if nodes.iter().any(|x| x.name == name) {
                return Err(p.err(format!("{at}: node {name} is named twice")));
            }
            let type_name = p
                .string(&o, "type")?
                .ok_or_else(|| p.err(format!("node {name}: needs a type")))?
                .to_string();
            let kind = Kind::parse(&type_name).ok_or_else(|| {
                p.err(format!(
                    "node {name}: type = {type_name:?}: unknown node type; graphs take: {}",
                    graph_types()
                ))
            })?;
            let Some(ports) = ports(kind) else {
                return Err(p.err(format!(
                    "node {name}: type = {type_name:?}: a {} cannot be a graph node (its sockets are not a fixed set of ports); run it with `ptmp run`",
                    kind.name()
                )));
            };
            let data = match o.get("data") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(d)) => d.clone(),
                Some(v) => {
                    return Err(p.err(format!(
                        "node {name}: data = {}: must be an object",
                        show(v)
                    )))
                }
            };
            for ps in ports {
                if data.contains_key(ps.key) {
                    return Err(p.err(format!(
                        "node {name}: data.{}: sockets come from the graph's edges (port {}); remove it, or pin an address on the edge",
                        ps.key, ps.name
                    )));
                }
            }
            nodes.push(Node {
                name,
                kind,
                type_name,
                data,
                process: usize::MAX,
            });
        }
        Ok(nodes)
    }

    /// The processes given, then one for each node placed in none; every
    /// node learns its process.
    fn processes(
        &self,
        top: &Object<'_>,
        nodes: &mut [Node],
        hosts: &[Host],
    ) -> Result<Vec<Process>> {
        let p = self;
        let mut processes: Vec<Process> = Vec::new();
        if let Some(v) = top.get("processes").filter(|v| !v.is_null()) {
            let a = v.as_array().ok_or_else(|| {
                p.err(format!(
                    "processes = {}: must be a list of {{name, host, nodes}}",
                    show(v)
                ))
            })?;
            for (i, pr) in a.iter().enumerate() {
                let at = format!("processes[{i}]");
                let o = p.obj(&at, pr)?;
                p.keys(&o, &["name", "host", "nodes"])?;
                let name = p.name(&o)?;
                if processes.iter().any(|x| x.name == name) {
                    return Err(p.err(format!("{at}: process {name} is named twice")));
                }
                let host = match p.string(&o, "host")? {
                    Some(h) => hosts.iter().position(|x| x.name == h).ok_or_else(|| {
                        p.err(format!(
                            "process {name}: host = {h:?}: unreachable placement: no such host; hosts: {}",
                            hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", ")
                        ))
                    })?,
                    None if hosts.len() == 1 => 0,
                    None => {
                        return Err(p.err(format!(
                            "process {name}: no host given, and the graph has {} hosts",
                            hosts.len()
                        )))
                    }
                };
                let names = p.strings(
                    &o,
                    &format!("process {name}: nodes"),
                    o.get("nodes").unwrap_or(&Value::Null),
                )?;
                let mut members = Vec::new();
                for n in names {
                    let k = find(nodes, &n).ok_or_else(|| {
                        p.err(format!("process {name}: nodes: no node named {n:?}"))
                    })?;
                    if nodes[k].process == processes.len() {
                        return Err(p.err(format!("process {name}: nodes: {n:?} is listed twice")));
                    }
                    if nodes[k].process != usize::MAX {
                        return Err(p.err(format!(
                            "node {n}: placed in two processes, {} and {name}",
                            processes[nodes[k].process].name
                        )));
                    }
                    nodes[k].process = processes.len();
                    members.push(k);
                }
                processes.push(Process {
                    name,
                    host,
                    nodes: members,
                });
            }
        }
        #[allow(clippy::needless_range_loop)] // nodes[k] is updated below
        for k in 0..nodes.len() {
            if nodes[k].process != usize::MAX {
                continue;
            }
            let name = nodes[k].name.clone();
            if hosts.len() > 1 {
                return Err(p.err(format!(
                    "node {name}: unreachable placement: not placed in any process, and the graph has {} hosts (place it in a process with a host)",
                    hosts.len()
                )));
            }
            if processes.iter().any(|x| x.name == name) {
                return Err(p.err(format!(
                    "node {name}: not placed, and its own process would be named {name}, which is taken"
                )));
            }
            nodes[k].process = processes.len();
            processes.push(Process {
                name,
                host: 0,
                nodes: vec![k],
            });
        }
        Ok(processes)
    }

    /// The edges, their ends checked against the nodes' ports.
    fn edges(&self, top: &Object<'_>, nodes: &[Node]) -> Result<Vec<Edge>> {
        let list: &[Value] = match top.get("edges") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(v) => {
                return Err(self.err(format!(
                    "edges = {}: must be a list of {{from, to, pattern}}",
                    show(v)
                )))
            }
        };
        list.iter()
            .enumerate()
            .map(|(i, e)| self.edge(&format!("edges[{i}]"), e, nodes))
            .collect()
    }

    /// The edge `e`, written at `at`: its keys, its two ends, its
    /// pattern, transport and address, its sockets' settings, its ring,
    /// and which side binds.
    fn edge(&self, at: &str, e: &Value, nodes: &[Node]) -> Result<Edge> {
        let p = self;
        let o = p.obj(at, e)?;
        p.keys(
            &o,
            &[
                "from",
                "to",
                "pattern",
                "transport",
                "address",
                "hwm",
                "heartbeat_ms",
                "bind",
                "shm_slots",
                "shm_max_message",
            ],
        )?;
        let from = p.ends(&o, at, ("from", Dir::Out), nodes)?;
        let to = p.ends(&o, at, ("to", Dir::In), nodes)?;
        let pattern = p.pattern(&o, at)?;
        let transport = p.transport(&o, at)?;
        let address = p.string(&o, "address")?.map(str::to_string);
        let hwm = p.int(&o, ("hwm", &o.key_path("hwm")), 0, i32::MAX as i64, true)?;
        let hb = o.key_path("heartbeat_ms");
        let heartbeat_ms = p.int(&o, ("heartbeat_ms", &hb), 0, 1_000_000, true)?;
        let shm = p.edge_ring(&o)?;
        let fan = (from.len(), to.len());
        let bind_inputs = p.bind_inputs(&o, at, fan, address.is_some(), transport)?;
        Ok(Edge {
            from,
            to,
            pattern,
            transport,
            address,
            hwm,
            heartbeat_ms,
            bind_inputs,
            shm,
        })
    }

    /// One end of the edge `o` (written at `at`): the ports its `key`
    /// names, one `"node.port"` or a list of them, each a port of
    /// direction `dir` on one of `nodes`, none twice.
    fn ends(
        &self,
        o: &Object<'_>,
        at: &str,
        (key, dir): (&str, Dir),
        nodes: &[Node],
    ) -> Result<Vec<PortRef>> {
        let p = self;
        let v = o
            .raw(key)
            .ok_or_else(|| p.err(format!("{at}: needs {key:?} (\"node.port\")")))?;
        let at = format!("{at}.{key}");
        let mut out = Vec::new();
        for s in p.strings(o, &at, v)? {
            let r = p.port_ref(&at, &s, dir, nodes, &out)?;
            out.push(r);
        }
        Ok(out)
    }

    /// The port `s` (`"node.port"`), written at `at`: a port of direction
    /// `dir` on one of `nodes`, and not one of `listed` already.
    fn port_ref(
        &self,
        at: &str,
        s: &str,
        dir: Dir,
        nodes: &[Node],
        listed: &[PortRef],
    ) -> Result<PortRef> {
        let p = self;
        let (n, port) = s
            .split_once('.')
            .ok_or_else(|| p.err(format!("{at}: {s:?}: write a port as \"node.port\"")))?;
        let k = find(nodes, n).ok_or_else(|| p.err(format!("{at}: {s:?}: no node named {n}")))?;
        let node = &nodes[k];
        let spec = node.port(port).ok_or_else(|| {
            p.err(format!(
                "{at}: node {n}: no port {port:?} on a {}; its ports: {}",
                node.kind.name(),
                ports(node.kind)
                    .unwrap_or(&[])
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        if spec.dir != dir {
            return Err(p.err(format!(
                "{at}: node {n}: port {port} is an {}; edges go from outputs to inputs",
                if spec.dir == Dir::In {
                    "input"
                } else {
                    "output"
                }
            )));
        }
        let r = PortRef {
            node: k,
            port: spec.name,
        };
        if listed.contains(&r) {
            return Err(p.err(format!("{at}: node {n}: port {port} listed twice")));
        }
        Ok(r)
    }

    /// The edge `o`'s `pattern` (written at `at`), which it must have.
    fn pattern(&self, o: &Object<'_>, at: &str) -> Result<Pattern> {
        match self.string(o, "pattern")? {
            Some("pubsub") => Ok(Pattern::PubSub),
            Some("pushpull") => Ok(Pattern::PushPull),
            Some("pair") => Ok(Pattern::Pair),
            Some(s) => Err(self.err(format!(
                "{at}.pattern = {s:?}: must be pubsub, pushpull or pair"
            ))),
            None => Err(self.err(format!("{at}: needs a pattern: pubsub, pushpull or pair"))),
        }
    }

    /// The transport the edge `o` (written at `at`) pins; `None` for
    /// `auto` or none given.
    fn transport(&self, o: &Object<'_>, at: &str) -> Result<Option<Transport>> {
        match self.string(o, "transport")? {
            None | Some("auto") => Ok(None),
            Some("inproc") => Ok(Some(Transport::Inproc)),
            Some("ipc") => Ok(Some(Transport::Ipc)),
            Some("tcp") => Ok(Some(Transport::Tcp)),
            Some("shm") => Ok(Some(Transport::Shm)),
            Some(s) => Err(self.err(format!(
                "{at}.transport = {s:?}: must be auto, inproc, ipc, shm or tcp"
            ))),
        }
    }

    /// Whether the inputs of the edge `o` (written at `at`) bind (`"bind":
    /// "in"`) rather than its output (`"out"`, the default), given how
    /// many outputs (`from`) and inputs (`to`) it has, whether it pins an
    /// address and the transport it pins.
    fn bind_inputs(
        &self,
        o: &Object<'_>,
        at: &str,
        (from, to): (usize, usize),
        pinned: bool,
        transport: Option<Transport>,
    ) -> Result<bool> {
        let p = self;
        match p.string(o, "bind")? {
            None | Some("out") => Ok(false),
            Some("in") if from > 1 => Err(p.err(format!(
                "{at}.bind = \"in\": several outputs fan in to one input, which binds already"
            ))),
            Some("in") if pinned && to > 1 => Err(p.err(format!(
                "{at}.bind = \"in\": several inputs cannot all bind the one pinned address"
            ))),
            Some("in") if transport == Some(Transport::Shm) => Err(p.err(format!(
                "{at}.bind = \"in\": an shm ring is made by its writer, so over shm the output binds"
            ))),
            Some("in") => Ok(true),
            Some(s) => Err(p.err(format!(
                "{at}.bind = {s:?}: must be out (the output binds, the default) or in (the inputs bind)"
            ))),
        }
    }

    /// An edge's ring shape when it goes over shm: `shm_slots` (a power of
    /// two) and `shm_max_message`, each `None` when not given.
    fn edge_ring(&self, o: &Object<'_>) -> Result<(Option<i64>, Option<i64>)> {
        let p = self;
        let (sa, ma) = (o.key_path("shm_slots"), o.key_path("shm_max_message"));
        let max = ptmp_shm::MAX_MESSAGE_LIMIT as i64;
        let shm = (
            p.int(o, ("shm_slots", &sa), 2, ptmp_shm::MAX_SLOTS as i64, true)?,
            p.int(o, ("shm_max_message", &ma), 1, max, true)?,
        );
        if let Some(n) = shm.0.filter(|n| !(*n as u64).is_power_of_two()) {
            return Err(p.err(format!("{sa} = {n}: must be a power of two")));
        }
        Ok(shm)
    }

    /// The restart policy: 5 restarts 200 ms apart unless the graph says.
    fn restart(&self, top: &Object<'_>) -> Result<Restart> {
        let p = self;
        let mut restart = Restart {
            max: 5,
            backoff: Duration::from_millis(200),
        };
        if let Some(v) = top.get("restart").filter(|v| !v.is_null()) {
            let o = p.obj("restart", v)?;
            p.keys(&o, &["max", "backoff_ms"])?;
            if let Some(m) = p.int(&o, ("max", "restart.max"), 0, 1_000_000, false)? {
                restart.max = m as u32;
            }
            if let Some(b) = p.int(&o, ("backoff_ms", "restart.backoff_ms"), 0, 600_000, false)? {
                restart.backoff = Duration::from_millis(b as u64);
            }
        }
        Ok(restart)
    }
}

impl Graph {
    /// Parse and validate a graph; `default_name` names it when it has no
    /// `name` (e.g. the file's stem).
    pub fn parse(v: &Value, default_name: &str) -> Result<Graph> {
        let gname = v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(default_name)
            .to_string();
        let p = P { graph: &gname };
        let top = p.obj("(top level)", v)?;
        p.keys(
            &top,
            &[
                "name",
                "nodes",
                "edges",
                "processes",
                "hosts",
                "port_base",
                "restart",
                "plugins",
                "curve",
            ],
        )?;
        if !valid_name(&gname) {
            return Err(p.err(format!(
                "name = {gname:?}: names are 1-64 letters, digits, '_' or '-'"
            )));
        }
        let hosts = p.hosts(&top)?;
        let mut nodes = p.nodes(&top)?;
        let processes = p.processes(&top, &mut nodes, &hosts)?;
        let edges = p.edges(&top, &nodes)?;
        let port_base = p
            .int(&top, ("port_base", "port_base"), 1024, 65000, true)?
            .map_or(DEFAULT_PORT_BASE, |n| n as u16);
        let restart = p.restart(&top)?;
        let curve = crate::curve::parse(&gname, top.get("curve"), hosts.len())?;
        let plugins = match top.get("plugins") {
            None | Some(Value::Null) => vec![],
            Some(v) => p.strings(&top, "plugins", v)?,
        };
        let g = Graph {
            plugins,
            name: gname.clone(),
            nodes,
            edges,
            processes,
            hosts,
            port_base,
            restart,
            curve,
        };
        g.check_wiring()?;
        Ok(g)
    }
}
