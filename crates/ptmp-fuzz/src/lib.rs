//! # ptmp-fuzz: fuzzing on stable Rust
//!
//! Every input ptmp parses is a target here: TPSet bytes, two-frame wire
//! messages, czmqat dump files, shared-memory segments, socket, agent and
//! graph configurations, Jsonnet text, and the TPSets each agent consumes.
//! A target starts from a corpus of valid inputs and feeds the code under
//! test random mutations of them (byte-level for binary inputs,
//! structure-aware for JSON), checking after each case that
//!
//! * nothing panicked (an overflow in a test build counts: test builds
//!   check arithmetic),
//! * the target's own property holds (for example: a TPSet that decodes
//!   re-encodes to bytes that decode to the same TPSet),
//! * the case finished within the hang limit (a watchdog thread reports
//!   the input and aborts the process past it).
//!
//! No coverage feedback is used (that needs a nightly compiler here), so
//! the corpora are written to reach deep states from the start, and the
//! mutators know the formats' edges (varints, length prefixes, integer
//! limits, NUL bytes, deep nesting).
//!
//! `cargo test -p ptmp-fuzz` runs every target for a bounded number of
//! cases; `scripts/fuzz.sh` runs them for as long as asked and reports
//! the cases tried and the failures found, saving each failing input.

pub mod mutate;
pub mod targets;

use mutate::Rng;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// What a target consumes and how its inputs are mutated.
pub enum Corpus {
    /// Raw bytes, mutated byte by byte.
    Bytes(Vec<Vec<u8>>),
    /// Bytes whose length must not change (a mapped segment), mostly
    /// overwritten in place.
    FixedBytes(Vec<Vec<u8>>),
    /// JSON documents, mutated node by node, checked as text.
    Json(Vec<serde_json::Value>),
}

/// One fuzzing target.
pub struct Target {
    /// Short unique name, used on the command line, in reports, and to vary
    /// the random sequence per target.
    pub name: &'static str,
    /// What it exercises, for reports.
    pub what: &'static str,
    /// Valid inputs to start from (built when the run starts).
    pub corpus: fn() -> Corpus,
    /// Run one case: `Err` names a broken property; a panic is caught.
    pub check: fn(&[u8]) -> Result<(), String>,
}

/// How long to run one target.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Stop after this many cases, the corpus's own entries included
    /// (they all run even when there are more of them).
    pub cases: u64,
    /// Stop once this much time has passed, whichever limit comes first.
    pub time: Duration,
}

/// A case that failed.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The input that failed, as the target's `check` received it, so the
    /// case can be replayed.
    pub input: Vec<u8>,
    /// The broken property, or the panic's message.
    pub what: String,
}

/// What one target's run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The target's name.
    pub target: &'static str,
    /// Cases run, the corpus's entries included.
    pub cases: u64,
    /// The first 100 failing cases; later ones are counted in no list.
    pub failures: Vec<Failure>,
    /// Wall-clock time the run took.
    pub elapsed: Duration,
}

thread_local! {
    static FUZZING: RefCell<bool> = const { RefCell::new(false) };
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The case being run on one thread, for the watchdog to report.
struct Current {
    thread: std::thread::ThreadId,
    target: &'static str,
    input: Vec<u8>,
    since: Option<Instant>,
}

/// One entry per thread that runs cases (tests run targets in parallel).
static CURRENT: Mutex<Vec<Current>> = Mutex::new(Vec::new());
static HANG_MS: AtomicU64 = AtomicU64::new(20_000);

/// Cases running longer than `limit` are hangs: the watchdog prints the
/// target and the input (hex) and aborts the process.
pub fn set_hang_limit(limit: Duration) {
    HANG_MS.store(limit.as_millis() as u64, Ordering::Relaxed);
}

fn install_hooks() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if FUZZING.with(|f| *f.borrow()) {
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                LAST_PANIC.with(|p| *p.borrow_mut() = format!("panic: {msg}{at}"));
            } else {
                previous(info);
            }
        }));
        std::thread::Builder::new()
            .name("fuzz-watchdog".into())
            .spawn(|| loop {
                std::thread::sleep(Duration::from_millis(200));
                let all = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
                let limit = Duration::from_millis(HANG_MS.load(Ordering::Relaxed));
                for cur in all.iter() {
                    let Some(t) = cur.since else { continue };
                    if t.elapsed() > limit {
                        eprintln!(
                            "fuzz target {}: one case ran over {} ms (a hang); input ({} bytes): {}",
                            cur.target,
                            limit.as_millis(),
                            cur.input.len(),
                            hex(&cur.input)
                        );
                        std::process::abort();
                    }
                }
            })
            .expect("spawn the fuzz watchdog thread");
    });
}

/// Lower-case hex of `b` (at most 4 KiB shown).
pub fn hex(b: &[u8]) -> String {
    let mut s: String = b.iter().take(4096).map(|x| format!("{x:02x}")).collect();
    if b.len() > 4096 {
        s.push_str("...");
    }
    s
}

/// Run `check` on `input` once, as the fuzzer does: panics caught and
/// turned into failures.
pub fn run_one(target: &Target, input: &[u8]) -> Result<(), String> {
    install_hooks();
    let me = std::thread::current().id();
    {
        let mut all = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
        let i = match all.iter().position(|c| c.thread == me) {
            Some(i) => i,
            None => {
                all.push(Current {
                    thread: me,
                    target: "",
                    input: Vec::new(),
                    since: None,
                });
                all.len() - 1
            }
        };
        let cur = &mut all[i];
        cur.target = target.name;
        cur.input.clear();
        cur.input.extend_from_slice(input);
        cur.since = Some(Instant::now());
    }
    FUZZING.with(|f| *f.borrow_mut() = true);
    let r = catch_unwind(AssertUnwindSafe(|| (target.check)(input)));
    FUZZING.with(|f| *f.borrow_mut() = false);
    for c in CURRENT.lock().unwrap_or_else(|e| e.into_inner()).iter_mut() {
        if c.thread == me {
            c.since = None;
        }
    }
    match r {
        Ok(r) => r,
        Err(_) => Err(LAST_PANIC.with(|p| std::mem::take(&mut *p.borrow_mut()))),
    }
}

/// Fuzz `target` within `budget`, starting the random source at `start`;
/// `each` sees every input before it runs (the long-run command keeps it
/// where a crash can be recovered from).
pub fn run(target: &Target, budget: Budget, start: u64, each: &mut dyn FnMut(&[u8])) -> Outcome {
    let t0 = Instant::now();
    let mut rng = Rng::new(start ^ fnv(target.name));
    let corpus = (target.corpus)();
    let mut out = Outcome {
        target: target.name,
        cases: 0,
        failures: Vec::new(),
        elapsed: Duration::ZERO,
    };
    let mut case = |input: Vec<u8>, out: &mut Outcome| {
        each(&input);
        if let Err(what) = run_one(target, &input) {
            if out.failures.len() < 100 {
                out.failures.push(Failure { input, what });
            }
        }
        out.cases += 1;
    };
    // The corpus itself first: every entry must pass as it is.
    let seeds: Vec<Vec<u8>> = match &corpus {
        Corpus::Bytes(c) | Corpus::FixedBytes(c) => c.clone(),
        Corpus::Json(c) => c
            .iter()
            .map(|v| serde_json::to_vec(v).unwrap_or_default())
            .collect(),
    };
    for s in seeds {
        case(s, &mut out);
    }
    while out.cases < budget.cases && t0.elapsed() < budget.time {
        let input = match &corpus {
            Corpus::Bytes(c) => {
                let base = rng.pick(c).clone();
                mutate::mutate_bytes(&mut rng, &base, c)
            }
            Corpus::FixedBytes(c) => {
                let base = rng.pick(c).clone();
                let mut m = mutate::mutate_bytes(&mut rng, &base, &[]);
                if !rng.chance(8) {
                    m.resize(base.len(), 0);
                }
                m
            }
            Corpus::Json(c) => {
                let base = rng.pick(c);
                let v = mutate::mutate_json(&mut rng, base, c);
                mutate::json_text(&mut rng, &v)
            }
        };
        case(input, &mut out);
    }
    out.elapsed = t0.elapsed();
    out
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// One line per outcome: cases, rate, failures.
pub fn report_line(o: &Outcome) -> String {
    let secs = o.elapsed.as_secs_f64().max(1e-9);
    format!(
        "{:<16} {:>9} cases {:>9.0}/s  {} failure(s)",
        o.target,
        o.cases,
        o.cases as f64 / secs,
        o.failures.len()
    )
}
