//! The control channel of `ptmp graph apply`: two files in the run
//! directory. The request `apply-request.json` is published with a hard
//! link, so it appears whole and a second apply while one is pending is
//! refused; the supervisor answers in `apply-reply-ID.json`.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The file through which `ptmp graph apply` hands the supervisor a graph.
pub fn request_file(run_dir: &Path) -> PathBuf {
    run_dir.join("apply-request.json")
}

/// The file where the supervisor answers request `id`.
pub fn reply_file(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join(format!("apply-reply-{id}.json"))
}

/// A request to change a running graph.
#[derive(Debug, Clone)]
pub struct Request {
    /// Names the reply file; letters, digits and '-' only.
    pub id: String,
    /// The new graph's configuration, evaluated.
    pub graph: Value,
    /// The graph's name when its configuration has none.
    pub default_name: String,
    /// Only say what would change.
    pub dry_run: bool,
}

/// Why a request was not carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The new graph is invalid (or cannot replace this one: renamed,
    /// addresses clash, the supervisor's host is gone).
    Invalid,
    /// The new graph is the running one.
    NothingToDo,
    /// Carrying it out failed (a process would not start).
    Failed,
}

impl Refusal {
    fn name(self) -> &'static str {
        match self {
            Refusal::Invalid => "invalid",
            Refusal::NothingToDo => "nothing to do",
            Refusal::Failed => "failed",
        }
    }
}

/// The supervisor's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// `None` when the change was made (or, for a dry run, would be).
    pub refused: Option<Refusal>,
    /// The diff, or what is wrong.
    pub message: String,
}

fn supervisor_pid(run_dir: &Path) -> Option<i32> {
    let b = crate::rundir::read(
        &crate::rundir::lock_path(run_dir),
        crate::rundir::LOCK_LIMIT,
    )
    .ok()??;
    String::from_utf8_lossy(&b).trim().parse().ok()
}

/// Hand `req` to the supervisor running from `run_dir` and wait up to
/// `limit` for its answer. Errors (as text) when none runs there, another
/// apply is pending, or no answer comes.
pub fn send(run_dir: &Path, req: &Request, limit: Duration) -> std::result::Result<Reply, String> {
    // A directory another user controls could take the graph (and answer
    // for the supervisor).
    if run_dir.exists() {
        crate::rundir::check_private(run_dir)?;
    }
    let pid = supervisor_pid(run_dir).filter(|p| Path::new(&format!("/proc/{p}")).exists());
    let Some(pid) = pid else {
        return Err(format!(
            "no graph is running from {} (no live supervisor.pid there); start it with `ptmp graph run`, or give its --run-dir",
            run_dir.display()
        ));
    };
    let body = json!({"id": req.id, "graph": req.graph, "default_name": req.default_name,
                      "dry_run": req.dry_run});
    let path = request_file(run_dir);
    let tmp = run_dir.join(format!("apply-request.{}.tmp", req.id));
    ptmp::files::write_new(&tmp, &serde_json::to_vec(&body).unwrap_or_default())
        .map_err(|e| format!("write {}: {e}", tmp.display()))?;
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(format!(
                "another apply is pending ({} exists); try again when it is answered",
                path.display()
            ))
        }
        Err(e) => return Err(format!("write {}: {e}", path.display())),
    }
    let reply = reply_file(run_dir, &req.id);
    let t = Instant::now();
    loop {
        if let Ok(Some(v)) = crate::rundir::read_json(&reply, crate::rundir::STATUS_LIMIT) {
            let _ = std::fs::remove_file(&reply);
            let refused = match v["refused"].as_str() {
                None => None,
                Some("invalid") => Some(Refusal::Invalid),
                Some("nothing to do") => Some(Refusal::NothingToDo),
                Some(_) => Some(Refusal::Failed),
            };
            return Ok(Reply {
                refused,
                message: v["message"].as_str().unwrap_or_default().to_string(),
            });
        }
        if t.elapsed() >= limit || !Path::new(&format!("/proc/{pid}")).exists() {
            // Withdraw the request if it is still ours and untaken.
            let ours = crate::rundir::read_json(&path, crate::rundir::PLAN_LIMIT)
                .ok()
                .flatten()
                .is_some_and(|v| v["id"] == req.id.as_str());
            if ours {
                let _ = std::fs::remove_file(&path);
            }
            return Err(format!(
                "the supervisor (pid {pid}) of {} did not answer within {limit:?}",
                run_dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Take the pending request, if any, removing its file. A request that is
/// not a JSON object with an id, or no regular file of at most
/// [`crate::rundir::PLAN_LIMIT`] bytes (a FIFO there is never waited on),
/// is removed and reported as `Err`.
pub fn take(run_dir: &Path) -> Option<std::result::Result<Request, String>> {
    let path = request_file(run_dir);
    let got = crate::rundir::read(&path, crate::rundir::PLAN_LIMIT);
    if matches!(got, Ok(None)) {
        return None;
    }
    let _ = std::fs::remove_file(&path);
    let b = match got {
        Ok(b) => b.unwrap_or_default(),
        Err(e) => return Some(Err(e)),
    };
    let v: Value = match serde_json::from_slice(&b) {
        Ok(v) => v,
        Err(e) => return Some(Err(format!("{}: not JSON: {e}", path.display()))),
    };
    let id = v["id"].as_str().unwrap_or_default();
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Some(Err(format!(
            "{}: no usable id (letters, digits and '-')",
            path.display()
        )));
    }
    Some(Ok(Request {
        id: id.to_string(),
        graph: v["graph"].clone(),
        default_name: v["default_name"].as_str().unwrap_or("graph").to_string(),
        dry_run: v["dry_run"].as_bool().unwrap_or(false),
    }))
}

/// Answer request `id`.
pub fn answer(run_dir: &Path, id: &str, r: &Reply) {
    let v = json!({"refused": r.refused.map(Refusal::name), "message": r.message});
    let _ = crate::status::write_atomic(&reply_file(run_dir, id), &v);
}

/// A fresh request id: our pid and the time.
pub fn new_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{t}", std::process::id())
}
