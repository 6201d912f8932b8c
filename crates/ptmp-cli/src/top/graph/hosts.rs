//! A graph whose hosts' parts have run directories side by side, one per
//! host (`RUN_DIR/HOST`, as `ptmp graph run --slurm --run-dir RUN_DIR`
//! lays them out on a file system the nodes share): which directories are
//! parts, and the table of hosts, saying where each part runs.

use super::{add_table, now_us, num, ProcStatus, Sheet, Tone, STALE};
use ptmp_graph::status::{NodeState, Supervised};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One host's part: its run directory, and the host's name when the
/// directory watched holds several parts.
pub(super) struct PartDir {
    pub(super) host: Option<String>,
    pub(super) dir: PathBuf,
}

/// The parts under `dir`: `dir` itself when it is one; else each
/// subdirectory that is one (named by its host), in name order; else
/// `dir` (whose frame then says it holds nothing).
pub(super) fn part_dirs(dir: &Path) -> Vec<PartDir> {
    let single = || {
        vec![PartDir {
            host: None,
            dir: dir.to_path_buf(),
        }]
    };
    if ptmp_graph::rundir::looks_like_run_dir(dir) {
        return single();
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return single();
    };
    let mut parts: Vec<PartDir> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| ptmp_graph::rundir::looks_like_run_dir(&e.path()))
        .map(|e| PartDir {
            host: Some(e.file_name().to_string_lossy().into_owned()),
            dir: e.path(),
        })
        .collect();
    parts.sort_by(|a, b| a.host.cmp(&b.host));
    if parts.is_empty() {
        single()
    } else {
        parts
    }
}

/// The hosts table: per part, its node and job step (under Slurm), its
/// supervisor's pid, how many processes report, and whether they still do
/// (a part on another node is judged by how fresh its status files are).
pub(super) fn add_host_table(
    sheet: Sheet<'_>,
    parts: &[PartDir],
    supervised: &[Supervised],
    stats: &[Vec<ProcStatus>],
) {
    let wall = now_us();
    let mut rows = Vec::new();
    for ((part, sup), st) in parts.iter().zip(supervised).zip(stats) {
        let newest = st.iter().map(|s| s.doc.time_us).filter(|&t| t > 0).max();
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
            part.host.clone().unwrap_or_else(|| "-".into()),
            text(&sup.node),
            text(&sup.step),
            num(Some(u64::from(sup.supervisor_pid)).filter(|&p| p > 0)),
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
