//! The graph's built-in nodes: `source`, `sink`, `worker` and `proxy`.
//!
//! They are ordinary agents (usable in `ptmp run` configs too), made for
//! data-flow graphs and measurements such as the butterfly:
//!
//! * `source`: sends TPSets on `output`. Keys: `count` (sets to send; 0, the
//!   default, sends until stopped), `rate` (sets per second; 0, the default,
//!   as fast as the output takes them), `tps` (TrigPrims per set, default
//!   0), `detid` (default 0). With a `done` socket, after sending `count` it
//!   waits for one message there (a sink saying it has everything) and
//!   reports the throughput from its first send to that message: the
//!   butterfly's send_requests. Each set carries its sequence number in
//!   `count` (from `first_count`, default 0: a graph part restarting a
//!   source sets it so the sequence goes on) and the wall-clock send time
//!   in `created`.
//! * `sink`: takes messages from `input`. Keys: `count` (end after this
//!   many; absent, run until stopped), `ofile` (a dump file to write them
//!   to; started anew, unless `append` is true: then written after the
//!   records it holds, a torn last record cut off; a graph sets `append`
//!   for a sink restarted within a run). With a `done` socket, when `count`
//!   have arrived it sends one TPSet there, its `count` the number
//!   received: the butterfly's receive_replies.
//!   With `dedup` true, a set whose (`detid`, `count`) already arrived is
//!   dropped (the seen-set of `seen.rs`), and the report says how many were
//!   dropped and how many numbers are missing, unless `share` is true: the
//!   node gets a share of its streams dealt out round-robin among several
//!   receivers (a graph sets it), so numbers it never sees went to its
//!   siblings and are not counted as missing.
//! * `worker`: forwards each message from `input` to `output` after a
//!   simulated piece of work: `work_us` microseconds (default 0) spent
//!   `wait`ing, either `"sleep"` (the default; the thread sleeps, as the
//!   butterfly's components do) or `"spin"` (a busy wait, precise for short
//!   times but it holds a core). `dedup` as for the sink: a set seen before
//!   is not forwarded again.
//! * `proxy`: a worker with no work: forwards from `input` to `output`,
//!   e.g. the butterfly's intermediate, fanning several upstream instances
//!   into several downstream ones.
//!
//! Workers, proxies and sinks pass messages frame for frame without parsing
//! them, so any message passes and a hop costs only the transport.
//!
//! Each commits its input ([`Receiver::commit`]) once a message is handed
//! on: a worker or proxy after forwarding it, a sink after counting it and,
//! with an `ofile`, after the file holds it. Over an shm:// input with an
//! identity (the graph planner gives every one), a restarted node then
//! resumes at the first message it had not handed on.

use crate::cfg::Cfg;
use crate::error::{Error, Result};
use crate::io::{open_rx, open_tx};
use crate::seen::{again, Seen};
use crate::{recv_frames, send_frames, send_set, Agent, Ctl, Got, Report, POLL};
use ptmp::{Frames, Receiver, Sender, SocketConfig, TPSet, TrigPrim};
use ptmp_formats::Writer;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `source` configuration.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// Socket the sets go out on.
    pub output: SocketConfig,
    /// Socket on which a sink says it has everything, if any.
    pub done: Option<SocketConfig>,
    /// Sets to send; 0: until stopped.
    pub count: u64,
    /// Sets per second; 0: flat out.
    pub rate: f64,
    /// TrigPrims in each set.
    pub tps: u32,
    /// The `detid` of every set.
    pub detid: u32,
    /// The `count` of the first set (a restarted source goes on counting).
    pub first_count: u64,
}

impl SourceConfig {
    /// Validate the keys of a source's `data`.
    pub fn parse(c: &Cfg) -> Result<Self> {
        let output = c.req_socket("output")?;
        let done = c.socket_opt("done")?;
        let count = c.u64_opt("count")?.unwrap_or(0);
        if done.is_some() && count == 0 {
            return Err(c.err(
                "count",
                "0",
                "a source with a done port needs a count: it waits for done after sending count sets",
            ));
        }
        Ok(SourceConfig {
            output,
            done,
            count,
            rate: match c.num_or("rate", 0.0, 0.0, 1e9)? {
                r if r > 0.0 && r < MIN_RATE => {
                    return Err(c.err(
                        "rate",
                        r.to_string(),
                        format!("must be 0 (flat out) or in [{MIN_RATE}, 1e9] sets per second"),
                    ))
                }
                r => r,
            },
            tps: c.int_or("tps", 0, 0, 100_000)? as u32,
            detid: c.int_or("detid", 0, 0, u32::MAX as i64)? as u32,
            first_count: c.u64_opt("first_count")?.unwrap_or(0),
        })
    }
}

/// `sink` configuration.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    /// Socket the messages arrive on.
    pub input: SocketConfig,
    /// Socket on which to tell a source that `count` messages arrived.
    pub done: Option<SocketConfig>,
    /// Messages after which to end; `None`: run until stopped.
    pub count: Option<u64>,
    /// Dump file to write the messages to, if any.
    pub ofile: Option<PathBuf>,
    /// Write after the records `ofile` holds instead of starting it anew.
    pub append: bool,
    /// Drop sets whose (`detid`, `count`) already arrived.
    pub dedup: bool,
    /// Its streams are dealt out among several receivers: numbers it never
    /// sees are not missing.
    pub share: bool,
}

impl SinkConfig {
    /// Validate the keys of a sink's `data`.
    pub fn parse(c: &Cfg) -> Result<Self> {
        let input = c.req_socket("input")?;
        let done = c.socket_opt("done")?;
        let count = c.u64_opt("count")?.filter(|n| *n > 0);
        if done.is_some() && count.is_none() {
            return Err(c.err(
                "count",
                "(missing)",
                "a sink with a done port needs a count: it says done when count messages have arrived",
            ));
        }
        let ofile = c.file_opt("ofile")?;
        Ok(SinkConfig {
            input,
            done,
            count,
            ofile,
            append: c.bool_or("append", false)?,
            dedup: c.bool_or("dedup", false)?,
            share: c.bool_or("share", false)?,
        })
    }
}

/// `worker` and `proxy` configuration.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Socket the messages arrive on.
    pub input: SocketConfig,
    /// Socket they are forwarded to.
    pub output: SocketConfig,
    /// Simulated work per message (zero for a proxy).
    pub work: Duration,
    /// Busy-wait the work instead of sleeping it.
    pub spin: bool,
    /// Forward no set whose (`detid`, `count`) already arrived.
    pub dedup: bool,
    /// Its streams are dealt out among several receivers (see
    /// [`SinkConfig::share`]).
    pub share: bool,
}

impl WorkerConfig {
    /// `proxy`: no work keys are read.
    pub fn parse(c: &Cfg, proxy: bool) -> Result<Self> {
        let input = c.req_socket("input")?;
        let output = c.req_socket("output")?;
        let dedup = c.bool_or("dedup", false)?;
        let share = c.bool_or("share", false)?;
        if proxy {
            return Ok(WorkerConfig {
                input,
                output,
                work: Duration::ZERO,
                spin: false,
                dedup,
                share,
            });
        }
        let work_us = c.num_or("work_us", 0.0, 0.0, 3.6e9)?;
        let spin = c.choice("wait", "sleep", &["sleep", "spin"])? == "spin";
        Ok(WorkerConfig {
            input,
            output,
            work: Duration::from_secs_f64(work_us / 1e6),
            spin,
            dedup,
            share,
        })
    }
}

/// Wait until `deadline` (`None`: later than any instant), sleeping in
/// slices of at most [`POLL`] or spinning, and return early once
/// `ctl` is stopped, so a long wait never delays a stop.
fn wait_until(deadline: Option<Instant>, spin: bool, ctl: &Ctl) {
    loop {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) || ctl.stopped() {
            return;
        }
        if spin {
            std::hint::spin_loop();
        } else {
            let left = deadline.map_or(POLL, |d| d - now);
            std::thread::sleep(left.min(POLL));
        }
    }
}

/// Wait until `due` as precisely as the machine allows: sleep while it is
/// far, then spin through the last 100 to 200 µs, which a sleep would
/// overshoot. For senders paced at high rates (`ptmp send`, the benchmark
/// suites), where the graph nodes' stop-aware sleep slices would be too
/// coarse; it does not watch for a stop, so callers keep each wait short.
pub fn pace_until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// A sink writing an `ofile` flushes it and commits its input every this
/// many sets (and whenever its input is idle): a restarted sink receives
/// again at most what the file did not hold yet.
const OFILE_COMMIT_EVERY: u64 = 64;

/// Slowest `rate` of a source other than 0 (one set in about 11.6 days).
pub(crate) const MIN_RATE: f64 = 1e-6;

/// A `source` between its sockets.
pub(crate) struct SourceAgent {
    name: String,
    c: SourceConfig,
    tx: Sender,
    done: Option<Receiver>,
}

impl SourceAgent {
    /// Open the sockets of `c`.
    pub(crate) fn new(name: String, c: &SourceConfig) -> Result<Self> {
        let tx = open_tx(&name, &c.output)?;
        let done = match &c.done {
            Some(d) => Some(open_rx(&name, d)?),
            None => None,
        };
        Ok(SourceAgent {
            name,
            c: c.clone(),
            tx,
            done,
        })
    }
}

impl Agent for SourceAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut set = TPSet {
            detid: self.c.detid,
            tps: (0..self.c.tps)
                .map(|ch| TrigPrim {
                    channel: ch,
                    tstart: 0,
                    tspan: Some(25),
                    adcsum: Some(1000 + ch),
                    adcpeak: Some(100),
                    flags: Some(0),
                })
                .collect(),
            ..Default::default()
        };
        let period = (self.c.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / self.c.rate));
        let t0 = Instant::now();
        // Throughput is timed from the first set taken by the output (a
        // PUSH waits for its first peer), to done.
        let mut first: Option<Instant> = None;
        let mut sent = 0u64;
        let mut unsent = 0u64;
        // `count` numbers the whole sequence: a source going on from
        // `first_count` sends what is left of it.
        let todo = self.c.count.saturating_sub(self.c.first_count);
        let mut clock = ptmp_data::Clock::new();
        while (self.c.count == 0 || sent < todo) && !ctl.stopped() {
            if let Some(p) = period {
                let due = Duration::try_from_secs_f64(p.as_secs_f64() * sent as f64)
                    .ok()
                    .and_then(|d| t0.checked_add(d));
                wait_until(due, false, ctl);
                if ctl.stopped() {
                    break;
                }
            }
            // Wraps, as PTMP's 32-bit count.
            set.count = self.c.first_count.wrapping_add(sent) as u32;
            set.created = clock.now_us();
            set.tstart = (set.created.max(0) as u64).saturating_mul(50);
            for tp in &mut set.tps {
                tp.tstart = set.tstart;
            }
            if !send_set(&mut self.tx, &set, ctl, &self.name)? {
                unsent += 1;
                break;
            }
            first.get_or_insert_with(Instant::now);
            sent += 1;
        }
        let t1 = first.unwrap_or(t0);
        let mut r = Report::new(&self.name, "source")
            .count("sent", sent)
            .count("unsent_at_stop", unsent);
        let Some(done) = &mut self.done else {
            let el = t1.elapsed();
            r.counters
                .push(("elapsed_us".into(), el.as_micros() as u64));
            return Ok(r);
        };
        if sent < todo {
            r.lines
                .push("stopped before sending count; no done awaited".into());
            return Ok(r);
        }
        let mut f = Frames::new();
        loop {
            match done.recv_raw_into(&mut f, Some(POLL)) {
                Ok(true) => {
                    ctl.counts.add_in();
                    break;
                }
                Ok(false) | Err(ptmp::Error::Interrupted) => {
                    if ctl.stopped() {
                        r.lines.push("stopped while waiting for done".into());
                        return Ok(r);
                    }
                }
                Err(e) => return Err(Error::socket(&self.name)(e)),
            }
        }
        let el = t1.elapsed();
        let rate = sent as f64 / el.as_secs_f64();
        r.counters
            .push(("elapsed_us".into(), el.as_micros() as u64));
        r.counters.push(("rate_mHz".into(), (rate * 1000.0) as u64));
        r.lines.push(format!(
            "done: {sent} in {:.3} s = {rate:.3} per second",
            el.as_secs_f64()
        ));
        Ok(r)
    }
}

/// A `sink` with its socket and optional dump file.
pub(crate) struct SinkAgent {
    name: String,
    c: SinkConfig,
    rx: Receiver,
    done: Option<Sender>,
    out: Option<Box<dyn Writer>>,
    /// What opening the dump file found, for the report.
    notes: Vec<String>,
    /// With `dedup`: the sets seen so far (those an appended file holds),
    /// and the gaps among them, reported by the run before.
    seen: Option<(Seen, u64)>,
}

impl SinkAgent {
    /// Open the sockets and the dump file of `c`.
    pub(crate) fn new(name: String, c: &SinkConfig) -> Result<Self> {
        let rx = open_rx(&name, &c.input)?;
        let done = match &c.done {
            Some(d) => Some(open_tx(&name, d)?),
            None => None,
        };
        let mut c = c.clone();
        let mut notes = Vec::new();
        let mut seen = c.dedup.then(Seen::new);
        let out = match c.ofile.clone() {
            Some(f) => {
                let (w, path, lines) = crate::ofile::open(&name, &f, c.append, seen.as_mut())?;
                c.ofile = Some(path);
                notes = lines;
                Some(w)
            }
            None => None,
        };
        Ok(SinkAgent {
            name,
            c,
            rx,
            done,
            out,
            notes,
            seen: seen.map(|mut s| {
                // What the file held is no repeat of this run's, and its
                // gaps were the run before's to report.
                s.dropped = 0;
                let gaps = s.missing();
                (s, gaps)
            }),
        })
    }

    /// Flush the dump file, if any, then commit the input: what the file
    /// holds is never received again by a restarted sink, and what it does
    /// not hold yet is.
    fn flush_and_commit(&mut self) -> Result<()> {
        if let Some(w) = &mut self.out {
            w.flush().map_err(Error::file(&self.name, "ofile"))?;
            self.rx.commit_now();
        }
        Ok(())
    }

    fn write(&mut self, f: &Frames) -> Result<()> {
        if let Some(w) = &mut self.out {
            w.write("", None, f)
                .map_err(Error::file(&self.name, "ofile"))?;
        }
        Ok(())
    }
}

impl Agent for SinkAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut f = Frames::new();
        let mut n = 0u64;
        let mut first: Option<Instant> = None;
        let (mut seen, gaps_before) = match self.seen.take() {
            Some((s, g)) => (Some(s), g),
            None => (self.c.dedup.then(Seen::new), 0),
        };
        let mut scratch = TPSet::default();
        let res: Result<()> = (|| {
            while self.c.count.is_none_or(|c| n < c) && !ctl.done(false) {
                match recv_frames(&mut self.rx, &mut f, ctl, &self.name)? {
                    Got::Set => {}
                    Got::Nothing => {
                        // Idle: let the file (and the ring) catch up.
                        self.flush_and_commit()?;
                        continue;
                    }
                    Got::Done => break,
                }
                if let Some(s) = &mut seen {
                    if again(s, &f, &mut scratch) {
                        self.rx.commit();
                        continue;
                    }
                }
                first.get_or_insert_with(Instant::now);
                n += 1;
                self.write(&f)?;
                if self.out.is_none() {
                    self.rx.commit();
                } else if n.is_multiple_of(OFILE_COMMIT_EVERY) {
                    self.flush_and_commit()?;
                }
            }
            Ok(())
        })();
        let flushed = self.flush_and_commit();
        res?;
        flushed?;
        let mut r = Report::new(&self.name, "sink").count("received", n);
        r.lines.append(&mut self.notes);
        if let Some(s) = &seen {
            r = r.count("repeats_dropped", s.dropped);
            if !self.c.share {
                r = r.count("missing", s.missing().saturating_sub(gaps_before));
            }
        }
        if let Some(t) = first {
            r.counters
                .push(("first_to_last_us".into(), t.elapsed().as_micros() as u64));
        }
        if let (Some(done), Some(c)) = (&mut self.done, self.c.count) {
            if n >= c {
                let set = TPSet {
                    count: n as u32,
                    created: ptmp_data::now_us(),
                    ..Default::default()
                };
                let told = send_set(done, &set, ctl, &self.name)?;
                r.lines.push(if told {
                    format!("all {c} arrived; done sent")
                } else {
                    "done could not be sent before stop".into()
                });
            }
        }
        Ok(r)
    }
}

/// A `worker` (or a `proxy`) between its sockets.
pub(crate) struct WorkerAgent {
    name: String,
    kind: &'static str,
    c: WorkerConfig,
    rx: Receiver,
    tx: Sender,
}

impl WorkerAgent {
    /// Open the sockets of `c`; `kind` (`"worker"` or `"proxy"`) names it in
    /// its report.
    pub(crate) fn new(name: String, kind: &'static str, c: &WorkerConfig) -> Result<Self> {
        let (rx, tx) = crate::open_io(&name, &c.input, &c.output)?;
        Ok(WorkerAgent {
            name,
            kind,
            c: c.clone(),
            rx,
            tx,
        })
    }
}

impl Agent for WorkerAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut f = Frames::new();
        let (mut n, mut unsent) = (0u64, 0u64);
        let mut busy = Duration::ZERO;
        let mut seen = self.c.dedup.then(Seen::new);
        let mut scratch = TPSet::default();
        let mut dropped = 0u64;
        // done(false): a flood of input ends the drain after DRAIN_MAX.
        while !ctl.done(false) {
            match recv_frames(&mut self.rx, &mut f, ctl, &self.name)? {
                Got::Set => {}
                Got::Nothing => continue,
                Got::Done => break,
            }
            if let Some(s) = &mut seen {
                if again(s, &f, &mut scratch) {
                    dropped += 1;
                    self.rx.commit();
                    continue;
                }
            }
            n += 1;
            if !self.c.work.is_zero() {
                let t = Instant::now();
                wait_until(t.checked_add(self.c.work), self.c.spin, ctl);
                busy += t.elapsed();
            }
            if send_frames(&mut self.tx, &f, ctl, &self.name)? {
                // Handed on: a restarted worker need not take it again.
                self.rx.commit();
            } else {
                // Not sent (stopping): left uncommitted, so a successor
                // takes it.
                unsent += 1;
            }
        }
        let mut r = Report::new(&self.name, self.kind)
            .count("forwarded", n - unsent)
            .count("unsent_at_stop", unsent);
        if let Some(s) = &seen {
            r = r.count("repeats_dropped", dropped);
            if !self.c.share {
                r = r.count("missing", s.missing());
            }
        }
        if !self.c.work.is_zero() {
            r.counters.push(("work_us".into(), busy.as_micros() as u64));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: &serde_json::Value) -> Cfg<'_> {
        Cfg::new("n", v).unwrap()
    }

    #[test]
    fn configs_are_checked() {
        let out = json!({"socket": {"type": "PUSH", "bind": "inproc://x"}});
        let inp = json!({"socket": {"type": "PULL", "connect": "inproc://x"}});
        let v = json!({"output": out, "done": inp});
        let e = SourceConfig::parse(&cfg(&v)).unwrap_err().to_string();
        assert!(e.contains("count") && e.contains("done"), "{e}");
        let v = json!({"input": inp, "done": out});
        let e = SinkConfig::parse(&cfg(&v)).unwrap_err().to_string();
        assert!(e.contains("count"), "{e}");
        // A file in a format ptmp does not write is refused by name, as a
        // config error (no restart mends it).
        let v = json!({"input": inp, "ofile": "tps.h5"});
        let e = SinkConfig::parse(&cfg(&v)).unwrap_err();
        assert!(e.is_config());
        let e = e.to_string();
        assert!(e.contains("ofile") && e.contains("HDF5 files yet"), "{e}");
        let v = json!({"input": inp, "output": out, "wait": "doze"});
        let e = WorkerConfig::parse(&cfg(&v), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wait") && e.contains("doze"), "{e}");
        let v = json!({"input": inp, "output": out, "work_us": 1500, "wait": "spin"});
        let w = WorkerConfig::parse(&cfg(&v), false).unwrap();
        assert_eq!(w.work, Duration::from_micros(1500));
        assert!(w.spin);
    }

    #[test]
    fn source_rates_too_slow_to_represent_are_refused() {
        let out = json!({"socket": {"type": "PUSH", "bind": "inproc://x"}});
        for bad in [f64::MIN_POSITIVE, 1e-300, 9e-7] {
            let v = json!({"output": out, "rate": bad});
            let e = SourceConfig::parse(&cfg(&v)).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("agent n: rate = {bad}: must be 0")),
                "{e}"
            );
        }
        for ok in [0.0, MIN_RATE, 1e9] {
            let v = json!({"output": out, "rate": ok});
            SourceConfig::parse(&cfg(&v)).unwrap();
        }
    }

    /// A worker doing an hour of work per set and a source sending one set
    /// per 11 days both end soon after a stop (they used to sleep through
    /// it), the worker still forwarding what it took in.
    #[test]
    fn long_waits_end_at_stop() {
        for spin in [false, true] {
            let tag = if spin { "spin" } else { "sleep" };
            let v = json!({
                "input": {"socket": {"type": "PULL", "bind": format!("inproc://long-{tag}-in")}},
                "output": {"socket": {"type": "PUSH", "bind": format!("inproc://long-{tag}-out")}},
                "work_us": 3.6e9, "wait": tag
            });
            let wk = WorkerConfig::parse(&cfg(&v), false).unwrap();
            let mut w = WorkerAgent::new("w".into(), "worker", &wk).unwrap();
            let v = json!({
                "output": {"socket": {"type": "PUSH", "connect": format!("inproc://long-{tag}-in")}},
                "rate": MIN_RATE, "count": 5
            });
            let src = SourceConfig::parse(&cfg(&v)).unwrap();
            let mut a = SourceAgent::new("src".into(), &src).unwrap();
            let mut out = Receiver::from_json(&format!(
                r#"{{"socket": {{"type": "PULL", "connect": "inproc://long-{tag}-out"}}}}"#
            ))
            .unwrap();
            let (cw, ca) = (Ctl::default(), Ctl::default());
            let (cw2, ca2) = (cw.clone(), ca.clone());
            let t0 = Instant::now();
            let wt = std::thread::spawn(move || w.run(&cw2).unwrap());
            let at = std::thread::spawn(move || a.run(&ca2).unwrap());
            std::thread::sleep(Duration::from_millis(300));
            ca.stop();
            cw.stop();
            let ra = at.join().unwrap();
            let got = out.recv(Some(Duration::from_secs(20))).unwrap();
            let rw = wt.join().unwrap();
            assert!(t0.elapsed() < Duration::from_secs(20), "{tag}");
            assert_eq!(ra.get("sent"), Some(1), "{tag}");
            assert_eq!(rw.get("forwarded"), Some(1), "{tag}");
            assert!(got.is_some(), "{tag}");
        }
    }

    /// A worker and a sink whose input never stops coming still end within
    /// the drain bound after a stop (they used to read on forever).
    #[test]
    fn a_flood_of_input_does_not_hold_off_a_stop() {
        use std::sync::atomic::{AtomicBool, Ordering};
        for kind in ["worker", "sink"] {
            let inp = format!("inproc://flood-{kind}-in");
            let v = json!({
                "input": {"socket": {"type": "PULL", "bind": inp}},
                "output": {"socket": {"type": "PUSH", "bind": format!("inproc://flood-{kind}-out")}},
            });
            let mut agent: Box<dyn Agent> = if kind == "worker" {
                let wk = WorkerConfig::parse(&cfg(&v), true).unwrap();
                Box::new(WorkerAgent::new("w".into(), "proxy", &wk).unwrap())
            } else {
                let sk = SinkConfig::parse(&cfg(&v)).unwrap();
                Box::new(SinkAgent::new("s".into(), &sk).unwrap())
            };
            // The worker's output is read as fast as it comes.
            let mut out = Receiver::from_json(&format!(
                r#"{{"socket": {{"type": "PULL", "connect": "inproc://flood-{kind}-out"}}}}"#
            ))
            .unwrap();
            let mut tx = Sender::from_json(&format!(
                r#"{{"socket": {{"type": "PUSH", "connect": "{inp}"}}}}"#
            ))
            .unwrap();
            let quit = std::sync::Arc::new(AtomicBool::new(false));
            let (q1, q2) = (quit.clone(), quit.clone());
            let flood = std::thread::spawn(move || {
                let set = TPSet::default();
                while !q1.load(Ordering::Relaxed) {
                    let _ = tx.send_within(&set, Duration::from_millis(5));
                }
            });
            let drain = std::thread::spawn(move || {
                let mut f = Frames::new();
                while !q2.load(Ordering::Relaxed) {
                    let _ = out.recv_raw_into(&mut f, Some(Duration::from_millis(5)));
                }
            });
            let ctl = Ctl::default();
            let c2 = ctl.clone();
            let h = std::thread::spawn(move || agent.run(&c2));
            std::thread::sleep(Duration::from_millis(300));
            ctl.stop();
            let t0 = Instant::now();
            while !h.is_finished() && t0.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let ended = h.is_finished();
            quit.store(true, Ordering::Relaxed);
            flood.join().unwrap();
            drain.join().unwrap();
            assert!(ended, "{kind} still running 20 s after stop under a flood");
            let r = h.join().unwrap().unwrap();
            let n = r.get("forwarded").or(r.get("received")).unwrap();
            assert!(n > 0, "{kind}: {r}");
        }
    }

    /// source -> worker -> sink over inproc, the sink saying done: every
    /// set arrives, the worker's waits add up, and the source measures.
    #[test]
    fn source_worker_sink_with_done() {
        let v = json!({
            "output": {"socket": {"type": "PUSH", "bind": "inproc://nodes-a"}},
            "done": {"socket": {"type": "PAIR", "bind": "inproc://nodes-done"}},
            "count": 50, "tps": 3
        });
        let src = SourceConfig::parse(&cfg(&v)).unwrap();
        let v = json!({
            "input": {"socket": {"type": "PULL", "connect": "inproc://nodes-a"}},
            "output": {"socket": {"type": "PUSH", "bind": "inproc://nodes-b"}},
            "work_us": 200
        });
        let wk = WorkerConfig::parse(&cfg(&v), false).unwrap();
        let v = json!({
            "input": {"socket": {"type": "PULL", "connect": "inproc://nodes-b"}},
            "done": {"socket": {"type": "PAIR", "connect": "inproc://nodes-done"}},
            "count": 50
        });
        let sk = SinkConfig::parse(&cfg(&v)).unwrap();
        let mut a = SourceAgent::new("src".into(), &src).unwrap();
        let mut w = WorkerAgent::new("w".into(), "worker", &wk).unwrap();
        let mut s = SinkAgent::new("snk".into(), &sk).unwrap();
        let c1 = Ctl::default();
        let c2 = Ctl::default();
        let c2b = c2.clone();
        let wt = std::thread::spawn(move || w.run(&c2b).unwrap());
        let st = std::thread::spawn(move || s.run(&Ctl::default()).unwrap());
        let ra = a.run(&c1).unwrap();
        let rs = st.join().unwrap();
        c2.stop();
        let rw = wt.join().unwrap();
        assert_eq!(ra.get("sent"), Some(50));
        assert_eq!(rs.get("received"), Some(50));
        assert_eq!(rw.get("forwarded"), Some(50));
        assert_eq!(c1.counts.get(), (1, 50), "50 sent, done received");
        assert_eq!(c2.counts.get(), (50, 50));
        // 50 waits of 200 us at least.
        assert!(rw.get("work_us").unwrap() >= 10_000, "{rw}");
        assert!(ra.get("elapsed_us").unwrap() >= 10_000, "{ra}");
        assert!(ra.get("rate_mHz").is_some(), "{ra}");
    }
}
