//! The help texts: the shared -e option names every transport, and no help
//! text names a source by an internal number (a numbered document or
//! ticket) instead of saying what it is.

use std::process::Command;

mod common;
use common::PTMP;

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
        &["bench", "peers"],
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

/// Every `ptmp ...` line in the README's shell examples is a command line
/// `ptmp` accepts: each is run with `--help` appended, so unknown options,
/// bad values of the options before it and misspelt subcommands fail
/// without starting anything.
#[test]
fn readme_command_lines_parse() {
    let readme = include_str!("../../../README.md");
    let mut checked = 0;
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        let line = line.trim();
        if !in_sh || !line.starts_with("ptmp ") {
            continue;
        }
        let words = shell_words(line);
        let out = Command::new(PTMP)
            .args(&words[1..])
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README line {line:?} is not a valid ptmp command line:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        checked += 1;
    }
    assert!(
        checked >= 20,
        "only {checked} ptmp lines found in the README"
    );
}

/// The words of a shell line up to a comment, pipe, redirection or `&`,
/// with single and double quotes removed (enough for the README's lines).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut w = String::new();
    let mut quote = None;
    let mut has = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => w.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                has = true;
            }
            (None, '#' | '|' | '>' | '&' | ';') => break,
            (None, c) if c.is_whitespace() => {
                if has || !w.is_empty() {
                    words.push(std::mem::take(&mut w));
                    has = false;
                }
            }
            (None, c) => w.push(c),
        }
    }
    if has || !w.is_empty() {
        words.push(w);
    }
    words
}

#[test]
fn completions_and_the_man_page_come_from_the_command_itself() {
    let run = |args: &[&str]| {
        let out = Command::new(PTMP).args(args).output().unwrap();
        assert!(out.status.success(), "ptmp {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // bash: the subcommands and a subcommand's options are offered.
    let bash = run(&["completions", "bash"]);
    assert!(bash.contains("complete -F _ptmp"), "{bash}");
    for word in ["graph", "peers", "--endpoints", "--ntpsets"] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        assert!(run(&["completions", shell]).contains("ptmp"), "{shell}");
    }
    let out = Command::new(PTMP)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    // The man page: roff, with a page for each subcommand.
    let man = run(&["man"]);
    assert!(
        man.starts_with(".ie \\n(.g .ds Aq") || man.contains(".TH ptmp"),
        "{man}"
    );
    for page in [
        ".TH ptmp",
        ".TH ptmp-send",
        ".TH ptmp-graph",
        ".TH ptmp-peers",
    ] {
        assert!(man.contains(page), "man page lacks {page}");
    }
    assert!(
        !man.contains("ptmp-bench-child"),
        "hidden commands stay hidden"
    );
}
