//! `stats_graphite` (PTMP's TPStatsGraphite): turns the JSON messages of a
//! `stats` agent into Graphite's plaintext protocol and writes them to
//! carbon over a ZeroMQ STREAM socket (a plain TCP connection).
//!
//! Keys: `input` (required: where the stats messages arrive), `output`
//! (required: normally `{"socket": {"type": "STREAM", "connect":
//! ["tcp://carbon-host:2003"]}}`), `prefix` (optional: a dotted path put
//! before every metric, e.g. `"dune.apa5"`; dots at its ends are dropped;
//! none by default, as PTMP).
//!
//! Each JSON message is flattened into one line per number,
//! `path value timestamp\n`: the path joins the keys from the top with dots
//! (array elements by index), so a link's TP rate of the default stats
//! becomes `tpsets.links.0x1.rates.tps` (`dune.apa5.tpsets.links.0x1.rates.tps`
//! with the prefix above). A space or control character in a key would
//! break the line apart, so it becomes `_`. The timestamp is the `now` of the
//! nearest enclosing object that has one (the stats put the link's data
//! time there, in seconds), else the time the message arrived, in seconds.
//! All lines of one message go out in one write.
//!
//! Paths and timestamps are PTMP's: no leading dot, and the timestamp the
//! `now` of the nearest enclosing object (the link's data second) or else
//! the arrival second. Differences from the C++ code, all in values carbon
//! could not store: strings are skipped and booleans sent as 1/0 (PTMP
//! wrote them as JSON text, `"x"` or `true`, which carbon rejects); nulls are
//! skipped by both. Numbers are written by serde_json (`1e20` where PTMP's
//! JSON library writes `1e+20`; carbon reads both). A message whose
//! first frame is not the JSON type tag is counted (`unsupported`) and
//! skipped, as PTMP warns and skips it.
//!
//! With an output socket other than STREAM the text goes out as a two-frame
//! message, the 4-byte GLOT type tag (0x474C4F54, native byte order) then
//! the lines, as PTMP does for messages meant to stay inside ZeroMQ; a
//! warning says so.

use crate::cfg::Cfg;
use crate::error::{Error, Result};
use crate::stats::JSON_TYPE_FRAME;
use crate::{Agent, Ctl, Report, POLL};
use ptmp::{Frames, Receiver, Sender, SocketConfig, SocketType};
use serde_json::Value;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The type tag PTMP puts before Graphite text kept inside ZeroMQ.
pub(crate) const GLOT_TYPE: i32 = 0x474c_4f54;

/// How long to wait for carbon's connection before the first message is
/// given up (later messages do not wait: a lost carbon must not stall the
/// stats).
pub(crate) const CONNECT_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
/// A validated stats_graphite configuration (keys in the module docs).
pub struct Config {
    /// Socket the stats messages arrive on.
    pub input: SocketConfig,
    /// Socket to carbon (STREAM), or a ZeroMQ socket for GLOT messages.
    pub output: SocketConfig,
    /// Path put before every metric, without dots at its ends; empty for
    /// none.
    pub prefix: String,
}

impl Config {
    /// Validate the keys of a stats_graphite's `data`.
    pub fn parse(c: &Cfg) -> Result<Config> {
        let prefix = c.str_opt("prefix")?.unwrap_or("").trim_matches('.');
        if let Some(bad) = prefix
            .chars()
            .find(|ch| ch.is_whitespace() || ch.is_control())
        {
            return Err(c.err(
                "prefix",
                prefix,
                format!(
                    "{bad:?} would break Graphite's line format; use dots, letters, digits, _ or -"
                ),
            ));
        }
        if prefix.contains("..") {
            return Err(c.err("prefix", prefix, "an empty path element (two dots)"));
        }
        Ok(Config {
            input: c.req_socket("input")?,
            output: c.req_socket("output")?,
            prefix: prefix.to_string(),
        })
    }

    /// Notes for the user about a config PTMP runs but that is likely not
    /// what was meant.
    pub fn warnings(&self) -> Vec<String> {
        if self.output.socket_type() == SocketType::Stream {
            vec![]
        } else {
            vec![format!(
                "output is a {} socket, not STREAM: the Graphite text goes out as ZeroMQ \
                 messages tagged GLOT, not to carbon",
                self.output.socket_type().name()
            )]
        }
    }
}

/// Flatten `v` into Graphite plaintext lines appended to `out`: `prefix` is
/// the path so far, `ts` the timestamp (seconds) unless an object on the way
/// carries its own `now`.
pub fn flatten(v: &Value, prefix: &str, ts: i64, out: &mut String) {
    let join = |k: &str| {
        // Whitespace or a control character would end the path early or
        // split the line: carbon would store garbage or drop it.
        let k: String = k
            .chars()
            .map(|c| {
                if c.is_whitespace() || c.is_control() {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        if prefix.is_empty() {
            k
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            let ts = m
                .get("now")
                .and_then(Value::as_f64)
                .map_or(ts, |n| n as i64);
            for (k, x) in m {
                flatten(x, &join(k), ts, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(x, &join(&i.to_string()), ts, out);
            }
        }
        Value::Number(n) => {
            let _ = writeln!(out, "{prefix} {n} {ts}");
        }
        Value::Bool(b) => {
            let _ = writeln!(out, "{prefix} {} {ts}", u8::from(*b));
        }
        Value::String(_) | Value::Null => {}
    }
}

/// Where Graphite text goes: carbon over a STREAM socket, or GLOT-tagged
/// ZeroMQ messages (shared with the agents' GLOT metrics).
pub(crate) enum Out {
    /// A STREAM socket connected to carbon; the peer's routing id once the
    /// connection is up.
    Stream {
        sock: zmq::Socket,
        _ctx: zmq::Context,
        peer: Option<Vec<u8>>,
        ever: bool,
    },
    /// Any other socket: GLOT-tagged messages.
    Zmq(Box<Sender>),
}

/// The converter between its sockets.
pub(crate) struct GraphiteAgent {
    name: String,
    rx: Receiver,
    out: Out,
    prefix: String,
}

impl Out {
    /// Connect (or bind) `c`: a STREAM socket of our own, anything else
    /// through a [`Sender`].
    pub(crate) fn open(name: &str, c: &SocketConfig) -> Result<Out> {
        if c.socket_type() != SocketType::Stream {
            return Ok(Out::Zmq(Box::new(crate::io::open_tx(name, c)?)));
        }
        let ctx = zmq::Context::new();
        let sock = ctx
            .socket(zmq::STREAM)
            .map_err(zerr(name, "STREAM socket"))?;
        // ZeroMQ's linger: milliseconds, -1 for no limit.
        let linger = c
            .linger()
            .map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as i32);
        sock.set_linger(linger).map_err(zerr(name, "set linger"))?;
        // As every ptmp socket: what one connection may make it hold.
        sock.set_maxmsgsize(c.max_message().min(i64::MAX as usize) as i64)
            .map_err(zerr(name, "set maxmsgsize"))?;
        for (attach, ep) in c.endpoints() {
            match attach {
                ptmp::Attach::Bind => sock
                    .bind(&ep.address)
                    .map_err(zerr(name, &format!("bind {}", ep.address)))?,
                ptmp::Attach::Connect => sock
                    .connect(&ep.address)
                    .map_err(zerr(name, &format!("connect {}", ep.address)))?,
            }
        }
        Ok(Out::Stream {
            sock,
            _ctx: ctx,
            peer: None,
            ever: false,
        })
    }

    /// Send one block of lines; false when it could not go out.
    pub(crate) fn emit(&mut self, text: &str, ctl: &Ctl, name: &str) -> Result<bool> {
        match self {
            Out::Zmq(tx) => {
                let tag = GLOT_TYPE.to_ne_bytes();
                let f = Frames::from_slices(&[&tag[..], text.as_bytes()]);
                crate::send_frames(tx, &f, ctl, name)
            }
            Out::Stream {
                sock, peer, ever, ..
            } => {
                let deadline = Instant::now() + if *ever { Duration::ZERO } else { CONNECT_WAIT };
                loop {
                    // Connection events arrive as [id, ""]: a new id is a
                    // connection, the current one again a disconnection.
                    // Carbon sends nothing else; other data is ignored.
                    let left = deadline.saturating_duration_since(Instant::now());
                    let ms = if peer.is_some() {
                        0
                    } else {
                        left.min(POLL).as_millis() as i64
                    };
                    if sock.poll(zmq::POLLIN, ms).map_err(zerr(name, "poll"))? > 0 {
                        let m = sock.recv_multipart(0).map_err(zerr(name, "recv"))?;
                        if m.len() == 2 && m[1].is_empty() {
                            if peer.as_deref() == Some(&m[0][..]) {
                                *peer = None;
                            } else {
                                *peer = Some(m[0].clone());
                                *ever = true;
                            }
                        }
                        continue;
                    }
                    if peer.is_some() || left.is_zero() || ctl.stopped() {
                        break;
                    }
                }
                let Some(id) = peer.as_ref() else {
                    return Ok(false);
                };
                sock.send_multipart([&id[..], text.as_bytes()], 0)
                    .map_err(zerr(name, "send to carbon"))?;
                ctl.sent_out(None);
                Ok(true)
            }
        }
    }
}

fn zerr(agent: &str, what: &str) -> impl FnOnce(zmq::Error) -> Error {
    let (agent, what) = (agent.to_string(), what.to_string());
    move |e| Error::run(&agent, format!("{what}: {e}"))
}

impl GraphiteAgent {
    /// Open the input socket and connect (or bind) the output.
    pub(crate) fn new(name: String, c: &Config) -> Result<Self> {
        let rx = crate::io::open_rx(&name, &c.input)?;
        let out = Out::open(&name, &c.output)?;
        Ok(GraphiteAgent {
            name,
            rx,
            out,
            prefix: c.prefix.clone(),
        })
    }
}

impl Agent for GraphiteAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut frames = Frames::new();
        let (mut nin, mut sent, mut unsent, mut lines) = (0u64, 0u64, 0u64, 0u64);
        let (mut unsupported, mut bad) = (0u64, 0u64);
        let mut text = String::new();
        while !ctl.done(false) {
            match crate::recv_frames(&mut self.rx, &mut frames, ctl, &self.name)? {
                crate::Got::Set => {}
                crate::Got::Nothing => continue,
                crate::Got::Done => break,
            }
            nin += 1;
            if frames.len() != 2 || frames.get(0) != Some(JSON_TYPE_FRAME) {
                unsupported += 1;
                continue;
            }
            let Ok(v) = serde_json::from_slice::<Value>(frames.get(1).unwrap_or(&[])) else {
                bad += 1;
                continue;
            };
            text.clear();
            flatten(&v, &self.prefix, ptmp_data::now_us() / 1_000_000, &mut text);
            if text.is_empty() {
                continue;
            }
            if self.out.emit(&text, ctl, &self.name)? {
                sent += 1;
                lines += text.lines().count() as u64;
            } else {
                unsent += 1;
            }
        }
        Ok(Report::new(&self.name, "stats_graphite")
            .count("in", nin)
            .count("sent", sent)
            .count("lines", lines)
            .count("unsent", unsent)
            .count("unsupported", unsupported)
            .count("bad_json", bad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flattens_with_dots_and_the_nearest_now() {
        let v = json!({"tpsets": {"links": {
            "0x1": {"now": 1700000000, "counts": {"ntps": 3}, "rates": {"tps": 1.5}},
            "nlinks": 1, "seqno": 0, "name": "skipped", "ok": true, "l": [4, 5]}}});
        let mut s = String::new();
        flatten(&v, "", 42, &mut s);
        let mut got: Vec<&str> = s.lines().collect();
        got.sort_unstable();
        assert_eq!(
            got,
            [
                "tpsets.links.0x1.counts.ntps 3 1700000000",
                "tpsets.links.0x1.now 1700000000 1700000000",
                "tpsets.links.0x1.rates.tps 1.5 1700000000",
                "tpsets.links.l.0 4 42",
                "tpsets.links.l.1 5 42",
                "tpsets.links.nlinks 1 42",
                "tpsets.links.ok 1 42",
                "tpsets.links.seqno 0 42",
            ]
        );
    }

    #[test]
    fn a_prefix_goes_first_and_keys_cannot_break_a_line() {
        let v = json!({"tpsets": {"a b\nc": 1, "x": {"y\tz": 2.5}}});
        let mut s = String::new();
        flatten(&v, "dune.apa5", 7, &mut s);
        let mut got: Vec<&str> = s.lines().collect();
        got.sort_unstable();
        assert_eq!(
            got,
            ["dune.apa5.tpsets.a_b_c 1 7", "dune.apa5.tpsets.x.y_z 2.5 7"]
        );
        let io = |prefix: Value| {
            json!({
                "input": {"socket": {"type": "SUB", "connect": ["inproc://g-in"]}},
                "output": {"socket": {"type": "STREAM", "connect": ["tcp://127.0.0.1:2003"]}},
                "prefix": prefix,
            })
        };
        let parse = |v: &Value| Config::parse(&Cfg::new("g", v).unwrap());
        assert_eq!(
            parse(&io(json!(".dune.apa5."))).unwrap().prefix,
            "dune.apa5"
        );
        for bad in [json!("du ne"), json!("a\nb"), json!("a..b"), json!(5)] {
            let e = parse(&io(bad.clone())).unwrap_err().to_string();
            assert!(e.contains("prefix"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_non_stream_output_is_warned_about() {
        let v = json!({
            "input": {"socket": {"type": "SUB", "connect": ["inproc://g-in"]}},
            "output": {"socket": {"type": "PUSH", "bind": ["inproc://g-out"]}}
        });
        let c = Config::parse(&Cfg::new("g", &v).unwrap()).unwrap();
        assert!(c.warnings()[0].contains("not STREAM"), "{:?}", c.warnings());
        let v = json!({
            "input": {"socket": {"type": "SUB", "connect": ["inproc://g-in"]}},
            "output": {"socket": {"type": "STREAM", "connect": ["tcp://127.0.0.1:2003"]}}
        });
        let c = Config::parse(&Cfg::new("g", &v).unwrap()).unwrap();
        assert!(c.warnings().is_empty());
    }
}
