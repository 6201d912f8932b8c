//! The browsing thread of a [`Discovery`](crate::Discovery): reads and
//! checks every announcement, keeps the table of who is present, settles
//! two claims of one name, drops what does not answer, and re-signs this
//! process's own announcements so that they stay fresh.

use crate::txt::{check_sealed, seal, Untrusted};
use crate::{
    after, host_name, own_instances, process_start, publish, unix_now, wire_name, Error, Event,
    Own, Peer, Shared, Table, CURVE_KEY_FIELD, MAX_FIELD_BYTES, MAX_TXT_BYTES, SERVICE_TYPE,
    TXT_VERSION,
};
use crate::{name_problem, Config};
use mdns_sd::{ResolvedService, ServiceDaemon, ServiceEvent, ServiceInfo};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct Worker {
    pub(crate) daemon: ServiceDaemon,
    pub(crate) shared: Arc<Shared>,
    pub(crate) config: Config,
}

/// Asks `instance` again whether it is still there (RFC 6762, section
/// 10.4: the daemon queries it and flushes it if no answer comes within
/// `timeout`), unless a question to it is still open: asking again then
/// would move the deadline past the answer already received and onto
/// one the responder may hold back for a second.
pub(crate) fn ask_again(
    daemon: &ServiceDaemon,
    shared: &Shared,
    instance: &str,
    timeout: Duration,
) {
    let now = Instant::now();
    {
        let mut t = shared.lock();
        t.asking.retain(|_, until| *until > now);
        if t.asking.contains_key(instance) {
            return;
        }
        t.asking.insert(instance.to_string(), after(timeout));
    }
    let _ = daemon.verify(instance.to_string(), timeout);
}

/// Why an announcement was ignored.
pub(crate) enum Reject {
    Malformed,
    Forged,
    Oversized,
    OtherGroup,
}

/// The IPv4 addresses of this host's interfaces that multicast DNS
/// announces on (up, not point-to-point, loopback included; loopback
/// last), as many as fit in one TXT field: what a signed announcement
/// vouches for, and the only ones it announces.
pub(crate) fn host_addresses() -> Vec<IpAddr> {
    let mut v: Vec<IpAddr> = if_addrs::get_if_addrs()
        .unwrap_or_default()
        .into_iter()
        .filter(|i| i.is_oper_up() && !i.is_p2p() && i.ip().is_ipv4())
        .map(|i| i.ip())
        .collect();
    v.sort_by_key(|ip| (ip.is_loopback(), *ip));
    v.dedup();
    let mut room = MAX_FIELD_BYTES;
    v.retain(|ip| {
        let len = ip.to_string().len() + 1;
        let fits = len <= room;
        if fits {
            room -= len;
        }
        fits
    });
    v
}

/// The multicast DNS record of one of our ports. With a secret it is
/// sealed now (instance, addresses and time signed) and carries exactly
/// the addresses signed; without one, the daemon fills in the addresses
/// of each interface, as before signatures covered them.
pub(crate) fn service_info(
    own: &Own,
    secret: Option<&[u8]>,
    probe: bool,
) -> crate::Result<(ServiceInfo, Option<u64>)> {
    let mut fields = own.fields.clone();
    let err = |e: mdns_sd::Error| Error::Mdns(e.to_string());
    let (info, time) = match secret {
        Some(secret) => {
            let ips = host_addresses();
            let time = unix_now();
            seal(secret, &mut fields, &own.label, &ips, time);
            let props: Vec<(String, String)> = fields.into_iter().collect();
            let info =
                ServiceInfo::new(SERVICE_TYPE, &own.label, &own.host, &ips[..], 0, &props[..])
                    .map_err(err)?;
            (info, Some(time))
        }
        None => {
            let props: Vec<(String, String)> = fields.into_iter().collect();
            let info = ServiceInfo::new(SERVICE_TYPE, &own.label, &own.host, "", 0, &props[..])
                .map_err(err)?
                .enable_addr_auto();
            (info, None)
        }
    };
    let mut info = info;
    if !probe {
        info.set_requires_probe(false);
    }
    Ok((info, time))
}

/// The instance name of a full name (`NODE/PORT#TAG` of
/// `NODE/PORT#TAG._ptmp._tcp.local.`), as the DNS label it is: a `.` in it
/// is written `\.` in the full name, a `\` as `\\`.
fn instance_label(fullname: &str) -> String {
    let name = wire_name(fullname);
    match name.strip_suffix(&format!(".{SERVICE_TYPE}")) {
        Some(label) => label.to_string(),
        None => name,
    }
}

/// Whether a peer says it is this very process (host, pid and start time).
fn claims_to_be_us(p: &Peer) -> bool {
    p.pid == std::process::id() && p.start == process_start() && p.host == host_name()
}

impl Worker {
    pub(crate) fn run(self, mut events: mdns_sd::Receiver<ServiceEvent>) {
        let mut next_check = after(self.config.liveness);
        let mut next_refresh = after(self.config.refresh_period());
        while !self.shared.stop.load(Ordering::Relaxed) {
            match events.recv_timeout(Duration::from_millis(200)) {
                Ok(ServiceEvent::ServiceResolved(s)) => self.resolved(&s),
                Ok(ServiceEvent::ServiceRemoved(_, fullname)) => self.removed(&fullname),
                Ok(_) => {}
                Err(mdns_sd::RecvTimeoutError::Timeout) => {}
                Err(mdns_sd::RecvTimeoutError::Disconnected) => {
                    // The daemon ends a subscription whose channel filled
                    // up (a burst of announcements): browse again rather
                    // than go deaf. If the daemon itself is gone, wait and
                    // retry until told to stop.
                    match self.daemon.browse(SERVICE_TYPE) {
                        Ok(fresh) => events = fresh,
                        Err(_) => std::thread::sleep(Duration::from_millis(500)),
                    }
                }
            }
            let now = Instant::now();
            if now >= next_refresh {
                next_refresh = after(self.config.refresh_period());
                self.refresh();
            }
            if now >= next_check {
                next_check = after(self.config.liveness);
                self.drop_stale();
                // RFC 6762 section 10.4: ask again, and flush what does not
                // answer in time (the daemon then reports it removed).
                let names: Vec<String> = {
                    let t = self.shared.lock();
                    t.peers.keys().chain(t.refused.keys()).cloned().collect()
                };
                for n in names {
                    ask_again(&self.daemon, &self.shared, &n, self.config.liveness_timeout);
                }
            }
        }
    }

    /// With a secret, signs our announcements again with the time now (and
    /// the addresses now), so that the others keep taking them as fresh.
    /// Under the table's lock, so that a withdrawal cannot be undone by a
    /// refresh sent after it.
    fn refresh(&self) {
        let Some(secret) = &self.config.secret else {
            return;
        };
        let t = self.shared.lock();
        for own in t.own.values().filter(|o| !o.withdrawn) {
            if let Ok((info, _)) = service_info(own, Some(secret), false) {
                let _ = self.daemon.register(info);
            }
        }
    }

    /// Drops the signed peers whose last signature is older than the
    /// freshness window: a dead node whose announcement someone keeps
    /// replaying (and answering for) is listed no longer than that.
    fn drop_stale(&self) {
        let oldest = unix_now().saturating_sub(self.config.max_age.as_secs());
        let stale: Vec<String> = {
            let mut t = self.shared.lock();
            let Table {
                last_signed, gone, ..
            } = &mut *t;
            last_signed.retain(|_, at| *at >= oldest);
            gone.retain(|g| last_signed.contains_key(g));
            t.peers
                .values()
                .chain(t.refused.values())
                .filter(|p| p.signed_at.is_some_and(|at| at < oldest))
                .map(|p| p.instance.clone())
                .collect()
        };
        for s in stale {
            self.removed(&s);
        }
    }

    fn count(&self, r: Reject) {
        let c = &self.shared.counters;
        match r {
            Reject::Malformed => &c.malformed,
            Reject::Forged => &c.forged,
            Reject::Oversized => &c.oversized,
            Reject::OtherGroup => &c.other_group,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    fn resolved(&self, s: &ResolvedService) {
        let peer = match self.read(s) {
            Ok(p) => p,
            Err(r) => {
                // A bad update of an instance already listed is ignored
                // like any other: the listed one stays, so a forger cannot
                // evict a genuine peer by reusing its instance name.
                self.count(r);
                return;
            }
        };
        // A record of this process that it did not make: ours, replayed
        // under another instance name. Never listed, never a rival.
        if claims_to_be_us(&peer) && !own_instances().contains(&peer.instance) {
            self.count(Reject::Forged);
            return;
        }
        let mut t = self.shared.lock();
        let t = &mut *t;
        if let Some(at) = peer.signed_at {
            // Signed before the last signature seen of this instance (or
            // not after it, once it left): a replay.
            if let Some(&last) = t.last_signed.get(&peer.instance) {
                let left = t.gone.contains(&peer.instance);
                if at < last || (left && at <= last) {
                    self.count(Reject::Forged);
                    return;
                }
            }
            t.gone.remove(&peer.instance);
            t.last_signed.insert(peer.instance.clone(), at);
        }
        if let Some(old) = t.peers.get(&peer.instance) {
            if old.name() == peer.name() {
                // A refresh of one already listed (addresses may change).
                t.peers.insert(peer.instance.clone(), peer.clone());
                self.settle_own(t, &peer);
                return;
            }
            let old = t.peers.remove(&peer.instance).unwrap_or(peer.clone());
            publish(t, &Event::Left(old));
        }
        if t.refused.contains_key(&peer.instance) {
            t.refused.insert(peer.instance.clone(), peer);
            return;
        }
        if t.peers.len() + t.refused.len() >= self.config.max_peers {
            self.shared
                .counters
                .table_full
                .fetch_add(1, Ordering::Relaxed);
            return;
        }
        let holder = t.peers.values().find(|p| p.name() == peer.name()).cloned();
        match holder {
            Some(kept) if kept.senior_to(&peer) => {
                self.refuse(t, kept, peer);
            }
            Some(junior) => {
                t.peers.remove(&junior.instance);
                publish(t, &Event::Left(junior.clone()));
                t.peers.insert(peer.instance.clone(), peer.clone());
                publish(t, &Event::Joined(peer.clone()));
                self.refuse(t, peer, junior);
            }
            None => {
                t.peers.insert(peer.instance.clone(), peer.clone());
                publish(t, &Event::Joined(peer));
            }
        }
        self.shared.changed.notify_all();
    }

    fn refuse(&self, t: &mut Table, kept: Peer, refused: Peer) {
        self.shared
            .counters
            .duplicates
            .fetch_add(1, Ordering::Relaxed);
        t.refused.insert(refused.instance.clone(), refused.clone());
        publish(
            t,
            &Event::Duplicate {
                kept: Box::new(kept.clone()),
                refused: Box::new(refused),
            },
        );
        self.settle_own(t, &kept);
    }

    /// When `kept` holds a name that one of our running announcements also
    /// claims, ours gives way only if `kept` is proved alive since ours
    /// began: signed with the secret at or after our first signature. An
    /// unsigned claim (no secret), or a signed one older than ours (a
    /// replay of a process that may be dead), is counted and reported as a
    /// duplicate but ends nothing: ours stays announced, and takes the name
    /// when the other leaves.
    fn settle_own(&self, t: &mut Table, kept: &Peer) {
        let Some(at) = kept.signed_at else { return };
        let ours: Vec<Peer> = t
            .refused
            .values()
            .filter(|r| r.name() == kept.name())
            .filter(|r| {
                t.own
                    .get(&r.instance)
                    .is_some_and(|o| !o.withdrawn && o.first_signed.is_some_and(|f| at >= f))
            })
            .cloned()
            .collect();
        for refused in ours {
            // Ours is the newcomer and the other one is alive: withdraw.
            if let Some(o) = t.own.get_mut(&refused.instance) {
                o.withdrawn = true;
                let _ = self.daemon.unregister(&o.registered);
            }
            t.own_refused.insert(
                refused.instance.clone(),
                Error::Duplicate {
                    name: refused.name(),
                    existing: kept.location(),
                    ours: refused.location(),
                },
            );
        }
    }

    pub(crate) fn removed(&self, fullname: &str) {
        let mut t = self.shared.lock();
        let t = &mut *t;
        t.refused.remove(fullname);
        if t.last_signed.contains_key(fullname) {
            t.gone.insert(fullname.to_string());
        }
        if let Some(p) = t.peers.remove(fullname) {
            publish(t, &Event::Left(p.clone()));
            // A newcomer refused while the holder was still listed (a node
            // killed and started again elsewhere before its death was
            // noticed here) gets the name now: the most senior one that
            // has not been withdrawn.
            let next = t
                .refused
                .values()
                .filter(|r| r.name() == p.name() && !t.own_refused.contains_key(&r.instance))
                .min_by(|a, b| (a.start, &a.instance).cmp(&(b.start, &b.instance)))
                .cloned();
            if let Some(n) = next {
                t.refused.remove(&n.instance);
                t.peers.insert(n.instance.clone(), n.clone());
                publish(t, &Event::Joined(n));
            }
            self.shared.changed.notify_all();
        }
    }

    /// Reads and checks one announcement.
    fn read(&self, s: &ResolvedService) -> std::result::Result<Peer, Reject> {
        let mut size = 0;
        let mut fields = BTreeMap::new();
        for p in s.txt_properties.iter() {
            let val = p.val().unwrap_or(&[]);
            size += 2 + p.key().len() + val.len();
            if val.len() > MAX_FIELD_BYTES {
                return Err(Reject::Oversized);
            }
            let Ok(v) = std::str::from_utf8(val) else {
                return Err(Reject::Malformed);
            };
            fields.insert(p.key().to_ascii_lowercase(), v.to_string());
        }
        if size > MAX_TXT_BYTES {
            return Err(Reject::Oversized);
        }
        let get = |k: &str| fields.get(k).cloned().ok_or(Reject::Malformed);
        if get("v")? != TXT_VERSION {
            return Err(Reject::Malformed);
        }
        let group = get("group")?;
        if group != self.config.group {
            return Err(Reject::OtherGroup);
        }
        let mut ips: Vec<IpAddr> = s.addresses.iter().map(|a| a.to_ip_addr()).collect();
        ips.sort();
        ips.dedup();
        let mut signed_at = None;
        if let Some(secret) = &self.config.secret {
            let label = instance_label(&s.fullname);
            let (at, signed_ips) =
                match check_sealed(secret, &fields, &label, unix_now(), self.config.max_age) {
                    Ok(x) => x,
                    Err(Untrusted::Unreadable) => return Err(Reject::Malformed),
                    Err(_) => return Err(Reject::Forged),
                };
            // Only the addresses signed are used: an address record that
            // the signature does not cover (rewritten by a replayer) is
            // not, and one with none of them left is forged.
            ips.retain(|ip| signed_ips.contains(ip));
            if ips.is_empty() {
                return Err(Reject::Forged);
            }
            signed_at = Some(at);
        }
        let node = get("node")?;
        let port = get("port")?;
        if name_problem("node", &node).is_some() || name_problem("port", &port).is_some() {
            return Err(Reject::Malformed);
        }
        let address = get("addr")?;
        let transport = get("transport")?;
        if address.split_once("://").map(|(t, _)| t) != Some(transport.as_str()) {
            return Err(Reject::Malformed);
        }
        let pid = get("pid")?.parse().map_err(|_| Reject::Malformed)?;
        let start = get("start")?.parse().map_err(|_| Reject::Malformed)?;
        let curve_key = match fields.get(CURVE_KEY_FIELD) {
            None => None,
            Some(k) if ptmp::curve::PublicKey::from_z85(k).is_some() => Some(k.clone()),
            Some(_) => return Err(Reject::Malformed),
        };
        Ok(Peer {
            node,
            port,
            address,
            transport,
            host: get("host")?,
            pid,
            start,
            group,
            version: TXT_VERSION.to_string(),
            instance: s.fullname.clone(),
            ips,
            signed_at,
            curve_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_label_is_read_back_from_its_full_name() {
        let info = ServiceInfo::new(SERVICE_TYPE, "a.b/out#0f", "h.local.", "", 0, None).unwrap();
        assert_eq!(instance_label(info.get_fullname()), "a.b/out#0f");
        assert_eq!(instance_label("x/y#1._ptmp._tcp.local."), "x/y#1");
    }
}
