//! The steps of [`Discovery::announce`](crate::Discovery::announce): each
//! port checked and given its TXT fields, the holders of our names asked
//! whether they are still there, then every port registered, all or
//! nothing.

use crate::{
    after, host_name, mdns_err, name_problem, own_instances, process_start, unique_tag, wire_name,
    worker, Announcement, Discovery, Error, Own, Peer, PortSpec, Result, Table, CURVE_KEY_FIELD,
    MAX_FIELD_BYTES, TXT_VERSION,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A port to announce and its TXT fields, unsigned.
pub(crate) type PortFields<'p> = (&'p PortSpec, BTreeMap<String, String>);

/// Who announces: the node, and the process (host, pid, start time)
/// every one of its ports' records names.
pub(crate) struct Origin<'a> {
    node: &'a str,
    host: String,
    pid: u32,
    start: u64,
}

impl<'a> Origin<'a> {
    /// `node`, announced by this process.
    pub(crate) fn here(node: &'a str) -> Origin<'a> {
        let start = process_start();
        let host = host_name();
        let pid = std::process::id();
        Origin {
            node,
            host,
            pid,
            start,
        }
    }

    /// Checks `spec` (its name, its address's transport and length, its
    /// CURVE key) and gives its TXT fields in `group`, unsigned; the error
    /// names the port and what is wrong.
    pub(crate) fn fields(&self, spec: &PortSpec, group: &str) -> Result<BTreeMap<String, String>> {
        if let Some(p) = name_problem("port", &spec.name) {
            return Err(Error::Config(p));
        }
        let Some((transport, _)) = spec.address.split_once("://") else {
            return Err(Error::Config(format!(
                "port {:?} address {:?} has no transport (as in tcp://host:port)",
                spec.name, spec.address
            )));
        };
        if spec.address.len() > MAX_FIELD_BYTES {
            return Err(Error::Config(format!(
                "port {:?} address is longer than {MAX_FIELD_BYTES} bytes",
                spec.name
            )));
        }
        let mut fields = BTreeMap::new();
        let mut put = |k: &str, v: String| fields.insert(k.to_string(), v);
        put("v", TXT_VERSION.to_string());
        put("node", self.node.to_string());
        put("port", spec.name.clone());
        put("addr", spec.address.clone());
        put("transport", transport.to_string());
        put("host", self.host.clone());
        put("pid", self.pid.to_string());
        put("start", self.start.to_string());
        put("group", group.to_string());
        if let Some(k) = &spec.curve_key {
            if ptmp::curve::PublicKey::from_z85(k).is_none() {
                return Err(Error::Config(format!(
                    "port {:?} CURVE key {k:?} is not 40 Z85 characters",
                    spec.name
                )));
            }
            put(CURVE_KEY_FIELD, k.clone());
        }
        Ok(fields)
    }

    /// The error refusing our port of the name `holder` keeps: where the
    /// holder is, and where ours would have been.
    fn duplicate(&self, holder: &Peer, ports: &[PortFields<'_>]) -> Error {
        let spec = ports
            .iter()
            .find(|(s, _)| s.name == holder.port)
            .map(|x| x.0);
        Error::Duplicate {
            name: holder.name(),
            existing: holder.location(),
            ours: format!(
                "{} on {} (pid {})",
                spec.map_or("", |s| s.address.as_str()),
                self.host,
                self.pid
            ),
        }
    }
}

/// The peers in `t` that announce one of `ports` of `node`.
fn holders(t: &Table, node: &str, ports: &[PortFields<'_>]) -> Vec<Peer> {
    t.peers
        .values()
        .filter(|p| p.node == node && ports.iter().any(|(s, _)| s.name == p.port))
        .cloned()
        .collect()
}

impl Discovery {
    /// A holder of one of our names may be a process that died without
    /// a goodbye (the one this process replaces, say): asks each holder
    /// of one of `ports` again, and waits up to the liveness timeout and
    /// a second for all of them to go, so that their names can be taken
    /// over. A holder still there then refuses ours
    /// ([`Error::Duplicate`]).
    pub(crate) fn take_over(&self, origin: &Origin<'_>, ports: &[PortFields<'_>]) -> Result<()> {
        let present = holders(&self.shared.lock(), origin.node, ports);
        for p in &present {
            worker::ask_again(
                &self.daemon,
                &self.shared,
                &p.instance,
                self.config.liveness_timeout,
            );
        }
        if present.is_empty() {
            return Ok(());
        }
        let deadline = after(
            self.config
                .liveness_timeout
                .saturating_add(Duration::from_secs(1)),
        );
        let mut t = self.shared.lock();
        loop {
            let still = holders(&t, origin.node, ports);
            let Some(p) = still.first() else {
                return Ok(());
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(origin.duplicate(p, ports));
            }
            t = self
                .shared
                .changed
                .wait_timeout(t, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Registers each of `ports` of `node` under one new tag and host
    /// name: built empty and filled, so that if one port fails, dropping
    /// the announcement withdraws the ports already announced: all or
    /// nothing.
    pub(crate) fn register(&self, node: &str, ports: Vec<PortFields<'_>>) -> Result<Announcement> {
        let tag = unique_tag();
        let mdns_host = format!("ptmp-{tag}.local.");
        let mut ann = Announcement {
            daemon: self.daemon.clone(),
            shared: self.shared.clone(),
            fullnames: Vec::new(),
        };
        for (spec, fields) in ports {
            let mut own = Own {
                registered: String::new(),
                label: format!("{node}/{}#{tag}", spec.name),
                host: mdns_host.clone(),
                fields,
                first_signed: None,
                withdrawn: false,
            };
            let (info, signed) = worker::service_info(&own, self.config.secret.as_deref(), true)?;
            own.first_signed = signed;
            own.registered = info.get_fullname().to_string();
            let fullname = wire_name(&own.registered);
            // Known as ours before our own browser can hear it.
            own_instances().insert(fullname.clone());
            ann.fullnames.push(fullname.clone());
            let mut t = self.shared.lock();
            t.own.insert(fullname, own);
            self.daemon.register(info).map_err(mdns_err)?;
        }
        Ok(ann)
    }
}
