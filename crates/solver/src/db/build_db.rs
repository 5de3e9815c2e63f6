//! Building a database: levels `0..=N` in order, each solved, coded and written under a
//! temporary name while the next is solved; resumable.

use super::codec::Codec;
use super::error::DbError;
use super::format;
use super::lower::{Lower, MemoryBudget, Packed};
use super::progress::{Phase, PhaseReport, Progress};
use super::rank::{Ranker, MAX_DB_LEVEL};
use super::reader::LevelFile;
use super::sweep;
use super::values::Values;
use super::writer;
use crate::rules::Rules;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What [`build`] did.
#[derive(Clone, Debug, Default)]
pub struct BuildReport {
    /// Levels computed and written.
    pub built: Vec<u32>,
    /// Levels already present and valid.
    pub skipped: Vec<u32>,
    /// Positions computed.
    pub positions_built: u64,
    /// Seconds spent computing them (not loading or writing).
    pub solve_seconds: f64,
}

pub(crate) fn check_request(dir: &Path, rules: &Rules, upto: u32) -> Result<(), DbError> {
    if rules.houses == 0 || rules.houses > crate::rules::MAX_HOUSES {
        return Err(DbError::Unsupported {
            path: dir.to_path_buf(),
            what: format!("{} houses per side is not supported", rules.houses),
        });
    }
    if upto > MAX_DB_LEVEL {
        return Err(DbError::Unsupported {
            path: dir.to_path_buf(),
            what: format!("levels above {MAX_DB_LEVEL} seeds are not supported"),
        });
    }
    let size = Ranker::new(rules.houses).level_size(upto);
    if size >= u64::MAX / 4 || usize::try_from(size).is_err() {
        return Err(DbError::Unsupported {
            path: dir.to_path_buf(),
            what: format!("level {upto} is too large to build here"),
        });
    }
    Ok(())
}

/// Builds the levels `0..=upto` for `rules` (their play rules) in `dir`, writing new levels in
/// `codec`, skipping levels already present and valid (every block checked; whatever their
/// codec, so a directory may mix codecs) and rebuilding corrupt ones. A level file
/// of other rules or another format version is an error: it is never overwritten. Each level is
/// written under a temporary name and renamed when complete, so an interruption loses only the
/// level in progress, and a rebuild gives byte-identical files.
///
/// Uses the current rayon thread pool. `progress` receives reports (from any thread); when
/// `cancel` becomes true the build stops soon and returns [`DbError::Interrupted`].
pub fn build(
    dir: &Path,
    rules: &Rules,
    upto: u32,
    codec: Codec,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<BuildReport, DbError> {
    build_with(
        dir,
        rules,
        upto,
        codec,
        MemoryBudget::default(),
        progress,
        cancel,
    )
}

/// [`build`] within a memory budget for the lower levels' values (beyond it they are held in
/// half a byte each: the same files, built more slowly).
pub fn build_with(
    dir: &Path,
    rules: &Rules,
    upto: u32,
    codec: Codec,
    memory: MemoryBudget,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<BuildReport, DbError> {
    build_levels(dir, rules, upto, codec, None, memory, progress, cancel)
}

/// [`build`], with level `upto` computed only for the slice `(i, k)` if given (slice `i` of
/// `k`, see `slice.rs`) and written as that slice's file instead of the level's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_levels(
    dir: &Path,
    rules: &Rules,
    upto: u32,
    codec: Codec,
    slice: Option<(u32, u32)>,
    memory: MemoryBudget,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<BuildReport, DbError> {
    let rules = rules.play_rules();
    check_request(dir, &rules, upto)?;
    std::fs::create_dir_all(dir).map_err(|source| DbError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    // Two builders in one directory would race on the same temporary files and levels.
    let _lock = super::dir_lock::lock_dir(dir)?;
    let ranker = Ranker::new(rules.houses);
    // Which levels have a file whose header and table are fine (blocks checked later).
    let mut present: Vec<Option<LevelFile>> = Vec::new();
    for l in 0..=upto {
        let path = format::level_path(dir, l);
        if !path.exists() {
            present.push(None);
            continue;
        }
        match LevelFile::open(&path, &rules, l, ranker.level_size(l)) {
            Ok(f) => present.push(Some(f)),
            // Never overwrite a database of other rules or of another format version.
            Err(e @ (DbError::WrongRules { .. } | DbError::Version { .. })) => return Err(e),
            Err(e) => {
                progress(&Progress::Invalid {
                    level: l,
                    problem: e.to_string(),
                });
                present.push(None);
            }
        }
    }
    // A build that cannot fit the disk says so before it starts, not hours later.
    let top_share = slice.map_or(1.0, |(_, k)| 1.0 / k.max(1) as f64);
    let need: u64 = (0..=upto)
        .filter(|&l| present[l as usize].is_none())
        .map(|l| {
            let share = if l == upto { top_share } else { 1.0 };
            (estimated_bytes(codec, ranker.level_size(l)) as f64 * share) as u64
        })
        .sum();
    if let Some(available) = available_bytes(dir) {
        check_space(dir, need, available)?;
    }
    let mut report = BuildReport::default();
    // The lower levels, in the builder's order (see `sweep`): one byte per position, or half a
    // byte when the whole database would not fit in the memory budget at one byte each.
    let mut lower: Vec<Lower> = Vec::new();
    let pack = super::lower::should_pack((0..=upto).map(|l| ranker.level_size(l)), memory.0);
    let keep = |values: Values, l: u32, path: &Path| -> Result<Lower, DbError> {
        if !pack || values.is_empty() {
            return Ok(Lower::Full(values));
        }
        Packed::new(&values, l)
            .map(Lower::Packed)
            .map_err(|source| DbError::Io {
                path: path.to_path_buf(),
                source,
            })
    };
    // (Made when first needed: a build that finds every level present needs none.)
    let orders = std::cell::OnceCell::new();
    let orders = || orders.get_or_init(|| sweep::Orders::new(&ranker, upto));
    // A level's file is written and synced on another thread while the next level is solved
    // (the disk and the processors work at once); at most one write is in flight, and its
    // error, if any, ends the build.
    std::thread::scope(|scope| {
        let mut writing: Option<std::thread::ScopedJoinHandle<'_, Result<u64, DbError>>> = None;
        for l in 0..=upto {
            let path = format::level_path(dir, l);
            if cancel.load(Relaxed) {
                return Err(DbError::Interrupted { path });
            }
            let n = ranker.level_size(l);
            // Values are needed in memory if some later level has to be built.
            let needed_later = present[l as usize + 1..].iter().any(|p| p.is_none());
            if let Some(file) = present[l as usize].take() {
                let load = PhaseReport::start(progress, l, Phase::Load, n);
                // Every block is checked either way; the values are kept only if needed.
                let read = if needed_later {
                    file.read_all()
                } else {
                    file.check_all().map(|()| Values::empty())
                };
                load.finish();
                match read {
                    Ok(mut values) => {
                        progress(&Progress::Skipped { level: l });
                        report.skipped.push(l);
                        if needed_later {
                            orders().put_in_builder_order(&ranker, l, &mut values);
                        }
                        lower.push(keep(values, l, &path)?);
                        continue;
                    }
                    Err(e) => {
                        progress(&Progress::Invalid {
                            level: l,
                            problem: e.to_string(),
                        });
                    }
                }
            }
            // Build level l: every lower level must be in memory.
            for (j, v) in lower.iter_mut().enumerate() {
                if v.is_empty() {
                    let f = LevelFile::open(
                        &format::level_path(dir, j as u32),
                        &rules,
                        j as u32,
                        ranker.level_size(j as u32),
                    )?;
                    let mut values = f.read_all()?;
                    orders().put_in_builder_order(&ranker, j as u32, &mut values);
                    *v = keep(values, j as u32, f.path())?;
                }
            }
            let solve = PhaseReport::start(progress, l, Phase::Solve, n);
            let t = std::time::Instant::now();
            // The sweep writes every position once: no need to fill the array first (the
            // tests fill it with `UNKNOWN` and check that nothing is left).
            let fresh = Values::zeroed(n as usize).map_err(|source| DbError::Io {
                path: path.clone(),
                source,
            })?;
            let only = match slice {
                Some((i, k)) if l == upto => {
                    Some(super::slice::slice_pairs(&ranker, l, k)[i as usize].clone())
                }
                _ => None,
            };
            let mut values = sweep::solve_level(
                &rules,
                &ranker,
                orders(),
                l,
                &lower,
                fresh,
                only.as_deref(),
                &|k| solve.advance(k),
                cancel,
            )
            .ok_or_else(|| DbError::Interrupted { path: path.clone() })?;
            let seconds = t.elapsed().as_secs_f64();
            solve.finish();
            if let (Some((i, k)), Some(only)) = (slice, &only) {
                let write = PhaseReport::start(progress, l, Phase::Write, n);
                orders().put_in_index_order(&ranker, l, &mut values);
                let (positions, bytes) =
                    super::slice::write_slice(dir, &rules, &ranker, l, i, k, only, &values)?;
                write.finish();
                progress(&Progress::Written {
                    level: l,
                    positions,
                    bytes,
                    seconds,
                });
                report.built.push(l);
                report.positions_built += positions;
                report.solve_seconds += seconds;
                break;
            }
            let write = PhaseReport::start(progress, l, Phase::Write, n);
            // Files are in index order; the next levels read this one in the builder's order.
            orders().put_in_index_order(&ranker, l, &mut values);
            if let Some(previous) = writing.take() {
                previous
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            }
            let bytes = if codec == Codec::Search {
                // Written as it is encoded: the whole file is never in memory beside the
                // level and the lower levels.
                writer::write_level_streamed(dir, &rules, l, &values, codec)?
            } else {
                let encoded = writer::encode_level(dir, &rules, l, &values, codec)?;
                let bytes = encoded.len();
                writing = Some(scope.spawn(move || writer::commit_level(dir, &encoded)));
                bytes
            };
            let needed_later = l < upto;
            if needed_later {
                orders().put_in_builder_order(&ranker, l, &mut values);
            }
            write.finish();
            progress(&Progress::Written {
                level: l,
                positions: n,
                bytes,
                seconds,
            });
            report.built.push(l);
            report.positions_built += n;
            report.solve_seconds += seconds;
            lower.push(if needed_later {
                keep(values, l, &path)?
            } else {
                Lower::empty()
            });
        }
        if let Some(last) = writing.take() {
            last.join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        }
        Ok(report)
    })
}

/// A generous estimate of the bytes a level of `boards` boards takes on disk in `codec`
/// (measured: grid 29 to 32% of a byte a board, rans 37%, zstd 38%, search 51 to 54%, stored
/// one byte), with room for the block tables and headers.
pub(crate) fn estimated_bytes(codec: Codec, boards: u64) -> u64 {
    let per_board = match codec {
        Codec::Grid => 0.34,
        Codec::Rans => 0.40,
        Codec::Zstd => 0.42,
        Codec::Search => 0.57,
        Codec::Stored => 1.01,
    };
    (boards as f64 * per_board) as u64 + 64 * 1024
}

/// Free bytes for an unprivileged writer on the file system of `dir`, where the system says.
fn available_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: `statvfs` is plain old data (integers only), for which all zeroes is a value.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: statvfs writes into the struct it is given; `c` is a valid C string that
        // outlives the call.
        let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        (r == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// An error when `need` bytes do not fit in the `available` ones.
fn check_space(dir: &Path, need: u64, available: u64) -> Result<(), DbError> {
    if need > available {
        let gb = |b: u64| b as f64 / 1e9;
        return Err(DbError::Unsupported {
            path: dir.to_path_buf(),
            what: format!(
                "the levels to build need about {:.1} GB on disk and only {:.1} GB are free \
                 there; free some space or build in another directory (--dir)",
                gb(need),
                gb(available)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod space_tests {
    use super::*;

    #[test]
    fn a_build_that_would_not_fit_the_disk_is_refused_before_it_starts() {
        let r = Ranker::new(6);
        // The 33-seed search form of 6 houses: about 15.5 GB measured.
        let need: u64 = (0..=33)
            .map(|l| estimated_bytes(Codec::Search, r.level_size(l)))
            .sum();
        assert!((15_500_000_000..17_500_000_000).contains(&need), "{need}");
        let dir = Path::new("/some/dir");
        let e = check_space(dir, need, 10_000_000_000)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("need about 16.") && e.contains("10.0 GB are free"),
            "{e}"
        );
        assert!(check_space(dir, need, need).is_ok());
        // The file system of a real directory is asked.
        let tmp = tempfile::tempdir().unwrap();
        assert!(available_bytes(tmp.path()).is_some_and(|b| b > 0));
    }
}
