//! The `stored` codec: one byte per position, blocks back to back, probed in place from the
//! memory map (each block checked against its table entry on first use).

use crate::db::codec::Codec;
use crate::db::error::DbError;
use crate::db::format::{check_sum, check_values, table_entry, to_bytes, Header};
use std::path::Path;

/// Positions per stored block: a probe reads one byte, so blocks only bound the work of
/// checking a block on its first probe and the size of the table.
pub(crate) const BLOCK: u32 = 1 << 9;

/// One block of values as stored: one byte each.
pub(crate) fn encode_block(values: &[i8]) -> Vec<u8> {
    to_bytes(values)
}

/// Stored levels: block `i`'s checksum, read straight from its table entry, whose end offset
/// must be the one the layout implies (blocks of one byte per position, back to back). A probe
/// checks its block with this, without reading (or checksumming) the whole table: a damaged
/// entry still fails, as a wrong offset here or as a checksum that does not match the block.
pub(crate) fn entry_sum(
    path: &Path,
    header: &Header,
    bytes: &[u8],
    i: u64,
) -> Result<u64, DbError> {
    debug_assert_eq!(header.codec(), Codec::Stored);
    let (end, sum) = table_entry(header, bytes, i);
    let expected = header.data_offset + i * header.block_size as u64 + header.block_len(i) as u64;
    if end != expected {
        return Err(DbError::Corrupt {
            path: path.to_path_buf(),
            what: format!("stored block {i} ends at offset {end}, expected {expected}"),
        });
    }
    Ok(sum)
}

/// Checks stored block `i` in place against checksum `sum` (from its table entry): the
/// checksum and every value; returns its bytes (one value per position).
pub(crate) fn check_block<'a>(
    path: &Path,
    header: &Header,
    bytes: &'a [u8],
    i: u64,
    sum: u64,
) -> Result<&'a [u8], DbError> {
    debug_assert_eq!(header.codec(), Codec::Stored);
    // The header was checked to hold exactly one byte per position after the table.
    let start = (header.data_offset + i * header.block_size as u64) as usize;
    let data = check_sum(path, i, &bytes[start..start + header.block_len(i)], sum)?;
    check_values(path, header, i, data, |b| b as i8)?;
    Ok(data)
}
