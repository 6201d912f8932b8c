//! `ptmp bench peers`: ptmp's shared-memory ring beside Aeron's IPC
//! (<https://github.com/real-logic/aeron>, measured with its own sample
//! programs), with the machine's physical limits measured in the same run.
//! Every measure runs `--runs` times, the peers alternating which goes
//! first; each run's value and the median are reported, with the cache
//! line's hand-over between the two CPUs just before and after each run
//! and the median of the runs during which the CPUs were near.
//!
//! What each row measures:
//! - hand-over of one cache line between the two CPUs (threads pinned):
//!   the least any message between two cores can take;
//! - memcpy of a 6.2 MB frame (one core): what a copying transport pays
//!   twice per frame (in and out);
//! - 64 B messages a second between a writer and a reader thread of one
//!   process: ptmp's ring (lossless, the reader copying each message out),
//!   of 4,096 slots and of 64 MiB (the size of one of Aeron's terms), and
//!   Aeron's EmbeddedExclusiveIpcThroughput (an exclusive publication and
//!   a subscription polling fragments in place, media driver embedded);
//! - the same between a writer process and a reader process (the
//!   reader this binary again, attached to the ring by name), and Aeron's
//!   StreamingPublisher and RateSubscriber processes (the media driver
//!   embedded in the subscriber's);
//! - 64 B and 4 KiB round trips between two processes, both ends
//!   busy-polling, beside the cache line's own round trip taken in the same
//!   run (the "limit" row of the p50): ptmp `latency --round-trip --processes` over shm
//!   (PUSH/PULL channels, each message copied in and out at both ends: four
//!   copies a round trip), the same with `--in-place` ("ptmp, in place":
//!   the echo forwards each message from ring to ring and the measuring
//!   side reads the stamp in its slot, two copies, one per send), and
//!   Aeron's Ping and Pong over `aeron:ipc` with a media driver (two
//!   copies: Ping offers its buffer, Pong offers the fragment it was
//!   handed, Ping reads the stamp in place);
//! - with the cargo feature `iceoryx2`, iceoryx2's publish-subscribe over
//!   its zero-copy shared memory in the 64 B rate rows and the round trips:
//!   a publisher thread and a subscriber thread of one process, then a
//!   subscriber process (this binary again), and for the round trips an
//!   echo process on two services (there and back). The services are
//!   lossless (a publisher retries while the subscriber's buffer of 4,096
//!   messages is full), the publisher loans a sample and writes the message
//!   into it, the subscriber busy-polls and copies each message out, as
//!   ptmp's readers do; the echo copies out and back in, as ptmp's does;
//! - empty TPSets a second between two processes over shm PUSH/PULL, as
//!   TPSets (encoded, sent, received, decoded) and as the same bytes in
//!   raw frames (`send_raw`, `recv_raw_into`), both reading the clock once
//!   per message as a TPSet's `created` needs;
//! - a 6.2 MB frame's round trip between two threads over two rings,
//!   zero-copy (the writer fills only the frame's first bytes in its loan,
//!   the reader reads them from its view) and copying (four copies),
//!   beside four copies on one core and two copies handed between the
//!   cores, twice.

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use std::path::PathBuf;

mod aeron;
mod frames;
#[cfg(feature = "iceoryx2")]
pub(crate) mod iceoryx2;
use crate::limits;

/// The large frame: one 1920x1080 image of 3 bytes a pixel, 6.2 MB.
const FRAME: usize = 1920 * 1080 * 3;
/// The ring's slots in the rows beside Aeron's own buffer size: 64 MiB of
/// 128-byte slots, the length of one of the three terms an `aeron:ipc`
/// publication maps by default. A ring of 4,096 such slots (512 KiB) stays
/// in the reader's caches; one this size streams through memory.
const BIG_RING_SLOTS: usize = 512 * 1024;
/// The name of those rows.
const BIG_RING: &str = "ptmp, 64 MiB ring";
/// What the closing note says of iceoryx2.
#[cfg(feature = "iceoryx2")]
const ICEORYX2: &str = "0.10 (publish-subscribe, ipc service)";
#[cfg(not(feature = "iceoryx2"))]
const ICEORYX2: &str = "left out (built without the cargo feature iceoryx2)";
/// Round trips of the large frame per run, copying (each costs four
/// copies of the frame), after a tenth as many more.
const FRAME_COPIES: u64 = 200;

#[derive(Debug, clap::Args)]
pub struct PeersArgs {
    /// Runs of each measure (the peers alternate which goes first).
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Seconds of each throughput run (after Aeron's 2 s of warmup).
    #[arg(long, default_value_t = 5)]
    pub seconds: u32,
    /// Round trips per latency run.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub count: u64,
    /// Message sizes of the round trips, bytes.
    #[arg(long, value_delimiter = ',', default_values = ["64", "4096"])]
    pub sizes: Vec<usize>,
    /// Aeron's `aeron-all` jar (else $PTMP_AERON_JAR, else the newest in
    /// ~/.m2; fetch it with `mvn dependency:get
    /// -Dartifact=io.aeron:aeron-all:1.51.0`). Without Java or the jar the
    /// Aeron rows are left out with a note.
    #[arg(long)]
    pub aeron_jar: Option<PathBuf>,
    /// The two CPUs the two sides run on, A,B.
    #[arg(long = "affinity", value_name = "A,B", default_value = "0,1")]
    pub affinity: String,
}

/// One measure of one peer: each run's value and their median, and where
/// the host had placed the two CPUs during each run.
#[derive(Debug, Clone)]
pub struct PeersRow {
    pub measure: &'static str,
    pub peer: &'static str,
    pub unit: &'static str,
    pub runs: Vec<f64>,
    pub median: f64,
    /// Per run, the larger of the two hand-over windows taken just before
    /// and just after it, ns (NaN when the sides are not on two CPUs).
    pub handover_ns: Vec<f64>,
    /// The median of the runs whose windows both found the CPUs near
    /// (NaN if none did).
    pub median_near: f64,
}

impl Row for PeersRow {
    fn headers() -> &'static [&'static str] {
        &[
            "measure",
            "peer",
            "unit",
            "runs",
            "median",
            "hand-over ns",
            "median, CPUs near",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let f = |x: f64| {
            if x >= 100.0 {
                format!("{x:.0}")
            } else {
                format!("{x:.2}")
            }
        };
        vec![
            Cell::label(self.measure),
            Cell::label(self.peer),
            Cell::label(self.unit),
            Cell::list(&self.runs, f),
            Cell::measure(self.median, f(self.median)),
            if self.handover_ns.iter().all(|x| x.is_nan()) {
                Cell::label("-")
            } else {
                Cell::label(
                    self.handover_ns
                        .iter()
                        .map(|x| format!("{x:.0}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            },
            if self.median_near.is_nan() {
                Cell::none()
            } else {
                Cell::measure(self.median_near, f(self.median_near))
            },
        ]
    }
}

/// How many times the least hand-over window of the suite a window may be
/// and still count as near: on the machines measured the host places two
/// vCPUs on one core's threads (about 14 ns), on cores sharing an L3
/// (about 31 ns) or on cores sharing no cache (about 160 ns), and rings
/// that fit in the caches run several times slower in the last
/// (docs/benchmarks.md, the slow mode).
const NEAR_FACTOR: f64 = 3.0;

/// The runs of every measure: how many, the two CPUs, and the least
/// hand-over window seen so far (the reference for near).
struct Runs {
    runs: u32,
    cpus: (Option<usize>, Option<usize>),
    least_ns: f64,
}

impl Runs {
    /// Take `run` between two hand-over windows: its figures and the
    /// larger window.
    fn placed(&mut self, run: &mut Take) -> BenchResult<(Vec<f64>, f64)> {
        let before = limits::handover_window_ns(self.cpus)?;
        let v = run()?;
        let after = limits::handover_window_ns(self.cpus)?;
        self.least_ns = self.least_ns.min(before).min(after);
        Ok((v, before.max(after)))
    }

    /// The median of the runs of `v` whose window was near, against the
    /// least window seen so far.
    fn median_near(&self, v: &[f64], windows: &[f64]) -> f64 {
        let near: Vec<f64> = v
            .iter()
            .zip(windows)
            .filter(|(_, w)| **w <= NEAR_FACTOR * self.least_ns)
            .map(|(x, _)| *x)
            .collect();
        if near.is_empty() {
            f64::NAN
        } else {
            crate::report::median(near)
        }
    }
}

/// A measure taken once per run of one peer: one value per figure.
type Take<'a> = Box<dyn FnMut() -> BenchResult<Vec<f64>> + 'a>;

/// Take each peer's figures (`figures`: name and unit) `runs` times, the
/// peers alternating which goes first, and report a row per figure and
/// peer.
fn measure(
    out: &mut Vec<PeersRow>,
    rs: &mut Runs,
    figures: &[(&'static str, &'static str)],
    mut peers: Vec<(&'static str, Take)>,
) -> BenchResult {
    let n = peers.len();
    let mut got: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); figures.len()]; n];
    let mut windows: Vec<Vec<f64>> = vec![Vec::new(); n];
    for r in 0..rs.runs as usize {
        for k in 0..n {
            // Odd runs take the peers in reverse order.
            let i = if r % 2 == 0 { k } else { n - 1 - k };
            let (v, window) = rs.placed(&mut peers[i].1)?;
            windows[i].push(window);
            for (f, x) in v.into_iter().enumerate().take(figures.len()) {
                got[i][f].push(x);
            }
        }
    }
    for (f, (measure, unit)) in figures.iter().enumerate() {
        for (i, (peer, _)) in peers.iter().enumerate() {
            let v = got[i][f].clone();
            // A figure a peer does not have (NaN) makes no row.
            if v.iter().all(|x| x.is_nan()) {
                continue;
            }
            let row = PeersRow {
                measure,
                peer,
                unit,
                median: crate::report::median(v.clone()),
                median_near: rs.median_near(&v, &windows[i]),
                handover_ns: windows[i].clone(),
                runs: v,
            };
            crate::report::row(&row);
            out.push(row);
        }
    }
    Ok(())
}

/// Run the suite.
pub fn run(a: &PeersArgs) -> BenchResult<Vec<PeersRow>> {
    if a.runs == 0 || a.seconds == 0 || a.count == 0 {
        return Err(BenchError::usage(
            "--runs, --seconds and -n must be at least 1",
        ));
    }
    if let Some(bad) = a.sizes.iter().find(|s| **s < 16 || **s > 1 << 20) {
        return Err(BenchError::usage(format!(
            "--sizes {bad}: from 16 bytes to 1 MiB"
        )));
    }
    let cpus = crate::sys::parse_affinity(&Some(a.affinity.clone()))?;
    let jar = aeron::find_jar(a.aeron_jar.as_deref());
    if let Err(why) = &jar {
        eprintln!("note: Aeron rows left out: {why}");
    }
    #[cfg(not(feature = "iceoryx2"))]
    eprintln!(
        "note: iceoryx2 rows left out: built without the cargo feature iceoryx2 (cargo build --release -p ptmp-cli --features iceoryx2)"
    );
    let list = a.affinity.as_str();
    crate::report::table::<PeersRow>();
    let mut out = Vec::new();
    let (runs, secs, count) = (a.runs, a.seconds, a.count);
    let rs = &mut Runs {
        runs,
        cpus,
        least_ns: f64::INFINITY,
    };
    measure(
        &mut out,
        rs,
        &[("cache-line hand-over, two CPUs", "ns")],
        vec![(
            "limit",
            Box::new(|| Ok(vec![limits::cache_line_handover_ns(1_000_000, cpus)?])),
        )],
    )?;
    measure(
        &mut out,
        rs,
        &[("memcpy of 6.2 MB", "us")],
        vec![("limit", Box::new(|| Ok(vec![limits::memcpy_us(FRAME, 20)])))],
    )?;
    rates(
        &mut out,
        rs,
        secs,
        jar.as_ref().ok().map(|j| (j.as_path(), list)),
    )?;
    for &size in &a.sizes {
        let (p50, p999): (&'static str, &'static str) = match size {
            64 => (
                "64 B round trip p50, processes",
                "64 B round trip p99.9, processes",
            ),
            4096 => (
                "4 KiB round trip p50, processes",
                "4 KiB round trip p99.9, processes",
            ),
            _ => ("round trip p50, processes", "round trip p99.9, processes"),
        };
        let mut rt: Vec<(&'static str, Take)> = vec![
            (
                // The same hand-over as the first row, both ways, taken beside
                // each round trip: when a run is slow for every peer, the
                // machine was too.
                "limit",
                Box::new(move || {
                    let ns = limits::cache_line_handover_ns(100_000, cpus)?;
                    Ok(vec![2.0 * ns / 1000.0, f64::NAN])
                }),
            ),
            ("ptmp", ptmp_round_trip(count, size, cpus, false)),
            ("ptmp, in place", ptmp_round_trip(count, size, cpus, true)),
        ];
        if let Ok(j) = &jar {
            rt.push((
                "Aeron",
                Box::new(move || {
                    let (p50, p999) = aeron::ping_pong(j, Some(list), size, count)?;
                    Ok(vec![p50, p999])
                }),
            ));
        }
        #[cfg(feature = "iceoryx2")]
        rt.push((
            "iceoryx2",
            Box::new(move || {
                let (p50, p999) = iceoryx2::round_trip(size, count, cpus)?;
                Ok(vec![p50, p999])
            }),
        ));
        measure(&mut out, rs, &[(p50, "us"), (p999, "us")], rt)?;
    }
    frame_round_trips(&mut out, rs, count)?;
    crate::report::note(format!(
        "\n{runs} runs of each measure, peers alternating; sides on CPUs {list}; round trips of {count} messages, one in flight, busy-polled at both ends; Aeron {}; iceoryx2 {ICEORYX2}. hand-over ns: per run, the larger of two windows of one cache line passed 20,000 times between the two CPUs just before and just after it; a window over {NEAR_FACTOR} times the least the suite had seen by then (by the end, {:.0} ns) means the host had placed the CPUs apart, and \"median, CPUs near\" leaves those runs out (a virtual machine's vCPUs move between host cores, and rings that fit in the caches run several times slower apart: docs/benchmarks.md).",
        match &jar {
            Ok(j) => format!("from {}", j.display()),
            Err(why) => format!("left out ({why})"),
        },
        rs.least_ns
    ));
    Ok(out)
}

/// One ptmp round trip of `count` messages of `size` bytes between two
/// processes: four copies, or two `in_place` (see
/// [`crate::latency::LatencyArgs::in_place`]).
fn ptmp_round_trip<'a>(
    count: u64,
    size: usize,
    cpus: (Option<usize>, Option<usize>),
    in_place: bool,
) -> Take<'a> {
    Box::new(move || {
        let (p50, p999, lost) =
            crate::latency::shm_round_trip(count, size, 1e9, cpus, true, in_place)?;
        if lost > 0 {
            return Err(BenchError::fail(format!(
                "ptmp round trip of {size} B: {lost} message(s) did not come back"
            )));
        }
        Ok(vec![p50, p999])
    })
}

/// The rate measures: 64 B messages between threads and between
/// processes, and empty TPSets beside raw frames between processes, with
/// Aeron's where `aeron` gives its jar and CPU list.
fn rates(
    out: &mut Vec<PeersRow>,
    rs: &mut Runs,
    secs: u32,
    aeron: Option<(&std::path::Path, &str)>,
) -> BenchResult {
    let cpus = rs.cpus;
    let n = 4_000_000 * u64::from(secs);
    // A writer thread and a reader thread, through a ring of `slots`
    // slots of 128 bytes.
    let ring = |slots: usize| -> Take {
        Box::new(move || {
            crate::sys::pin(cpus.0)?;
            Ok(vec![
                crate::ring::one_run(64, 1, slots, true, n, cpus.1)?.reader_mps[0],
            ])
        })
    };
    let mut tput: Vec<(&'static str, Take)> =
        vec![("ptmp", ring(4096)), (BIG_RING, ring(BIG_RING_SLOTS))];
    if let Some((j, list)) = aeron {
        tput.push((
            "Aeron",
            Box::new(move || Ok(vec![aeron::ipc_throughput(j, Some(list), 64, secs)? / 1e6])),
        ));
    }
    #[cfg(feature = "iceoryx2")]
    tput.push((
        "iceoryx2",
        Box::new(move || Ok(vec![iceoryx2::thread_rate(n, cpus)?])),
    ));
    measure(out, rs, &[("64 B messages, threads", "M msg/s")], tput)?;
    // The same between a writer process and a reader process.
    let ring2 = |slots: usize| -> Take {
        Box::new(move || {
            crate::sys::pin(cpus.0)?;
            Ok(vec![crate::ring::processes::rate(64, slots, n, cpus.1)?])
        })
    };
    let mut tput: Vec<(&'static str, Take)> =
        vec![("ptmp", ring2(4096)), (BIG_RING, ring2(BIG_RING_SLOTS))];
    if let Some((j, list)) = aeron {
        tput.push((
            "Aeron",
            Box::new(move || {
                let r = aeron::ipc_two_process_throughput(j, Some(list), 64, secs)?;
                Ok(vec![r / 1e6])
            }),
        ));
    }
    #[cfg(feature = "iceoryx2")]
    tput.push((
        "iceoryx2",
        Box::new(move || Ok(vec![iceoryx2::process_rate(n, cpus)?])),
    ));
    measure(out, rs, &[("64 B messages, processes", "M msg/s")], tput)?;
    // The TPSet path beside raw frames of the same bytes, between two
    // processes.
    let pair = |im, ring| -> Take {
        Box::new(move || {
            let n = 1_000_000 * u64::from(secs);
            Ok(vec![
                crate::throughput::shm_pair_rate(im, n, cpus, ring)? / 1e6,
            ])
        })
    };
    // The throughput suite's rings (4,096 slots of 4 KiB), and 64 MiB of
    // 128-byte slots.
    let (small, big) = ((4096, 4096), (BIG_RING_SLOTS, 112));
    use crate::throughput::Impl::{Frames, Ptmp};
    measure(
        out,
        rs,
        &[("empty TPSets, processes", "M msg/s")],
        vec![
            ("ptmp, raw frames", pair(Frames, small)),
            ("ptmp, TPSets", pair(Ptmp, small)),
            ("ptmp, raw frames, 64 MiB ring", pair(Frames, big)),
            ("ptmp, TPSets, 64 MiB ring", pair(Ptmp, big)),
        ],
    )?;
    Ok(())
}

/// One measure of `count` frame round trips (and a tenth as many first to
/// warm up) in `mode`: its median and 99.9th percentile.
fn frame_take<'a>(
    mode: frames::Mode,
    count: u64,
    cpus: (Option<usize>, Option<usize>),
) -> Take<'a> {
    Box::new(move || {
        let (p50, p999) = frames::round_trip(FRAME, count, count / 10, mode, cpus)?;
        Ok(vec![p50, p999])
    })
}

/// The 6.2 MB frame's round trips over ptmp's rings, zero-copy and
/// copying, beside four copies of the frame (what copying costs at least).
/// Aeron has no row: a frame this large needs a term buffer of over 48 MB
/// per publication, which its sample programs do not set up.
fn frame_round_trips(out: &mut Vec<PeersRow>, rs: &mut Runs, count: u64) -> BenchResult {
    let cpus = rs.cpus;
    let zc_count = count.min(20_000);
    measure(
        out,
        rs,
        &[
            ("6.2 MB round trip p50, zero-copy, threads", "us"),
            ("6.2 MB round trip p99.9, zero-copy, threads", "us"),
        ],
        vec![("ptmp", frame_take(frames::Mode::ZeroCopy, zc_count, cpus))],
    )?;
    measure(
        out,
        rs,
        &[
            ("6.2 MB round trip p50, copying, threads", "us"),
            ("6.2 MB round trip p99.9, copying, threads", "us"),
        ],
        vec![
            (
                "limit",
                Box::new(|| Ok(vec![4.0 * limits::memcpy_us(FRAME, 20), f64::NAN])),
            ),
            (
                "handed copies",
                Box::new(move || {
                    let one_way = limits::handed_copy_us(FRAME, 50, cpus)?;
                    Ok(vec![2.0 * one_way, f64::NAN])
                }),
            ),
            (
                "ptmp",
                frame_take(frames::Mode::Copying, FRAME_COPIES, cpus),
            ),
        ],
    )
}
