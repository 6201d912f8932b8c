//! One rule for every test that needs a real part it cannot provide itself
//! (a program from a Debian package, root for network namespaces or mounts,
//! a sanitizer runtime): included by path into the test crates that need it.

/// A real part a test needs is missing: the test fails, naming it, unless
/// this run opted out with `PTMP_ALLOW_MISSING_PARTS=1`, in which case the
/// note is printed and the caller skips that part. CI never opts out, so it
/// cannot go green with a part left out.
#[allow(dead_code)]
pub fn missing_part(why: &str) {
    if std::env::var("PTMP_ALLOW_MISSING_PARTS").as_deref() == Ok("1") {
        eprintln!("{why} (skipped: PTMP_ALLOW_MISSING_PARTS=1)");
    } else {
        panic!(
            "{why}\nInstall it (.ci/run lists every real part), or set \
             PTMP_ALLOW_MISSING_PARTS=1 to skip it"
        );
    }
}
