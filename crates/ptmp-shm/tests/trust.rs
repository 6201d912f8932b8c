//! Who owns a segment: links are never followed, and a segment of another
//! user or with a wider mode than the channel's access allows is refused.

mod common;
use common::Chan;
#[path = "../../../tests/support/missing_part.rs"]
mod missing;
use missing::missing_part;

use ptmp_shm::{
    remove, segment_path, Access, ChannelConfig, Policy, Reader, ShmError, StartAt, Writer,
};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

fn cfg() -> ChannelConfig {
    ChannelConfig {
        slots: 4,
        max_message: 64,
        policy: Policy::Overwrite,
    }
}

fn chmod(c: &Chan, mode: u32) {
    std::fs::set_permissions(segment_path(&c.0).unwrap(), PermissionsExt::from_mode(mode)).unwrap();
}

fn chown(c: &Chan, uid: u32, gid: Option<u32>) {
    std::os::unix::fs::chown(segment_path(&c.0).unwrap(), Some(uid), gid).unwrap();
}

fn refused(r: Result<impl Sized, ShmError>) -> String {
    match r {
        Err(e @ ShmError::Untrusted { .. }) => e.to_string(),
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("expected a refusal, got a channel"),
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_symlink_at_a_segment_path_is_refused_and_its_target_untouched() {
    let c = Chan::new("link");
    // The target is a perfectly good segment: following the link would work.
    let real = Chan::new("link-target");
    let mut w = Writer::create(&real.0, cfg()).unwrap();
    w.publish(b"kept").unwrap();
    drop(w);
    let target = segment_path(&real.0).unwrap();
    let before = std::fs::read(&target).unwrap();
    let path = segment_path(&c.0).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let e = refused(Reader::attach(&c.0, StartAt::Oldest));
    assert!(e.contains("symbolic link") && e.contains(&c.0), "{e}");
    let e = refused(Writer::create(&c.0, cfg()));
    assert!(e.contains("symbolic link"), "{e}");
    let e = refused(Writer::create_with(&c.0, cfg(), Access::Group));
    assert!(e.contains("symbolic link"), "{e}");
    // The target was neither written nor taken.
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&target).unwrap().mode() & 0o777,
        0o600,
        "target mode"
    );
    // `ptmp shm ls` shows it as unreadable; `rm` removes the link only.
    let listed = ptmp_shm::list().unwrap();
    let l = listed.iter().find(|i| i.name == c.0).expect("listed");
    assert!(
        l.state.as_ref().is_err_and(|e| e.contains("symbolic link")),
        "{:?}",
        l.state
    );
    remove(&c.0).unwrap();
    assert!(std::fs::symlink_metadata(&path).is_err());
    assert_eq!(std::fs::read(&target).unwrap(), before);
}

#[test]
fn a_segment_with_a_wider_mode_is_refused() {
    for mode in [0o644, 0o666, 0o660, 0o640, 0o700, 0o4600] {
        let c = Chan::new("mode");
        drop(Writer::create(&c.0, cfg()).unwrap());
        chmod(&c, mode);
        let e = refused(Reader::attach(&c.0, StartAt::Next));
        assert!(
            e.contains(&format!("mode {mode:04o}"))
                && e.contains("expected")
                && e.contains("0600")
                && e.contains(&c.0),
            "{e}"
        );
        let e = refused(Writer::create(&c.0, cfg()));
        assert!(e.contains(&format!("mode {mode:04o}")), "{e}");
    }
}

#[test]
fn a_segment_of_another_user_is_refused() {
    if !is_root() {
        missing_part("chown to another user needs root");
        return;
    }
    let c = Chan::new("owner");
    drop(Writer::create(&c.0, cfg()).unwrap());
    chown(&c, 12345, None);
    let e = refused(Reader::attach(&c.0, StartAt::Next));
    assert!(
        e.contains("owner uid 12345") && e.contains("expected owner uid 0"),
        "{e}"
    );
    let e = refused(Writer::create(&c.0, cfg()));
    assert!(e.contains("owner uid 12345"), "{e}");
    // Group sharing does not accept a private segment of another user, nor
    // one whose group this process is not in.
    let e = refused(Reader::attach_with(&c.0, StartAt::Next, Access::Group));
    assert!(e.contains("owner uid 12345"), "{e}");
    chmod(&c, 0o660);
    chown(&c, 12345, Some(54321));
    let e = refused(Reader::attach_with(&c.0, StartAt::Next, Access::Group));
    assert!(e.contains("group 54321"), "{e}");
}

#[test]
fn group_access_accepts_a_0660_segment_of_a_group_member() {
    let c = Chan::new("group");
    // Created in group mode: 0660 whatever the umask.
    let mut w = Writer::create_with(&c.0, cfg(), Access::Group).unwrap();
    let path = segment_path(&c.0).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o7777, 0o660);
    w.publish(b"shared").unwrap();
    // Private access refuses it.
    let e = refused(Reader::attach(&c.0, StartAt::Oldest));
    assert!(e.contains("mode 0660") && e.contains("shm_mode"), "{e}");
    let mut r = Reader::attach_with(&c.0, StartAt::Oldest, Access::Group).unwrap();
    let mut buf = Vec::new();
    assert!(r.try_recv(&mut buf).unwrap().is_some());
    assert_eq!(buf, b"shared");
    drop(r);
    drop(w);
    if is_root() {
        // Another user's segment, in this process's group.
        // SAFETY: getegid has no preconditions.
        let gid = unsafe { libc::getegid() };
        chown(&c, 12345, Some(gid));
        let mut r = Reader::attach_with(&c.0, StartAt::Oldest, Access::Group).unwrap();
        assert!(r.try_recv(&mut buf).unwrap().is_some());
        let mut w = Writer::create_with(&c.0, cfg(), Access::Group).unwrap();
        w.publish(b"more").unwrap();
        let e = refused(Reader::attach(&c.0, StartAt::Oldest));
        assert!(e.contains("owner uid 12345"), "{e}");
    }
}

#[test]
fn a_segment_that_is_not_a_regular_file_is_refused() {
    let c = Chan::new("dir");
    let path = segment_path(&c.0).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::set_permissions(&path, PermissionsExt::from_mode(0o600)).unwrap();
    let e = Reader::attach(&c.0, StartAt::Next)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(&c.0), "{e}");
    std::fs::remove_dir(&path).unwrap();
}
