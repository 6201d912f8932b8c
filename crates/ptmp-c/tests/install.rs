//! `scripts/install-c.sh` lays out a prefix that a C program finds through
//! pkg-config, and the program so built runs against the shared library.

mod common;

use std::process::Command;

#[test]
fn install_then_build_with_pkg_config() {
    let have_pkg_config = Command::new("pkg-config")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_pkg_config {
        eprintln!("note: pkg-config is not installed here; install test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
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
        "lib/pkgconfig/ptmp.pc",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }
    let pc = Command::new("pkg-config")
        .args(["--cflags", "--libs", "ptmp"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap();
    common::assert_ok("pkg-config", &pc);
    let flags = String::from_utf8(pc.stdout).unwrap();
    let exe = dir.path().join("minimal");
    let cc = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Werror"])
        .arg(common::crate_dir().join("tests/c/minimal.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    common::assert_ok("cc with pkg-config flags", &cc);
    let run = Command::new(&exe)
        .env("LD_LIBRARY_PATH", prefix.join("lib"))
        .output()
        .unwrap();
    common::assert_ok("minimal program", &run);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("received count=1 ntps=2"), "{stdout}");
}
