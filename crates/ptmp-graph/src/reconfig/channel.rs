//! The control channel of `ptmp graph apply`: two files in the run
//! directory. The request `apply-request.json` is published with a hard
//! link, so it appears whole and a second apply while one is pending is
//! refused; the supervisor answers in `apply-reply-ID.json`.

use crate::rundir::docs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::rundir::{reply_file, request_file, request_tmp_file};

pub use crate::rundir::docs::{Refusal, Reply, Request};

/// Hand `req` to the supervisor running from `run_dir` and wait up to
/// `limit` for its answer. Errors (as text) when none runs there, another
/// apply is pending, or no answer comes.
pub fn send(run_dir: &Path, req: &Request, limit: Duration) -> crate::Result<Reply> {
    send_text(run_dir, req, limit).map_err(crate::Error::Apply)
}

fn send_text(run_dir: &Path, req: &Request, limit: Duration) -> Result<Reply, String> {
    // A directory another user controls could take the graph (and answer
    // for the supervisor).
    if run_dir.exists() {
        crate::rundir::check_private(run_dir).map_err(|e| e.to_string())?;
    }
    let pid = crate::rundir::supervisor_pid(run_dir)
        .filter(|p| Path::new(&format!("/proc/{p}")).exists());
    let Some(pid) = pid else {
        return Err(format!(
            "no graph is running from {} (no live supervisor's pid in {}); start it with `ptmp graph run`, or give its --run-dir",
            run_dir.display(),
            crate::rundir::lock_path(run_dir).display()
        ));
    };
    let path = request_file(run_dir);
    let tmp = request_tmp_file(run_dir, &req.id);
    ptmp::files::write_new(&tmp, &serde_json::to_vec(req).unwrap_or_default())
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
        match docs::read::<Reply>(&reply, crate::rundir::STATUS_LIMIT).map_err(|e| e.to_string()) {
            Ok(None) => {}
            Ok(Some(r)) => {
                let _ = std::fs::remove_file(&reply);
                return Ok(r);
            }
            // Another ptmp's answer, or no answer at all: said as it is.
            Err(e) => {
                let _ = std::fs::remove_file(&reply);
                return Err(format!("the supervisor's answer is unreadable: {e}"));
            }
        }
        if t.elapsed() >= limit || !Path::new(&format!("/proc/{pid}")).exists() {
            // Withdraw the request if it is still ours and untaken.
            let ours = docs::read::<Request>(&path, crate::rundir::PLAN_LIMIT)
                .ok()
                .flatten()
                .is_some_and(|v| v.id == req.id);
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
pub fn take(run_dir: &Path) -> Option<crate::Result<Request>> {
    take_text(run_dir).map(|r| r.map_err(crate::Error::Apply))
}

fn take_text(run_dir: &Path) -> Option<Result<Request, String>> {
    let path = request_file(run_dir);
    let got = crate::rundir::read_text(&path, crate::rundir::PLAN_LIMIT);
    if matches!(got, Ok(None)) {
        return None;
    }
    let _ = std::fs::remove_file(&path);
    let b = match got {
        Ok(b) => b.unwrap_or_default(),
        Err(e) => return Some(Err(e)),
    };
    let v: Request = match serde_json::from_slice(&b) {
        Ok(v) => v,
        Err(e) => {
            return Some(Err(format!(
                "{}: not an apply request: {e}",
                path.display()
            )))
        }
    };
    let id = &v.id;
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Some(Err(format!(
            "{}: no usable id (letters, digits and '-')",
            path.display()
        )));
    }
    Some(Ok(v))
}

/// Answer request `id`.
pub fn answer(run_dir: &Path, id: &str, r: &Reply) {
    let _ = docs::write(&reply_file(run_dir, id), r);
}

/// A fresh request id: our pid and the time.
pub fn new_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{t}", std::process::id())
}
