//! One level built in slices, apart (on several machines), then joined.
//!
//! The boards of level `s` whose mover's side holds `t` or `s - t` seeds (a *pair* `t`, for
//! `t = 0..=s/2`) have their same-level children among themselves (`sweep.rs`): given the lower
//! levels, each pair is solved on its own. Slice `i` of `k` is a set of pairs, the pairs dealt
//! largest first to the slice with the fewest boards so far (the same on every machine).
//! `kalah db build --upto N --slice I/K` computes slice `I` of level `N` (the lower levels
//! present or built first) and writes `level-NNN.slice-I-of-K.kslc`; `kalah db join --level N
//! --slices K` checks the `K` slice files, joins them into the level's values and writes the
//! level file in any codec (byte for byte the file a whole build writes).
//!
//! A slice file (little-endian; `FORMAT.md`):
//!
//! ```text
//! offset size
//!      0    8  magic "KALAHSLC"
//!      8    4  version 1
//!     12    4  houses, capture, leftover, end (one byte each, as in a level file)
//!     16    4  level s
//!     20    4  slice i (0-based)
//!     24    4  slices k
//!     28    4  reserved, zero
//!     32    8  the slice's pairs: bit t set for pair t
//!     40    8  values n
//!     48    8  xxh3-64 of the values
//!     56    8  xxh3-64 of bytes 0..56
//!     64    n  the values (i8) of the slice's boards, in index order
//! ```

use super::format;
use super::rank::Ranker;
use super::{Codec, DbError, Progress};
use crate::rules::Rules;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

const MAGIC: &[u8; 8] = b"KALAHSLC";
const VERSION: u32 = 1;
const HEADER: usize = 64;

/// The file of slice `i` (0-based) of `k` of level `level`.
pub fn slice_path(dir: &Path, level: u32, i: u32, k: u32) -> PathBuf {
    dir.join(format!("level-{level:03}.slice-{}-of-{k}.kslc", i + 1))
}

/// The pairs of each of `k` slices of level `s` (largest pair first to the slice with the
/// fewest boards; ties to the lowest slice).
pub(crate) fn slice_pairs(ranker: &Ranker, s: u32, k: u32) -> Vec<Vec<u32>> {
    let m = ranker.houses();
    let size = |t: u32| {
        let one = ranker.count(m, t) * ranker.count(m, s - t);
        if 2 * t == s {
            one
        } else {
            2 * one
        }
    };
    let mut pairs: Vec<u32> = (0..=s / 2).collect();
    pairs.sort_by_key(|&t| (std::cmp::Reverse(size(t)), t));
    let mut slices = vec![(0u64, Vec::new()); k as usize];
    for t in pairs {
        let (load, set) = slices
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("at least one slice");
        *load += size(t);
        set.push(t);
    }
    slices
        .into_iter()
        .map(|(_, mut set)| {
            set.sort_unstable();
            set
        })
        .collect()
}

/// The rows of level `s` in index order: for each mover's side (`m` houses, lexicographic,
/// house 1 most significant), its seeds and the number of boards in its row.
fn for_each_row(ranker: &Ranker, s: u32, mut f: impl FnMut(u32, usize)) {
    fn go(
        ranker: &Ranker,
        m: usize,
        house: usize,
        left: u32,
        used: u32,
        f: &mut dyn FnMut(u32, usize),
    ) {
        if house == m {
            f(used, ranker.count(m, left) as usize);
            return;
        }
        for c in 0..=left {
            go(ranker, m, house + 1, left - c, used + c, f);
        }
    }
    go(ranker, ranker.houses(), 0, s, 0, &mut f);
}

/// Whether pair bit set `pairs` holds the pair of a row whose mover's side has `t` seeds.
fn owns(pairs: u64, s: u32, t: u32) -> bool {
    pairs & (1 << t.min(s - t)) != 0
}

fn bits(pairs: &[u32]) -> u64 {
    pairs.iter().fold(0, |b, &t| b | 1 << t)
}

/// Writes slice `i` of `k` of level `s` from the level's values in index order (only the
/// slice's boards are read). Returns its boards and bytes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_slice(
    dir: &Path,
    rules: &Rules,
    ranker: &Ranker,
    s: u32,
    i: u32,
    k: u32,
    pairs: &[u32],
    values: &[i8],
) -> Result<(u64, u64), DbError> {
    let path = slice_path(dir, s, i, k);
    let tmp = path.with_extension("kslc.tmp");
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| DbError::Io { path: p, source }
    };
    let set = bits(pairs);
    // The values, row by row, into the file after a header written last.
    let f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 22, f);
    w.write_all(&[0u8; HEADER]).map_err(io(&tmp))?;
    let mut hash = Xxh3::new();
    let (mut at, mut n) = (0usize, 0u64);
    let mut err = None;
    for_each_row(ranker, s, |t, len| {
        if owns(set, s, t) && err.is_none() {
            let row = format::to_bytes(&values[at..at + len]);
            hash.update(&row);
            n += len as u64;
            err = w.write_all(&row).err();
        }
        at += len;
    });
    if let Some(e) = err {
        return Err(io(&tmp)(e));
    }
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&[
        rules.houses as u8,
        rules.capture.code(),
        rules.leftover.code(),
        rules.end.code(),
    ]);
    h[16..20].copy_from_slice(&s.to_le_bytes());
    h[20..24].copy_from_slice(&i.to_le_bytes());
    h[24..28].copy_from_slice(&k.to_le_bytes());
    h[32..40].copy_from_slice(&set.to_le_bytes());
    h[40..48].copy_from_slice(&n.to_le_bytes());
    h[48..56].copy_from_slice(&hash.digest().to_le_bytes());
    let sum = xxh3_64(&h[..56]);
    h[56..64].copy_from_slice(&sum.to_le_bytes());
    super::writer::finish_with_head(w, &h, &tmp, &path)?;
    Ok((n, HEADER as u64 + n))
}

/// What [`join_slices`] did.
#[derive(Clone, Debug)]
pub struct JoinReport {
    /// The slice files read.
    pub slices: Vec<PathBuf>,
    /// The level file written.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: u64,
}

/// Builds slice `i` (0-based) of `k` of level `level` in `dir` (`slice = (i, k)`): the lower levels are built
/// first where missing (as [`super::build`] does, new ones in `codec`), then the slice's boards
/// are solved and written to [`slice_path`]. Level `level` itself must not be there yet.
pub fn build_slice(
    dir: &Path,
    rules: &Rules,
    level: u32,
    slice: (u32, u32),
    codec: Codec,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<super::BuildReport, DbError> {
    let (i, k) = slice;
    let path = format::level_path(dir, level);
    if k == 0 || i >= k || k > level / 2 + 1 {
        return Err(DbError::Unsupported {
            path,
            what: format!(
                "slice {} of {k}: level {level} has {} pairs of mover's seeds to share out",
                i + 1,
                level / 2 + 1
            ),
        });
    }
    if path.exists() {
        return Err(DbError::Unsupported {
            path,
            what: "the level is already built: there is nothing to slice".into(),
        });
    }
    super::build_db::build_levels(
        dir,
        rules,
        level,
        codec,
        Some((i, k)),
        super::lower::MemoryBudget::default(),
        progress,
        cancel,
    )
}

/// Joins the `k` slice files of level `level` in `dir` into the level's file, written in
/// `codec`: every slice file is checked (header, rules, checksum of its values, the slices'
/// pairs exactly the whole level), and every value must lie in the level's range.
pub fn join_slices(
    dir: &Path,
    rules: &Rules,
    level: u32,
    k: u32,
    codec: Codec,
) -> Result<JoinReport, DbError> {
    let rules = rules.play_rules();
    super::build_db::check_request(dir, &rules, level)?;
    let ranker = Ranker::new(rules.houses);
    let n = ranker.level_size(level) as usize;
    let mut values = super::values::Values::zeroed(n).map_err(|source| DbError::Io {
        path: format::level_path(dir, level),
        source,
    })?;
    let mut covered = 0u64;
    let mut paths = Vec::new();
    for i in 0..k {
        let path = slice_path(dir, level, i, k);
        let corrupt = |what: String| DbError::Corrupt {
            path: path.clone(),
            what,
        };
        let bytes = std::fs::read(&path).map_err(|source| DbError::Io {
            path: path.clone(),
            source,
        })?;
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(corrupt("not a slice file".into()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        if u64_at(56) != xxh3_64(&bytes[..56]) {
            return Err(corrupt("header checksum mismatch".into()));
        }
        if u32_at(8) != VERSION {
            return Err(corrupt(format!("slice format version {}", u32_at(8))));
        }
        let want = [
            rules.houses as u8,
            rules.capture.code(),
            rules.leftover.code(),
            rules.end.code(),
        ];
        if bytes[12..16] != want || u32_at(16) != level || u32_at(20) != i || u32_at(24) != k {
            return Err(corrupt(format!(
                "a slice of other rules or another level or split (level {}, slice {} of {})",
                u32_at(16),
                u32_at(20) + 1,
                u32_at(24)
            )));
        }
        let set = u64_at(32);
        if set & covered != 0 || (level / 2 + 1 < 64 && set >> (level / 2 + 1) != 0) {
            return Err(corrupt(format!(
                "pairs {set:#x} overlap or lie outside the level"
            )));
        }
        covered |= set;
        let data = &bytes[HEADER..];
        if data.len() as u64 != u64_at(40) {
            return Err(corrupt(format!(
                "{} values, header says {}",
                data.len(),
                u64_at(40)
            )));
        }
        if xxh3_64(data) != u64_at(48) {
            return Err(corrupt("values checksum mismatch".into()));
        }
        // The slice's boards, row by row.
        let (mut at, mut from) = (0usize, 0usize);
        let mut short = false;
        for_each_row(&ranker, level, |t, len| {
            if owns(set, level, t) {
                if from + len <= data.len() {
                    for (d, &b) in values[at..at + len].iter_mut().zip(&data[from..from + len]) {
                        *d = b as i8;
                    }
                } else {
                    short = true;
                }
                from += len;
            }
            at += len;
        });
        if short || from != data.len() {
            return Err(corrupt(format!(
                "{} values for pairs {set:#x}, which hold {from}",
                data.len()
            )));
        }
        paths.push(path);
    }
    let all = if level / 2 + 1 >= 64 {
        u64::MAX
    } else {
        (1u64 << (level / 2 + 1)) - 1
    };
    if covered != all {
        return Err(DbError::Unsupported {
            path: format::level_path(dir, level),
            what: format!("the {k} slices hold pairs {covered:#x}, not all of {all:#x}"),
        });
    }
    let lim = level.min(127) as i8;
    if let Some(v) = values.iter().find(|v| !(-lim..=lim).contains(v)) {
        return Err(DbError::Corrupt {
            path: paths[0].clone(),
            what: format!("value {v} outside [-{lim}, {lim}]"),
        });
    }
    let bytes = if codec == Codec::Search {
        super::writer::write_level_streamed(dir, &rules, level, &values, codec)?
    } else {
        super::writer::write_level(dir, &rules, level, &values, codec)?
    };
    Ok(JoinReport {
        slices: paths,
        path: format::level_path(dir, level),
        bytes,
    })
}
