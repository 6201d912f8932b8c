//! CURVE keys that travel with names: a `ptmp send` that binds a name as a
//! CURVE server announces its public key, and a `ptmp recv` on another
//! host (a network namespace) that connects by name with
//! `--curve-server-key announced` takes the key from the announcement,
//! signed with the group's secret, with no key copied by hand. Without the
//! secret the key is not trusted; a server that is not secured announces
//! none; and `announced` with an address instead of a name is refused.

mod common;
#[path = "lan/mod.rs"]
mod lan;

use common::proc::run;
use common::{text, PTMP};
use lan::Reaped;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn ptmp_in(ns: &str, args: &[&str]) -> Reaped {
    lan::spawn_in(ns, PTMP, args)
}

fn keys(dir: &Path) -> impl Fn(&str) -> String + '_ {
    for name in ["server", "client"] {
        let o = run(&["keys", "new", name, "--dir", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    move |f: &str| dir.join(f).display().to_string()
}

/// A sender of `n` sets binding `name://src/out` on `host` in `group`,
/// with `extra`.
fn sender(host: &str, group: &str, n: &str, extra: &[&str]) -> Reaped {
    let mut args = vec![
        "send",
        "-p",
        "PUSH",
        "-a",
        "bind",
        "-e",
        "name://src/out",
        "--discovery",
        group,
        "-n",
        n,
        "--rate",
        "400",
    ];
    args.extend_from_slice(extra);
    ptmp_in(host, &args)
}

/// A receiver connecting to `name://src/out` on `host` in `group`, taking
/// the server's key from the announcement, with `extra`.
fn receiver(host: &str, group: &str, client_secret: &str, extra: &[&str]) -> Reaped {
    let mut args = vec![
        "recv",
        "-p",
        "PULL",
        "-a",
        "connect",
        "-e",
        "name://src/out",
        "--discovery",
        group,
        "--name-timeout",
        "20",
        "--curve-secret",
        client_secret,
        "--curve-server-key",
        "announced",
        "-n",
        "400",
        "-T",
        "15000",
        "--json",
    ];
    args.extend_from_slice(extra);
    ptmp_in(host, &args)
}

#[test]
fn a_client_takes_the_server_key_from_a_signed_announcement() {
    let Some(lan) = lan::Lan::make(2, "cn") else {
        common::missing_part("a_client_takes_the_server_key_from_a_signed_announcement: cannot create network namespaces here (needs root and iproute2's `ip netns`)");
        return;
    };
    let (h0, h1) = (&lan.hosts[0], &lan.hosts[1]);
    let d = tempfile::tempdir().unwrap();
    let f = keys(d.path());
    let secret = d.path().join("group-secret");
    std::fs::write(&secret, "curve-by-name\n").unwrap();
    // A secret file is read only if it is private to its user.
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let secret = secret.to_str().unwrap();
    let (server, client) = (f("server.key_secret"), f("client.key"));
    let client_secret = f("client.key_secret");

    // Signed presence: every set arrives, over CURVE.
    let rx = receiver(h1, "cbn", &client_secret, &["--secret-file", secret]);
    let tx = sender(
        h0,
        "cbn",
        "400",
        &[
            "--secret-file",
            secret,
            "--curve-secret",
            &server,
            "--curve-allow",
            &client,
        ],
    );
    let o = rx.finish(Duration::from_secs(60), "recv by name over CURVE");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let last = text(&o.stdout);
    let s: Value = serde_json::from_str(last.lines().last().unwrap_or("")).unwrap_or_else(|_| {
        panic!(
            "no JSON summary\nstdout: {last}\nstderr: {}",
            text(&o.stderr)
        )
    });
    assert_eq!(
        (s["received"].as_u64(), s["lost"].as_u64()),
        (Some(400), Some(0)),
        "{s}"
    );
    let o = tx.finish(Duration::from_secs(30), "send by name as CURVE server");
    assert!(o.status.success(), "{}", text(&o.stderr));

    // Unsigned presence: the key could be anyone's, so it is not taken.
    let tx = sender(
        h0,
        "cbn2",
        "100000",
        &["--curve-secret", &server, "--curve-allow", &client],
    );
    let o =
        receiver(h1, "cbn2", &client_secret, &[]).finish(Duration::from_secs(60), "recv unsigned");
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("name://src/out") && e.contains("without a signature") && e.contains("secret"),
        "{e}"
    );
    drop(tx);

    // A server that is not secured announces no key: the client says so.
    let tx = sender(h0, "cbn3", "100000", &["--secret-file", secret]);
    let o = receiver(h1, "cbn3", &client_secret, &["--secret-file", secret])
        .finish(Duration::from_secs(60), "recv from a plain server");
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("carries no CURVE key"), "{e}");
    drop(tx);
    drop(lan);
}

#[test]
fn announced_needs_names_to_connect_to() {
    let d = tempfile::tempdir().unwrap();
    let f = keys(d.path());
    let o = run(&[
        "recv",
        "-p",
        "PULL",
        "-a",
        "connect",
        "-e",
        "tcp://127.0.0.1:5999",
        "--curve-secret",
        &f("client.key_secret"),
        "--curve-server-key",
        "announced",
    ]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("socket.curve.server_key")
            && e.contains("name://NODE/PORT")
            && e.contains("tcp://127.0.0.1:5999"),
        "{e}"
    );
}
