//! What an MCAP file's summary section tells of it, for `ptmp info`.

use crate::format::Detail;
use crate::{Error, Result};
use ::mcap::sans_io::summary_reader::{SummaryReadEvent, SummaryReader};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

/// The chunks by compression, their sizes, the message count the writer
/// recorded, and whether the file has a summary to seek by. A file
/// without one (its writer was killed) says so rather than failing.
pub(crate) fn layout(path: &Path) -> Result<Vec<Detail>> {
    let io = |source| Error::Io {
        path: path.into(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut reader = SummaryReader::new();
    let mut failed = None;
    while let Some(event) = reader.next_event() {
        match event {
            Ok(SummaryReadEvent::ReadRequest(need)) => {
                let n = file.read(reader.insert(need)).map_err(io)?;
                reader.notify_read(n);
            }
            Ok(SummaryReadEvent::SeekRequest(to)) => {
                reader.notify_seeked(file.seek(to).map_err(io)?);
            }
            Err(e) => {
                failed = Some(e.to_string());
                break;
            }
        }
    }
    let summary = match (failed, reader.finish()) {
        (None, Some(s)) => s,
        (why, _) => {
            let why = why.map_or(String::new(), |w| format!(" ({w})"));
            return Ok(vec![Detail::new(
                "summary",
                format!("none: the writer did not finish the file{why}; read from its start"),
            )]);
        }
    };
    let mut by_codec: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for c in &summary.chunk_indexes {
        let codec = if c.compression.is_empty() {
            "none"
        } else {
            c.compression.as_str()
        };
        let e = by_codec.entry(codec).or_default();
        e.0 += 1;
        e.1 += c.compressed_size;
        e.2 += c.uncompressed_size;
    }
    let mut out = vec![Detail::new(
        "summary",
        format!(
            "yes: {} chunk indexes, {} channels, {} schemas",
            summary.chunk_indexes.len(),
            summary.channels.len(),
            summary.schemas.len()
        ),
    )];
    for (codec, (n, packed, plain)) in by_codec {
        out.push(Detail::new(
            "compression",
            format!("{codec}: {n} chunks, {packed} of {plain} bytes"),
        ));
    }
    if let Some(s) = &summary.stats {
        out.push(Detail::new(
            "messages",
            format!("{} (the writer's statistics)", s.message_count),
        ));
    }
    Ok(out)
}
