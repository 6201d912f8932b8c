//! The filter agent: its configuration and its loop between two sockets.

use super::engines::UNAVAILABLE_ENGINES;
use super::plugin::Plugins;
use super::Engine;
use crate::cfg::Cfg;
use crate::error::Result;
use crate::{Agent, Ctl, Report, POLL};
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use serde_json::Value;

/// A validated filter configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Socket the input TPSets arrive on.
    pub input: SocketConfig,
    /// Socket the engine's outputs go out on.
    pub output: SocketConfig,
    /// The engine's name (`engine`, or PTMP's `method`).
    pub engine: String,
    /// Every output's `detid`; when unset, the `detid` of the first input
    /// set with TrigPrims.
    pub detid: Option<u32>,
    /// Leave each output's `detid` as the engine made it (ptmp's own
    /// option, for a filter on a merged stream whose links must stay told
    /// apart), instead of PTMP's one detid for the whole output.
    pub keep_detid: bool,
    /// The whole data object, given to the engine.
    pub data: Value,
    /// Where the engine comes from; the agent makes it from these on its own
    /// thread.
    pub plugins: Plugins,
}

impl Config {
    /// Validate a filter's `data` (`c` reads it, `data` is handed whole to the
    /// engine): the engine must exist and accept the configuration, which is
    /// checked by making one and dropping it at once.
    pub fn parse(c: &Cfg, data: &Value, plugins: &Plugins) -> Result<Config> {
        let input = c.req_socket("input")?;
        let output = c.req_socket("output")?;
        let engine = match (c.str_opt("engine")?, c.str_opt("method")?) {
            (Some(e), Some(m)) if e != m => {
                return Err(c.err(
                    "method",
                    format!("{m:?}"),
                    format!("disagrees with engine {e:?}; give one"),
                ))
            }
            (Some(e), _) | (None, Some(e)) => e.to_string(),
            (None, None) => {
                return Err(c.err(
                    "engine",
                    "(missing)",
                    "a filter needs an engine (or PTMP's key, method)",
                ))
            }
        };
        if let Some((_, what)) = UNAVAILABLE_ENGINES
            .iter()
            .find(|(n, _)| *n == engine && !plugins.has(n))
        {
            return Err(c.err(
                "engine",
                format!("{engine:?}"),
                format!(
                    "is {what}, which is not available in ptmp (no trigger decisions are \
                     built in); load a library providing it with \"plugins\" or PTMP_PLUGINS"
                ),
            ));
        }
        if !plugins.has(&engine) {
            return Err(c.err(
                "engine",
                format!("{engine:?}"),
                format!(
                    "no such engine (load its library with \"plugins\" or PTMP_PLUGINS); known: {}",
                    plugins.engine_names().join(", ")
                ),
            ));
        }
        let detid = c.int_or("detid", -1, -1, u32::MAX as i64)?;
        let keep_detid = c.bool_or("keep_detid", false)?;
        if keep_detid && detid >= 0 {
            return Err(c.err(
                "keep_detid",
                "true",
                format!("contradicts detid = {detid}; give one"),
            ));
        }
        // Let the engine check its own keys now, before anything starts.
        drop(plugins.create(&c.agent, &engine, data)?);
        // Keys the built-in engines read are not "unread".
        for k in ["adjacency", "max_gap", "min_adcsum"] {
            let _ = c.get(k);
        }
        Ok(Config {
            input,
            output,
            engine,
            detid: (detid >= 0).then_some(detid as u32),
            keep_detid,
            data: data.clone(),
            plugins: plugins.clone(),
        })
    }
}

/// The filter between its sockets.
///
/// The agent keeps what it needs to make its engine, not the engine: the
/// engine is made when [`Agent::run`] starts and dropped when it returns,
/// so a plugin engine is created, used and destroyed on the agent's own
/// thread, as `include/ptmp_filter.h` promises.
pub struct FilterAgent {
    name: String,
    rx: Receiver,
    tx: Sender,
    config: Config,
}

impl FilterAgent {
    /// Open the filter's sockets; its engine is made later, by `run`.
    pub fn new(name: String, c: &Config) -> Result<Self> {
        let (rx, tx) = crate::open_io(&name, &c.input, &c.output)?;
        Ok(FilterAgent {
            name,
            rx,
            tx,
            config: c.clone(),
        })
    }
}

impl Agent for FilterAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut clock = ptmp_data::Clock::new();
        let c = &self.config;
        let mut engine: Box<dyn Engine> = c.plugins.create(&self.name, &c.engine, &c.data)?;
        let mut input = TPSet::default();
        let mut out = Vec::new();
        let (mut nin, mut nout, mut engine_errors, mut bad, mut empty) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut unsent = 0u64;
        let mut out_detid = self.config.detid;
        while !ctl.done(false) {
            match crate::recv_set(&mut self.rx, &mut input, POLL, ctl, &mut bad, &self.name)? {
                crate::Got::Set => {}
                crate::Got::Nothing => continue,
                crate::Got::Done => break,
            }
            nin += 1;
            if input.tps.is_empty() {
                empty += 1;
                continue;
            }
            // As PTMP: outputs carry the configured detid, else that of the
            // first input with TrigPrims, for the whole run.
            let detid = *out_detid.get_or_insert(input.detid);
            out.clear();
            if let Err(e) = engine.process(&input, &mut out) {
                engine_errors += 1;
                if ctl.verbose {
                    eprintln!("{}: engine error on set {}: {e}", self.name, input.count);
                }
            }
            for s in &mut out {
                s.count = nout as u32; // wraps, as PTMP's 32-bit count
                if !self.config.keep_detid {
                    s.detid = detid;
                }
                s.created = clock.now_us();
                if crate::send_set(&mut self.tx, s, ctl, &self.name)? {
                    nout += 1;
                } else {
                    unsent += 1;
                }
            }
        }
        Ok(Report::new(&self.name, "filter")
            .count("in", nin)
            .count("out", nout)
            .count("empty_inputs", empty)
            .count("unsent_at_stop", unsent)
            .count("engine_errors", engine_errors)
            .count("bad_messages", bad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_engine_names_the_known_ones() {
        let data = serde_json::json!({
            "input": {"socket": {"type": "PULL", "connect": ["inproc://x"]}},
            "output": {"socket": {"type": "PUSH", "bind": ["inproc://y"]}},
            "engine": "nosuch"
        });
        let c = Cfg::new("f1", &data).unwrap();
        let e = Config::parse(&c, &data, &Plugins::builtin())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("agent f1: engine = \"nosuch\": no such engine"),
            "{e}"
        );
        assert!(e.contains("passthrough"), "{e}");
    }

    fn config(engine: &str, tag: &str, detid: Option<serde_json::Value>) -> Result<Config> {
        let mut data = serde_json::json!({
            "input": {"socket": {"type": "PULL", "bind": [format!("inproc://{tag}-in")]}},
            "output": {"socket": {"type": "PUSH", "bind": [format!("inproc://{tag}-out")]}},
            "engine": engine
        });
        if let Some(d) = detid {
            for (k, v) in d.as_object().unwrap() {
                data[k] = v.clone();
            }
        }
        let c = Cfg::new("f1", &data)?;
        Config::parse(&c, &data, &Plugins::builtin())
    }

    /// PTMP's engine names: its dummy filter and its trigger-candidate
    /// finder are accepted; its trigger-decision engine is refused, by name.
    #[test]
    fn ptmp_engine_names() {
        for e in ["dummy_filter", "pdune_adjacency_tc", "pdune-adjacency-tc"] {
            config(e, "names", None).unwrap();
        }
        let e = config("pdune_adjacency_td", "names", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "agent f1: engine = \"pdune_adjacency_td\": is the trigger-decision engine"
            ),
            "{e}"
        );
        assert!(e.contains("not available in ptmp"), "{e}");
    }

    fn set(detid: u32, count: u32, created: i64) -> TPSet {
        TPSet {
            detid,
            count,
            created,
            tstart: 1000 * u64::from(count),
            tps: vec![ptmp::TrigPrim {
                channel: 1,
                tstart: 1000 * u64::from(count),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// Run a `dummy_filter` on sets from links 5 and 6 (and an empty one,
    /// which is skipped); return what came out.
    fn run_filter(tag: &str, detid: Option<serde_json::Value>) -> Vec<TPSet> {
        let c = config("dummy_filter", tag, detid).unwrap();
        let mut agent = FilterAgent::new("f1".into(), &c).unwrap();
        let ctl = Ctl::new(false);
        let stop = ctl.clone();
        let h = std::thread::spawn(move || agent.run(&ctl).unwrap());
        let sock = |t: &str, end: &str| {
            format!(r#"{{"socket": {{"type": "{t}", "connect": ["inproc://{tag}-{end}"]}}}}"#)
        };
        let mut tx = Sender::from_json(&sock("PUSH", "in")).unwrap();
        let mut rx = Receiver::from_json(&sock("PULL", "out")).unwrap();
        let mut empty = set(4, 0, 7);
        empty.tps.clear();
        tx.send(&empty).unwrap();
        for (d, n) in [(5, 1), (6, 2), (5, 3)] {
            tx.send(&set(d, n, 7)).unwrap();
        }
        let mut got = vec![];
        for _ in 0..3 {
            got.push(
                rx.recv(Some(std::time::Duration::from_secs(10)))
                    .unwrap()
                    .unwrap(),
            );
        }
        stop.stop();
        let r = h.join().unwrap();
        assert_eq!(
            (r.get("in"), r.get("out"), r.get("empty_inputs")),
            (Some(4), Some(3), Some(1))
        );
        got
    }

    /// As PTMP: every output gets the first input's detid (not each
    /// input's), a fresh `created`, and `count` from 0.
    #[test]
    fn outputs_carry_the_first_inputs_detid_and_a_fresh_created() {
        let t0 = ptmp_data::now_us();
        let got = run_filter("stamp1", None);
        for (i, s) in got.iter().enumerate() {
            assert_eq!((s.count, s.detid), (i as u32, 5), "{s:?}");
            assert!(s.created >= t0, "created {} not fresh", s.created);
            assert_eq!(s.tstart, 1000 * (i as u64 + 1));
        }
    }

    /// A configured detid goes on every output.
    #[test]
    fn outputs_carry_the_configured_detid() {
        let got = run_filter("stamp2", Some(serde_json::json!({"detid": 99})));
        assert!(got.iter().all(|s| s.detid == 99), "{got:?}");
    }

    /// ptmp's opt-out: `keep_detid` leaves each output's detid alone (for a
    /// pass-through engine, its input's), `created` still fresh.
    #[test]
    fn keep_detid_leaves_each_outputs_detid() {
        let t0 = ptmp_data::now_us();
        let got = run_filter("stamp3", Some(serde_json::json!({"keep_detid": true})));
        let d: Vec<u32> = got.iter().map(|s| s.detid).collect();
        assert_eq!(d, vec![5, 6, 5]);
        assert!(got.iter().all(|s| s.created >= t0));
        let both = serde_json::json!({"keep_detid": true, "detid": 3});
        let e = config("pass", "stamp4", Some(both))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("keep_detid = true: contradicts detid = 3"),
            "{e}"
        );
    }
}
