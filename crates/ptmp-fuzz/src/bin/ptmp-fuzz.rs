//! Long fuzz runs: every target (or those named) for as long as asked.
//!
//! Each target runs in a child process, so a crash that no Rust code can
//! catch (a stack overflow, an abort, a signal) ends that child only: the
//! parent reports it with the input being tried, kept in a small mapped
//! file the child writes before every case.

use ptmp_fuzz::{report_line, run, targets, Budget};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: ptmp-fuzz [--seconds N] [--cases N] [--start N] [--out DIR] [--hang-ms N] [TARGET...]
Fuzz ptmp's inputs for N seconds per target (default 60); failing inputs are
saved in DIR (default fuzz-out). Targets:";

struct Args {
    seconds: u64,
    cases: u64,
    start: u64,
    out: PathBuf,
    hang_ms: u64,
    targets: Vec<String>,
    child: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        seconds: 60,
        cases: u64::MAX,
        start: 1,
        out: PathBuf::from("fuzz-out"),
        hang_ms: 20_000,
        targets: Vec::new(),
        child: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut num = |flag: &str| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{flag} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{flag} {v:?}: not a whole number"))
        };
        match x.as_str() {
            "--seconds" => a.seconds = num("--seconds")?,
            "--cases" => a.cases = num("--cases")?,
            "--start" => a.start = num("--start")?,
            "--hang-ms" => a.hang_ms = num("--hang-ms")?,
            "--out" => a.out = PathBuf::from(it.next().ok_or("--out needs a directory")?),
            "--child" => a.child = true,
            "-h" | "--help" => {
                let names: Vec<String> = targets::ALL
                    .iter()
                    .map(|t| format!("  {:<14} {}", t.name, t.what))
                    .collect();
                return Err(format!("{USAGE}\n{}", names.join("\n")));
            }
            t if targets::by_name(t).is_some() => a.targets.push(t.to_string()),
            t => return Err(format!("unknown target or option {t:?}; --help lists them")),
        }
    }
    if a.targets.is_empty() {
        a.targets = targets::ALL.iter().map(|t| t.name.to_string()).collect();
    }
    Ok(a)
}

/// The child: one target; each input is written to `current` first.
fn child(a: &Args) -> ExitCode {
    let name = &a.targets[0];
    let t = targets::by_name(name).expect("checked by the parent");
    ptmp_fuzz::set_hang_limit(Duration::from_millis(a.hang_ms));
    let current = a.out.join(format!("{name}.current"));
    let mut keep = |input: &[u8]| {
        // One write per case: a long run pays it for crash recovery.
        let _ = std::fs::write(&current, input);
    };
    let budget = Budget {
        cases: a.cases,
        time: Duration::from_secs(a.seconds),
    };
    let o = run(t, budget, a.start, &mut keep);
    let _ = std::fs::remove_file(&current);
    for (i, f) in o.failures.iter().enumerate() {
        let p = a.out.join(format!("{name}-{}-{i}.bin", a.start));
        let _ = std::fs::write(&p, &f.input);
        eprintln!("{name}: {} (input saved in {})", f.what, p.display());
    }
    println!("{}", report_line(&o));
    let _ = std::io::stdout().flush();
    if o.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn save_crash(out: &Path, name: &str, start: u64) -> String {
    let current = out.join(format!("{name}.current"));
    let kept = out.join(format!("{name}-{start}-crash.bin"));
    match std::fs::rename(&current, &kept) {
        Ok(()) => format!("input saved in {}", kept.display()),
        Err(_) => "the input could not be recovered".into(),
    }
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        eprintln!("cannot make {}: {e}", a.out.display());
        return ExitCode::from(2);
    }
    if a.child {
        return child(&a);
    }
    let me = std::env::current_exe().expect("the fuzzer's own path");
    let mut failed = 0;
    let t0 = Instant::now();
    for name in &a.targets {
        let r = Command::new(&me)
            .args(["--child", name, "--seconds", &a.seconds.to_string()])
            .args([
                "--cases",
                &a.cases.to_string(),
                "--start",
                &a.start.to_string(),
            ])
            .args(["--hang-ms", &a.hang_ms.to_string(), "--out"])
            .arg(&a.out)
            .status();
        match r {
            Ok(s) if s.success() => {}
            Ok(s) if s.code() == Some(1) => failed += 1,
            Ok(s) => {
                failed += 1;
                println!(
                    "{name:<16} crashed ({s}); {}",
                    save_crash(&a.out, name, a.start)
                );
            }
            Err(e) => {
                eprintln!("cannot run {}: {e}", me.display());
                return ExitCode::from(2);
            }
        }
    }
    println!(
        "{} target(s) in {:.0} s: {} with failures",
        a.targets.len(),
        t0.elapsed().as_secs_f64(),
        failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
