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
//! * [`write_new`] and [`write_replace`] write without following a link:
//!   the file (or the temporary file renamed over the target) is created
//!   exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`).

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind, Read, Result, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
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

/// Read the file `path` a user named (a configuration, a secret): links
/// are followed, a regular file or a pipe is read, anything else refused;
/// at most `limit` bytes.
pub fn read_given(path: &Path, limit: u64) -> Result<Vec<u8>> {
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
    let t = f.metadata()?.file_type();
    if !(t.is_file() || t.is_fifo()) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{}, not a file to read", kind_of(t)),
        ));
    }
    read_bounded(f, limit)
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
