//! What the shm:// test programs of this crate share.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};

/// A channel name unique to this test program, process and call, whose
/// segment is removed when the guard drops.
pub struct Chan(pub String);

impl Chan {
    pub fn new(tag: &str) -> Chan {
        static N: AtomicUsize = AtomicUsize::new(0);
        Chan(format!(
            "ptmp-{}-{tag}-{}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// The channel as a socket address.
    pub fn ep(&self) -> String {
        format!("shm://{}", self.0)
    }
}

impl Drop for Chan {
    fn drop(&mut self) {
        let _ = ptmp_shm::remove(&self.0);
    }
}
