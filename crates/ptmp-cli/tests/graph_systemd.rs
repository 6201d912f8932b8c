//! `ptmp graph systemd`: the template unit it writes is one systemd
//! accepts (`systemd-analyze verify`, the real tool), and its command line,
//! run as systemd would run it (specifiers filled in, the state
//! directory made 0700, SIGINT to stop), runs the graph and stops it
//! cleanly. (Not yet under a systemd that is PID 1.) A carriage return
//! or line feed in a path or argument is escaped (the unit still
//! verifies), and `--out` never writes through a symbolic link planted
//! where the unit goes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{finish, node_in, text, wait_for, PTMP};

const LIMIT: Duration = Duration::from_secs(60);

/// The value of `key=` in the unit's text.
fn setting<'a>(unit: &'a str, key: &str) -> &'a str {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in\n{unit}"))
}

/// ExecStart's words as systemd hands them over, for instance `host`
/// with state directory root `t` (`%S`; the words here need no
/// unquoting).
fn exec_words(unit: &str, host: &str, t: &Path) -> Vec<String> {
    setting(unit, "ExecStart")
        .split_whitespace()
        .map(|w| {
            w.replace("%i", host)
                .replace("%S", &t.to_string_lossy())
                .replace("%%", "%")
                .replace("$$", "$")
        })
        .collect()
}

#[test]
fn the_unit_verifies_and_its_command_runs_and_stops_the_graph_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chain-graph.jsonnet");
    let name = format!("sd-{}", std::process::id());
    let o = Command::new(PTMP)
        .args(["graph", "systemd"])
        .arg(&example)
        .args(["-A", &format!("name={name}")])
        .args(["--tla-code", "n=1000000", "--tla-code", "rate=2000"])
        .arg("--out")
        .arg(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let file = d.path().join(format!("ptmp-graph-{name}@.service"));
    let unit = std::fs::read_to_string(&file).unwrap();
    let state_dir = format!("ptmp-graph-{name}-%i");
    for (k, v) in [
        ("KillSignal", "SIGINT"),
        ("KillMode", "mixed"),
        ("Restart", "on-failure"),
        ("StateDirectory", state_dir.as_str()),
        ("StateDirectoryMode", "0700"),
        ("RestartPreventExitStatus", "2"),
        ("StandardError", "journal"),
    ] {
        assert_eq!(setting(&unit, k), v, "{unit}");
    }
    // Above the supervisor's stop bound: 15 s a part, seven parts.
    let stop: u64 = setting(&unit, "TimeoutStopSec")
        .trim_end_matches('s')
        .parse()
        .unwrap();
    assert!(stop > 7 * 15, "{unit}");

    // systemd's own reading of the unit, as an instance for host localhost.
    let instance = d
        .path()
        .join(format!("ptmp-graph-{name}@localhost.service"));
    std::fs::copy(&file, &instance).unwrap();
    match Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&instance)
        .output()
    {
        Err(_) => common::missing_part("systemd-analyze is not installed (Debian package systemd)"),
        Ok(v) => {
            let said = text(&v.stderr) + &text(&v.stdout);
            let ours: Vec<&str> = said
                .lines()
                .filter(|l| l.contains(&format!("ptmp-graph-{name}@")))
                .collect();
            assert!(v.status.success() && ours.is_empty(), "{said}");
        }
    }

    // The command line, run as systemd runs it.
    let runtime = d.path().join("run");
    std::fs::create_dir(&runtime).unwrap();
    let words = exec_words(&unit, "localhost", &runtime);
    let rd = runtime.join(format!("ptmp-graph-{name}-localhost"));
    std::fs::create_dir(&rd).unwrap();
    std::fs::set_permissions(&rd, std::fs::Permissions::from_mode(0o700)).unwrap();
    let sup = Command::new(&words[0])
        .args(&words[1..])
        .current_dir("/")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "sink", "sink").filter(|n| *n > 50)
    });
    // SAFETY: kill sends the unit's KillSignal to the process this test
    // started.
    unsafe { libc::kill(sup.id() as i32, libc::SIGINT) };
    let o = finish(sup, Duration::from_secs(stop));
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("stopping: interrupted"), "{err}");
    // The sink wrote into the run directory, the state directory's.
    assert!(rd.join("chain-graph.dump").exists(), "{err}");
}

/// `systemd-analyze verify` on `unit`, as an instance for host localhost
/// (copied next to it): what it said about the unit when it refused it.
fn verify(unit: &Path, name: &str) -> Option<String> {
    let instance = unit.with_file_name(format!("ptmp-graph-{name}@localhost.service"));
    std::fs::copy(unit, &instance).unwrap();
    let v = match Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&instance)
        .output()
    {
        Err(_) => {
            common::missing_part("systemd-analyze is not installed (Debian package systemd)");
            return None;
        }
        Ok(v) => v,
    };
    let said = text(&v.stderr) + &text(&v.stdout);
    let ours = said
        .lines()
        .any(|l| l.contains(&format!("ptmp-graph-{name}@")));
    (!v.status.success() || ours).then_some(said)
}

/// A carriage return (which systemd reads as a line's end) and a line
/// feed in a Jsonnet argument and a path are written as escapes inside
/// the word: the unit has one line per directive, and systemd verifies it.
#[test]
fn control_characters_in_arguments_are_escaped_and_the_unit_verifies() {
    let d = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chain-graph.jsonnet");
    let name = format!("sdcr-{}", std::process::id());
    let lib = d.path().join("lib\rExecStartPre=false");
    std::fs::create_dir(&lib).unwrap();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = Command::new(PTMP)
        .args(["graph", "systemd"])
        .arg(&example)
        .args(["-A", &format!("name={name}")])
        .args(["-V", "note=a\rExecStartPost=/bin/false\nb\tc"])
        .arg("-J")
        .arg(&lib)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let file = out.join(format!("ptmp-graph-{name}@.service"));
    let unit = std::fs::read_to_string(&file).unwrap();
    assert!(!unit.contains('\r') && !unit.contains('\t'), "{unit:?}");
    assert!(!unit.lines().any(|l| l.starts_with("ExecStartP")), "{unit}");
    let exec = setting(&unit, "ExecStart");
    assert!(
        exec.contains(r#""note=a\rExecStartPost=/bin/false\nb\tc""#),
        "{exec}"
    );
    assert!(exec.contains(r#"lib\rExecStartPre=false""#), "{exec}");
    if let Some(said) = verify(&file, &name) {
        panic!("systemd refused the unit: {said}\n{unit}");
    }
}

/// `--out DIR` where a link named as the unit points at another file (a
/// shared directory, someone else's link): nothing is written through it,
/// the file it points to is untouched, and the error names the path.
#[test]
fn out_never_writes_through_a_planted_link() {
    let d = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chain-graph.jsonnet");
    let name = format!("sdln-{}", std::process::id());
    let victim = d.path().join("victim");
    std::fs::write(&victim, "root's file\n").unwrap();
    let out = d.path().join("shared");
    std::fs::create_dir(&out).unwrap();
    let file = out.join(format!("ptmp-graph-{name}@.service"));
    std::os::unix::fs::symlink(&victim, &file).unwrap();
    let run = || {
        Command::new(PTMP)
            .args(["graph", "systemd"])
            .arg(&example)
            .args(["-A", &format!("name={name}")])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    let o = run();
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file\n");
    assert!(std::fs::symlink_metadata(&file)
        .unwrap()
        .file_type()
        .is_symlink());

    // A link where the unit's temporary file goes is removed, not
    // followed; the unit itself is written.
    std::fs::remove_file(&file).unwrap();
    let tmp = out.join(format!("ptmp-graph-{name}@.service.tmp"));
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    let o = run();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file\n");
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("[Service]"));
    assert!(!tmp.exists());
    // Written again over the unit it wrote: replaced, as an update.
    let o = run();
    assert!(o.status.success(), "{}", text(&o.stderr));
}
