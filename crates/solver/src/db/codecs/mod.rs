//! The codecs of level files, one file each: `grid` (two-dimensional contexts and rANS, the
//! default), `rans` (order-1 contexts and rANS), `zstd` (blocks compressed with zstd),
//! `stored` (one byte per position, probed in place) and `search` (four bits per position,
//! probed in place); `rans_coder`: the rANS primitives `grid` and `rans` share. The file layout
//! they share is in `super::format`.

pub(crate) mod grid;
pub(crate) mod rans;
mod rans_coder;
pub(crate) mod search;
pub(crate) mod stored;
pub(crate) mod zstd;
