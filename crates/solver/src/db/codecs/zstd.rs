//! The `zstd` codec: blocks of values compressed with zstd (one context per thread).

use crate::db::format::to_bytes;

/// Positions per zstd block: small enough that one probe decompresses little.
pub(crate) const BLOCK: u32 = 1 << 13;
/// The fixed zstd level: a rebuild gives byte-identical files.
pub(crate) const LEVEL: i32 = 5;

/// Compresses one block of values.
pub(crate) fn compress_block(values: &[i8]) -> std::io::Result<Vec<u8>> {
    // One compression context per thread: creating one per block cost more than compressing.
    thread_local! {
        static CCTX: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    CCTX.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = Some(zstd::bulk::Compressor::new(LEVEL)?);
        }
        c.as_mut().expect("just set").compress(&to_bytes(values))
    })
}

/// Decompresses one block into `out` (its expected length); returns the bytes written.
pub(crate) fn decompress_block(data: &[u8], out: &mut [u8]) -> std::io::Result<usize> {
    // One decompression context per thread: creating one costs more than a small block.
    thread_local! {
        static DCTX: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    DCTX.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(zstd::bulk::Decompressor::new()?);
        }
        d.as_mut()
            .expect("just set")
            .decompress_to_buffer(data, out)
    })
}
