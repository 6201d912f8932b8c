//! Compiling and running the C test programs against the library cargo
//! built for this test run.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The directory cargo put `libptmp.a` and `libptmp.so` in: the test
/// binary lives in its `deps/` subdirectory.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// This crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a static link of `libptmp.a` needs besides it: the bundled libzmq
/// is C++, and the Rust standard library uses threads, dlopen and libm.
pub const STATIC_LIBS: &[&str] = &["-lstdc++", "-lpthread", "-ldl", "-lm", "-lrt"];

/// Compiles `tests/c/NAME.c` with the committed header and links it
/// statically against `libptmp.a`, with `extra` compiler flags; returns the
/// program's path in `dir`, or the compiler's output on failure.
pub fn try_compile(name: &str, dir: &Path, extra: &[&str]) -> Result<PathBuf, String> {
    build(
        "cc",
        &["-std=c99"],
        &format!("c/{name}.c"),
        name,
        dir,
        extra,
    )
}

/// As [`try_compile`] for the C++ program `tests/cpp/NAME.cpp`, built as
/// C++17 with the system `c++` against `ptmp.hpp`.
pub fn try_compile_cpp(name: &str, dir: &Path, extra: &[&str]) -> Result<PathBuf, String> {
    build(
        "c++",
        &["-std=c++17"],
        &format!("cpp/{name}.cpp"),
        name,
        dir,
        extra,
    )
}

/// [`try_compile_cpp`] that fails the test on a compiler error.
pub fn compile_cpp(name: &str, dir: &Path) -> PathBuf {
    try_compile_cpp(name, dir, &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn build(
    compiler: &str,
    std: &[&str],
    src: &str,
    name: &str,
    dir: &Path,
    extra: &[&str],
) -> Result<PathBuf, String> {
    let exe = dir.join(name);
    let src = crate_dir().join("tests").join(src);
    let lib = lib_dir().join("libptmp.a");
    assert!(
        lib.exists(),
        "{} was not built: run `cargo build -p ptmp-c` first (scripts/test.sh does)",
        lib.display()
    );
    let out = Command::new(compiler)
        .args(std)
        .args(["-Wall", "-Wextra", "-Werror", "-g"])
        .args(extra)
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(&src)
        .arg(&lib)
        .args(STATIC_LIBS)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    if out.status.success() {
        Ok(exe)
    } else {
        Err(format!(
            "{compiler} {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The flags of a build with the address and undefined-behaviour
/// sanitizers.
pub const SANITIZE: &[&str] = &["-fsanitize=address,undefined", "-fno-omit-frame-pointer"];

/// True if a sanitizer build failed only because the compiler lacks the
/// runtimes (the one excused failure).
pub fn no_sanitizer_runtime(e: &str) -> bool {
    e.contains("asan") || e.contains("ubsan")
}

/// The valgrind command line for a short clean run (errors and definite
/// leaks fail it), or None with a printed note where valgrind is missing.
pub fn valgrind() -> Option<Vec<String>> {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        missing_part("valgrind is not installed here");
        return None;
    }
    Some(
        [
            "valgrind",
            "-q",
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite",
        ]
        .map(String::from)
        .to_vec(),
    )
}

/// [`try_compile`] that fails the test on a compiler error.
pub fn compile(name: &str, dir: &Path) -> PathBuf {
    try_compile(name, dir, &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts a finished C program exited 0, showing its output otherwise.
pub fn assert_ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[path = "../../../../tests/support/missing_part.rs"]
mod missing;
#[allow(unused_imports)]
pub use missing::missing_part;
