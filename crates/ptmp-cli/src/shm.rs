//! `ptmp shm`: list and remove shared-memory channels.

use crate::common::{outln, CliError, CliResult};
use clap::Subcommand;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub enum ShmCmd {
    /// List the channels (segments) in the shm directory.
    ///
    /// BARRIER says how
    /// the channel's last writer publishes: "full", a barrier per message,
    /// or "by-readers", none, with each reader about to sleep running it
    /// on the writer's CPU through membarrier (a writer whose readers sleep
    /// often turns to "full").
    Ls {
        /// One JSON object per channel.
        #[arg(long)]
        json: bool,
    },
    /// Remove channels by name, or every channel without a live writer.
    Rm {
        /// Channel names (as in shm://NAME).
        names: Vec<String>,
        /// Remove every channel whose writer is gone, and unreadable segments
        /// (but not links or segments of other users: name those to remove them).
        #[arg(long, conflicts_with = "names")]
        stale: bool,
    },
}

pub fn run(cmd: &ShmCmd) -> CliResult {
    let fail = |e: ptmp_shm::ShmError| CliError::fail(e.to_string());
    match cmd {
        ShmCmd::Ls { json } => {
            let chans = ptmp_shm::list().map_err(fail)?;
            if !json {
                outln!(
                    "{:<32} {:>8} {:>12} {:>12} {:>12} {:>10}  writer",
                    "name",
                    "slots",
                    "max bytes",
                    "size",
                    "published",
                    "barrier"
                )?;
            }
            for c in chans {
                match (&c.state, json) {
                    (Ok(s), false) => outln!(
                        "{:<32} {:>8} {:>12} {:>12} {:>12} {:>10}  {}",
                        c.name,
                        s.config.slots,
                        s.config.max_message,
                        c.bytes,
                        s.published,
                        s.publish_fence.label(),
                        match (s.writer_pid, s.writer_alive) {
                            (0, _) => "none".to_string(),
                            (p, true) => format!("pid {p}"),
                            (p, false) => format!("pid {p} (dead)"),
                        }
                    )?,
                    (Err(e), false) => outln!("{:<32} unreadable: {e}", c.name)?,
                    (Ok(s), true) => outln!(
                        "{}",
                        json!({"name": c.name, "path": c.path, "bytes": c.bytes,
                               "slots": s.config.slots, "max_message": s.config.max_message,
                               "policy": s.config.policy.label(),
                               "published": s.published, "writer_pid": s.writer_pid,
                               "writer_alive": s.writer_alive,
                               "publish_fence": s.publish_fence.label(),
                               "untrusted": c.untrusted})
                    )?,
                    (Err(e), true) => outln!(
                        "{}",
                        json!({"name": c.name, "path": c.path, "bytes": c.bytes, "error": e,
                               "untrusted": c.untrusted})
                    )?,
                }
            }
            Ok(())
        }
        ShmCmd::Rm { names, stale } => {
            let names: Vec<String> = if *stale {
                ptmp_shm::list()
                    .map_err(fail)?
                    .into_iter()
                    .filter(|c| {
                        // Another user's segment, or a link: not ours to
                        // clean up (remove it by name if it really must go).
                        if c.untrusted {
                            if let Err(e) = &c.state {
                                tracing::warn!("kept {}: {e}", c.name);
                            }
                            return false;
                        }
                        c.state.as_ref().map_or(true, |s| !s.writer_alive)
                    })
                    .map(|c| c.name)
                    .collect()
            } else if names.is_empty() {
                return Err(CliError::usage(
                    "name the channels to remove, or give --stale",
                ));
            } else {
                names.clone()
            };
            for n in &names {
                ptmp_shm::remove(n).map_err(fail)?;
                tracing::info!("removed {n}");
            }
            Ok(())
        }
    }
}
