//! The help texts: the shared -e option names every transport, and no help
//! text names a source by an internal number (a numbered document or
//! ticket) instead of saying what it is.

use std::process::Command;

const PTMP: &str = env!("CARGO_BIN_EXE_ptmp");

fn help(args: &[&str]) -> String {
    let out = Command::new(PTMP)
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "ptmp {args:?} --help failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn endpoints_option_names_shm() {
    for cmd in ["send", "recv"] {
        // The option's paragraph: its line and the indented lines after it.
        let h = help(&[cmd]);
        let para: Vec<&str> = h
            .lines()
            .skip_while(|l| !l.contains("--endpoints"))
            .take_while(|l| !l.trim().is_empty())
            .collect();
        let para = para.join(" ");
        assert!(para.contains("--endpoints"), "ptmp {cmd} --help:\n{h}");
        assert!(para.contains("shm://"), "{para}");
    }
}

#[test]
fn no_internal_shorthand_in_help() {
    let cmds: &[&[&str]] = &[
        &[],
        &["bench"],
        &["bench", "throughput"],
        &["bench", "tuning"],
        &["bench", "latency"],
        &["bench", "ring"],
        &["bench", "babus"],
        &["bench", "baseline"],
        &["bench", "jitter"],
        &["bench", "fanout"],
        &["bench", "agents"],
        &["butterfly"],
        &["graph"],
        &["run"],
        &["cat"],
        &["sendrecv"],
    ];
    for c in cmds {
        let h = help(c).to_lowercase();
        for bad in ["seed 0", "seed0", "issue "] {
            assert!(!h.contains(bad), "ptmp {c:?} --help says {bad:?}:\n{h}");
        }
    }
}
