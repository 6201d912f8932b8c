//! Reading and writing small files without being stalled or steered by
//! them: the bounded reads every configuration, secret and run-directory
//! file goes through.
//!
//! * [`read_file`] reads a file the program keeps for itself (a graph's
//!   status, plan and request files): it opens without following a
//!   symbolic link and without waiting (`O_NOFOLLOW | O_NONBLOCK`), takes
//!   only a regular file (checked on the open file, so it cannot be swapped
//!   after the check) and reads at most `limit` bytes. A FIFO, a device, a
//!   directory or a link there is an error naming what it is, never a
//!   wait.
//! * [`read_given`] reads a file a user names (a configuration, a secret):
//!   links are followed and a pipe is read (`ptmp run <(make-config)`), but
//!   a device or a directory is refused and the read is bounded, so
//!   `/dev/zero` cannot fill memory.
//! * [`read_regular`] reads a file found by listing a directory (a
//!   certificate in a CURVE allow directory): links are followed, but it
//!   opens without waiting and takes only a regular file, so a FIFO put
//!   there is an error naming it, never a wait.
//! * [`read_secret`] is [`read_given`] for a secret (a CURVE secret key, a
//!   discovery group's key): the file must belong to the user reading it
//!   and give its group and others no access ([`check_private`]), as
//!   OpenSSH asks of a private key.
//! * [`write_new`] and [`write_replace`] write without following a link:
//!   the file (or the temporary file renamed over the target) is created
//!   exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`).

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind, Read, Result, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most read from a configuration file a user names.
pub const CONFIG_LIMIT: u64 = 64 << 20;
/// The most read from a secret file (a discovery group's key).
pub const SECRET_LIMIT: u64 = 64 << 10;

/// What a file is, for errors: "a FIFO", "a directory", ...
pub fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// `n` bytes in words: "1 MiB", "64 KiB", "100 bytes".
pub fn show_size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

fn too_big(limit: u64) -> Error {
    Error::new(
        ErrorKind::InvalidData,
        format!(
            "larger than {}, the most read from such a file",
            show_size(limit)
        ),
    )
}

/// Read at most `limit` bytes from `f`; more is an error.
fn read_bounded(f: File, limit: u64) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    f.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_big(limit));
    }
    Ok(buf)
}

/// Read the regular file `path` of at most `limit` bytes, never following
/// a link and never waiting (see the module's text). A missing file gives
/// an error of kind [`ErrorKind::NotFound`]; a link, FIFO, device or
/// directory, or a file over `limit`, an error saying so.
pub fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a link.
            Some(libc::ELOOP) => Error::new(
                ErrorKind::InvalidInput,
                "a symbolic link, which is not followed here",
            ),
            _ => e,
        })?;
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{}, not a regular file", kind_of(m.file_type())),
        ));
    }
    if m.len() > limit {
        return Err(too_big(limit));
    }
    read_bounded(f, limit)
}

/// Open the file `path` a user named: a regular file or a pipe, anything
/// else refused. Returns the open file and what it is.
fn open_given(path: &Path) -> Result<(File, std::fs::Metadata)> {
    // Look before opening: opening a device can itself wait (a tape, a
    // terminal) or have effects.
    let t = std::fs::metadata(path)?.file_type();
    if !(t.is_file() || t.is_fifo()) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{}, not a file to read", kind_of(t)),
        ));
    }
    let f = File::open(path)?;
    let m = f.metadata()?;
    let t = m.file_type();
    if !(t.is_file() || t.is_fifo()) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{}, not a file to read", kind_of(t)),
        ));
    }
    Ok((f, m))
}

/// Read the file `path` a user named (a configuration, a secret): links
/// are followed, a regular file or a pipe is read, anything else refused;
/// at most `limit` bytes.
pub fn read_given(path: &Path, limit: u64) -> Result<Vec<u8>> {
    read_given_stat(path, limit).map(|(data, _)| data)
}

/// [`read_given`], with what the open file is (its owner and mode, for a
/// file that turns out to hold a secret: [`check_private`]).
pub fn read_given_stat(path: &Path, limit: u64) -> Result<(Vec<u8>, std::fs::Metadata)> {
    let (f, m) = open_given(path)?;
    Ok((read_bounded(f, limit)?, m))
}

/// Read the secret file `path` a user named, as [`read_given`] does, and
/// only if it is private to the user reading it ([`check_private`]).
pub fn read_secret(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (f, m) = open_given(path)?;
    check_private(path, &m)?;
    read_bounded(f, limit)
}

/// Whether the file `path`, open and described by `m`, may hold a secret:
/// it must belong to the user this process runs as (root included: a
/// file of another user's is refused) and give its group and others no
/// access. The error says which rule is broken, the file's owner or mode,
/// and the command that mends it.
pub fn check_private(path: &Path, m: &std::fs::Metadata) -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let shown = path.display();
    if m.uid() != me {
        return Err(Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "it is owned by uid {}, not by uid {me} that reads it: a secret file must belong \
                 to the user that uses it (chown {me} {shown}, or use a copy of your own, \
                 then chmod 600 {shown})",
                m.uid()
            ),
        ));
    }
    let mode = m.mode() & 0o7777;
    if mode & 0o077 != 0 {
        let who = match (mode & 0o070 != 0, mode & 0o007 != 0) {
            (true, true) => "its group and others",
            (true, false) => "its group",
            _ => "others",
        };
        return Err(Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "its mode {mode:04o} gives {who} access: a secret file must be private to its \
                 owner (chmod 600 {shown})"
            ),
        ));
    }
    Ok(())
}

/// Open the regular file `path` without waiting: links are followed, but
/// anything other than a regular file (a FIFO, a device, a directory, a
/// socket) is an error naming what it is, and is not opened when it can be
/// told before (a FIFO opened without a writer would wait for one).
pub fn open_regular(path: &Path) -> Result<File> {
    let not_regular = |t: std::fs::FileType| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("{}, not a regular file", kind_of(t)),
        )
    };
    let t = std::fs::metadata(path)?.file_type();
    if !t.is_file() {
        return Err(not_regular(t));
    }
    // Swapped for a FIFO since the look above, it is opened without
    // waiting and refused below.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let t = f.metadata()?.file_type();
    if !t.is_file() {
        return Err(not_regular(t));
    }
    Ok(f)
}

/// Read the regular file `path` ([`open_regular`]: links followed, never
/// waiting), at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>> {
    read_regular_stat(path, limit).map(|(data, _)| data)
}

/// [`read_regular`], with what the open file is (as [`read_given_stat`]).
pub fn read_regular_stat(path: &Path, limit: u64) -> Result<(Vec<u8>, std::fs::Metadata)> {
    let f = open_regular(path)?;
    let m = f.metadata()?;
    Ok((read_bounded(f, limit)?, m))
}

/// [`read_given`] as text.
pub fn read_given_text(path: &Path, limit: u64) -> Result<String> {
    String::from_utf8(read_given(path, limit)?)
        .map_err(|_| Error::new(ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Create `path` holding `data`, failing when anything (a file, a link)
/// is already there.
pub fn write_new(path: &Path, data: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    f.write_all(data)
}

/// The temporary file [`write_replace`] writes `path` through: the same
/// name with `.tmp` added.
pub fn temp_for(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Replace `path` with `data` atomically: write a new temporary file next
/// to it (created exclusively, so a link left there is removed, never
/// written through), then rename it over `path`.
pub fn write_replace(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = temp_for(path);
    let r = match write_new(&tmp, data) {
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            // Left by a writer that died, or put there: removing a link
            // removes the link, not what it points to.
            std::fs::remove_file(&tmp)?;
            write_new(&tmp, data)
        }
        r => r,
    };
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn reads_refuse_what_is_not_a_small_regular_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read_file(&f, 5).unwrap(), b"12345");
        let e = read_file(&f, 4).unwrap_err();
        assert!(e.to_string().contains("larger than 4 bytes"), "{e}");
        let l = d.path().join("l");
        symlink(&f, &l).unwrap();
        let e = read_file(&l, 100).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(read_given(&l, 100).unwrap(), b"12345");
        let e = read_file(d.path(), 100).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_given(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let e = read_file(&d.path().join("none"), 100).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }

    #[test]
    fn a_secret_must_be_private_to_its_reader() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("secret");
        std::fs::write(&f, b"s3cret").unwrap();
        let shown = f.display().to_string();
        for (mode, who) in [
            (0o644, "its group and others"),
            (0o640, "its group"),
            (0o604, "others"),
            (0o666, "its group and others"),
            (0o620, "its group"),
        ] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_secret(&f, 100).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{mode:o}: {e}");
            let e = e.to_string();
            assert!(
                e.contains(&format!("mode {mode:04o} gives {who} access")),
                "{e}"
            );
            assert!(e.contains(&format!("chmod 600 {shown}")), "{e}");
            // Read as anything else, the file is fine.
            assert_eq!(read_given(&f, 100).unwrap(), b"s3cret");
        }
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(read_secret(&f, 100).unwrap(), b"s3cret");
        }
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Root reading another user's secret is refused too.
            std::os::unix::fs::chown(&f, Some(65534), None).unwrap();
            let e = read_secret(&f, 100).unwrap_err().to_string();
            assert!(e.contains("owned by uid 65534, not by uid 0"), "{e}");
            assert!(e.contains(&format!("chown 0 {shown}")), "{e}");
        }
    }

    #[test]
    fn a_listed_file_must_be_regular_and_is_opened_without_waiting() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("x.key");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = read_regular(&fifo, 100).unwrap_err().to_string();
        assert!(e.contains("a FIFO, not a regular file"), "{e}");
        let e = open_regular(d.path()).unwrap_err().to_string();
        assert!(e.contains("a directory, not a regular file"), "{e}");
        let f = d.path().join("f");
        std::fs::write(&f, b"abc").unwrap();
        let l = d.path().join("l");
        symlink(&f, &l).unwrap();
        assert_eq!(read_regular(&l, 100).unwrap(), b"abc");
    }

    #[test]
    fn writes_never_follow_a_link() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let target = d.path().join("t.json");
        symlink(&victim, temp_for(&target)).unwrap();
        write_replace(&target, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let n = d.path().join("n");
        symlink(&victim, &n).unwrap();
        assert!(write_new(&n, b"x").is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }
}
