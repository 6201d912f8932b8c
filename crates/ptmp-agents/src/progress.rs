//! A terminal progress bar for the programs built on these crates (the
//! `ptmp` command and the benchmark suites). It lives here, the lowest
//! crate both depend on, so that it is written once; it is behind the
//! `progress` feature so that the library, and the Python module built on
//! it, do not link indicatif.

/// A progress bar on stderr, drawn only when stderr is a terminal and the
/// run is long enough (`len` of 100 000 or more) to want one; otherwise a
/// hidden bar whose updates cost next to nothing. `what` names the run at
/// the start of the line.
pub fn bar(len: u64, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if len < 100_000 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}} {{per_sec}} eta {{eta}}"
        ))
        .expect("valid template"),
    );
    pb
}
