//! The error type of every database operation.

use super::dir_lock;
use super::format;
use std::fmt;
use std::path::PathBuf;

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
    /// Another process is building levels in the directory.
    Busy {
        /// The directory.
        path: PathBuf,
        /// Who holds its build lock (`process 1234`).
        holder: String,
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
            DbError::Busy { path, holder } => write!(
                f,
                "{}: {holder} is building levels here (it holds {}); wait for it to finish or \
                 stop it, then run this again",
                path.display(),
                dir_lock::LOCK_FILE
            ),
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
