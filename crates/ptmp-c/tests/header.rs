//! The committed `include/ptmp.h` is exactly what cbindgen makes from the
//! code now, and declares every `ptmp_` function the library exports.

mod common;

use std::process::Command;

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/ptmp.h"));

#[test]
fn committed_header_matches_cbindgen() {
    let path = common::crate_dir().join("include/ptmp.h");
    // The refresh in one command:
    // `PTMP_C_BLESS=1 cargo test -p ptmp-c --test header`.
    if std::env::var_os("PTMP_C_BLESS").is_some() {
        std::fs::write(&path, GENERATED).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != GENERATED {
        panic!(
            "{} is out of date with src/lib.rs; refresh it with\n  \
             cargo build -p ptmp-c && cp \"$(ls -td target/debug/build/ptmp-c-*/out | head -1)/ptmp.h\" crates/ptmp-c/include/ptmp.h\n\
             or run: PTMP_C_BLESS=1 cargo test -p ptmp-c --test header",
            path.display()
        );
    }
}

#[test]
fn every_exported_function_is_declared() {
    let lib = common::lib_dir().join("libptmp.so");
    let out = match Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
    {
        Ok(o) if o.status.success() => o,
        _ => {
            common::missing_part("nm is not available here");
            return;
        }
    };
    let syms: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| s.starts_with("ptmp_"))
        .map(str::to_string)
        .collect();
    assert!(
        syms.len() >= 9,
        "too few ptmp_ symbols in {}: {syms:?}",
        lib.display()
    );
    for s in &syms {
        assert!(
            GENERATED.contains(&format!("{s}(")),
            "{s} is exported but not declared in ptmp.h"
        );
    }
}
