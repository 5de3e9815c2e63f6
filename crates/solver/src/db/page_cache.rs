//! Bringing the levels that probes read in place into memory before a search, when they fit:
//! the one decision the CLI and the benchmarks share.

use super::database::Database;
use super::error::DbError;
use std::time::Instant;

/// What [`Database::fill_page_cache`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum PageCacheFill {
    /// Less than 256 MiB is probed in place, and no fresh read was asked for: nothing done.
    Small,
    /// What is not in memory yet would not fit in nine tenths of the memory available.
    NoRoom {
        /// Bytes that would have been read.
        needed: u64,
        /// Bytes of memory available (the system's `MemAvailable`).
        available: u64,
    },
    /// The levels are in the page cache.
    Filled {
        /// Bytes of the in-place levels.
        bytes: u64,
        /// Bytes read (0 when they were all in memory already).
        read: u64,
        /// Seconds spent.
        seconds: f64,
        /// Bytes of this process's file maps in huge pages after it (`None` where the system
        /// does not say).
        huge_bytes: Option<u64>,
    },
}

impl Database {
    /// Reads the levels that probes read in place into the page cache before a search
    /// ([`Database::read_into_page_cache`]; `evict`: read them again even when cached, so that
    /// they land in huge pages), when what is not in memory yet fits in nine tenths of the
    /// memory available. The available memory counts the page cache the levels may be in
    /// already, unless another process locked it there (a proof run with `--db-lock`); so
    /// without `evict` only the bytes not yet resident are weighed against it. `progress` gets
    /// the bytes read so far.
    pub fn fill_page_cache(
        &self,
        evict: bool,
        progress: &dyn Fn(u64),
    ) -> Result<PageCacheFill, DbError> {
        let bytes = self.in_place_bytes();
        if bytes < 1 << 28 && !evict {
            return Ok(PageCacheFill::Small);
        }
        let available = proc_bytes("/proc/meminfo", "MemAvailable:").unwrap_or(u64::MAX);
        let needed = if evict {
            bytes
        } else {
            bytes.saturating_sub(self.in_place_resident_bytes())
        };
        if needed > available / 10 * 9 {
            return Ok(PageCacheFill::NoRoom { needed, available });
        }
        let t = Instant::now();
        let read = self.read_into_page_cache(evict, progress)?;
        Ok(PageCacheFill::Filled {
            bytes,
            read,
            seconds: t.elapsed().as_secs_f64(),
            huge_bytes: proc_bytes("/proc/self/smaps_rollup", "FilePmdMapped:"),
        })
    }
}

/// A `field:   N kB` line of a `/proc` file, in bytes (Linux; `None` elsewhere).
fn proc_bytes(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
