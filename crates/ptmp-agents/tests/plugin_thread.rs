//! The promise of `include/ptmp_filter.h`: every call on a plugin engine
//! (create, process, destroy) comes from one thread. A test plugin records
//! the thread that created each engine and counts calls from any other.

use ptmp_agents::{upstream_first, Ctl, Plugins, Proxy, Running};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn sock(kind: &str, how: &str, addr: &str) -> serde_json::Value {
    json!({"socket": {"type": kind, how: [addr]}})
}

#[test]
fn plugin_engine_calls_come_from_one_thread() {
    let d = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let so = d.path().join("libthread-check.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-pthread", "-Wall", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg("-o")
        .arg(&so)
        .arg(root.join("tests/plugin/thread_check.c"))
        .status()
        .expect("a C compiler (cc) is needed to build the test plugin");
    assert!(st.success());
    let so = so.to_str().unwrap().to_string();
    let plugins = Plugins::load(std::slice::from_ref(&so)).unwrap();

    let n = 20;
    let proxies = [
        json!({"name": "src", "type": "source", "data": {"count": n, "tps": 2,
            "output": sock("PUSH", "bind", "inproc://thread-check-a")}}),
        json!({"name": "filt", "type": "filter", "data": {"engine": "thread_check",
            "input": sock("PULL", "connect", "inproc://thread-check-a"),
            "output": sock("PUSH", "bind", "inproc://thread-check-b")}}),
        json!({"name": "sink", "type": "sink", "data": {"count": n,
            "input": sock("PULL", "connect", "inproc://thread-check-b")}}),
    ];
    let proxies: Vec<Proxy> = proxies
        .iter()
        .enumerate()
        .map(|(i, p)| Proxy::parse(&format!("proxies[{i}]"), p, &plugins).unwrap())
        .collect();
    let mut agents = Vec::new();
    for p in &proxies {
        agents.extend(p.build().unwrap());
    }
    let running = Running::start(agents, &Ctl::new(false)).unwrap();
    let t0 = Instant::now();
    while !running.ended(2) && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let order = upstream_first(&proxies.iter().collect::<Vec<_>>());
    let reports = running.stop_in_order(&order);
    let filter = reports[1].1.as_ref().unwrap();
    assert_eq!(filter.get("in"), Some(n), "{filter}");
    assert_eq!(filter.get("engine_errors"), Some(0), "{filter}");

    // SAFETY: the library was built above from thread_check.c, whose
    // initialisers are empty; it is already loaded by `plugins`, so this
    // only takes another reference to it.
    let lib = unsafe { libloading::Library::new(&so) }.unwrap();
    let mut c = [0i32; 4];
    // SAFETY: thread_check.c defines thread_check_counts(int out[4]) with
    // this signature; `c` has room for the four counts it writes.
    unsafe {
        let f = lib
            .get::<unsafe extern "C" fn(*mut i32)>(b"thread_check_counts\0")
            .unwrap();
        f(c.as_mut_ptr());
    }
    let [created, destroyed, processed, wrong_thread] = c;
    // Validation makes one engine and destroys it at once; the agent makes
    // its own on its thread.
    assert_eq!((created, destroyed), (2, 2), "{c:?}");
    assert_eq!(processed, n as i32, "{c:?}");
    assert_eq!(wrong_thread, 0, "{c:?}");
}
