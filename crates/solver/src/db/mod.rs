//! Endgame databases by seed count.
//!
//! A database is a directory holding one file per level (`level-NNN.kdb`, the boards with `NNN`
//! seeds in the houses) for one set of play rules (houses, capture, leftover, end; the starting
//! seeds play no part). Level `s` is computed from the levels below it by [`build`]; a
//! [`Database`] opens the contiguous levels `0..=L` present and answers [`Endgame::probe`](crate::Endgame::probe) by
//! decoding (part of) one block (a [`Codec::Grid`], [`Codec::Rans`] or [`Codec::Zstd`] level)
//! or reading one byte of the memory map (a [`Codec::Stored`] level); [`convert`](fn@convert) rewrites a
//! database in another codec. The file layout is described in `FORMAT.md`.
//!
//! ```
//! use kalah_solver::db::{self, Codec, Database};
//! use kalah_solver::{Board, Endgame, Rules};
//! use std::sync::atomic::AtomicBool;
//!
//! let rules = Rules::standard(3, 4);
//! let dir = tempfile::tempdir().unwrap();
//! // Levels 0..=6; the progress callback may come from any thread.
//! let no = AtomicBool::new(false);
//! db::build(dir.path(), &rules, 6, Codec::Grid, &|_progress| {}, &no).unwrap();
//! let db = Database::open(dir.path(), &rules).unwrap();
//! assert_eq!(db.max_seeds(), 6);
//! // Mover 1 0 1 / opponent 0 2 0: sowing house 3 ends in the store, then house 1 captures.
//! let board = Board::new(&[1, 0, 1], &[0, 2, 0]);
//! assert_eq!(db.probe(&board).unwrap(), Some(4));
//! assert_eq!(db.probe(&Board::new(&[4, 4, 4], &[4, 4, 4])).unwrap(), None);
//! assert!(db::verify(dir.path(), &rules, true, &|_| {}, &no).unwrap().ok());
//! // The same values stored uncompressed, probed straight from the file.
//! let raw = tempfile::tempdir().unwrap();
//! db::convert(dir.path(), raw.path(), &rules, Codec::Stored, &|_| {}, &no).unwrap();
//! let stored = Database::open(raw.path(), &rules).unwrap();
//! assert_eq!(stored.probe(&board).unwrap(), Some(4));
//! ```
//!
//! The pipeline, one file per job:
//! - `rank`: the dense numbering of the boards of a level ([`level_size`]); `sow`: moves on
//!   packed boards;
//! - `sweep`: the retrograde computation of a level, in phases of equal potential;
//!   `recheck`: the recomputation of a level from its children (`verify --full`);
//! - `values`: a level's values in memory (huge pages); `lower`: the lower levels a level is
//!   computed from, one byte or half a byte per position;
//! - `codec`: the codecs' names ([`Codec`]) and header bytes; `codecs/`: the codecs, `grid/`,
//!   `rans`, `zstd`, `stored` and `search` (with `rans_coder`, the rANS primitives of `grid`
//!   and `rans`), behind one interface, `codecs/mod.rs`: each codec's header rules, encoding a
//!   level's blocks, decoding a block, probing a value;
//! - `format`: the on-disk layout of a level file (private but for [`level_path`]); `writer`:
//!   writing a level file; `reader`: the memory-mapped, checked reader;
//! - `build_db`: [`build`]; `slice`: a level built in slices apart and joined
//!   ([`build_slice`], [`join_slices`]); `convert`: [`convert`](fn@convert); `verify`:
//!   [`verify`](fn@verify); `database`: [`Database`], the open database and its probes;
//! - `progress`: the progress reports of the long operations; `error`: [`DbError`];
//!   `dir_lock`: the lock that keeps two builds out of one directory.
//! - `bench` (feature `bench-internals`, hidden): the internals `tools/codec-bench` measures.

#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench;
mod build_db;
mod codec;
mod codecs;
mod convert;
mod database;
mod dir_lock;
mod error;
mod format;
mod lower;
mod page_cache;
mod progress;
mod rank;
mod reader;
mod recheck;
mod slice;
mod sow;
mod sweep;
mod values;
mod verify;
mod writer;

pub use build_db::{build, build_with, BuildReport};
pub use codec::Codec;
pub use convert::{convert, ConvertReport};
pub use database::{Database, DatabaseInfo, LevelInfo, LevelSummary};
pub use dir_lock::{try_lock, LOCK_FILE};
pub use error::DbError;
pub use format::level_path;
pub use lower::MemoryBudget;
pub use page_cache::PageCacheFill;
pub use progress::{Phase, Progress};
pub use rank::{level_size, MAX_DB_LEVEL};
pub use slice::{build_slice, join_slices, slice_path, JoinReport};
pub use verify::{compare, verify, verify_with, LevelCheck, LevelComparison, VerifyReport};

#[cfg(test)]
mod tests;
