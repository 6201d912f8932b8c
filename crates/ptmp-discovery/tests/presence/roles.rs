//! The processes the tests start: this binary re-executed with
//! `PTMP_DISC_ROLE` set (see `presence.rs`).

use ptmp_discovery::{seal, sign, Config, Discovery, Event, PortSpec, SERVICE_TYPE};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::mpsc;
use std::time::Duration;

fn config_from_env() -> Config {
    let mut c = Config::default();
    if let Ok(g) = std::env::var("GROUP") {
        c.group = g;
    }
    if let Ok(s) = std::env::var("SECRET") {
        c.secret = Some(s.into_bytes());
    }
    if let Ok(s) = std::env::var("SETTLE_MS") {
        c.settle = Duration::from_millis(s.parse().unwrap());
    }
    if let Ok(s) = std::env::var("MAX_AGE_S") {
        c.max_age = Duration::from_secs(s.parse().unwrap());
    }
    c
}

/// A channel that says when stdin closed (the test's way to stop a role).
fn stdin_closed() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        wait_stdin_closed();
        let _ = tx.send(());
    });
    rx
}

fn wait_stdin_closed() {
    let mut buf = [0u8; 64];
    while std::io::stdin()
        .read(&mut buf)
        .map(|n| n > 0)
        .unwrap_or(false)
    {}
}

/// Announces NODE's PORTS (`name=address,...`) until stdin closes.
pub fn role_announce() {
    let d = Discovery::start(config_from_env()).unwrap();
    let node = std::env::var("NODE").unwrap();
    let ports: Vec<PortSpec> = std::env::var("PORTS")
        .unwrap()
        .split(',')
        .map(|p| {
            let (n, a) = p.split_once('=').unwrap();
            PortSpec {
                name: n.into(),
                address: a.into(),
                curve_key: None,
            }
        })
        .collect();
    let events = d.subscribe();
    match d.announce(&node, &ports) {
        Ok(a) => {
            println!("announced");
            // Until stdin closes: says if the announcement was withdrawn,
            // each new count of forged announcements it ignored, and each
            // duplicate seen with what it did about it (decided before
            // the event is sent).
            let closed = stdin_closed();
            let (mut withdrawn, mut forged) = (false, 0);
            while closed.try_recv().is_err() {
                while let Ok(e) = events.try_recv() {
                    if let Event::Duplicate { kept, refused } = e {
                        let done = if a.refused().is_some() {
                            "withdrawn"
                        } else {
                            "announced"
                        };
                        println!(
                            "duplicate kept pid {} refused pid {} {done}",
                            kept.pid, refused.pid
                        );
                    }
                }
                if let Some(e) = a.refused().filter(|_| !withdrawn) {
                    println!("withdrawn: {e}");
                    withdrawn = true;
                }
                if d.counters().forged != forged {
                    forged = d.counters().forged;
                    println!("forged {forged}");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            drop(a);
        }
        Err(e) => {
            println!("refused: {e}");
            std::process::exit(3);
        }
    }
}

/// Registers one `_ptmp._tcp` instance with exactly the TXT entries in
/// TXT (`k=v;k=v`), signed with SIGN_WITH if set, straight through
/// multicast DNS: what a hostile or broken peer could send.
pub fn role_raw() {
    let daemon = mdns_sd::ServiceDaemon::new().unwrap();
    daemon.disable_interface(mdns_sd::IfKind::IPv6).unwrap();
    let mut fields: BTreeMap<String, String> = std::env::var("TXT")
        .unwrap()
        .split(';')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    if let Ok(big) = std::env::var("PAD") {
        // Several fields under 255 bytes each, too many bytes in all.
        for i in 0..big.parse::<usize>().unwrap() {
            fields.insert(format!("pad{i}"), "x".repeat(190));
        }
    }
    let instance = std::env::var("INSTANCE").unwrap();
    // Explicit address records (ADDRS, comma separated), or the daemon's.
    let addrs: Vec<std::net::IpAddr> = std::env::var("ADDRS")
        .map(|a| a.split(',').map(|s| s.parse().unwrap()).collect())
        .unwrap_or_default();
    if let Ok(s) = std::env::var("SIGN_WITH") {
        if std::env::var("OLD_SIGNATURE").is_ok() {
            // Signed as ptmp did before signatures had a version.
            let sig = sign(s.as_bytes(), &fields);
            fields.insert("sig".into(), sig);
        } else {
            let age: u64 = std::env::var("AGE_S").map_or(0, |a| a.parse().unwrap());
            let ips = if addrs.is_empty() {
                vec!["127.0.0.1".parse().unwrap()]
            } else {
                addrs.clone()
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            seal(s.as_bytes(), &mut fields, &instance, &ips, now - age);
        }
    }
    let props: Vec<(String, String)> = fields.into_iter().collect();
    let host = format!("raw-{}.local.", std::process::id());
    let mut info = if addrs.is_empty() {
        mdns_sd::ServiceInfo::new(SERVICE_TYPE, &instance, &host, "", 0, &props[..])
            .unwrap()
            .enable_addr_auto()
    } else {
        mdns_sd::ServiceInfo::new(SERVICE_TYPE, &instance, &host, &addrs[..], 0, &props[..])
            .unwrap()
    };
    if std::env::var("NOPROBE").is_ok() {
        info.set_requires_probe(false);
    }
    daemon.register(info).unwrap();
    println!("registered");
    wait_stdin_closed();
}

/// Sends numbered TPSets (from FIRST on, one every 20 ms) from a PUSH
/// socket bound on 127.0.0.1:TCP (or HOST:TCP), announced as NODE's port
/// `out` (at ANNOUNCE_AS if set), until stdin closes; without NODE, not
/// announced.
pub fn role_sendann() {
    let d = Discovery::start(config_from_env()).unwrap();
    let host = std::env::var("HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let addr = format!("tcp://{host}:{}", std::env::var("TCP").unwrap());
    let cfg =
        ptmp::SocketConfig::new(ptmp::SocketType::Push, ptmp::Attach::Bind, &[&addr]).unwrap();
    let mut tx = ptmp::Sender::new(cfg).unwrap();
    let ann = std::env::var("NODE").ok().map(|node| {
        let address = std::env::var("ANNOUNCE_AS").unwrap_or(addr);
        let a = d.announce(
            &node,
            &[PortSpec {
                name: "out".into(),
                address,
                curve_key: None,
            }],
        );
        a.unwrap()
    });
    println!("announced");
    let closed = stdin_closed();
    let mut i: u32 = std::env::var("FIRST").unwrap().parse().unwrap();
    while closed.try_recv().is_err() {
        let t = ptmp::TPSet {
            count: i,
            ..Default::default()
        };
        // A PUSH with no peer waits: a short wait, then look at stdin again.
        if tx.send_within(&t, Duration::from_millis(100)).unwrap() {
            i += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    drop(ann);
}

/// Prints events and counter changes, one a line, until stdin closes.
pub fn role_watch() {
    let d = Discovery::start(config_from_env()).unwrap();
    let rx = d.subscribe();
    println!("watching");
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        wait_stdin_closed();
        let _ = done_tx.send(());
    });
    while done_rx.try_recv().is_err() {
        if let Ok(e) = rx.recv_timeout(Duration::from_millis(100)) {
            println!("{}", describe(&e));
        }
    }
}

fn describe(e: &Event) -> String {
    match e {
        Event::Joined(p) => format!(
            "joined {} {} pid {} ips {:?}",
            p.name(),
            p.endpoint(),
            p.pid,
            p.ips
        ),
        Event::Left(p) => format!("left {} pid {}", p.name(), p.pid),
        Event::Duplicate { kept, refused } => {
            format!(
                "duplicate {} kept pid {} refused pid {}",
                kept.name(),
                kept.pid,
                refused.pid
            )
        }
    }
}
