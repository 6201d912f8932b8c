//! The ports an agent has as a node of a graph: a fact about its kind,
//! read by the graph's parser, planner and monitor.

use crate::spec::Kind;

/// Direction of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Messages arrive at the node through it (a receiving socket).
    In,
    /// The node sends through it.
    Out,
}

/// A port of a node type: its name in edges, the socket key it fills in
/// the agent's data, its direction, whether it must be connected, and
/// whether several edges may meet at it (the zipper's input: one endpoint
/// per stream).
#[derive(Debug, Clone, Copy)]
pub struct PortSpec {
    /// The port's name after the dot in an edge's `"node.port"`.
    pub name: &'static str,
    /// The key in the agent's configuration that the planned socket fills.
    pub key: &'static str,
    /// Whether the node receives or sends through it.
    pub dir: Dir,
    /// Whether a graph is refused when no edge connects it.
    pub required: bool,
    /// Whether several edges may end at it, each a separate endpoint.
    pub multi: bool,
}

const fn port(name: &'static str, key: &'static str, dir: Dir, required: bool) -> PortSpec {
    PortSpec {
        name,
        key,
        dir,
        required,
        multi: false,
    }
}

const IN: PortSpec = port("in", "input", Dir::In, true);
const OUT: PortSpec = port("out", "output", Dir::Out, true);
const IN_OUT: &[PortSpec] = &[IN, OUT];
const MERGE: &[PortSpec] = &[PortSpec { multi: true, ..IN }, OUT];
const SOURCE: &[PortSpec] = &[OUT, port("done", "done", Dir::In, false)];
const SINK: &[PortSpec] = &[IN, port("done", "done", Dir::Out, false)];
const CAT: &[PortSpec] = &[
    port("in", "input", Dir::In, false),
    port("out", "output", Dir::Out, false),
];

impl Kind {
    /// The ports of an agent of this kind as a graph node: their names in
    /// edges, the socket keys they fill, their directions; `None` for the
    /// kinds that cannot be graph nodes (no fixed set of ports: monitor,
    /// composer, stats_graphite).
    pub fn ports(self) -> Option<&'static [PortSpec]> {
        Some(match self {
            Kind::Zipper | Kind::Sorted => MERGE,
            Kind::Window | Kind::Replay | Kind::Stats | Kind::Filter => IN_OUT,
            Kind::Worker | Kind::Proxy => IN_OUT,
            Kind::Czmqat => CAT,
            Kind::Source => SOURCE,
            Kind::Sink => SINK,
            Kind::Monitor | Kind::Composer | Kind::StatsGraphite => return None,
        })
    }
}
