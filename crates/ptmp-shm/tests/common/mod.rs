//! What the ring's test programs share.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A channel name unique to this test program, process and call, whose
/// segment is removed when the guard drops.
pub struct Chan(pub String);

impl Chan {
    pub fn new(tag: &str) -> Chan {
        static N: AtomicUsize = AtomicUsize::new(0);
        Chan(format!(
            "test-{}-{tag}-{}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
    }
}

impl Drop for Chan {
    fn drop(&mut self) {
        let _ = ptmp_shm::remove(&self.0);
    }
}
