//! A systemd template unit that runs one host's part of a graph: instance
//! `%i` is the host's name (`systemctl start ptmp-graph-NAME@daq1`).
//!
//! systemd looks after the supervisor, the supervisor after its parts, so
//! the two never fight over a process: systemd signals only the supervisor
//! (`KillMode=mixed`: SIGINT to it, SIGKILL to everything left only after
//! `TimeoutStopSec`), which stops its parts in drain order; a crashed part
//! is restarted by the supervisor; systemd restarts the supervisor only
//! when it fails (`Restart=on-failure`), not when it refused its
//! configuration (exit 2, `RestartPreventExitStatus=2`). The run
//! directory is the unit's `StateDirectory` (mode 0700, on disk, kept
//! across restarts and boots): a supervisor started again after a crash,
//! a power cut or a reboot continues the run, its sources counting on and
//! its sinks appending. The logs go to the journal.

use crate::Graph;
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

/// What the unit runs: the `ptmp` program, the graph file (both absolute
/// paths) and any Jsonnet arguments for it (`-A k=v`, ...).
#[derive(Debug, Clone)]
pub struct UnitOptions<'a> {
    /// The `ptmp` program.
    pub ptmp: &'a Path,
    /// The graph's file.
    pub graph_file: &'a Path,
    /// Arguments given to `ptmp graph run` after the file (Jsonnet options).
    pub args: &'a [String],
    /// A user unit (`systemctl --user`) rather than a system one.
    pub user: bool,
    /// How long the supervisor may take to stop a part before killing it.
    pub stop_timeout: Duration,
}

/// The template unit's file name for graph `name`.
pub fn template_name(name: &str) -> String {
    format!("ptmp-graph-{name}@.service")
}

/// One word of a command line as systemd reads `ExecStart=`: specifiers
/// (`%`) and variables (`$`) doubled, and quoted (with `\` and `"`
/// escaped) when it holds anything else systemd would split or unescape.
/// Control characters are written as systemd's C escapes (`\n`, `\r`,
/// `\t`, `\xNN`, `\uNNNN`), which it turns back into the character: written
/// as they are, a line feed or a lone carriage return would end the line
/// (systemd reads either as a line's end) and the text after it would be
/// read as directives of its own.
pub fn exec_word(w: &str) -> String {
    let w = w.replace('%', "%%").replace('$', "$$");
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%$".contains(c));
    if plain {
        return w;
    }
    let mut q = String::from("\"");
    for c in w.chars() {
        match c {
            '"' | '\\' => {
                q.push('\\');
                q.push(c);
            }
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x80 => {
                let _ = write!(q, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(q, "\\u{:04x}", c as u32);
            }
            _ => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The template unit of graph `g`.
pub fn template(g: &Graph, o: &UnitOptions<'_>) -> String {
    let name = &g.name;
    let mut exec = vec![
        exec_word(&o.ptmp.to_string_lossy()),
        "graph".into(),
        "run".into(),
        exec_word(&o.graph_file.to_string_lossy()),
    ];
    exec.extend(o.args.iter().map(|a| exec_word(a)));
    // %i and %S are specifiers, not text: written as they are.
    exec.push(format!("--host %i --run-dir %S/ptmp-graph-{name}-%i"));
    // The supervisor stops its parts one after another, each within its
    // stop timeout; systemd waits for all of them and a margin.
    let parts = g.processes.len().max(1) as u64;
    let stop = o.stop_timeout.as_secs() * parts + 30;
    let mut u = String::new();
    let _ = writeln!(
        u,
        "# ptmp graph {name}: one host's part; the instance is the host's name."
    );
    let _ = writeln!(
        u,
        "# Made by `ptmp graph systemd`; hosts: {}.",
        g.hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(u, "[Unit]");
    let _ = writeln!(u, "Description=ptmp graph {name}, host %i");
    let _ = writeln!(u, "After=network-online.target");
    let _ = writeln!(u, "Wants=network-online.target");
    let _ = writeln!(u);
    let _ = writeln!(u, "[Service]");
    let _ = writeln!(u, "Type=exec");
    let _ = writeln!(u, "ExecStart={}", exec.join(" "));
    let _ = writeln!(u, "StateDirectory=ptmp-graph-{name}-%i");
    let _ = writeln!(u, "StateDirectoryMode=0700");
    let _ = writeln!(u, "Restart=on-failure");
    let _ = writeln!(u, "RestartSec=2s");
    // Exit 2: the graph or one of its processes refused its configuration,
    // which no restart mends.
    let _ = writeln!(u, "RestartPreventExitStatus=2");
    let _ = writeln!(u, "KillSignal=SIGINT");
    let _ = writeln!(u, "KillMode=mixed");
    let _ = writeln!(u, "TimeoutStopSec={stop}s");
    let _ = writeln!(u, "StandardOutput=journal");
    let _ = writeln!(u, "StandardError=journal");
    let _ = writeln!(u, "SyslogIdentifier=ptmp-graph-{name}");
    let _ = writeln!(u);
    let _ = writeln!(u, "[Install]");
    let target = if o.user {
        "default.target"
    } else {
        "multi-user.target"
    };
    let _ = writeln!(u, "WantedBy={target}");
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_as_systemd_reads_them() {
        assert_eq!(exec_word("/usr/bin/ptmp"), "/usr/bin/ptmp");
        assert_eq!(exec_word("n=1000"), "n=1000");
        assert_eq!(exec_word("50%"), "50%%");
        assert_eq!(exec_word("$HOME"), "$$HOME");
        assert_eq!(exec_word("a b"), "\"a b\"");
        assert_eq!(exec_word("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(exec_word("back\\slash"), "\"back\\\\slash\"");
        assert_eq!(exec_word(""), "\"\"");
        assert_eq!(exec_word("a\rb"), "\"a\\rb\"");
        assert_eq!(exec_word("a\nb\tc"), "\"a\\nb\\tc\"");
        assert_eq!(exec_word("\u{1b}[0m\u{7f}"), "\"\\x1b[0m\\x7f\"");
        assert_eq!(exec_word("x\u{85}"), "\"x\\u0085\"");
        for w in ["a\rb", "a\nb", "\u{b}", "\u{c}", "\u{85}", "\u{2028}"] {
            let e = exec_word(w);
            assert!(
                !e.contains(['\r', '\n', '\u{b}', '\u{c}', '\u{85}']),
                "{e:?}"
            );
        }
    }
}
