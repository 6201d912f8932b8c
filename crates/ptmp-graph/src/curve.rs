//! A graph's tcp edges secured with CURVE (ptmp's [`ptmp::curve`]).
//!
//! One switch in the graph, `"curve": true`, gives every socket with a tcp
//! endpoint a `curve` object: the binding socket of an edge is the CURVE
//! server admitting the graph's key only, the connecting one a client of
//! it. All the graph's processes hold the one key pair, so no process
//! outside the graph (no key, or another one) can send into an edge or
//! read from one. The pair is made in the run directory
//! (`curve/graph.key`, `curve/graph.key_secret`, 0600) when the graph
//! starts; a graph on several hosts names a directory holding a pair made
//! once (`ptmp keys new graph --dir DIR`) and copied to every host:
//! `"curve": {"key_dir": "DIR"}`. ipc, inproc and shm edges are left as
//! they are (file and process permissions guard them).

use crate::{Error, Graph, Result};
use ptmp::curve::{Allow, Curve};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The certificates' name in their directory.
const NAME: &str = "graph";

/// Where a graph's key pair comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphCurve {
    /// Made in the run directory when the graph starts (one host).
    RunDir,
    /// A directory holding `graph.key` and `graph.key_secret`.
    KeyDir(PathBuf),
}

/// Read the graph's `curve` key: `true`/`false` or `{"key_dir": DIR}`.
pub(crate) fn parse(graph: &str, v: Option<&Value>, hosts: usize) -> Result<Option<GraphCurve>> {
    let err = |msg: String| Error::Invalid {
        graph: graph.to_string(),
        msg,
    };
    let c = match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => return Ok(None),
        Some(Value::Bool(true)) => GraphCurve::RunDir,
        Some(Value::Object(o)) => {
            if let Some(k) = o.keys().find(|k| k.as_str() != "key_dir") {
                return Err(err(format!(
                    "curve.{k}: unknown key; curve takes \"key_dir\" only"
                )));
            }
            match o.get("key_dir") {
                Some(Value::String(d)) if !d.is_empty() => GraphCurve::KeyDir(d.into()),
                Some(x) => {
                    return Err(err(format!(
                        "curve.key_dir = {x}: must name a directory holding {NAME}.key and {NAME}.key_secret"
                    )))
                }
                None => GraphCurve::RunDir,
            }
        }
        Some(x) => {
            return Err(err(format!(
                "curve = {x}: must be true, false or {{\"key_dir\": DIR}}"
            )))
        }
    };
    if c == GraphCurve::RunDir && hosts > 1 {
        return Err(err(format!(
            "curve: a graph on {hosts} hosts needs one key pair on all of them: make it once \
             (ptmp keys new {NAME} --dir DIR), copy DIR to every host, and give \"curve\": {{\"key_dir\": DIR}}"
        )));
    }
    Ok(Some(c))
}

/// The graph's certificate files, public and secret, for a run from
/// `run_dir`; `None` when the graph is not secured.
pub fn key_files(g: &Graph, run_dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let dir = match g.curve.as_ref()? {
        GraphCurve::RunDir => crate::rundir::curve_dir(run_dir),
        GraphCurve::KeyDir(d) => d.clone(),
    };
    Some((
        dir.join(format!("{NAME}.key")),
        dir.join(format!("{NAME}.key_secret")),
    ))
}

/// Make sure the graph's key pair is there before its processes start:
/// made in the run directory when it is missing there, read (to check it)
/// from a key directory, which is never written.
pub fn prepare(g: &Graph, run_dir: &Path) -> Result<()> {
    let Some((public, secret)) = key_files(g, run_dir) else {
        return Ok(());
    };
    let err = |m: String| Error::Run(format!("graph {}: curve: {m}", g.name));
    if !ptmp::curve::available() {
        return Err(err(
            "this build of ptmp has no CURVE (its libzmq was built without libsodium)".into(),
        ));
    }
    let dir = public.parent().expect("a file in a directory");
    if g.curve == Some(GraphCurve::RunDir) && std::fs::symlink_metadata(&secret).is_err() {
        ptmp::curve::write_certificates(dir, NAME).map_err(|e| err(e.to_string()))?;
    }
    match ptmp::curve::read_certificate(&secret).map_err(|e| err(e.to_string()))? {
        ptmp::curve::Certificate::Secret(_) => {}
        ptmp::curve::Certificate::Public(_) => {
            return Err(err(format!("{} holds no secret key", secret.display())))
        }
    }
    ptmp::curve::read_certificate(&public).map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// The `curve` part of the socket of port `port`, which binds `bind` and
/// connects to `connect`, when the graph is secured and the socket has a
/// tcp endpoint: a server admitting the graph's key when it binds, a
/// client of that key when it connects.
pub(crate) fn secure(
    g: &Graph,
    run_dir: &Path,
    port: &str,
    bind: &[String],
    connect: &[String],
) -> Result<Option<Curve>> {
    let Some((public, secret)) = key_files(g, run_dir) else {
        return Ok(None);
    };
    let tcp = |list: &[String]| {
        list.iter().any(|e| {
            !e.starts_with("ipc://") && !e.starts_with("inproc://") && !e.starts_with("shm://")
        })
    };
    let public = public.display().to_string();
    let curve = match (tcp(bind), tcp(connect)) {
        (false, false) => return Ok(None),
        (true, false) => Curve::Server {
            secret_key_file: secret,
            allow: Allow::Listed(vec![public]),
        },
        (false, true) => Curve::Client {
            secret_key_file: secret,
            server_key: public,
        },
        (true, true) => {
            return Err(Error::Invalid {
                graph: g.name.clone(),
                msg: format!(
                    "{port}: this socket both binds and connects tcp edges, and a CURVE socket is \
                     either the server or a client: give its edges one binding side (\"bind\": \"out\" or \"in\")"
                ),
            })
        }
    };
    Ok(Some(curve))
}
