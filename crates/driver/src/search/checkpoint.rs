//! Checkpoint files: what a long search has proven, so that a later run continues from it.
//!
//! A checkpoint names the problem (rules, board, whether every root move is wanted, the goal),
//! the root moves already settled, and table entries (proven bounds, keyed on the 64-bit board
//! hash the table uses). Every saved bound is a proven fact, so any subset of the table is a
//! valid checkpoint.
//!
//! Format, little-endian: magic `KALAHCKP`, version `u32`, rules (houses `u8`, seeds `u32`,
//! capture, leftover, end codes `u8` each), houses of the board `u8` and its 16 raw cells,
//! all-moves `u8`, goal tag `u8` (0 exact, 1 sign) and its `i32`, settled moves (`u32` count,
//! then house `u8` and value `i32` each), entries (`u64` count, then key `u64` and data `u64`
//! each), and last the xxh3-64 of everything before it. Written to a temporary name beside
//! `FILE`, synced, and renamed.

use super::tt::Entry;
use super::Goal;
use kalah_solver::{Board, Capture, EndRule, Leftover, Rules, MAX_HOUSES};
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"KALAHCKP";
const VERSION: u32 = 1;

/// The content of a checkpoint file.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// The rules (starting seeds zero).
    pub rules: Rules,
    /// The board being solved.
    pub board: Board,
    /// Whether every root move's value is wanted.
    pub all_moves: bool,
    /// What is proven.
    pub goal: Goal,
    /// Root moves settled: (0-based house, value, clamped as the goal says).
    pub moves: Vec<(usize, i32)>,
    /// Table entries: (key, proven bounds).
    pub entries: Vec<(u64, Entry)>,
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.at + n > self.bytes.len() {
            return Err("file is truncated".into());
        }
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(self.u32()? as i32)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
}

impl Checkpoint {
    /// An empty checkpoint for a problem.
    pub fn new(rules: Rules, board: Board, all_moves: bool, goal: Goal) -> Checkpoint {
        Checkpoint {
            rules: rules.play_rules(),
            board,
            all_moves,
            goal,
            moves: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// The bytes of the file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + 16 * self.entries.len());
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, VERSION);
        out.push(self.rules.houses as u8);
        put_u32(&mut out, self.rules.seeds);
        out.push(self.rules.capture.code());
        out.push(self.rules.leftover.code());
        out.push(self.rules.end.code());
        out.push(self.board.houses() as u8);
        out.extend_from_slice(self.board.raw());
        out.push(self.all_moves as u8);
        match self.goal {
            Goal::Exact => {
                out.push(0);
                put_u32(&mut out, 0);
            }
            Goal::Sign { around } => {
                out.push(1);
                put_u32(&mut out, around as u32);
            }
        }
        put_u32(&mut out, self.moves.len() as u32);
        for &(h, v) in &self.moves {
            out.push(h as u8);
            put_u32(&mut out, v as u32);
        }
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for &(k, e) in &self.entries {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&e.to_word().to_le_bytes());
        }
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads the bytes of a file.
    pub fn from_bytes(bytes: &[u8]) -> Result<Checkpoint, String> {
        if bytes.len() < MAGIC.len() + 12 || &bytes[..8] != MAGIC {
            return Err("not a kalah checkpoint file".into());
        }
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        if xxh3_64(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
            return Err("checksum mismatch: the file is damaged".into());
        }
        let mut r = Reader { bytes: body, at: 8 };
        let version = r.u32()?;
        if version != VERSION {
            return Err(format!(
                "version {version}; this program reads version {VERSION}"
            ));
        }
        let houses = r.u8()? as usize;
        let seeds = r.u32()?;
        let bad = |what: &str| format!("bad {what} code");
        let capture = Capture::from_code(r.u8()?).ok_or_else(|| bad("capture"))?;
        let leftover = Leftover::from_code(r.u8()?).ok_or_else(|| bad("leftover"))?;
        let end = EndRule::from_code(r.u8()?).ok_or_else(|| bad("end"))?;
        let m = r.u8()? as usize;
        if m == 0 || m > MAX_HOUSES || m != houses {
            return Err(format!("bad board size {m}"));
        }
        let raw = r.take(2 * MAX_HOUSES)?;
        let total: u32 = raw.iter().map(|&x| x as u32).sum();
        if total > 255 || raw[2 * m..].iter().any(|&x| x != 0) {
            return Err("bad board".into());
        }
        let board = Board::new(&raw[..m], &raw[m..2 * m]);
        let all_moves = r.u8()? != 0;
        let goal = match (r.u8()?, r.i32()?) {
            (0, _) => Goal::Exact,
            (1, around) => Goal::Sign { around },
            (t, _) => return Err(format!("bad goal tag {t}")),
        };
        let n = r.u32()? as usize;
        let mut moves = Vec::new();
        for _ in 0..n {
            let h = r.u8()? as usize;
            moves.push((h, r.i32()?));
        }
        let n = r.u64()? as usize;
        if n.checked_mul(16) != Some(body.len() - r.at) {
            return Err("entry count does not match the file size".into());
        }
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let k = r.u64()?;
            entries.push((k, Entry::from_word(r.u64()?)));
        }
        Ok(Checkpoint {
            rules: Rules {
                houses,
                seeds,
                capture,
                leftover,
                end,
            },
            board,
            all_moves,
            goal,
            moves,
            entries,
        })
    }

    /// Writes the file atomically (a temporary name, then a rename).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        crate::write_renamed::write_renamed(path, &self.to_bytes())
    }

    /// Reads a file.
    pub fn load(path: &Path) -> Result<Checkpoint, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Checkpoint::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// An error unless this checkpoint was written for the same problem as `other`.
    pub fn check_matches(&self, other: &Checkpoint) -> Result<(), String> {
        if self.rules != other.rules
            || self.board != other.board
            || self.all_moves != other.all_moves
            || self.goal != other.goal
        {
            return Err(format!(
                "the checkpoint is for {} board {} (all moves: {}, goal {:?}), not {} board {} \
                 (all moves: {}, goal {:?})",
                self.rules,
                self.board,
                self.all_moves,
                self.goal,
                other.rules,
                other.board,
                other.all_moves,
                other.goal
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let rules = Rules::standard(6, 4);
        let mut ck = Checkpoint::new(rules, Board::start(&rules), true, Goal::Sign { around: -2 });
        ck.moves = vec![(0, 3), (5, -7)];
        ck.entries = vec![(12345, Entry::proven(-3, 9, 2, 17))];
        let bytes = ck.to_bytes();
        assert_eq!(Checkpoint::from_bytes(&bytes).unwrap(), ck);
        let mut bad = bytes.clone();
        bad[40] ^= 1;
        assert!(Checkpoint::from_bytes(&bad).is_err());
        assert!(Checkpoint::from_bytes(&bytes[..bytes.len() - 3]).is_err());
    }
}
