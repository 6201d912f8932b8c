//! ptmp's benchmark suites: ptmp beside raw libzmq, POSIX message queues,
//! plain sockets and Redis, in one run.
//!
//! The `ptmp bench` command is a thin front over [`run`]; the two-process
//! suites start the same binary again with a [`ChildCmd`], so a front must
//! offer those hidden subcommands too (see `main.rs` for the smallest one).
//! Suites print Markdown tables as their rows come in, and with `--out DIR`
//! also save each suite as JSON and an SVG chart, all from the same rows.

mod agents_bench;
mod babus;
mod baseline;
mod bench;
mod child;
pub mod error;
mod fanout;
mod latency;
mod limits;
mod peers;
mod redis;
mod report;
mod requests;
mod ring;
pub mod sendrecv;
pub mod sys;
mod throughput;
pub mod tpset;

pub use bench::{run, BenchArgs};
pub use child::{run as run_child, ChildCmd};
pub use error::{BenchError, BenchResult};
