//! The czmqat / TPCat dump-file format.
//!
//! A dump file is a sequence of records. Each record is an 8-byte
//! little-endian (x86-64 native `size_t`) length followed by that many bytes
//! holding CZMQ's `zmsg_encode` form of one message: for each frame, one length
//! byte when the frame is shorter than 255 bytes, otherwise `0xFF` and a 4-byte
//! big-endian length; then the frame's bytes. Files written here are read by
//! the C++ tools and theirs are read here.
//!
//! Reading is record by record: a truncated or corrupt record is reported with
//! its number, the byte offset of the problem and what is wrong, after every
//! earlier record has been returned.
//!
//! Memory is bounded by what the file holds, not by what it claims: a
//! record's bytes are allocated as they are read (in growing chunks, so a
//! length prefix claiming more than the file holds costs at most what the
//! file holds), and its frames are counted before they are stored, so a
//! record takes at most its own size plus one index entry per frame (each
//! frame has at least its 1-byte length in the file).
//!
//! A record of zero frames is refused: a ZeroMQ message has at least one
//! frame, so no socket produces one, and sending one would send nothing (as
//! CZMQ's `zmsg_send` does with an empty message), silently losing a record
//! that had been counted. [`DumpWriter::write`] refuses to write one.

mod file;

pub use file::{FileReader, FileWriter};

/// What `ptmp info` tells of a dump beyond its records: what it keeps.
pub(crate) fn layout() -> Vec<crate::format::Detail> {
    vec![crate::format::Detail::new(
        "keeps",
        "each message's frames, uncompressed; no channel, no receive time",
    )]
}
use ptmp_data::zmsg::{zmsg_encode, zmsg_frames};
use ptmp_data::Frames;
use std::io::{self, Read, Write};

/// Largest record accepted when reading (1 GiB): a bigger length is taken to
/// mean the file is corrupt, not that memory should be reserved for it.
pub const MAX_RECORD: u64 = 1 << 30;

/// Size of the first chunk a record's bytes are read in; later chunks double.
const READ_CHUNK: usize = 64 * 1024;

/// Why a dump file could not be read. `record` counts from 0; `offset` is the
/// byte of the file where the problem is (the record's start for a truncated
/// record or a bad length, the frame's length byte for a bad frame).
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// The file ends inside a record: in its 8-byte length, or before the
    /// bytes the length promises.
    #[error("dump file truncated in record {record} at byte {offset}: {what}")]
    Truncated {
        /// Number of the record, from 0.
        record: u64,
        /// Byte of the file where the cut-off record starts.
        offset: u64,
        /// What was cut off and how much of it the file holds.
        what: String,
    },
    /// A record whose length exceeds [`MAX_RECORD`], or whose bytes are not a
    /// valid `zmsg_encode` form of at least one frame.
    #[error("dump file corrupt in record {record} at byte {offset}: {what}")]
    Corrupt {
        /// Number of the record, from 0.
        record: u64,
        /// Byte of the file where the problem is: the record's start for a
        /// bad length, the frame's length byte for a bad frame.
        offset: u64,
        /// What is wrong, in words.
        what: String,
    },
    /// Reading the underlying input failed.
    #[error("dump file I/O error in record {record} at byte {offset}: {source}")]
    Io {
        /// Number of the record being read, from 0.
        record: u64,
        /// Byte of the file where the record being read starts.
        offset: u64,
        /// The error the reader returned.
        source: io::Error,
    },
}

impl DumpError {
    /// Byte offset in the file where the problem was found.
    pub fn offset(&self) -> u64 {
        match self {
            DumpError::Truncated { offset, .. }
            | DumpError::Corrupt { offset, .. }
            | DumpError::Io { offset, .. } => *offset,
        }
    }

    /// Number of the record (from 0) the problem was found in.
    pub fn record(&self) -> u64 {
        match self {
            DumpError::Truncated { record, .. }
            | DumpError::Corrupt { record, .. }
            | DumpError::Io { record, .. } => *record,
        }
    }
}

/// Parse a `zmsg_encode` buffer into `frames` (cleared first). `record` and
/// `offset` (where the buffer sits in its file) are for error messages.
///
/// The buffer is checked and its frames counted before any is stored, and
/// `frames` grows to exactly what they need, so a buffer of many tiny frames
/// costs one index entry per frame and no more.
pub fn zmsg_decode(
    buf: &[u8],
    frames: &mut Frames,
    record: u64,
    offset: u64,
) -> Result<(), DumpError> {
    frames.clear();
    let (mut count, mut bytes) = (0usize, 0usize);
    for f in zmsg_frames(buf) {
        let f = f.map_err(|e| DumpError::Corrupt {
            record,
            offset: offset + e.pos as u64,
            what: format!("{} in the record", e.what),
        })?;
        count += 1;
        bytes += f.len();
    }
    frames.reserve_exact(count, bytes);
    for f in zmsg_frames(buf) {
        frames.push(f.expect("checked above"));
    }
    Ok(())
}

/// Writes messages as dump-file records.
pub struct DumpWriter<W: Write> {
    out: W,
    scratch: Vec<u8>,
    records: u64,
}

impl<W: Write> DumpWriter<W> {
    /// Start a dump file at the current position of `out`. Nothing is
    /// buffered here: each record goes to `out` in one `write_all`, so wrap a
    /// file in a `BufWriter` when writing many small records.
    pub fn new(out: W) -> Self {
        Self {
            out,
            scratch: Vec::new(),
            records: 0,
        }
    }

    /// Write one message given as its frames. A message of no frames is
    /// refused (`InvalidInput`): no ZeroMQ message has none, and the reader
    /// refuses such a record.
    pub fn write<F: AsRef<[u8]>>(&mut self, frames: impl IntoIterator<Item = F>) -> io::Result<()> {
        self.scratch.clear();
        self.scratch.extend_from_slice(&[0u8; 8]);
        zmsg_encode(frames, &mut self.scratch);
        if self.scratch.len() == 8 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "dump record {} would hold no frames; a ZeroMQ message has at least one",
                    self.records
                ),
            ));
        }
        let n = (self.scratch.len() - 8) as u64;
        self.scratch[..8].copy_from_slice(&n.to_le_bytes());
        self.out.write_all(&self.scratch)?;
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flush the underlying writer, so every record written so far reaches it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Give back the underlying writer, without flushing it.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Reads dump-file records one at a time.
pub struct DumpReader<R: Read> {
    input: R,
    offset: u64,
    record: Vec<u8>,
    records: u64,
    failed: bool,
}

impl<R: Read> DumpReader<R> {
    /// Read records from `input`, which must be positioned at the start of a
    /// record (offsets in errors count from there).
    pub fn new(input: R) -> Self {
        Self {
            input,
            offset: 0,
            record: Vec::new(),
            records: 0,
            failed: false,
        }
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Read the next record into `frames`. `Ok(false)` at a clean end of file.
    /// After an error every later call returns `Ok(false)`.
    pub fn read_into(&mut self, frames: &mut Frames) -> Result<bool, DumpError> {
        if self.failed {
            return Ok(false);
        }
        let r = self.read_inner(frames);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn read_inner(&mut self, frames: &mut Frames) -> Result<bool, DumpError> {
        let start = self.offset;
        let record = self.records;
        let io_err = |source| DumpError::Io {
            record,
            offset: start,
            source,
        };
        let mut head = [0u8; 8];
        let got = read_full(&mut self.input, &mut head).map_err(io_err)?;
        if got == 0 {
            return Ok(false);
        }
        if got < 8 {
            return Err(DumpError::Truncated {
                record,
                offset: start,
                what: format!("the file ends after {got} of the record's 8 length bytes"),
            });
        }
        let len = u64::from_le_bytes(head);
        if len == 0 {
            return Err(DumpError::Corrupt {
                record,
                offset: start,
                what: "the record holds no frames; a ZeroMQ message has at least one".into(),
            });
        }
        if len > MAX_RECORD {
            return Err(DumpError::Corrupt {
                record,
                offset: start,
                what: format!(
                    "the record claims {len} bytes (more than the {MAX_RECORD}-byte limit); not a dump file or damaged"
                ),
            });
        }
        // Read in chunks that start small and double, so memory follows the
        // bytes actually in the file, not the length the record claims.
        let len = len as usize;
        self.record.clear();
        while self.record.len() < len {
            let at = self.record.len();
            let chunk = (len - at).min(at.max(READ_CHUNK));
            self.record.reserve_exact(chunk);
            self.record.resize(at + chunk, 0);
            let got = read_full(&mut self.input, &mut self.record[at..]).map_err(io_err)?;
            if got < chunk {
                return Err(DumpError::Truncated {
                    record,
                    offset: start,
                    what: format!(
                        "the record claims {len} bytes but the file ends after {}",
                        at + got
                    ),
                });
            }
        }
        zmsg_decode(&self.record, frames, record, start + 8)?;
        self.offset = start + 8 + len as u64;
        self.records += 1;
        Ok(true)
    }
}

impl<R: Read> Iterator for DumpReader<R> {
    type Item = Result<Frames, DumpError>;
    fn next(&mut self) -> Option<Self::Item> {
        let mut f = Frames::new();
        match self.read_into(&mut f) {
            Ok(true) => Some(Ok(f)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// A dump file opened by [`open_append`] to go on writing after the
/// records it holds.
#[derive(Debug)]
pub struct Appending {
    /// The file written to, positioned at its end.
    pub file: std::fs::File,
    /// Where it is: the path asked for, or `PATH.N` (see [`open_append`]).
    pub path: std::path::PathBuf,
    /// Whole records the file held already.
    pub records: u64,
    /// Bytes of a torn last record cut off (its writer died in the middle
    /// of writing it); 0 when the file ended with a whole record.
    pub cut: u64,
    /// Why `path` is not the path asked for: what was wrong with each file
    /// passed over.
    pub passed_over: Vec<String>,
}

/// How a dump file ends: after `records` whole records at byte `end`, and
/// whether more follows (a torn record, or damage).
enum Ending {
    Clean { records: u64, end: u64 },
    Torn { records: u64, end: u64 },
    Damaged(DumpError),
}

fn ending(file: &std::fs::File, visit: &mut dyn FnMut(&Frames)) -> io::Result<Ending> {
    let mut r = DumpReader::new(io::BufReader::new(file));
    let mut f = Frames::new();
    loop {
        match r.read_into(&mut f) {
            Ok(true) => visit(&f),
            Ok(false) => {
                return Ok(Ending::Clean {
                    records: r.records(),
                    end: r.offset(),
                })
            }
            Err(DumpError::Truncated { .. }) => {
                return Ok(Ending::Torn {
                    records: r.records(),
                    end: r.offset(),
                })
            }
            Err(DumpError::Io { source, .. }) => return Err(source),
            Err(e) => return Ok(Ending::Damaged(e)),
        }
    }
}

/// Open dump file `path` to write more records after those it holds,
/// creating it if there is none: what a writer that restarts (after a
/// crash, or told to go on) must do, so nothing written before is lost.
///
/// The file is read through first. A file that ends inside a record (its
/// writer died while writing it) has that torn last record cut off, and
/// only that; the records before stay. A file damaged before its end (a
/// record no writer of this format makes) is left untouched, and the
/// records go to the first of `PATH.1`, `PATH.2`, ... that is missing or
/// itself ends cleanly or torn; [`Appending::passed_over`] says why.
pub fn open_append(path: &std::path::Path) -> io::Result<Appending> {
    open_append_reading(path, &mut |_| {})
}

/// [`open_append`], showing each whole record read on the way to `visit`,
/// in order: a writer that drops what it already wrote learns it here.
pub fn open_append_reading(
    path: &std::path::Path,
    visit: &mut dyn FnMut(&Frames),
) -> io::Result<Appending> {
    use std::io::Seek;
    let mut passed_over = Vec::new();
    for n in 0u32.. {
        let p = if n == 0 {
            path.to_path_buf()
        } else {
            let mut s = path.as_os_str().to_owned();
            s.push(format!(".{n}"));
            std::path::PathBuf::from(s)
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&p)?;
        let (records, end, cut) = match ending(&file, visit)? {
            Ending::Clean { records, end } => (records, end, 0),
            Ending::Torn { records, end } => {
                let len = file.metadata()?.len();
                file.set_len(end)?;
                (records, end, len - end)
            }
            Ending::Damaged(e) => {
                passed_over.push(format!("{}: {e}", p.display()));
                continue;
            }
        };
        file.seek(io::SeekFrom::Start(end))?;
        return Ok(Appending {
            file,
            path: p,
            records,
            cut,
            passed_over,
        });
    }
    Err(io::Error::other(format!(
        "{}: every numbered file after it is damaged",
        path.display()
    )))
}

/// Like `read_exact` but reports how many bytes were read before end of file.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_file() -> (Vec<u8>, Vec<Frames>) {
        let msgs = vec![
            Frames::from_slices(&[&b"\0\0\0\0"[..], &b"\x08\x01\x10\x02\x18\x03\x20\x04"[..]]),
            Frames::from_slices(&[vec![9u8; 1000]]),
            Frames::from_slices(&[&b""[..]]),
        ];
        let mut w = DumpWriter::new(Vec::new());
        for m in &msgs {
            w.write(m.iter()).unwrap();
        }
        assert_eq!(w.records(), 3);
        (w.into_inner(), msgs)
    }

    #[test]
    fn round_trip() {
        let (file, msgs) = sample_file();
        assert_eq!(&file[..8], &14u64.to_le_bytes());
        let got: Vec<Frames> = DumpReader::new(&file[..]).map(|r| r.unwrap()).collect();
        assert_eq!(got, msgs);
    }

    #[test]
    fn truncation_at_every_length_names_offset_and_keeps_earlier_records() {
        let (file, msgs) = sample_file();
        let starts = [0u64, 22, 22 + 8 + 1005];
        for cut in 0..file.len() {
            let mut r = DumpReader::new(&file[..cut]);
            let mut good = Vec::new();
            let mut err = None;
            for item in &mut r {
                match item {
                    Ok(f) => good.push(f),
                    Err(e) => err = Some(e),
                }
            }
            // Every complete record before the cut was delivered.
            let complete = starts
                .iter()
                .zip(&msgs)
                .filter(|(&s, m)| {
                    let enc = {
                        let mut v = Vec::new();
                        zmsg_encode(m.iter(), &mut v);
                        v.len() as u64
                    };
                    s + 8 + enc <= cut as u64
                })
                .count();
            assert_eq!(good.len(), complete, "cut at {cut}");
            assert_eq!(&good[..], &msgs[..complete]);
            if starts.contains(&(cut as u64)) {
                assert!(err.is_none(), "clean end at a record boundary, cut {cut}");
            } else {
                let e = err.unwrap_or_else(|| panic!("cut {cut} must error"));
                assert!(matches!(e, DumpError::Truncated { .. }), "cut {cut}: {e}");
                assert_eq!(e.offset(), starts[complete], "cut {cut}: {e}");
                assert_eq!(e.record(), complete as u64, "cut {cut}: {e}");
                assert!(e.to_string().contains(&format!("record {complete} ")));
                assert!(e
                    .to_string()
                    .contains(&format!("byte {}", starts[complete])));
            }
        }
    }

    #[test]
    fn corrupt_frame_length_is_reported() {
        // A record of 3 bytes whose first frame claims 10.
        let mut file = Vec::new();
        file.extend(3u64.to_le_bytes());
        file.extend([10, 1, 2]);
        let e = DumpReader::new(&file[..]).next().unwrap().unwrap_err();
        assert!(matches!(e, DumpError::Corrupt { offset: 8, .. }), "{e}");
        // An absurd record length.
        let mut file = Vec::new();
        file.extend(u64::MAX.to_le_bytes());
        let e = DumpReader::new(&file[..]).next().unwrap().unwrap_err();
        assert!(matches!(e, DumpError::Corrupt { offset: 0, .. }), "{e}");
    }

    #[test]
    fn a_record_of_zero_frames_is_refused_naming_record_and_offset() {
        let mut file = Vec::new();
        let mut w = DumpWriter::new(&mut file);
        w.write([&b"a"[..]]).unwrap();
        let e = w.write(Vec::<&[u8]>::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("record 1"), "{e}");
        assert_eq!(w.records(), 1);
        assert_eq!(file.len(), 10, "nothing written for the refused message");
        // A file holding one anyway (written by hand): record 1 at byte 10.
        file.extend(0u64.to_le_bytes());
        file.extend(1u64.to_le_bytes());
        file.push(0);
        let mut r = DumpReader::new(&file[..]);
        let mut f = Frames::new();
        assert!(r.read_into(&mut f).unwrap());
        assert_eq!(f, Frames::from_slices(&[&b"a"[..]]));
        let e = r.read_into(&mut f).unwrap_err();
        assert!(matches!(e, DumpError::Corrupt { .. }), "{e}");
        assert_eq!((e.record(), e.offset()), (1, 10));
        let msg = e.to_string();
        assert!(
            msg.contains("record 1 at byte 10") && msg.contains("no frames"),
            "{msg}"
        );
        assert_eq!(r.records(), 1);
        assert!(!r.read_into(&mut f).unwrap(), "nothing after an error");
    }

    #[test]
    fn every_single_byte_corruption_is_an_error_or_a_record_never_a_panic() {
        let (file, msgs) = sample_file();
        for i in 0..file.len() {
            for b in [0u8, 1, 0x7f, 0xfe, 0xff] {
                let mut x = file.clone();
                x[i] = b;
                let mut n = 0u64;
                for item in DumpReader::new(&x[..]) {
                    match item {
                        Ok(_) => n += 1,
                        Err(e) => {
                            assert_eq!(e.record(), n, "byte {i} = {b}: {e}");
                            assert!(e.offset() < x.len() as u64 + 8);
                        }
                    }
                }
                assert!(n <= msgs.len() as u64 + 1);
            }
        }
    }

    /// A writer going on after a crash keeps every whole record, cuts only
    /// a torn last one, and never writes after damage.
    #[test]
    fn open_append_keeps_records_and_cuts_only_a_torn_tail() {
        use std::io::Write as _;
        struct Dir(std::path::PathBuf);
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        impl Dir {
            fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        let d = Dir(std::env::temp_dir().join(format!("ptmp-append-{}", std::process::id())));
        std::fs::create_dir_all(d.path()).unwrap();
        let p = d.path().join("o.dump");
        let read = |p: &std::path::Path| -> Vec<Vec<u8>> {
            DumpReader::new(std::fs::File::open(p).unwrap())
                .map(|f| f.unwrap().iter().next().unwrap().to_vec())
                .collect()
        };
        // A missing file is created.
        let a = open_append(&p).unwrap();
        assert_eq!((a.records, a.cut, a.path.clone()), (0, 0, p.clone()));
        let mut w = DumpWriter::new(a.file);
        w.write([b"one".as_slice()]).unwrap();
        w.write([b"two".as_slice()]).unwrap();
        drop(w);
        // A torn third record: its length and part of its bytes.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&100u64.to_le_bytes()).unwrap();
        f.write_all(b"\x05thr").unwrap();
        drop(f);
        let a = open_append(&p).unwrap();
        assert_eq!((a.records, a.cut), (2, 12));
        let mut w = DumpWriter::new(a.file);
        w.write([b"three".as_slice()]).unwrap();
        drop(w);
        assert_eq!(
            read(&p),
            vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
        // Damage before the end: the file is left alone, PATH.1 is used,
        // and the next time too.
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[0..8].copy_from_slice(&0u64.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let a = open_append(&p).unwrap();
        assert_eq!(a.path, d.path().join("o.dump.1"));
        assert!(
            a.passed_over[0].contains("corrupt in record 0"),
            "{:?}",
            a.passed_over
        );
        DumpWriter::new(a.file).write([b"four".as_slice()]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), bytes);
        let a = open_append(&p).unwrap();
        assert_eq!((a.path.clone(), a.records), (d.path().join("o.dump.1"), 1));
    }
}
