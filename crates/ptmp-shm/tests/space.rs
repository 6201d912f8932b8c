//! A shm directory too small for a ring (Docker's /dev/shm is 64 MiB) is a
//! clear error when the channel is created, not a SIGBUS at a later write.
//! One test in this binary: it sets PTMP_SHM_DIR for the whole process.

use ptmp_shm::{ChannelConfig, Policy, ShmError, Writer};
use std::process::Command;

#[path = "../../../tests/support/missing_part.rs"]
mod missing;
use missing::missing_part;

#[test]
fn a_full_tmpfs_is_an_error_at_creation_naming_needed_and_free() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        missing_part("mounting a small tmpfs needs root");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(d.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount a 1 MiB tmpfs at {}", d.path().display());
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(d.path().to_path_buf());
    std::env::set_var("PTMP_SHM_DIR", d.path());

    // 8 slots of 1 MiB: about 8 MiB, in 1 MiB.
    let big = ChannelConfig {
        slots: 8,
        max_message: 1 << 20,
        policy: Policy::Overwrite,
    };
    let e = Writer::create("too-big", big).err().expect("refused");
    match &e {
        ShmError::NoSpace { needed, free, .. } => {
            assert!(*needed > 8 << 20, "{e}");
            assert!(*free <= 1 << 20, "{e}");
        }
        other => panic!("expected NoSpace, got {other}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains(&d.path().display().to_string())
            && msg.contains("needs")
            && msg.contains("free"),
        "{msg}"
    );
    // Nothing is left behind: no segment, no temporary file.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);

    // A ring that fits is created, and every slot can be written (its pages
    // were reserved, so no write can meet a missing page).
    let small = ChannelConfig {
        slots: 4,
        max_message: 100_000,
        policy: Policy::Overwrite,
    };
    let mut w = Writer::create("fits", small).unwrap();
    let m = vec![7u8; 100_000];
    for _ in 0..8 {
        w.publish(&m).unwrap();
    }
    // A second ring that would overflow the rest is refused as well.
    let e = Writer::create("second", ChannelConfig { slots: 8, ..small })
        .err()
        .expect("refused");
    assert!(
        matches!(e, ShmError::NoSpace { .. }) || e.to_string().contains("space"),
        "{e}"
    );
    drop(w);
    ptmp_shm::remove("fits").unwrap();

    // A sparse segment made elsewhere (an older ptmp made them so): 8 MiB
    // of file in 1 MiB of memory. Taking it as a writer reserves its pages,
    // so the shortage is an error now, not a SIGBUS at some later message.
    let stride: u64 = (16 + (1u64 << 20)).div_ceil(64) * 64;
    let total = 8192 + 8 * stride;
    let mut h = vec![0u8; 8192];
    h[..8].copy_from_slice(&ptmp_shm::MAGIC);
    h[8..12].copy_from_slice(&ptmp_shm::LAYOUT_VERSION.to_ne_bytes());
    h[12..16].copy_from_slice(&8192u32.to_ne_bytes());
    h[16..20].copy_from_slice(&8u32.to_ne_bytes());
    h[24..32].copy_from_slice(&(1u64 << 20).to_ne_bytes());
    h[32..40].copy_from_slice(&stride.to_ne_bytes());
    h[40..48].copy_from_slice(&total.to_ne_bytes());
    let path = ptmp_shm::segment_path("sparse").unwrap();
    {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut &f, &h).unwrap();
        f.set_len(total).unwrap();
    }
    let e = Writer::create("sparse", big).err().expect("refused");
    assert!(matches!(e, ShmError::NoSpace { .. }), "{e}");
    std::fs::remove_file(&path).unwrap();
}
