//! Builds libzmq from zeromq-src's bundled source with CURVE backed by
//! libsodium. The published zmq-sys passes no libsodium to zeromq-src, so
//! its libzmq has no CURVE at all (and libzmq's fallback, tweetnacl, is
//! not meant for production by libzmq's maintainers).

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build/main.rs");
    println!("cargo:rerun-if-env-changed=PROFILE");
    // Set by libsodium-sys-stable's build script (`links = "sodium"`).
    let dep = |what: &str| {
        env::var(format!("DEP_SODIUM_{}", what)).unwrap_or_else(|_| {
            panic!(
                "libsodium-sys-stable did not say its {} directory (DEP_SODIUM_{})",
                what, what
            )
        })
    };
    let sodium = zeromq_src::LibLocation::new(dep("LIB"), dep("INCLUDE"));
    // libzmq 4.3.4's own compiler warnings (unused parameters, GCC 12's
    // false -Warray-bounds in curve_client_tools.hpp) are not ours to fix;
    // a path dependency's build warnings would otherwise fill every build.
    let flags = env::var("CXXFLAGS").unwrap_or_default();
    env::set_var("CXXFLAGS", format!("{} -w", flags));
    zeromq_src::Build::new().with_libsodium(Some(sodium)).build();
}
