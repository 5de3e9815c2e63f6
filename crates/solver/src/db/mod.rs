//! Endgame databases by seed count.
//!
//! A database is a directory holding one file per level (`level-NNN.kdb`, the boards with `NNN`
//! seeds in the houses) for one set of play rules (houses, capture, leftover, end; the starting
//! seeds play no part). Level `s` is computed from the levels below it by [`build`]; a
//! [`Database`] opens the contiguous levels `0..=L` present and answers [`Endgame::probe`] by
//! decoding (part of) one block (a [`Codec::Grid`], [`Codec::Rans`] or [`Codec::Zstd`] level)
//! or reading one byte of the memory map (a [`Codec::Stored`] level); [`convert`] rewrites a
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
//! - `rank`: the dense numbering of the boards of a level;
//! - `sweep`: the retrograde computation of a level, in phases of equal potential;
//! - `values`: a level's values in memory (huge pages);
//! - `build`: the recomputation of a level from its children (`verify --full`), and the
//!   writing of level files;
//! - `format`: the on-disk layout (private);
//! - `reader`: the memory-mapped, checked reader;
//! - `grid`: the layout, two-dimensional contexts, model and rANS coder of [`Codec::Grid`]
//!   levels;
//! - `rans`: the order-1 model and rANS coder of [`Codec::Rans`] levels.

mod build;
mod format;
mod grid;
mod rank;
pub(crate) mod rans;
mod reader;
mod sow;
mod sweep;
mod values;

use crate::board::Board;
use crate::endgame::Endgame;
use crate::rules::Rules;
use rank::{Ranker, Walker};
use reader::LevelFile;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use values::Values;

/// The largest level a database may hold (values are stored as `i8`).
pub const MAX_DB_LEVEL: u32 = rank::MAX_LEVEL;

/// How the values of a level file are stored in its blocks (`FORMAT.md`). A directory may hold
/// levels of both codecs; readers handle each level by its own header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Each block of 8192 values is one zstd frame: small files (about 38% of a byte per
    /// position), but a probe decompresses a block, so a search first loads the level into
    /// memory ([`Database::load_into_memory`]).
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
}

impl Codec {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Stored => "stored",
            Codec::Rans => "rans",
            Codec::Grid => "grid",
        }
    }

    /// The codec byte of the file header.
    pub(crate) fn code(self) -> u8 {
        match self {
            Codec::Stored => format::CODEC_STORED,
            Codec::Zstd => format::CODEC_ZSTD,
            Codec::Rans => format::CODEC_RANS,
            Codec::Grid => format::CODEC_GRID,
        }
    }

    /// The codec of a header's codec byte, if known.
    pub(crate) fn from_code(code: u8) -> Option<Codec> {
        match code {
            format::CODEC_STORED => Some(Codec::Stored),
            format::CODEC_ZSTD => Some(Codec::Zstd),
            format::CODEC_RANS => Some(Codec::Rans),
            format::CODEC_GRID => Some(Codec::Grid),
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
    /// `grid`, `rans`, `zstd` or `stored` (any case).
    fn from_str(s: &str) -> Result<Codec, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zstd" => Ok(Codec::Zstd),
            "stored" => Ok(Codec::Stored),
            "rans" => Ok(Codec::Rans),
            "grid" => Ok(Codec::Grid),
            _ => Err(format!(
                "unknown codec {s:?}; expected one of: grid, rans, zstd, stored"
            )),
        }
    }
}

/// Everything that can go wrong with a database, naming the file concerned.
#[derive(Debug)]
pub enum DbError {
    /// An I/O error on a file.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file whose bytes are not a valid level file (checksum, sizes, values...).
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A file that does not start with the level-file magic bytes.
    NotALevelFile {
        /// The file.
        path: PathBuf,
    },
    /// A level file written in a format version this program does not read.
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The newest version this program reads (it reads every version from 1 up).
        supported: u32,
    },
    /// A level file built for other rules or another number of houses.
    WrongRules {
        /// The file.
        path: PathBuf,
        /// The rules asked for (slug).
        expected: String,
        /// The rules of the file (slug).
        found: String,
    },
    /// A board with another number of houses than the database's.
    WrongHouses {
        /// The database directory.
        path: PathBuf,
        /// Houses of the database.
        expected: usize,
        /// Houses of the board.
        found: usize,
    },
    /// No level 0 in the directory: there is no database there.
    Missing {
        /// The file that should hold level 0.
        path: PathBuf,
    },
    /// A request the database cannot serve (too many levels, too many houses...).
    Unsupported {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        what: String,
    },
    /// The work was cancelled; finished levels are kept.
    Interrupted {
        /// The level file that was being worked on.
        path: PathBuf,
    },
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            DbError::Corrupt { path, what } => {
                write!(f, "{}: corrupt database file: {what}", path.display())
            }
            DbError::NotALevelFile { path } => write!(
                f,
                "{}: corrupt database file: not a kalah level file (bad magic bytes)",
                path.display()
            ),
            DbError::Version {
                path,
                found,
                supported,
            } => write!(
                f,
                "{}: format version {found}, this program reads versions {} to {supported}",
                path.display(),
                format::OLDEST_VERSION
            ),
            DbError::WrongRules {
                path,
                expected,
                found,
            } => write!(
                f,
                "{}: built for rules {found}, not {expected}",
                path.display()
            ),
            DbError::WrongHouses {
                path,
                expected,
                found,
            } => write!(
                f,
                "{}: database has {expected} houses per side, the board {found}",
                path.display()
            ),
            DbError::Missing { path } => {
                write!(f, "{}: no database here (level 0 missing)", path.display())
            }
            DbError::Unsupported { path, what } => write!(f, "{}: {what}", path.display()),
            DbError::Interrupted { path } => {
                write!(
                    f,
                    "{}: interrupted; finished levels are kept",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for DbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DbError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What a long operation is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading a finished level (every block checked) into memory.
    Load,
    /// Computing the values of a level.
    Solve,
    /// Encoding (compressing) and writing a level file.
    Write,
    /// Checking the checksums of every block of a level.
    Checksum,
    /// Recomputing every value of a level from its children.
    Recompute,
}

impl Phase {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Solve => "solve",
            Phase::Write => "write",
            Phase::Checksum => "checksum",
            Phase::Recompute => "recompute",
        }
    }
}

/// A progress report from [`build`], [`convert`] or [`verify`]. Reports may come from several threads.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// A phase of a level began; `total` positions to go through.
    Start {
        /// The level.
        level: u32,
        /// The phase.
        phase: Phase,
        /// Positions in the level.
        total: u64,
    },
    /// `done` positions of the phase are finished.
    Advance {
        /// The level.
        level: u32,
        /// The phase.
        phase: Phase,
        /// Positions finished so far.
        done: u64,
    },
    /// The phase finished.
    Finish {
        /// The level.
        level: u32,
        /// The phase.
        phase: Phase,
    },
    /// A level was already present and valid and was not rebuilt (or converted).
    Skipped {
        /// The level.
        level: u32,
    },
    /// A level was written: `bytes` on disk for `positions` positions.
    Written {
        /// The level.
        level: u32,
        /// Positions in the level.
        positions: u64,
        /// Bytes of the file.
        bytes: u64,
        /// Seconds spent solving the level ([`convert`]: reading and writing it).
        seconds: f64,
    },
    /// A level file present but not valid, rebuilt (or converted again).
    Invalid {
        /// The level.
        level: u32,
        /// What was wrong with it.
        problem: String,
    },
}

/// The reports of one phase of one level: [`Progress::Start`] when begun, [`Progress::Advance`]
/// as work is counted (from any thread), [`Progress::Finish`] when finished.
struct PhaseReport<'a> {
    progress: &'a (dyn Fn(&Progress) + Sync),
    level: u32,
    phase: Phase,
    done: AtomicU64,
}

impl<'a> PhaseReport<'a> {
    fn start(
        progress: &'a (dyn Fn(&Progress) + Sync),
        level: u32,
        phase: Phase,
        total: u64,
    ) -> PhaseReport<'a> {
        progress(&Progress::Start {
            level,
            phase,
            total,
        });
        PhaseReport {
            progress,
            level,
            phase,
            done: AtomicU64::new(0),
        }
    }

    fn advance(&self, k: u64) {
        let done = self.done.fetch_add(k, Relaxed) + k;
        (self.progress)(&Progress::Advance {
            level: self.level,
            phase: self.phase,
            done,
        });
    }

    fn finish(self) {
        (self.progress)(&Progress::Finish {
            level: self.level,
            phase: self.phase,
        });
    }
}

/// Number of boards with `seeds` seeds in the houses and `houses` houses per side:
/// `C(seeds + 2 houses - 1, 2 houses - 1)`.
pub fn level_size(houses: usize, seeds: u32) -> u64 {
    assert!(seeds <= MAX_DB_LEVEL);
    Ranker::new(houses).level_size(seeds)
}

/// The path of the file of level `level` in a database directory.
pub fn level_path(dir: &Path, level: u32) -> PathBuf {
    format::level_path(dir, level)
}

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

fn check_request(dir: &Path, rules: &Rules, upto: u32) -> Result<(), DbError> {
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
    let rules = rules.play_rules();
    check_request(dir, &rules, upto)?;
    std::fs::create_dir_all(dir).map_err(|source| DbError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
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
    let mut report = BuildReport::default();
    // The lower levels, in the builder's order (see `sweep`).
    let mut lower: Vec<Values> = Vec::new();
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
                        lower.push(values);
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
                    *v = f.read_all()?;
                    orders().put_in_builder_order(&ranker, j as u32, v);
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
            let mut values = sweep::solve_level(
                &rules,
                &ranker,
                orders(),
                l,
                &lower,
                fresh,
                &|k| solve.advance(k),
                cancel,
            )
            .ok_or_else(|| DbError::Interrupted { path: path.clone() })?;
            let seconds = t.elapsed().as_secs_f64();
            solve.finish();
            let write = PhaseReport::start(progress, l, Phase::Write, n);
            // Files are in index order; the next levels read this one in the builder's order.
            orders().put_in_index_order(&ranker, l, &mut values);
            let encoded = build::encode_level(dir, &rules, l, &values, codec)?;
            orders().put_in_builder_order(&ranker, l, &mut values);
            if let Some(previous) = writing.take() {
                previous
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            }
            let bytes = encoded.len();
            writing = Some(scope.spawn(move || build::commit_level(dir, &encoded)));
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
            lower.push(values);
        }
        if let Some(last) = writing.take() {
            last.join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        }
        Ok(report)
    })
}

/// What [`convert`] did.
#[derive(Clone, Debug, Default)]
pub struct ConvertReport {
    /// Levels read from the source and written to the destination.
    pub converted: Vec<u32>,
    /// Levels already present and valid in the destination, in the codec asked for.
    pub skipped: Vec<u32>,
    /// Bytes of the level files written.
    pub bytes_written: u64,
}

/// Writes every level file of the database in `src` (for `rules`) to `dst` in `codec`: each
/// block of the source is checked as it is read, and each level is written like [`build`]
/// writes it (`<name>.tmp`, fsync, rename), so the result is byte-identical to a build in
/// `codec`. Levels already present and valid in `dst` in `codec` are skipped; a level of `dst`
/// in the other codec or corrupt is replaced; one of other rules or another format version is
/// an error and is never overwritten. A corrupt source level is an error naming its file
/// (levels converted before it are kept). `src` and `dst` may be the same directory.
///
/// `progress` receives [`Phase::Checksum`] for a level of `dst` being checked, then
/// [`Phase::Load`] and [`Phase::Write`] and [`Progress::Written`] for each level converted;
/// when `cancel` becomes true the conversion stops before the next level and returns
/// [`DbError::Interrupted`].
pub fn convert(
    src: &Path,
    dst: &Path,
    rules: &Rules,
    codec: Codec,
    progress: &(dyn Fn(&Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<ConvertReport, DbError> {
    let rules = rules.play_rules();
    check_request(src, &rules, 0)?;
    let ranker = Ranker::new(rules.houses);
    let found = levels_in(src)?;
    if found.first() != Some(&0) {
        return Err(DbError::Missing {
            path: format::level_path(src, 0),
        });
    }
    if let Some(&l) = found.iter().find(|&&l| l > MAX_DB_LEVEL) {
        return Err(DbError::Unsupported {
            path: format::level_path(src, l),
            what: format!("levels above {MAX_DB_LEVEL} seeds are not supported"),
        });
    }
    std::fs::create_dir_all(dst).map_err(|source| DbError::Io {
        path: dst.to_path_buf(),
        source,
    })?;
    let mut report = ConvertReport::default();
    for l in found {
        let out = format::level_path(dst, l);
        if cancel.load(Relaxed) {
            return Err(DbError::Interrupted { path: out });
        }
        let n = ranker.level_size(l);
        if out.exists() {
            match LevelFile::open(&out, &rules, l, n) {
                Ok(f) if f.codec() == codec => {
                    let check = PhaseReport::start(progress, l, Phase::Checksum, n);
                    let read = f.check_all();
                    check.finish();
                    match read {
                        Ok(()) => {
                            progress(&Progress::Skipped { level: l });
                            report.skipped.push(l);
                            continue;
                        }
                        Err(e) => progress(&Progress::Invalid {
                            level: l,
                            problem: e.to_string(),
                        }),
                    }
                }
                // Valid in the other codec: converted over.
                Ok(_) => {}
                Err(e @ (DbError::WrongRules { .. } | DbError::Version { .. })) => return Err(e),
                Err(e) => progress(&Progress::Invalid {
                    level: l,
                    problem: e.to_string(),
                }),
            }
        }
        let t = std::time::Instant::now();
        let load = PhaseReport::start(progress, l, Phase::Load, n);
        let read =
            LevelFile::open(&format::level_path(src, l), &rules, l, n).and_then(|f| f.read_all());
        load.finish();
        let values = read?;
        let write = PhaseReport::start(progress, l, Phase::Write, n);
        let bytes = build::write_level(dst, &rules, l, &values, codec)?;
        write.finish();
        progress(&Progress::Written {
            level: l,
            positions: n,
            bytes,
            seconds: t.elapsed().as_secs_f64(),
        });
        report.converted.push(l);
        report.bytes_written += bytes;
    }
    Ok(report)
}

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
fn levels_in(dir: &Path) -> Result<Vec<u32>, DbError> {
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
    let mut lower: Vec<Values> = Vec::new();
    let mut contiguous = true;
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
            let (bad, examples) = build::recheck_level(
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
            lower.push(values);
        }
        report.levels.push(check);
    }
    Ok(report)
}

/// (level, block, values) of a decompressed block.
type CachedBlock = (u32, u64, Arc<Vec<i8>>);

/// A few recently decompressed blocks, shared by the threads that probe.
struct BlockCache {
    shards: Vec<Mutex<Shard>>,
}

/// One shard of the [`BlockCache`]: its blocks, most recent last, and the blocks of the last
/// few probes that did not decode their whole block (rans).
#[derive(Default)]
struct Shard {
    blocks: Vec<CachedBlock>,
    missed: Vec<(u32, u64)>,
}

const CACHE_SHARDS: usize = 16;
const CACHE_WAYS: usize = 4;

impl BlockCache {
    fn new() -> BlockCache {
        BlockCache {
            shards: (0..CACHE_SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, level: u32, block: u64) -> std::sync::MutexGuard<'_, Shard> {
        let h = (block.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ level as u64) >> 32;
        self.shards[h as usize % CACHE_SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The cached block, if it is there (it becomes the most recent).
    fn get(&self, level: u32, block: u64) -> Option<Arc<Vec<i8>>> {
        let mut s = self.shard(level, block);
        let pos = s.blocks.iter().position(|e| e.0 == level && e.1 == block)?;
        let e = s.blocks.remove(pos);
        let data = e.2.clone();
        s.blocks.push(e);
        Some(data)
    }

    fn insert(&self, level: u32, block: u64, data: Arc<Vec<i8>>) {
        let mut s = self.shard(level, block);
        if s.blocks.len() >= CACHE_WAYS {
            s.blocks.remove(0);
        }
        s.blocks.push((level, block, data));
    }

    /// Whether a probe into this part (a block; for grid levels a sub-block) did not decode
    /// its block whole lately (and now remembers that one did): the second probe into a part
    /// decodes its block whole, so that a scan reads each block once while random probes
    /// decode only up to their value.
    fn missed_before(&self, level: u32, part: u64) -> bool {
        let mut s = self.shard(level, part);
        if let Some(pos) = s.missed.iter().position(|&k| k == (level, part)) {
            s.missed.remove(pos);
            return true;
        }
        if s.missed.len() >= CACHE_WAYS {
            s.missed.remove(0);
        }
        s.missed.push((level, part));
        false
    }
}

/// Every level of a database decompressed into one anonymous map, level `l` at bytes
/// `starts[l]..starts[l + 1]` (each byte an `i8` value).
struct Memory {
    values: memmap2::Mmap,
    starts: Vec<usize>,
}

impl Memory {
    #[inline]
    fn level(&self, s: u32) -> &[u8] {
        &self.values[self.starts[s as usize]..self.starts[s as usize + 1]]
    }
}

/// Facts about one level of an open database.
#[derive(Clone, Debug)]
pub struct LevelInfo {
    /// The level (seeds in the houses).
    pub level: u32,
    /// The file.
    pub path: PathBuf,
    /// Positions in the level.
    pub positions: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// How the blocks are stored.
    pub codec: Codec,
    /// Positions per block.
    pub block_size: u32,
    /// Blocks in the file.
    pub blocks: u64,
}

/// An open endgame database: the contiguous levels `0..=max_seeds` of one directory, for one
/// set of play rules. Probes are safe from many threads at once.
pub struct Database {
    dir: PathBuf,
    rules: Rules,
    ranker: Ranker,
    levels: Vec<LevelFile>,
    cache: BlockCache,
    /// Every zstd level decompressed, after [`Database::load_into_memory`] (stored levels
    /// take no room here: they are read from their maps).
    memory: Option<Memory>,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database")
            .field("dir", &self.dir)
            .field("rules", &self.rules)
            .field("levels", &self.levels.len())
            .finish()
    }
}

impl Database {
    /// Opens the levels `0, 1, 2, ...` present in `dir`, up to the first one missing, checking
    /// each header (cheap: a level's block table is checked on its first probe, block
    /// checksums as blocks are read, and everything at once by [`verify`]). A level file that is corrupt or built for other rules is an
    /// error, as is a directory without level 0.
    pub fn open(dir: &Path, rules: &Rules) -> Result<Database, DbError> {
        let rules = rules.play_rules();
        check_request(dir, &rules, 0)?;
        let ranker = Ranker::new(rules.houses);
        let mut levels = Vec::new();
        for l in 0..=MAX_DB_LEVEL {
            let path = format::level_path(dir, l);
            if !path.exists() {
                break;
            }
            levels.push(LevelFile::open(&path, &rules, l, ranker.level_size(l))?);
        }
        if levels.is_empty() {
            return Err(DbError::Missing {
                path: format::level_path(dir, 0),
            });
        }
        Ok(Database {
            dir: dir.to_path_buf(),
            rules,
            ranker,
            levels,
            cache: BlockCache::new(),
            memory: None,
        })
    }

    /// Keeps only the levels `0..=max_seeds` (the others are closed): a search over a smaller
    /// database than the directory holds, for comparisons of database sizes.
    pub fn keep_levels(&mut self, max_seeds: u32) {
        self.levels.truncate(max_seeds as usize + 1);
        self.memory = None;
    }

    /// Decodes every rans and zstd level (checking every block) into memory, so that probes
    /// become plain array reads instead of block reads: one byte per position (1.25e9 bytes
    /// for the 24-seed database of 6 houses), in huge pages where the system gives them.
    /// Searches probe at random, which a block cache cannot serve. Stored levels are left as
    /// they are: probes read them from the maps with no load at all (each block checked on its
    /// first probe). Measured on 6x4 with the 24-seed database, one thread: 2.0 s of search
    /// after 2.5 s of loading zstd levels, 2.4 s of search from stored levels.
    pub fn load_into_memory(&mut self) -> Result<(), DbError> {
        let mut starts = Vec::with_capacity(self.levels.len() + 1);
        let mut total = 0usize;
        for f in &self.levels {
            starts.push(total);
            if f.codec() != Codec::Stored {
                total += f.header().positions as usize;
            }
        }
        starts.push(total);
        // One anonymous map with huge pages asked for: probes land at random in a gigabyte
        // or more, where 4 KiB pages would cost a TLB miss (a page walk) on most of them, and
        // where faulting in and zeroing 4 KiB pages one by one makes loading slow.
        let mut map = memmap2::MmapMut::map_anon(total.max(1)).map_err(|e| DbError::Io {
            path: self.dir.clone(),
            source: e,
        })?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        for (l, f) in self.levels.iter().enumerate() {
            if f.codec() != Codec::Stored {
                f.read_into(&mut map[starts[l]..starts[l + 1]])?;
            }
        }
        self.memory = Some(Memory {
            values: map.make_read_only().map_err(|e| DbError::Io {
                path: self.dir.clone(),
                source: e,
            })?,
            starts,
        });
        Ok(())
    }

    /// Bytes of memory held by [`Database::load_into_memory`] (0 before; stored levels, left
    /// mapped, count nothing).
    pub fn memory_bytes(&self) -> usize {
        self.memory
            .as_ref()
            .map(|m| *m.starts.last().unwrap())
            .unwrap_or(0)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The play rules of the database (starting seeds zero).
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Facts about each level, from the headers (no decompression).
    pub fn levels(&self) -> Vec<LevelInfo> {
        self.levels
            .iter()
            .map(|f| LevelInfo {
                level: f.header().level,
                path: f.path().to_path_buf(),
                positions: f.header().positions,
                bytes: f.file_len(),
                codec: f.codec(),
                block_size: f.header().block_size,
                blocks: f.block_count(),
            })
            .collect()
    }

    /// The number of boards of each value in level `level`: entry `v + level` counts value `v`.
    /// Read from the file (format version 2 and later), or for a version 1 file, counted by
    /// decompressing (and checking) the whole level.
    pub fn histogram(&self, level: u32) -> Result<Vec<u64>, DbError> {
        let f = self
            .levels
            .get(level as usize)
            .ok_or_else(|| DbError::Unsupported {
                path: format::level_path(&self.dir, level),
                what: format!("level {level} is not in the database"),
            })?;
        f.histogram()
    }

    /// The board of index `index` in level `level` (the numbering of the files), if in range.
    /// For tests and benchmarks.
    pub fn board_at(&self, level: u32, index: u64) -> Option<Board> {
        if level as usize >= self.levels.len() || index >= self.ranker.level_size(level) {
            return None;
        }
        let w = Walker::at(&self.ranker, level, index);
        Some(Board::from_raw(self.rules.houses, w.cells))
    }
}

impl Endgame for Database {
    fn max_seeds(&self) -> u32 {
        self.levels.len() as u32 - 1
    }

    fn probe(&self, board: &Board) -> Result<Option<i32>, DbError> {
        self.probe_located(board, None)
    }

    fn probe_located(&self, board: &Board, place: Option<u64>) -> Result<Option<i32>, DbError> {
        if board.houses() != self.rules.houses {
            return Err(DbError::WrongHouses {
                path: self.dir.clone(),
                expected: self.rules.houses,
                found: board.houses(),
            });
        }
        let s = board.seeds();
        let Some(file) = self.levels.get(s as usize) else {
            return Ok(None);
        };
        let idx = match place {
            Some(idx) => {
                debug_assert_eq!(idx, self.ranker.index_packed(sow::pack(board.raw()), s));
                idx
            }
            None => self.ranker.index_packed(sow::pack(board.raw()), s),
        };
        if file.codec() == Codec::Stored {
            return Ok(Some(file.stored_value(idx)? as i32));
        }
        if let Some(memory) = &self.memory {
            return Ok(Some(memory.level(s)[idx as usize] as i8 as i32));
        }
        let bs = file.header().block_size as u64;
        // Where the value lies in the file (grid levels have an order of their own).
        let pos = file.position(idx, board.raw())?;
        let (block, k) = (pos / bs, (pos % bs) as usize);
        if let Some(values) = self.cache.get(s, block) {
            return Ok(Some(values[k] as i32));
        }
        // A grid block holds 64 sub-blocks, each decoded on its own: the block is decoded
        // whole only when a sub-block is probed twice lately (a block would be 1% of random
        // probes into the 24-seed level, each costing 64 sub-blocks).
        let part = match file.codec() {
            Codec::Grid => pos / grid::SUB as u64,
            _ => block,
        };
        if matches!(file.codec(), Codec::Rans | Codec::Grid) && !self.cache.missed_before(s, part) {
            // A random probe: decode up to the value only (half a block or sub-block on
            // average).
            return Ok(Some(file.coded_value(pos)? as i32));
        }
        let mut values = Vec::new();
        file.read_block(block, &mut values)?;
        let v = values[k] as i32;
        self.cache.insert(s, block, Arc::new(values));
        Ok(Some(v))
    }

    fn probes_are_cheap(&self) -> bool {
        self.memory.is_some() || self.levels.iter().all(|f| f.codec() == Codec::Stored)
    }

    /// Returns the board's index in its level.
    #[inline]
    fn prefetch(&self, board: &Board) -> Option<u64> {
        let s = board.seeds();
        if board.houses() != self.rules.houses {
            return None;
        }
        let file = self.levels.get(s as usize)?;
        let idx = self.ranker.index_packed(sow::pack(board.raw()), s);
        let byte = if file.codec() == Codec::Stored {
            file.stored_byte(idx)
        } else if let Some(memory) = &self.memory {
            memory.level(s).get(idx as usize)
        } else {
            None
        };
        if let Some(b) = byte {
            prefetch_byte(b);
        }
        Some(idx)
    }
}

/// Asks the processor to bring the cache line of `b` closer (a hint; nothing else changes).
#[inline]
fn prefetch_byte(b: &u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing and cannot fault. The
    // pointer comes from a live reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch(b as *const u8 as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

#[cfg(test)]
mod tests;
