//! Filter-engine plugins: built-in engines and shared libraries that follow
//! the C ABI of `include/ptmp_filter.h`.
//!
//! Why a C ABI and not PTMP's C++ factory: a C ABI is the one interface that
//! stays stable across compilers and languages, so a plugin built once keeps
//! loading (C, C++ with `extern "C"`, Rust, Zig ...). The ABI passes plain
//! structs, not protobuf bytes, so a plugin needs no protobuf library.
//!
//! Libraries come from a configuration's `plugins` list and the
//! comma-separated `PTMP_PLUGINS` variable. A bare name `NAME` is looked up
//! as `libNAME.so` (then `NAME.so`, then `NAME`) by the dynamic loader; a name
//! with `/` or ending in `.so` is a path. `ptmp-tcs`, the plugin that held
//! PTMP's protoDUNE trigger-candidate finder, is built in: its engine
//! `pdune_adjacency_tc` (also spelt `pdune-adjacency-tc`) is our
//! [`crate::filter`] adjacency engine, so configurations naming it run
//! unmodified (with our finder's results, see there). Its trigger-decision
//! engine, `pdune_adjacency_td`, is not built in.
//!
//! Threads: the header promises that one engine state is created, used and
//! destroyed on one thread. A filter agent makes its engine when it starts
//! running, on its own thread, and drops it there; the type holding a C
//! engine state is not `Send`, so the compiler keeps it from moving. The
//! engine made to check a configuration is created and destroyed at once on
//! the thread that checks it.

use super::engines::{builtin_engine, BUILTIN_ENGINES};
use super::Engine;
use crate::error::{Error, Result};
use libloading::Library;
use ptmp_data::{TPSet, TrigPrim};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Arc;

/// The ABI version this build speaks.
pub const ABI_VERSION: u32 = 1;

/// Plugin names satisfied by engines built into ptmp.
pub const BUILTIN_PLUGINS: &[&str] = &["ptmp-tcs", "ptmp"];

#[repr(C)]
#[derive(Clone, Copy, Default)]
/// `ptmp_tp` of the C header: one TrigPrim, 32 bytes.
pub struct CTp {
    /// Channel number.
    pub channel: u32,
    /// Duration in data-clock ticks.
    pub tspan: u32,
    /// Start in data-clock ticks.
    pub tstart: u64,
    /// Sum of ADC over the pulse.
    pub adcsum: u32,
    /// Peak ADC.
    pub adcpeak: u32,
    /// Producer-defined flags.
    pub flags: u32,
    /// Zero; pads the struct to 32 bytes.
    pub reserved: u32,
}

#[repr(C)]
/// `ptmp_tpset` of the C header: a TPSet whose TrigPrims are borrowed.
pub struct CTpSet {
    /// Sequence number from the producer.
    pub count: u32,
    /// Detector (link) identifier.
    pub detid: u32,
    /// Creation time, microseconds since the Unix epoch; 0 lets ptmp set it.
    pub created: i64,
    /// Earliest TrigPrim start, data-clock ticks.
    pub tstart: u64,
    /// Time covered, data-clock ticks.
    pub tspan: u32,
    /// Lowest channel.
    pub chanbeg: u32,
    /// Highest channel.
    pub chanend: u32,
    /// Sum of the TrigPrims' `adcsum`.
    pub totaladc: u32,
    /// The TrigPrims: `ntps` of them, valid for the call only.
    pub tps: *const CTp,
    /// How many TrigPrims `tps` points to.
    pub ntps: u64,
}

type EmitFn = unsafe extern "C" fn(sink: *mut c_void, out: *const CTpSet) -> c_int;

#[repr(C)]
/// `ptmp_filter_engine` of the C header: one engine a library offers.
pub struct CEngineDesc {
    /// Must be [`ABI_VERSION`]; other versions are refused at load.
    pub abi_version: u32,
    /// The engine name configurations use (NUL-terminated UTF-8).
    pub name: *const c_char,
    /// Makes an engine state from the JSON config, or NULL with a reason.
    pub create: Option<unsafe extern "C" fn(*const c_char, *mut c_char, usize) -> *mut c_void>,
    /// Runs the engine on one set, emitting outputs through the callback.
    pub process:
        Option<unsafe extern "C" fn(*mut c_void, *const CTpSet, EmitFn, *mut c_void) -> c_int>,
    /// Frees an engine state.
    pub destroy: Option<unsafe extern "C" fn(*mut c_void)>,
}

type EnginesFn = unsafe extern "C" fn() -> *const *const CEngineDesc;

/// A descriptor inside a loaded library, kept alive by the `Arc`.
#[derive(Clone)]
struct CSource {
    /// Keeps the library loaded while any engine made from it exists (never
    /// read: holding it is the point).
    _lib: Arc<Library>,
    library: String,
    desc: *const CEngineDesc,
}

// SAFETY: `desc` is the only field that is not already Send and Sync. It
// points to a descriptor the library returned as immutable data that lives
// as long as the library (ptmp_filter.h), and `_lib` keeps the library
// loaded as long as this value exists; we only ever read through it, so
// reading it from any thread, or from several at once, is sound. What the
// header ties to one thread is an engine *state*, and a state is held by a
// `CEngine`, which is neither Send nor Sync: whichever thread calls
// `create` is the one that calls `process` and `destroy` on that state.
unsafe impl Send for CSource {}
// SAFETY: as for Send above: shared access only reads immutable data.
unsafe impl Sync for CSource {}

impl CSource {
    /// The descriptor.
    fn desc(&self) -> &CEngineDesc {
        // SAFETY: `desc` was checked non-NULL at load and points to a
        // descriptor that lives as long as the library, which `_lib` keeps
        // loaded at least as long as `self`.
        unsafe { &*self.desc }
    }
}

/// Where an engine comes from.
#[derive(Clone)]
enum Source {
    Builtin,
    C(CSource),
}

/// The engines available to filter agents: built in, plus those of the
/// loaded plugin libraries.
#[derive(Clone, Default)]
pub struct Plugins {
    engines: BTreeMap<String, Source>,
    libraries: Vec<String>,
}

impl std::fmt::Debug for Plugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugins")
            .field("engines", &self.engines.keys().collect::<Vec<_>>())
            .field("libraries", &self.libraries)
            .finish()
    }
}

impl Plugins {
    /// Only the built-in engines.
    pub fn builtin() -> Plugins {
        let mut p = Plugins::default();
        for n in BUILTIN_ENGINES {
            p.engines.insert(n.to_string(), Source::Builtin);
        }
        p
    }

    /// Built-ins plus the libraries named (and those of `PTMP_PLUGINS`).
    pub fn load(names: &[String]) -> Result<Plugins> {
        let mut p = Plugins::builtin();
        let env = std::env::var("PTMP_PLUGINS").unwrap_or_default();
        let from_env = env.split(',').map(str::trim).filter(|s| !s.is_empty());
        for name in names.iter().map(String::as_str).chain(from_env) {
            p.add_library(name)?;
        }
        Ok(p)
    }

    /// Engine names known, for error messages.
    pub fn engine_names(&self) -> Vec<&str> {
        self.engines.keys().map(String::as_str).collect()
    }

    /// Whether an engine of this name is available.
    pub fn has(&self, engine: &str) -> bool {
        self.engines.contains_key(engine)
    }

    /// Load one library and register its engines.
    pub fn add_library(&mut self, name: &str) -> Result<()> {
        if BUILTIN_PLUGINS.contains(&name) || self.libraries.iter().any(|l| l == name) {
            return Ok(());
        }
        let perr = |reason: String| Error::Plugin {
            library: name.to_string(),
            reason,
        };
        // The loader takes a C string: a NUL would cut the name short.
        if name.contains('\0') {
            return Err(Error::Plugin {
                library: serde_json::Value::from(name).to_string(),
                reason: "the library name contains a NUL byte".into(),
            });
        }
        let candidates: Vec<String> = if name.contains('/') || name.ends_with(".so") {
            vec![name.to_string()]
        } else {
            vec![
                format!("lib{name}.so"),
                format!("{name}.so"),
                name.to_string(),
            ]
        };
        let mut last = String::new();
        let mut lib = None;
        for c in &candidates {
            // SAFETY: loading a library runs its initialisers; the user named
            // it as a plugin, which is the trust we need.
            match unsafe { Library::new(c) } {
                Ok(l) => {
                    lib = Some(l);
                    break;
                }
                Err(e) => last = e.to_string(),
            }
        }
        let lib = Arc::new(lib.ok_or_else(|| {
            perr(format!(
                "cannot load it (tried {}; last error: {last}); set LD_LIBRARY_PATH or give a path",
                candidates.join(", ")
            ))
        })?);
        // SAFETY: the symbol's type is fixed by the ABI header.
        let list = unsafe {
            let f = lib.get::<EnginesFn>(b"ptmp_filter_engines\0").map_err(|_| {
                perr("does not export ptmp_filter_engines(), so it is not a ptmp filter plugin (see include/ptmp_filter.h)".into())
            })?;
            f()
        };
        if list.is_null() {
            return Err(perr("ptmp_filter_engines() returned NULL".into()));
        }
        let mut i = 0;
        loop {
            // SAFETY: a NULL-terminated array per the ABI; bounded to guard
            // against a missing terminator.
            let d = unsafe { *list.add(i) };
            if d.is_null() {
                break;
            }
            if i >= 1024 {
                return Err(perr(
                    "engine list has no NULL terminator within 1024 entries".into(),
                ));
            }
            // SAFETY: `d` is a non-NULL entry of the list, which the ABI says
            // points to a descriptor living as long as the library (held in
            // `lib` here, and by every CSource made from it).
            let desc = unsafe { &*d };
            if desc.abi_version != ABI_VERSION {
                return Err(perr(format!(
                    "engine #{i} has abi_version {} but this ptmp speaks {ABI_VERSION}",
                    desc.abi_version
                )));
            }
            if desc.name.is_null()
                || desc.create.is_none()
                || desc.process.is_none()
                || desc.destroy.is_none()
            {
                return Err(perr(format!("engine #{i} has a NULL name or function")));
            }
            // SAFETY: `name` is not NULL (checked above) and the ABI makes it
            // a NUL-terminated string that lives as long as the descriptor.
            let ename = unsafe { CStr::from_ptr(desc.name) }
                .to_str()
                .map_err(|_| perr(format!("engine #{i} name is not UTF-8")))?
                .to_string();
            if let Some(Source::C(prev)) = self.engines.get(&ename) {
                return Err(perr(format!(
                    "engine {ename:?} is also provided by {}",
                    prev.library
                )));
            }
            self.engines.insert(
                ename,
                Source::C(CSource {
                    _lib: lib.clone(),
                    library: name.to_string(),
                    desc: d,
                }),
            );
            i += 1;
        }
        self.libraries.push(name.to_string());
        Ok(())
    }

    /// Create an engine instance with the filter's whole configuration.
    pub fn create(&self, agent: &str, engine: &str, config: &Value) -> Result<Box<dyn Engine>> {
        match self.engines.get(engine) {
            None => Err(Error::config(
                agent,
                "engine",
                format!("{engine:?}"),
                format!("no such engine; known: {}", self.engine_names().join(", ")),
            )),
            Some(Source::Builtin) => builtin_engine(agent, engine, config),
            Some(Source::C(src)) => CEngine::create(agent, src.clone(), config),
        }
    }
}

/// An engine state inside a plugin. Its raw `state` pointer makes it
/// neither Send nor Sync, which is what the C ABI asks: the thread that
/// creates it is the only one that uses and destroys it.
struct CEngine {
    src: CSource,
    state: *mut c_void,
    tps: Vec<CTp>,
}

impl CEngine {
    fn create(agent: &str, src: CSource, config: &Value) -> Result<Box<dyn Engine>> {
        let text = CString::new(config.to_string())
            .map_err(|_| Error::config(agent, "data", "(config)", "contains a NUL character"))?;
        let mut err = vec![0u8; 1024];
        let desc = src.desc();
        let create = desc.create.expect("checked at load");
        // SAFETY: per the ABI: a NUL-terminated config, an error buffer and
        // its length.
        let state = unsafe { create(text.as_ptr(), err.as_mut_ptr().cast(), err.len()) };
        if state.is_null() {
            err[1023] = 0;
            let msg = CStr::from_bytes_until_nul(&err)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Err(Error::Plugin {
                library: src.library.clone(),
                reason: format!(
                    "engine refused the configuration of agent {agent}: {}",
                    if msg.is_empty() {
                        "(no reason given)"
                    } else {
                        &msg
                    }
                ),
            });
        }
        Ok(Box::new(CEngine {
            src,
            state,
            tps: Vec::new(),
        }))
    }
}

/// The `emit` callback given to a plugin's `process`: copies one output set
/// into the `Vec<TPSet>` that `sink` points to. Returns 0, or -1 for a NULL
/// pointer or an impossible TrigPrim count; never unwinds into C.
///
/// # Safety
///
/// `sink` must be NULL or the `*mut Vec<TPSet>` given to `process`, not
/// otherwise borrowed during the call; `out` must be NULL or point to a
/// valid set whose `tps` points to `ntps` TrigPrims.
unsafe extern "C" fn emit_into(sink: *mut c_void, out: *const CTpSet) -> c_int {
    let r = std::panic::catch_unwind(|| {
        if sink.is_null() || out.is_null() {
            return -1;
        }
        // SAFETY: `sink` is not NULL and is the `&mut Vec<TPSet>` that
        // `CEngine::process` passed to the plugin, which is still borrowed
        // there for the duration of this call and used by nobody else.
        let v = unsafe { &mut *(sink as *mut Vec<TPSet>) };
        // SAFETY: `out` is not NULL and, per the ABI, points to a set that
        // is valid for the duration of this call.
        let o = unsafe { &*out };
        if o.ntps > 0 && o.tps.is_null() {
            return -1;
        }
        // A count no array in memory can have (it would overflow the byte
        // length of the slice): refused, not read.
        let max = isize::MAX as u64 / std::mem::size_of::<CTp>() as u64;
        if o.ntps > max {
            return -1;
        }
        let tps = if o.ntps == 0 {
            &[][..]
        } else {
            // SAFETY: `tps` is not NULL (checked above) and per the ABI points
            // to `ntps` TrigPrims valid during this call; `ntps` was checked
            // to fit a slice's byte length, so the cast does not truncate.
            unsafe { std::slice::from_raw_parts(o.tps, o.ntps as usize) }
        };
        v.push(TPSet {
            count: o.count,
            detid: o.detid,
            created: o.created,
            tstart: o.tstart,
            tspan: Some(o.tspan),
            chanbeg: Some(o.chanbeg),
            chanend: Some(o.chanend),
            totaladc: Some(o.totaladc),
            tps: tps
                .iter()
                .map(|t| TrigPrim {
                    channel: t.channel,
                    tstart: t.tstart,
                    tspan: Some(t.tspan),
                    adcsum: Some(t.adcsum),
                    adcpeak: Some(t.adcpeak),
                    flags: Some(t.flags),
                })
                .collect(),
        });
        0
    });
    r.unwrap_or(-1)
}

impl Engine for CEngine {
    fn process(&mut self, input: &TPSet, out: &mut Vec<TPSet>) -> std::result::Result<(), String> {
        self.tps.clear();
        self.tps.extend(input.tps.iter().map(|t| CTp {
            channel: t.channel,
            tspan: t.tspan(),
            tstart: t.tstart,
            adcsum: t.adcsum(),
            adcpeak: t.adcpeak(),
            flags: t.flags(),
            reserved: 0,
        }));
        let cin = CTpSet {
            count: input.count,
            detid: input.detid,
            created: input.created,
            tstart: input.tstart,
            tspan: input.tspan(),
            chanbeg: input.chanbeg(),
            chanend: input.chanend(),
            totaladc: input.totaladc(),
            tps: self.tps.as_ptr(),
            ntps: self.tps.len() as u64,
        };
        let desc = self.src.desc();
        let process = desc.process.expect("checked at load");
        // SAFETY: state from create; cin and its tps live across the call;
        // the sink is `out`, which emit_into casts back.
        let rc = unsafe {
            process(
                self.state,
                &cin,
                emit_into,
                out as *mut Vec<TPSet> as *mut c_void,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("plugin engine returned {rc}"))
        }
    }
}

impl Drop for CEngine {
    fn drop(&mut self) {
        if let Some(d) = self.src.desc().destroy {
            // SAFETY: once, with the state from create.
            unsafe { d(self.state) }
        }
    }
}

#[cfg(test)]
mod emit_tests {
    use super::*;

    /// What an engine emits is taken whole, extreme values unchanged; an
    /// impossible TrigPrim count is refused (-1), not read.
    #[test]
    fn emit_takes_extremes_and_refuses_impossible_counts() {
        let tp = CTp {
            channel: u32::MAX,
            tspan: u32::MAX,
            tstart: u64::MAX,
            adcsum: u32::MAX,
            adcpeak: u32::MAX,
            flags: u32::MAX,
            reserved: 0,
        };
        let mk = |ntps: u64| CTpSet {
            count: u32::MAX,
            detid: u32::MAX,
            created: i64::MIN,
            tstart: u64::MAX,
            tspan: u32::MAX,
            chanbeg: u32::MAX,
            chanend: 0,
            totaladc: u32::MAX,
            tps: &tp,
            ntps,
        };
        let mut v: Vec<TPSet> = Vec::new();
        let sink = &mut v as *mut Vec<TPSet> as *mut c_void;
        for bad in [u64::MAX, u64::MAX / 2, isize::MAX as u64] {
            // SAFETY: `sink` points to `v`, unborrowed; the set is valid and
            // its count is refused before `tps` is read.
            assert_eq!(unsafe { emit_into(sink, &mk(bad)) }, -1, "{bad}");
        }
        // SAFETY: `sink` points to `v`, unborrowed; the set's `tps` points to
        // one TrigPrim, `tp`.
        assert_eq!(unsafe { emit_into(sink, &mk(1)) }, 0);
        assert_eq!(v.len(), 1);
        let s = &v[0];
        assert_eq!(
            (s.count, s.detid, s.created, s.tstart),
            (u32::MAX, u32::MAX, i64::MIN, u64::MAX)
        );
        assert_eq!(s.tps[0].tstart, u64::MAX);
        assert_eq!(s.tps[0].channel, u32::MAX);
    }
}
