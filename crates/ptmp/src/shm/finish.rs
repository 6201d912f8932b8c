//! What a finishing shm:// sender can say of its messages' delivery: a
//! message written into the ring has not reached a reader until that
//! reader has passed it, or, for a durable reader, committed it.

use super::ShmTx;
use crate::delivery::Undelivered;
use ptmp_shm::Policy;
use std::time::Duration;

impl ShmTx {
    /// Wait up to `linger` (`None`: for ever) until the readers the ring
    /// keeps have passed (a durable reader: committed) every message this
    /// sender wrote; count what the slowest of them, or a durable reader
    /// given up meanwhile, had not, at most `sent`, with the reason.
    /// `Undelivered::None` when no reader the ring keeps is behind (none
    /// ever came: the ring holds the messages for the first one), and for
    /// a PUB ring, whose writer never waits for its readers.
    pub(crate) fn drain_undelivered(
        &mut self,
        linger: Option<Duration>,
        sent: u64,
    ) -> (Undelivered, Option<String>) {
        if self.w.policy() == Policy::Overwrite {
            return (Undelivered::None, None);
        }
        let d = match self.w.drain(linger.unwrap_or(Duration::MAX)) {
            Ok(d) => d,
            Err(e) => {
                let why = format!("shm://{}: readers not known: {e}", self.name);
                return (Undelivered::Unknown, Some(why));
            }
        };
        self.carry();
        // Messages of this sender's from `pos` on.
        let mine = |pos: u64| d.next_seq.saturating_sub(pos.max(self.first_seq)).min(sent);
        let mut worst = (0, None);
        if let Some(r) = d.behind {
            let n = mine(r.position);
            let who = match (r.durable, r.alive) {
                (true, true) => format!("durable reader (pid {}) has not committed", r.pid),
                (true, false) => format!(
                    "durable reader (pid {}, dead, its place kept for its grace time) has not committed",
                    r.pid
                ),
                (false, _) => format!("reader (pid {}) has not read", r.pid),
            };
            worst = (n, Some(format!("shm://{}: {who} {n}", self.name)));
        }
        if let Some(pos) = d.given_up_at {
            let n = mine(pos);
            if n > worst.0 {
                let why = format!(
                    "shm://{}: a durable reader, dead past its grace time, was given up with {n} not committed",
                    self.name
                );
                worst = (n, Some(why));
            }
        }
        match worst {
            (0, _) => (Undelivered::None, None),
            (n, why) => (Undelivered::AtMost(n), why),
        }
    }
}
