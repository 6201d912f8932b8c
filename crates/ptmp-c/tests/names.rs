//! Presence from C (`ptmp_use_discovery`) and C++ (`ptmp::use_discovery`):
//! the refused arguments and a name that never appears, then C programs in
//! separate network namespaces standing for hosts finding each other, and
//! `ptmp send`, by name.

mod common;
// The namespaces of the CLI's own tests by name: hosts on one bridge,
// where multicast DNS reaches them all.
#[path = "../../ptmp-cli/tests/lan/mod.rs"]
mod lan;

use common::{assert_ok, compile, compile_cpp, try_compile};
use lan::{Lan, Reaped};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `exe args` run in namespace `ns`.
fn run_in(ns: &str, exe: &Path, args: &[&str]) -> Reaped {
    lan::spawn_in(ns, exe, args)
}

fn make_lan(count: usize, tag: &str, test: &str) -> Option<Lan> {
    let lan = Lan::make(count, tag);
    if lan.is_none() {
        common::missing_part(&format!(
            "{test}: cannot create network namespaces here (needs root and iproute2's `ip netns`)"
        ));
    }
    lan
}

/// Runs the error checks of `names.c` (no namespace needed: nobody
/// announces the name it looks for).
fn error_checks(exe: &Path, dir: &Path) {
    let o = Command::new(exe).arg("errors").arg(dir).output().unwrap();
    assert_ok("C presence error checks", &o);
    let out = text(&o.stdout);
    assert!(out.contains("0 failures"), "{out}");
    // The messages themselves, as a C caller reads them.
    assert!(
        out.contains("second call: -9 ptmp_use_discovery: presence for names is already on"),
        "{out}"
    );
    assert!(
        out.contains("ghost: -4 ptmp_receiver_new: cannot connect name://ghost/out")
            && out.contains("no peer announced ghost/out in group \"cnames\" within 1s"),
        "{out}"
    );
    assert!(
        out.contains("name without presence: -4 ") && out.contains("presence on the network"),
        "{out}"
    );
    assert!(
        out.contains("run, bad discovery key: -3 ") && out.contains("discovery.grup: unknown key"),
        "{out}"
    );
    assert!(
        out.contains("run, other group: -3 ")
            && out.contains("already on in this process with group \"cnames\""),
        "{out}"
    );
}

/// `ptmp_run_start` of agents whose config asks for presence with its
/// `"discovery"` key: the source binds a name, the sink connects to it,
/// and every set arrives; the name goes when the agents end.
#[test]
fn a_run_whose_config_asks_for_presence_connects_by_name() {
    let test = "a_run_whose_config_asks_for_presence_connects_by_name";
    let Some(lan) = make_lan(1, "cr", test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("names", dir.path());
    let o = run_in(&lan.hosts[0], &exe, &["run", "crun", "500"])
        .finish(Duration::from_secs(60), "C run by name");
    assert_ok("C run by name", &o);
    let out = text(&o.stdout);
    assert!(
        out.contains("run by name: 0 ok") && out.contains("names after the run: 0"),
        "{out}"
    );
}

/// `ptmp_sender_new` and `ptmp_receiver_new` whose JSON configs turn
/// presence on with their own `"discovery"` key (no `ptmp_use_discovery`):
/// a sender binding a name and a receiver in another process connecting to
/// it exchange every set; a wrong key, `announce`, and another group than
/// the one on are refused naming the key.
#[test]
fn sockets_whose_config_has_a_discovery_key_connect_by_name() {
    let test = "sockets_whose_config_has_a_discovery_key_connect_by_name";
    let Some(lan) = make_lan(1, "ck", test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("names", dir.path());
    let rx = run_in(&lan.hosts[0], &exe, &["keyrecv", "ckey", "200"]);
    let tx = run_in(&lan.hosts[0], &exe, &["keysend", "ckey", "200"]);
    let t = tx.finish(Duration::from_secs(60), "C keyed sender");
    assert_ok("C sender with a discovery key", &t);
    let out = text(&t.stdout);
    assert!(
        out.contains("1 name(s) announced") && out.contains("sent 200"),
        "{out}"
    );
    let r = rx.finish(Duration::from_secs(60), "C keyed receiver");
    assert_ok("C receiver with a discovery key", &r);
    let out = text(&r.stdout);
    assert!(
        out.contains("keyed receiver received 200") && out.contains("0 failures"),
        "{out}"
    );
    assert!(
        out.contains("keyed, bad key: -3 ") && out.contains("discovery.grup: unknown key"),
        "{out}"
    );
    assert!(
        out.contains("keyed, announce: -3 ") && out.contains("name://NODE/PORT"),
        "{out}"
    );
    assert!(
        out.contains("keyed, other group: -3 ")
            && out.contains("already on in this process with group \"ckey\""),
        "{out}"
    );
}

#[test]
fn bad_arguments_a_second_call_and_a_missing_name_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    error_checks(&compile("names", dir.path()), dir.path());
    match try_compile("names", dir.path(), common::SANITIZE) {
        Ok(exe) => error_checks(&exe, dir.path()),
        Err(e) if common::no_sanitizer_runtime(&e) => {
            common::missing_part(&format!("sanitizers are not available here:\n{e}"));
        }
        Err(e) => panic!("{e}"),
    }
}

/// The C++ wrapper: its refusals, then a sender bound by name and a
/// receiver connected to it by name in one process. In a namespace of its
/// own where namespaces can be made; otherwise on this host's network,
/// in a group no other run uses.
#[test]
fn cpp_use_discovery_refusals_and_a_name_in_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_cpp("names", dir.path());
    let group = format!("cpp{}", std::process::id());
    let lan = Lan::make(1, "cc");
    let child = match &lan {
        Some(lan) => run_in(&lan.hosts[0], &exe, &[&group]),
        None => Reaped(
            Command::new(&exe)
                .arg(&group)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        ),
    };
    let o = child.finish(Duration::from_secs(60), "C++ names");
    assert_ok("C++ names", &o);
    let out = text(&o.stdout);
    assert!(
        out.contains("received 20 by name") && out.contains("0 failures"),
        "{out}"
    );
    assert!(out.contains("NUL byte at offset 1"), "{out}");
    assert!(
        out.contains("error -9: ptmp_use_discovery: presence for names is already on"),
        "{out}"
    );
}

#[test]
fn c_programs_find_each_other_and_ptmp_send_by_name() {
    let test = "c_programs_find_each_other_and_ptmp_send_by_name";
    let Some(lan) = make_lan(2, "cn", test) else {
        return;
    };
    let (h0, h1) = (&lan.hosts[0], &lan.hosts[1]);
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("names", dir.path());
    let key = dir.path().join("key");
    std::fs::write(&key, "c-names-secret\n").unwrap();
    // A secret file is read only if it is private to its user.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let key = key.to_str().unwrap();

    // A C sender binding by name, a C receiver connecting by name, on two
    // hosts; both signed with the same secret.
    let rx = run_in(h1, &exe, &["recv", "cnames", key, "300", "5", "2"]);
    let tx = run_in(h0, &exe, &["send", "cnames", key, "300"]);
    let t = tx.finish(Duration::from_secs(60), "C sender");
    assert_ok("C sender by name", &t);
    assert!(text(&t.stdout).contains("1 name(s) announced"));
    let r = rx.finish(Duration::from_secs(60), "C receiver");
    assert_ok("C receiver by name", &r);
    let out = text(&r.stdout);
    assert!(
        out.contains("received 300") && out.contains("0 failures"),
        "{out}"
    );

    // The name comes back from another host: a C receiver connected to
    // it follows, and gets every set of both senders in order.
    let rx = run_in(h1, &exe, &["follow", "cnames", key, "100", "150"]);
    let tx = run_in(h0, &exe, &["send", "cnames", key, "100"]);
    assert_ok(
        "first C sender",
        &tx.finish(Duration::from_secs(60), "first C sender"),
    );
    let tx = run_in(h1, &exe, &["send", "cnames", key, "150"]);
    assert_ok(
        "second C sender",
        &tx.finish(Duration::from_secs(60), "second C sender"),
    );
    let r = rx.finish(Duration::from_secs(60), "C receiver following");
    assert_ok("C receiver following the name", &r);
    let out = text(&r.stdout);
    assert!(
        out.contains("received 250") && out.contains("0 failures"),
        "{out}"
    );

    // `ptmp send` binding the name, when cargo built it beside the library.
    let ptmp = common::lib_dir().join("ptmp");
    if !ptmp.exists() {
        common::missing_part(&format!(
            "{} is not built (cargo build -p ptmp-cli); the ptmp send round of {test} needs it",
            ptmp.display()
        ));
        return;
    }
    let rx = run_in(h1, &exe, &["recv", "cnames", key, "200", "9", "3"]);
    let tx = run_in(
        h0,
        &ptmp,
        &[
            "send",
            "-p",
            "PUSH",
            "-a",
            "bind",
            "-e",
            "name://src/out",
            "--discovery",
            "cnames",
            "--secret-file",
            key,
            "-n",
            "200",
            "-N",
            "3",
            "-d",
            "9",
        ],
    );
    let t = tx.finish(Duration::from_secs(60), "ptmp send");
    assert!(t.status.success(), "{}", text(&t.stderr));
    let r = rx.finish(Duration::from_secs(60), "C receiver");
    assert_ok("C receiver of ptmp send", &r);
    let out = text(&r.stdout);
    assert!(
        out.contains("received 200") && out.contains("0 failures"),
        "{out}"
    );
    drop(lan);
}
