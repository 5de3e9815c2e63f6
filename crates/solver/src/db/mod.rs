//! Endgame databases by seed count (being written: ranking, builder, level files, reader).

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
    /// A file whose bytes are not a valid level file (bad magic, checksum, sizes...).
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            DbError::Corrupt { path, what } => {
                write!(f, "{}: corrupt database file: {what}", path.display())
            }
        }
    }
}

impl std::error::Error for DbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DbError::Io { source, .. } => Some(source),
            DbError::Corrupt { .. } => None,
        }
    }
}
