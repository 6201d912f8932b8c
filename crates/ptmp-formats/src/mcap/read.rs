//! Reading an MCAP file of TPSets from its start, without its summary.

use super::{ENCODING, SCHEMA_NAME};
use crate::{Error, Format, Reader, Record, Result};
use ::mcap::io::MessageReader;
use ::mcap::sans_io::LinearReaderOptions;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Largest record (a chunk, compressed or not, included) accepted: a
/// bigger length is taken to mean the file is damaged or cut short (a
/// chunk its writer never closed claims the largest length there is).
const MAX_RECORD: usize = 1 << 30;

/// An MCAP file of TPSets read record by record, in file order.
pub struct FileReader {
    r: MessageReader<BufReader<File>>,
    path: PathBuf,
    records: u64,
    done: bool,
    /// The file ends with MCAP's magic bytes: its writer finished it.
    finished: bool,
}

impl FileReader {
    /// Open `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Self::from_file(f, path)
    }

    /// Read `file`, open at its start, as the MCAP file at `path`.
    pub fn from_file(mut file: File, path: &Path) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.into(),
            source,
        };
        let (starts, finished) = magic_at_ends(&mut file).map_err(io)?;
        if !starts {
            return Err(Error::Unreadable {
                path: path.into(),
                record: 0,
                what: "not an MCAP file: it does not start with MCAP's magic bytes (an empty file is what a recorder killed before its first flush leaves)".into(),
            });
        }
        let opts = LinearReaderOptions::default()
            .with_prevalidate_chunk_crcs(true)
            .with_record_length_limit(MAX_RECORD);
        Ok(FileReader {
            r: MessageReader::new_with_options(BufReader::new(file), opts),
            path: path.into(),
            records: 0,
            done: false,
            finished,
        })
    }

    fn unreadable(&mut self, what: String) -> Error {
        self.done = true;
        Error::Unreadable {
            path: self.path.clone(),
            record: self.records,
            what,
        }
    }

    /// Why the file cannot be read past the records returned.
    fn damaged(&mut self, e: ::mcap::McapError) -> Error {
        let n = self.records;
        let what = if self.finished {
            format!("MCAP file damaged after {n} records: {e}")
        } else {
            format!(
                "MCAP file cut short after {n} records: it has no summary or end (its writer did not finish it; killed, say), and what follows its last whole chunk cannot be read ({e})"
            )
        };
        self.unreadable(what)
    }
}

/// Whether `file` starts, and whether it ends, with MCAP's magic bytes;
/// leaves it at its start.
fn magic_at_ends(file: &mut File) -> std::io::Result<(bool, bool)> {
    let m = ::mcap::MAGIC;
    let mut buf = vec![0u8; m.len()];
    let len = file.seek(SeekFrom::End(0))?;
    let mut at = |pos: u64, buf: &mut [u8]| -> std::io::Result<bool> {
        if len < (pos + m.len() as u64) {
            return Ok(false);
        }
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(buf)?;
        Ok(buf == m)
    };
    let starts = at(0, &mut buf)?;
    let ends = len >= 2 * m.len() as u64 && at(len - m.len() as u64, &mut buf)?;
    file.seek(SeekFrom::Start(0))?;
    Ok((starts, ends))
}

impl Reader for FileReader {
    fn format(&self) -> Format {
        Format::Mcap
    }

    fn read_into(&mut self, rec: &mut Record) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let m = match self.r.next() {
            None => {
                self.done = true;
                return Ok(false);
            }
            Some(Err(e)) => return Err(self.damaged(e)),
            Some(Ok(m)) => m,
        };
        let c = &m.channel;
        let schema = c.schema.as_ref().map_or("", |s| s.name.as_str());
        if c.message_encoding != ENCODING || schema != SCHEMA_NAME {
            let what = format!(
                "record {} (topic {:?}) is a message of schema {schema:?}, encoding {:?}; ptmp reads {SCHEMA_NAME} messages, encoding {ENCODING}",
                self.records, c.topic, c.message_encoding
            );
            return Err(self.unreadable(what));
        }
        rec.channel.clear();
        rec.channel.push_str(&c.topic);
        rec.log_time_ns = Some(m.log_time);
        rec.frames.clear();
        rec.frames
            .reserve_exact(2, ptmp_data::VERSION_FRAME.len() + m.data.len());
        rec.frames.push(&ptmp_data::VERSION_FRAME);
        rec.frames.push(&m.data);
        self.records += 1;
        Ok(true)
    }

    fn records(&self) -> u64 {
        self.records
    }
}
