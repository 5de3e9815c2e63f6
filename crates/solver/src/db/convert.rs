//! Rewriting a database in another codec.

use super::build_db::check_request;
use super::codec::Codec;
use super::error::DbError;
use super::format;
use super::progress::{Phase, PhaseReport, Progress};
use super::rank::{Ranker, MAX_DB_LEVEL};
use super::reader::LevelFile;
use super::verify::levels_in;
use super::writer;
use crate::rules::Rules;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

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
/// block of the source is checked as it is read, and each level is written like [`build`](super::build)
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
        let bytes = writer::write_level(dst, &rules, l, &values, codec)?;
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
