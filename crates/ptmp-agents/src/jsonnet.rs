//! Loading configurations: JSON, or Jsonnet evaluated in-process (jrsonnet),
//! with the `ptmp.libsonnet` helper library built in.
//!
//! A file ending in `.jsonnet` or `.libsonnet` is Jsonnet; anything else is
//! parsed as JSON first and, when that fails, as Jsonnet (JSON is valid
//! Jsonnet, so a JSON file with a syntax error gets Jsonnet's clearer
//! located message). `import "ptmp.libsonnet"` resolves to the library
//! embedded in this crate (`jsonnet/ptmp.libsonnet`); other imports resolve
//! relative to the importing file, then along the library paths given.

use crate::error::{Error, Result};
use jrsonnet_evaluator::manifest::JsonFormat;
use jrsonnet_evaluator::tla::TlaArg;
use jrsonnet_evaluator::trace::PathResolver;
use jrsonnet_evaluator::{
    AsPathLike, FileImportResolver, ImportResolver, SourcePath, SourceVirtual, State,
};
use jrsonnet_gcmodule::Acyclic;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The helper library, importable as `ptmp.libsonnet`.
pub const PTMP_LIBSONNET: &str = include_str!("../jsonnet/ptmp.libsonnet");

#[derive(Acyclic)]
struct Resolver {
    files: FileImportResolver,
}

impl ImportResolver for Resolver {
    fn resolve_from(
        &self,
        from: &SourcePath,
        path: &dyn AsPathLike,
    ) -> jrsonnet_evaluator::Result<SourcePath> {
        let p = path.as_path();
        let s: &Path = p.as_ref();
        if s == Path::new("ptmp.libsonnet") {
            return Ok(SourcePath::new(SourceVirtual("ptmp.libsonnet".into())));
        }
        self.files.resolve_from(from, path)
    }

    fn load_file_contents(&self, id: &SourcePath) -> jrsonnet_evaluator::Result<Vec<u8>> {
        if id.downcast_ref::<SourceVirtual>().is_some() {
            return Ok(PTMP_LIBSONNET.as_bytes().to_vec());
        }
        self.files.load_file_contents(id)
    }
}

/// Options for evaluating Jsonnet.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `std.extVar` strings (PTMP's generators use e.g. `context`).
    pub ext_str: Vec<(String, String)>,
    /// Extra library search paths (`-J`).
    pub jpath: Vec<PathBuf>,
    /// Top-level arguments: a file that evaluates to a function is called
    /// with these (`--tla-str`/`--tla-code` of the jsonnet tool); a function
    /// is called even with none, so its parameters' defaults apply.
    pub tla_str: Vec<(String, String)>,
    pub tla_code: Vec<(String, String)>,
}

/// Evaluate a Jsonnet file to JSON.
pub fn evaluate_file(path: &Path, opts: &Options) -> Result<Value> {
    let file = path.display().to_string();
    let jerr = |reason: String| Error::Jsonnet {
        file: file.clone(),
        reason,
    };
    if !path.exists() {
        return Err(jerr("no such file".into()));
    }
    let mut b = State::builder();
    b.import_resolver(Resolver {
        files: FileImportResolver::new(opts.jpath.clone()),
    });
    let ctx = jrsonnet_stdlib::ContextInitializer::new(PathResolver::new_cwd_fallback());
    for (k, v) in &opts.ext_str {
        ctx.add_ext_str(k.as_str().into(), v.as_str().into());
    }
    b.context_initializer(ctx);
    let st = b.build();
    let _guard = st.enter();
    let abs = std::fs::canonicalize(path).map_err(|e| jerr(e.to_string()))?;
    let v = st
        .import(abs.as_path())
        .map_err(|e| jerr(format!("Jsonnet evaluation failed: {e}")))?;
    // IStr hashes by its interned pointer, which interior mutability of
    // the interner does not change.
    #[allow(clippy::mutable_key_type)]
    let mut tla = std::collections::HashMap::new();
    for (k, v) in &opts.tla_str {
        tla.insert(k.as_str().into(), TlaArg::String(v.as_str().into()));
    }
    for (k, v) in &opts.tla_code {
        tla.insert(k.as_str().into(), TlaArg::InlineCode(v.clone()));
    }
    let v = jrsonnet_evaluator::apply_tla(&tla, v)
        .map_err(|e| jerr(format!("Jsonnet top-level arguments: {e}")))?;
    let text = v
        .manifest(JsonFormat::minify())
        .map_err(|e| jerr(format!("Jsonnet manifest failed: {e}")))?;
    serde_json::from_str(&text).map_err(|e| jerr(format!("Jsonnet produced invalid JSON: {e}")))
}

/// Load a configuration file: JSON, or Jsonnet (see the module docs).
pub fn load(path: &Path, opts: &Options) -> Result<Value> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext == "jsonnet" || ext == "libsonnet" {
        return evaluate_file(path, opts);
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::Jsonnet {
        file: path.display().to_string(),
        reason: format!("cannot read: {e}"),
    })?;
    match serde_json::from_str(&text) {
        Ok(v) => Ok(v),
        Err(json_err) => evaluate_file(path, opts).map_err(|e| match e {
            Error::Jsonnet { file, reason } => Error::Jsonnet {
                file,
                reason: format!("not valid JSON ({json_err}) nor Jsonnet: {reason}"),
            },
            other => other,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonnet_with_library_and_ext_var() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("c.jsonnet");
        std::fs::write(
            &f,
            r#"local ptmp = import "ptmp.libsonnet";
               { n: std.length([1,2,3]), ctx: std.extVar("context"),
                 s: ptmp.socket("PUSH", "bind", ["tcp://127.0.0.1:5555"]) }"#,
        )
        .unwrap();
        let opts = Options {
            ext_str: vec![("context".into(), "test".into())],
            ..Default::default()
        };
        let v = load(&f, &opts).unwrap();
        assert_eq!(v["n"], 3);
        assert_eq!(v["ctx"], "test");
        assert_eq!(v["s"]["socket"]["type"], "PUSH");
        assert_eq!(v["s"]["socket"]["bind"][0], "tcp://127.0.0.1:5555");
        // A function of top-level arguments, with and without them.
        std::fs::write(&f, "function(n=2, s='a') { n: n * 10, s: s }").unwrap();
        let v = load(&f, &Options::default()).unwrap();
        assert_eq!((v["n"].as_i64(), v["s"].as_str()), (Some(20), Some("a")));
        let opts = Options {
            tla_code: vec![("n".into(), "3".into())],
            tla_str: vec![("s".into(), "b".into())],
            ..Default::default()
        };
        let v = load(&f, &opts).unwrap();
        assert_eq!((v["n"].as_i64(), v["s"].as_str()), (Some(30), Some("b")));
        let opts = Options {
            tla_code: vec![("nope".into(), "3".into())],
            ..Default::default()
        };
        let e = load(&f, &opts).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
    }

    #[test]
    fn errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("bad.jsonnet");
        std::fs::write(&f, "{ a: 1 + }").unwrap();
        let e = load(&f, &Options::default()).unwrap_err().to_string();
        assert!(e.contains("bad.jsonnet"), "{e}");
        let f = d.path().join("bad.json");
        std::fs::write(&f, "{\"a\": }").unwrap();
        let e = load(&f, &Options::default()).unwrap_err().to_string();
        assert!(e.contains("not valid JSON"), "{e}");
    }
}
