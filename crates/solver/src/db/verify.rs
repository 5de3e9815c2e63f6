//! Checking a database: every checksum, and with `full` every value recomputed.

use super::build_db::check_request;
use super::codec::Codec;
use super::error::DbError;
use super::format;
use super::lower::{Lower, Packed};
use super::progress::{Phase, PhaseReport, Progress};
use super::rank::{Ranker, MAX_DB_LEVEL};
use super::reader::LevelFile;
use super::recheck;
use super::values::Values;
use crate::board::Board;
use crate::rules::Rules;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The findings of [`verify`] for one level file.
#[derive(Clone, Debug)]
pub struct LevelCheck {
    /// The level.
    pub level: u32,
    /// The file.
    pub path: PathBuf,
    /// Positions in the level.
    pub positions: u64,
    /// Whether every value was recomputed from its children.
    pub recomputed: bool,
    /// What is wrong, if anything (checksums, header, or values that disagree).
    pub problems: Vec<String>,
}

/// The findings of [`verify`].
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// One entry per level file found, in level order.
    pub levels: Vec<LevelCheck>,
    /// Problems not tied to a level file (gaps, stray temporary files are not problems).
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.levels.iter().all(|l| l.problems.is_empty())
    }
}

/// The levels with a file in `dir`, sorted.
pub(crate) fn levels_in(dir: &Path) -> Result<Vec<u32>, DbError> {
    let rd = std::fs::read_dir(dir).map_err(|source| DbError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|source| DbError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(num) = name
            .strip_prefix("level-")
            .and_then(|r| r.strip_suffix(".kdb"))
        {
            if let Ok(l) = num.parse::<u32>() {
                if format::level_file_name(l) == name {
                    out.push(l);
                }
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Checks every level file in `dir` for `rules`: header, block table and every block's
/// checksum and contents. With `full`, also recomputes every value from its children (which
/// needs the levels below it in memory) and reports any disagreement. Problems are collected in
/// the report, each naming its file; an error is returned only when the directory cannot be
/// read or the work is cancelled.
pub fn verify(
    dir: &Path,
    rules: &Rules,
    full: bool,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<VerifyReport, DbError> {
    verify_with(
        dir,
        rules,
        full,
        super::lower::MemoryBudget::default(),
        progress,
        cancel,
    )
}

/// [`verify`] within a memory budget for the lower levels' values when `full` (beyond it they
/// are held in half a byte each).
pub fn verify_with(
    dir: &Path,
    rules: &Rules,
    full: bool,
    memory: super::lower::MemoryBudget,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<VerifyReport, DbError> {
    let rules = rules.play_rules();
    check_request(dir, &rules, 0)?;
    let ranker = Ranker::new(rules.houses);
    let mut report = VerifyReport::default();
    let found = levels_in(dir)?;
    if found.is_empty() {
        report.problems.push(format!(
            "{}: no level files in the directory",
            dir.display()
        ));
        return Ok(report);
    }
    for (i, &l) in found.iter().enumerate() {
        if i as u32 != l {
            report.problems.push(format!(
                "{}: level {i} is missing",
                format::level_path(dir, i as u32).display()
            ));
            break;
        }
    }
    // Values of the contiguous valid levels below, for recomputation.
    let mut lower: Vec<Lower> = Vec::new();
    let mut contiguous = true;
    // Lower levels are held packed (half a byte per position) when one byte each would not fit.
    let pack = full
        && super::lower::should_pack(
            found
                .iter()
                .map(|&l| ranker.level_size(l.min(MAX_DB_LEVEL))),
            memory.0,
        );
    for &l in &found {
        let path = format::level_path(dir, l);
        if cancel.load(Relaxed) {
            return Err(DbError::Interrupted { path });
        }
        if l > MAX_DB_LEVEL {
            report.levels.push(LevelCheck {
                level: l,
                path: path.clone(),
                positions: 0,
                recomputed: false,
                problems: vec![format!("{}: level above {MAX_DB_LEVEL}", path.display())],
            });
            continue;
        }
        let n = ranker.level_size(l);
        let mut check = LevelCheck {
            level: l,
            path: path.clone(),
            positions: n,
            recomputed: false,
            problems: Vec::new(),
        };
        let checksum = PhaseReport::start(progress, l, Phase::Checksum, n);
        // The values are kept only for a recomputation.
        let res = LevelFile::open(&path, &rules, l, n).and_then(|f| {
            if full {
                f.read_all()
            } else {
                f.check_all().map(|()| Values::empty())
            }
        });
        checksum.finish();
        let mut values = match res {
            Ok(values) => values,
            Err(e) => {
                check.problems.push(e.to_string());
                contiguous = false;
                Values::empty()
            }
        };
        contiguous &= lower.len() == l as usize;
        if full && contiguous {
            let recompute = PhaseReport::start(progress, l, Phase::Recompute, n);
            let (bad, examples) = recheck::recheck_level(
                &rules,
                &ranker,
                l,
                &lower,
                &mut values,
                &|k| recompute.advance(k),
                cancel,
                5,
            )
            .ok_or_else(|| DbError::Interrupted { path: path.clone() })?;
            recompute.finish();
            check.recomputed = true;
            if bad > 0 {
                let mut cells = [0u8; 2 * crate::rules::MAX_HOUSES];
                let shown: Vec<String> = examples
                    .iter()
                    .map(|&(idx, stored, v)| {
                        ranker.unrank(idx, l, &mut cells);
                        let b = Board::from_raw(rules.houses, cells);
                        format!("[{b}] stored {stored}, children give {v}")
                    })
                    .collect();
                check.problems.push(format!(
                    "{}: {bad} values disagree with their children, e.g. {}",
                    path.display(),
                    shown.join("; ")
                ));
                contiguous = false;
            }
        }
        if full && contiguous {
            lower.push(if pack {
                Lower::Packed(Packed::new(&values, l).map_err(|source| DbError::Io {
                    path: path.clone(),
                    source,
                })?)
            } else {
                Lower::Full(values)
            });
        }
        report.levels.push(check);
    }
    Ok(report)
}

/// What [`compare`] found for one level present in both databases.
#[derive(Clone, Debug)]
pub struct LevelComparison {
    /// The level.
    pub level: u32,
    /// Positions compared.
    pub positions: u64,
    /// Positions whose values differ.
    pub differences: u64,
    /// The first position (index) that differs, if any.
    pub first: Option<u64>,
    /// The codecs of the two files.
    pub codecs: (Codec, Codec),
}

/// Compares the values of every level that two databases of the same rules both hold (say the
/// search form of a level against its grid or stored form): each level of each is read whole
/// (every block checked), one level at a time.
pub fn compare(
    a: &Path,
    b: &Path,
    rules: &Rules,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<Vec<LevelComparison>, DbError> {
    let rules = rules.play_rules();
    let ranker = Ranker::new(rules.houses);
    let in_b = levels_in(b)?;
    let mut out = Vec::new();
    for l in levels_in(a)? {
        if !in_b.contains(&l) || l > MAX_DB_LEVEL {
            continue;
        }
        if cancel.load(Relaxed) {
            return Err(DbError::Interrupted {
                path: format::level_path(a, l),
            });
        }
        let n = ranker.level_size(l);
        let fa = LevelFile::open(&format::level_path(a, l), &rules, l, n)?;
        let fb = LevelFile::open(&format::level_path(b, l), &rules, l, n)?;
        let load = PhaseReport::start(progress, l, Phase::Checksum, n);
        let va = fa.read_all()?;
        let vb = fb.read_all()?;
        load.finish();
        use rayon::prelude::*;
        let chunk = 1 << 20;
        let (differences, first) = va
            .par_chunks(chunk)
            .zip(vb.par_chunks(chunk))
            .enumerate()
            .map(|(c, (x, y))| {
                let mut d = 0u64;
                let mut first = None;
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    if p != q {
                        d += 1;
                        first.get_or_insert((c * chunk + i) as u64);
                    }
                }
                (d, first)
            })
            .reduce(
                || (0, None),
                |(d1, f1), (d2, f2)| {
                    (
                        d1 + d2,
                        match (f1, f2) {
                            (Some(x), Some(y)) => Some(x.min(y)),
                            (x, y) => x.or(y),
                        },
                    )
                },
            );
        out.push(LevelComparison {
            level: l,
            positions: n,
            differences,
            first,
            codecs: (fa.codec(), fb.codec()),
        });
    }
    Ok(out)
}
