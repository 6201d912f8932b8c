//! What a Parquet file's footer tells of it, for `ptmp info`.

use crate::format::Detail;
use crate::{Error, Result};
use ::parquet::file::metadata::ParquetMetaDataReader;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;

/// Rows, row groups, the codecs of the column chunks, their sizes and the
/// program that wrote the file.
pub(crate) fn layout(path: &Path) -> Result<Vec<Detail>> {
    let file = File::open(path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })?;
    let meta = match ParquetMetaDataReader::new().parse_and_finish(&file) {
        Ok(m) => m,
        Err(e) => {
            return Ok(vec![Detail::new(
                "footer",
                format!("unreadable: {e} (a writer killed before it finished leaves none)"),
            )])
        }
    };
    let groups = meta.row_groups();
    let codecs: BTreeSet<String> = groups
        .iter()
        .flat_map(|g| g.columns().iter().map(|c| c.compression().to_string()))
        .collect();
    let packed: i64 = groups.iter().map(|g| g.compressed_size()).sum();
    let plain: i64 = groups.iter().map(|g| g.total_byte_size()).sum();
    let fm = meta.file_metadata();
    let mut out = vec![
        Detail::new("rows", fm.num_rows()),
        Detail::new("row groups", groups.len()),
        Detail::new(
            "compression",
            format!(
                "{}: {packed} of {plain} bytes",
                codecs.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ),
    ];
    if let Some(by) = fm.created_by() {
        out.push(Detail::new("written by", by));
    }
    Ok(out)
}
