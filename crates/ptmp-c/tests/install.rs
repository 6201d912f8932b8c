//! `scripts/install-c.sh` lays out a prefix that C and C++ programs find
//! through pkg-config and through CMake's `find_package(ptmp)`, and the
//! programs so built run against the installed library.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Installs into `dir/prefix` with the library this test run built.
fn install(dir: &Path) -> PathBuf {
    let prefix = dir.join("prefix");
    let script = common::crate_dir().join("../../scripts/install-c.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&prefix)
        .env("PTMP_C_LIB_DIR", common::lib_dir())
        .output()
        .unwrap();
    common::assert_ok("install-c.sh", &out);
    for f in [
        "lib/libptmp.so",
        "lib/libptmp.a",
        "include/ptmp.h",
        "include/ptmp.hpp",
        "lib/pkgconfig/ptmp.pc",
        "lib/cmake/ptmp/ptmpConfig.cmake",
        "lib/cmake/ptmp/ptmpConfigVersion.cmake",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }
    prefix
}

/// Runs a program built against the installed shared library.
fn run(exe: &Path, prefix: &Path, want: &str) {
    let run = Command::new(exe)
        .env("LD_LIBRARY_PATH", prefix.join("lib"))
        .output()
        .unwrap();
    common::assert_ok(&exe.display().to_string(), &run);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains(want), "{stdout}");
}

#[test]
fn install_then_build_with_pkg_config() {
    if !have("pkg-config") {
        common::missing_part("pkg-config is not installed here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = install(dir.path());
    let pc = Command::new("pkg-config")
        .args(["--cflags", "--libs", "ptmp"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap();
    common::assert_ok("pkg-config", &pc);
    let flags = String::from_utf8(pc.stdout).unwrap();
    let tests = common::crate_dir().join("tests");
    for (compiler, std, src, name, want) in [
        (
            "cc",
            "-std=c99",
            "c/minimal.c",
            "minimal",
            "received count=1 ntps=2",
        ),
        (
            "c++",
            "-std=c++17",
            "cpp/port.cpp",
            "port",
            "ported: received 10 TPSets",
        ),
    ] {
        let exe = dir.path().join(name);
        let out = Command::new(compiler)
            .args([std, "-Wall", "-Werror"])
            .arg(tests.join(src))
            .args(flags.split_whitespace())
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        common::assert_ok(&format!("{compiler} {src} with pkg-config flags"), &out);
        run(&exe, &prefix, want);
    }
}

#[test]
fn install_then_build_with_cmake() {
    if !have("cmake") {
        common::missing_part("cmake is not installed here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = install(dir.path());
    let build = dir.path().join("build");
    let tests = common::crate_dir().join("tests");
    let conf = Command::new("cmake")
        .arg("-S")
        .arg(tests.join("cmake"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg(format!("-DSRC_DIR={}", tests.display()))
        .output()
        .unwrap();
    common::assert_ok("cmake configure", &conf);
    let b = Command::new("cmake")
        .arg("--build")
        .arg(&build)
        .output()
        .unwrap();
    common::assert_ok("cmake --build", &b);
    run(&build.join("minimal_c"), &prefix, "received count=1 ntps=2");
    run(
        &build.join("port_cxx"),
        &prefix,
        "ported: received 10 TPSets",
    );
    // The version file refuses another major version.
    let bad = Command::new("cmake")
        .arg("-S")
        .arg(tests.join("cmake"))
        .arg("-B")
        .arg(dir.path().join("build2"))
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg(format!("-DSRC_DIR={}", tests.display()))
        .arg("-DPTMP_WANT=2.0")
        .output()
        .unwrap();
    assert!(!bad.status.success(), "find_package(ptmp 2.0) was accepted");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("version: 0.1.0"), "{err}");
}

/// The programs docs/c-api.md shows are the ones these tests build.
#[test]
fn docs_show_the_tested_programs() {
    let docs = std::fs::read_to_string(common::crate_dir().join("../../docs/c-api.md")).unwrap();
    for (src, from) in [
        ("tests/c/minimal.c", "#include <stdio.h>"),
        ("tests/cpp/port.cpp", "#include <cstdio>"),
    ] {
        let text = std::fs::read_to_string(common::crate_dir().join(src)).unwrap();
        let body = &text[text.find(from).unwrap()..];
        assert!(
            docs.contains(body),
            "docs/c-api.md does not show {src} as it is"
        );
    }
}
