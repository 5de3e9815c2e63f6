//! The codecs a level file may use, by name, and the codec byte of the header that names them.
//! What each codec does is in `codecs/`, behind its one interface (`codecs/mod.rs`).

use std::fmt;

const CODEC_STORED: u8 = 0;
const CODEC_ZSTD: u8 = 1;
const CODEC_RANS: u8 = 2;
const CODEC_GRID: u8 = 3;
const CODEC_SEARCH: u8 = 4;

/// How the values of a level file are stored in its blocks (`FORMAT.md`). A directory may hold
/// levels of both codecs; readers handle each level by its own header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Each block of 8192 values is one zstd frame: small files (about 38% of a byte per
    /// position), but a probe decompresses a block, so a search first loads the level into
    /// memory ([`Database::load_into_memory`](super::Database::load_into_memory)).
    Zstd,
    /// Each block of 512 values is stored as is, one byte per position: files as large as
    /// the values, probed straight from the memory map (each block checked on its first probe)
    /// with nothing to load or decompress.
    Stored,
    /// Each block of 4096 values is coded with an order-1 model of the level (each value by
    /// the frequencies of the values that follow the one before it) and rANS: smaller than
    /// zstd (about 37% of a byte per position for the 24-seed database of 6 houses) and
    /// faster to write; a probe decodes half a block on average; a search first loads the
    /// level into memory, like zstd.
    Rans,
    /// The values laid out on the grid of (mover's side, opponent's side), each coded by
    /// rANS with the frequencies met after the same neighbours' values there (left, up,
    /// up-left, two to the left, and the board with one seed moved on the opponent's side),
    /// blocks of 65536 values cut into sub-blocks of 1024 coded on their own: the
    /// smallest files (29.0% of a byte per position for the 24-seed database of 6 houses, no
    /// level above 30%); a probe decodes half a sub-block on average. Levels above 30 seeds
    /// are written as `rans`.
    #[default]
    Grid,
    /// Four bits per position around a base per block of 4096, with the rare values outside
    /// a block's window of 15 in an exception table: probed straight from the memory map
    /// like `stored` (two cache lines a probe, each block checked on its first probe), in
    /// about half of its bytes. The form for searches over the largest databases.
    Search,
}

impl Codec {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Stored => "stored",
            Codec::Rans => "rans",
            Codec::Grid => "grid",
            Codec::Search => "search",
        }
    }

    /// The codec byte of the file header.
    pub(crate) fn code(self) -> u8 {
        match self {
            Codec::Stored => CODEC_STORED,
            Codec::Zstd => CODEC_ZSTD,
            Codec::Rans => CODEC_RANS,
            Codec::Grid => CODEC_GRID,
            Codec::Search => CODEC_SEARCH,
        }
    }

    /// The codec of a header's codec byte, if known.
    pub(crate) fn from_code(code: u8) -> Option<Codec> {
        match code {
            CODEC_STORED => Some(Codec::Stored),
            CODEC_ZSTD => Some(Codec::Zstd),
            CODEC_RANS => Some(Codec::Rans),
            CODEC_GRID => Some(Codec::Grid),
            CODEC_SEARCH => Some(Codec::Search),
            _ => None,
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Codec {
    type Err = String;
    /// `grid`, `rans`, `zstd`, `stored` or `search` (any case).
    fn from_str(s: &str) -> Result<Codec, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zstd" => Ok(Codec::Zstd),
            "stored" => Ok(Codec::Stored),
            "rans" => Ok(Codec::Rans),
            "grid" => Ok(Codec::Grid),
            "search" => Ok(Codec::Search),
            _ => Err(format!(
                "unknown codec {s:?}; expected one of: grid, rans, zstd, stored, search"
            )),
        }
    }
}
