//! The filter agent: its configuration and its loop between two sockets.

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
    /// Overrides every output's `detid` when set.
    pub detid: Option<u32>,
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
        let c = &self.config;
        let mut engine: Box<dyn Engine> = c.plugins.create(&self.name, &c.engine, &c.data)?;
        let mut input = TPSet::default();
        let mut out = Vec::new();
        let (mut nin, mut nout, mut engine_errors, mut bad, mut empty) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut unsent = 0u64;
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
            out.clear();
            if let Err(e) = engine.process(&input, &mut out) {
                engine_errors += 1;
                if ctl.verbose {
                    eprintln!("{}: engine error on set {}: {e}", self.name, input.count);
                }
            }
            for s in &mut out {
                s.count = nout as u32; // wraps, as PTMP's 32-bit count
                if let Some(d) = self.config.detid {
                    s.detid = d;
                }
                if s.created == 0 {
                    s.created = ptmp_data::now_us();
                }
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
}
