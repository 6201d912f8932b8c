//! `ptmp top --shm`: every channel's header and reader registry: writer,
//! messages published and their rate, and per registered reader how far it
//! is behind the writer and, on a channel whose writer overwrites, how many
//! of those the ring no longer holds.

use super::{add_table, clock, rate, Frame, Tables, Tone, View};
use std::collections::HashMap;
use std::time::Instant;

/// A channel read at one time: when, messages published, and each
/// reader's (pid, position).
type Reading = (Instant, u64, Vec<(u32, u64)>);

/// The shm view: which channels to show and their previous readings.
pub(super) struct ShmView {
    filter: Option<String>,
    /// Per channel: time, published, and each reader's (pid, position).
    prev: HashMap<String, Reading>,
}

impl ShmView {
    pub(super) fn new(filter: Option<String>) -> ShmView {
        ShmView {
            filter,
            prev: HashMap::new(),
        }
    }
}

impl ShmView {
    /// One row per registered reader of a channel: its position, rate, how
    /// far behind the writer it is and, on a channel whose writer
    /// overwrites, how many of those the ring no longer holds.
    fn reader_rows(
        st: &ptmp_shm::ChannelState,
        readers: &[ptmp_shm::ReaderState],
        prev: Option<&Reading>,
        dt: Option<f64>,
        (rows, row_tones): (&mut Vec<Vec<String>>, &mut Vec<Tone>),
    ) {
        let overwrite = st.config.policy == ptmp_shm::Policy::Overwrite;
        for x in readers {
            let behind = st.published.saturating_sub(x.position);
            let read_rate = match (prev, dt) {
                (Some(p), Some(dt)) if dt > 0.0 => {
                    p.2.iter()
                        .find(|(pid, _)| *pid == x.pid)
                        .map(|(_, pos)| x.position.saturating_sub(*pos) as f64 / dt)
                }
                _ => None,
            };
            // A writer that overwrites has already reused the slots of
            // everything more than a ring behind: those are lost.
            let lost = if overwrite {
                behind.saturating_sub(st.config.slots as u64).to_string()
            } else {
                "-".into()
            };
            let slots = st.config.slots as u64;
            row_tones.push(if !x.alive || (overwrite && behind > slots) {
                Tone::Bad
            } else if behind * 2 > slots {
                // More than half a ring behind: near losing (pub) or
                // holding the writer back (push).
                Tone::Warn
            } else {
                Tone::Plain
            });
            rows.push(vec![
                format!("  reader {}", x.pid),
                String::new(),
                String::new(),
                if x.alive { "" } else { "(dead)" }.into(),
                x.position.to_string(),
                rate(read_rate),
                behind.to_string(),
                lost,
                String::new(),
            ]);
        }
    }
}

impl View for ShmView {
    fn frame(&mut self) -> Frame {
        let dir = ptmp_shm::shm_dir();
        let mut lines = vec![format!(
            "ptmp top: shared-memory channels in {}   {}",
            dir.display(),
            clock()
        )];
        let chans = match ptmp_shm::list() {
            Ok(c) => c,
            Err(e) => {
                let why = e.to_string();
                lines.push(String::new());
                lines.push(why.clone());
                return Frame {
                    lines,
                    tones: HashMap::new(),
                    tables: Vec::new(),
                    empty_because: Some(why),
                };
            }
        };
        let chans: Vec<_> = chans
            .into_iter()
            .filter(|c| {
                self.filter
                    .as_ref()
                    .is_none_or(|f| c.name.contains(f.as_str()))
            })
            .collect();
        lines.push(format!(
            "{} channels; a reader's BEHIND is how many published messages it has not read yet; q quits",
            chans.len()
        ));
        lines.push(String::new());
        let now = Instant::now();
        let mut rows = Vec::new();
        let mut row_tones = Vec::new();
        let mut tones = HashMap::new();
        let mut tables = Tables::new();
        let mut msgs = Vec::new();
        for c in &chans {
            let (st, readers) = match ptmp_shm::inspect(&c.name) {
                Ok(x) => x,
                Err(e) => {
                    // Gone since the listing: a writer just removed it.
                    if c.state.is_ok() && !c.path.exists() {
                        continue;
                    }
                    msgs.push(format!("{}: {e}", c.name));
                    continue;
                }
            };
            let prev = self.prev.get(&c.name);
            let dt = prev.map(|p| now.duration_since(p.0).as_secs_f64());
            let r = match (prev, dt) {
                (Some(p), Some(dt)) if dt > 0.0 => {
                    Some(st.published.saturating_sub(p.1) as f64 / dt)
                }
                _ => None,
            };
            let overwrite = st.config.policy == ptmp_shm::Policy::Overwrite;
            row_tones.push(if st.writer_pid != 0 && !st.writer_alive {
                Tone::Warn
            } else {
                Tone::Plain
            });
            rows.push(vec![
                c.name.clone(),
                if overwrite { "pub" } else { "push" }.into(),
                st.config.slots.to_string(),
                match (st.writer_pid, st.writer_alive) {
                    (0, _) => "none".into(),
                    (p, true) => p.to_string(),
                    (p, false) => format!("{p} (dead)"),
                },
                st.published.to_string(),
                rate(r),
                String::new(),
                String::new(),
                String::new(),
            ]);
            Self::reader_rows(&st, &readers, prev, dt, (&mut rows, &mut row_tones));
            self.prev.insert(
                c.name.clone(),
                (
                    now,
                    st.published,
                    readers.iter().map(|x| (x.pid, x.position)).collect(),
                ),
            );
        }
        add_table(
            (&mut lines, &mut tones, &mut tables),
            "channels",
            &[
                ("CHANNEL / READER", false),
                ("POLICY", false),
                ("SLOTS", true),
                ("WRITER", true),
                ("MESSAGES", true),
                ("RATE/S", true),
                ("BEHIND", true),
                ("LOST", true),
                ("", false),
            ],
            &rows,
            |i, _| row_tones[i],
        );
        if chans.is_empty() {
            lines.push("(no channels)".into());
        }
        if !msgs.is_empty() {
            lines.push(String::new());
            lines.extend(msgs.into_iter().map(|m| format!("! {m}")));
        }
        Frame {
            lines,
            tones,
            tables,
            empty_because: None,
        }
    }
}
