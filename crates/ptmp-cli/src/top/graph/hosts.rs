//! The table of hosts of a graph whose hosts' parts have run directories
//! side by side, one per host (`RUN_DIR/HOST`, as `ptmp graph run --slurm
//! --run-dir RUN_DIR` lays them out on a file system the nodes share, and
//! as [`ptmp_graph::rundir::part_dirs`] finds them): where each part runs,
//! and whether its processes still report.

use super::{add_table, now_us, num, Sheet, Tone, STALE};
use ptmp_graph::status::{NodeState, PlannedReading};
use std::time::Duration;

/// The hosts table: per part, its node and job step (under Slurm), its
/// supervisor's pid, how many processes report, and whether they still do
/// (a part on another node is judged by how fresh its status files are).
pub(super) fn add_host_table(sheet: Sheet<'_>, r: &PlannedReading) {
    let wall = now_us();
    let mut rows = Vec::new();
    for (i, (part, host)) in r.parts.iter().zip(&r.reading.state.hosts).enumerate() {
        let st = &r.reading.statuses[part.statuses.clone()];
        let sup = r.reading.supervised.get(&i).and_then(Option::as_ref);
        let newest = st.iter().map(|s| s.time_us).filter(|&t| t > 0).max();
        let state = match newest {
            None => NodeState::NoStatus,
            Some(t) => {
                let age = Duration::from_micros(wall.saturating_sub(t));
                if age > STALE {
                    NodeState::Stale(age.as_secs())
                } else {
                    NodeState::Running
                }
            }
        };
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        rows.push(vec![
            part.part.host.clone().unwrap_or_else(|| "-".into()),
            text(&host.node),
            text(&host.step),
            num(sup.map(|s| u64::from(s.supervisor_pid)).filter(|&p| p > 0)),
            st.len().to_string(),
            state.to_string(),
        ]);
    }
    add_table(
        sheet,
        "hosts",
        &[
            ("HOST", false),
            ("NODE", false),
            ("STEP", false),
            ("SUPERVISOR", true),
            ("PROCESSES", true),
            ("STATE", false),
        ],
        &rows,
        |_, r| match r.get(5).map(String::as_str) {
            Some("running") => Tone::Plain,
            _ => Tone::Warn,
        },
    );
}
