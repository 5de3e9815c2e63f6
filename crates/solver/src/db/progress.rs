//! Progress reports of the long database operations.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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

/// A progress report from [`build`](super::build), [`convert`](fn@super::convert) or
/// [`verify`](fn@super::verify). Reports may come from several threads.
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
        /// Seconds spent solving the level ([`convert`](fn@super::convert): reading and writing it).
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
pub(crate) struct PhaseReport<'a> {
    progress: &'a (dyn Fn(&Progress) + Sync),
    level: u32,
    phase: Phase,
    done: AtomicU64,
}

impl<'a> PhaseReport<'a> {
    pub(crate) fn start(
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

    pub(crate) fn advance(&self, k: u64) {
        let done = self.done.fetch_add(k, Relaxed) + k;
        (self.progress)(&Progress::Advance {
            level: self.level,
            phase: self.phase,
            done,
        });
    }

    pub(crate) fn finish(self) {
        (self.progress)(&Progress::Finish {
            level: self.level,
            phase: self.phase,
        });
    }
}
