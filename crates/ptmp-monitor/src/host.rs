//! Which server a request names in its `Host` header, and whether that is
//! this one.
//!
//! A page of another site can make a browser ask the monitor for its data
//! by DNS rebinding: its name (`evil.example`) first resolves to the
//! attacker's server, then to 127.0.0.1, and the browser, taking both for
//! one site, lets the page read what the monitor answers. The browser
//! still sends `Host: evil.example:PORT`, so the monitor answers only
//! requests naming it:
//!
//! * loopback names: `localhost`, any address of 127/8, `[::1]`;
//! * the address it is bound to, and the address the connection came in
//!   on (for a server bound to `0.0.0.0`, each of this host's addresses);
//! * served on an address other than loopback, this host's own name (as
//!   `/proc/sys/kernel/hostname` gives it, and its first label when that
//!   has dots), so that users elsewhere reach it by name;
//! * the names given with [`Options::host_names`](crate::Options) (a DNS
//!   alias, a name behind a proxy).
//!
//! The port in the header is not compared (a proxy may change it); names
//! are compared without case and without one trailing dot. A request
//! without `Host` is answered when it is HTTP/1.0 (no browser sends one
//! without it, and old tools do); HTTP/1.1 requires one, so its absence
//! there, like two `Host` headers, is refused with 400.

use hyper::header::HOST;
use hyper::{Request, Version};
use std::net::IpAddr;

/// The names this server answers for, besides the addresses.
pub(crate) struct Names {
    /// The address listened on (unspecified for `0.0.0.0` or `[::]`).
    bound: IpAddr,
    /// Lower case, without a trailing dot.
    names: Vec<String>,
}

/// Why a request's host is refused.
pub(crate) enum Refused {
    /// A host that is not this server's (421); the value as sent.
    Other(String),
    /// HTTP/1.1 without `Host`, or more than one (400); what was wrong.
    Malformed(&'static str),
}

impl Names {
    /// The names of a server bound to `bound`, with `extra` names given.
    pub fn new(bound: IpAddr, extra: &[String]) -> Names {
        let mut names = vec!["localhost".to_string()];
        if !bound.to_canonical().is_loopback() {
            if let Some(h) = this_host() {
                if let Some((short, _)) = h.split_once('.') {
                    names.push(short.to_string());
                }
                names.push(h);
            }
        }
        names.extend(extra.iter().map(|n| canonical(n)));
        names.retain(|n| !n.is_empty());
        Names { bound, names }
    }

    /// Whether `req`, which came in on the connection's own address
    /// `local`, names this server.
    pub fn check<B>(&self, req: &Request<B>, local: IpAddr) -> Result<(), Refused> {
        let mut hosts = req.headers().get_all(HOST).iter();
        let host = hosts.next();
        if hosts.next().is_some() {
            return Err(Refused::Malformed("more than one Host header"));
        }
        // The absolute form (`GET http://HOST/ ...`) names its host too.
        if let Some(a) = req.uri().authority() {
            if !self.allows(a.as_str(), local) {
                return Err(Refused::Other(a.as_str().to_string()));
            }
        }
        match host {
            Some(h) => {
                let text = String::from_utf8_lossy(h.as_bytes());
                if self.allows(&text, local) {
                    Ok(())
                } else {
                    Err(Refused::Other(text.into_owned()))
                }
            }
            None if req.version() <= Version::HTTP_10 => Ok(()),
            None => Err(Refused::Malformed("no Host header (HTTP/1.1 requires one)")),
        }
    }

    /// Whether the `Host` value `host` (`NAME`, `NAME:PORT`, `[V6]:PORT`)
    /// names this server.
    fn allows(&self, host: &str, local: IpAddr) -> bool {
        let Some(name) = strip_port(host.trim()) else {
            return false;
        };
        if let Ok(ip) = name.parse::<IpAddr>() {
            let ip = ip.to_canonical();
            return ip.is_loopback()
                || (!self.bound.is_unspecified() && ip == self.bound.to_canonical())
                || ip == local.to_canonical();
        }
        let name = canonical(name);
        !name.is_empty() && self.names.contains(&name)
    }
}

/// The host part of a `Host` value: `[V6]` without its brackets, or what
/// comes before `:PORT`; None when malformed (a port that is no number, an
/// IPv6 address without brackets, a bracket not closed).
fn strip_port(host: &str) -> Option<&str> {
    let port_ok = |p: &str| p.is_empty() || p.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = host.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(p) if port_ok(p) => Some(v6),
            None if after.is_empty() => Some(v6),
            _ => None,
        };
    }
    match host.split_once(':') {
        Some((h, p)) if port_ok(p) => Some(h),
        Some(_) => None,
        None => Some(host),
    }
}

/// A name as compared: lower case, one trailing dot dropped.
fn canonical(name: &str) -> String {
    let n = name.trim().to_ascii_lowercase();
    n.strip_suffix('.').map(str::to_string).unwrap_or(n)
}

/// This host's name, as the kernel has it.
fn this_host() -> Option<String> {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let h = canonical(&h);
    (!h.is_empty()).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(host: Option<&str>, v: Version) -> Request<()> {
        let mut b = Request::builder().uri("/api/state").version(v);
        if let Some(h) = host {
            b = b.header(HOST, h);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn loopback_names_and_addresses_only() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let n = Names::new(lo, &["Daq-Alias.example.org.".to_string()]);
        for good in [
            "localhost",
            "LOCALHOST:9464",
            "localhost.:80",
            "127.0.0.1:9464",
            "127.3.2.1",
            "[::1]:9464",
            "[::1]",
            "[::ffff:127.0.0.1]:1",
            "daq-alias.example.org:443",
        ] {
            assert!(
                n.check(&req(Some(good), Version::HTTP_11), lo).is_ok(),
                "{good}"
            );
        }
        for bad in [
            "evil.example:9464",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "10.1.2.3:9464",
            "::1",
            "[::1",
            "localhost:x",
            "",
            "daq-alias",
        ] {
            assert!(
                matches!(n.check(&req(Some(bad), Version::HTTP_11), lo), Err(Refused::Other(h)) if h == bad),
                "{bad}"
            );
        }
        assert!(n.check(&req(None, Version::HTTP_10), lo).is_ok());
        assert!(matches!(
            n.check(&req(None, Version::HTTP_11), lo),
            Err(Refused::Malformed(_))
        ));
        let two = Request::builder()
            .header(HOST, "localhost")
            .header(HOST, "localhost")
            .body(())
            .unwrap();
        assert!(matches!(n.check(&two, lo), Err(Refused::Malformed(_))));
        let abs = Request::builder()
            .uri("http://evil.example:1/api/state")
            .header(HOST, "localhost")
            .body(())
            .unwrap();
        assert!(matches!(n.check(&abs, lo), Err(Refused::Other(h)) if h == "evil.example:1"));
    }

    #[test]
    fn bound_elsewhere_the_address_reached_and_this_hosts_name() {
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        let at: IpAddr = "10.1.2.3".parse().unwrap();
        let n = Names::new(any, &[]);
        let ok = |h: &str| n.check(&req(Some(h), Version::HTTP_11), at).is_ok();
        assert!(ok("10.1.2.3:9464"));
        assert!(ok("127.0.0.1:9464"));
        assert!(!ok("10.1.2.4:9464"));
        assert!(!ok("0.0.0.0:9464"));
        assert!(!ok("evil.example:9464"));
        if let Some(h) = this_host() {
            assert!(ok(&format!("{}:9464", h.to_uppercase())), "{h}");
            assert!(!ok(&format!("{h}.evil.example:9464")), "{h}");
        }
        let bound: IpAddr = "10.9.9.9".parse().unwrap();
        let n = Names::new(bound, &[]);
        assert!(n
            .check(&req(Some("10.9.9.9"), Version::HTTP_11), bound)
            .is_ok());
    }
}
