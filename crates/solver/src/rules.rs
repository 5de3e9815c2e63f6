//! The rules of Kalah as a value: board size, starting seeds and the three rule axes on which the
//! variants players use differ (capture, seeds left at the end, when the game ends).
//!
//! The defaults are standard Kalah: 6 houses, capture [`Capture::Standard`], leftover
//! [`Leftover::Owner`], end [`EndRule::Either`].

use std::fmt;
use std::str::FromStr;

/// The most houses per side any rule set may have.
pub const MAX_HOUSES: usize = 8;
/// The most seeds a position may hold in all, houses and stores together.
///
/// Keeping every count within a byte lets boards be small and values fit an `i16`.
pub const MAX_SEEDS: u32 = 255;

/// What happens when the last seed of a sowing lands in an empty house of the mover's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capture {
    /// The seed and the seeds in the opposite house go to the mover's store, but only when the
    /// opposite house holds seeds.
    Standard,
    /// The seed goes to the mover's store with whatever is opposite, even nothing
    /// (Irving et al. 2000, Rawlings 2015).
    Empty,
    /// No captures at all.
    Never,
}

impl Capture {
    /// Whether a last seed landing in an empty house of the mover's own captures, with
    /// `opposite` seeds in the opposite house.
    #[inline]
    pub fn takes(self, opposite: u32) -> bool {
        match self {
            Capture::Standard => opposite > 0,
            Capture::Empty => true,
            Capture::Never => false,
        }
    }
}

/// Who gets the seeds left in the houses when the game ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Leftover {
    /// Each player puts the seeds on their own side into their own store.
    Owner,
    /// The player whose side is empty takes everything left on the other side.
    Emptier,
    /// Seeds left in the houses count for nobody.
    Discard,
}

/// When the game is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndRule {
    /// As soon as either side has no seeds in its houses, checked after every move.
    Either,
    /// Only when the player to move has no seeds to sow.
    Mover,
}

/// A complete rule set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rules {
    /// Houses per side, 1 to [`MAX_HOUSES`].
    pub houses: usize,
    /// Seeds in each house at the start.
    pub seeds: u32,
    /// The capture rule.
    pub capture: Capture,
    /// Who gets the seeds left at the end.
    pub leftover: Leftover,
    /// When the game ends.
    pub end: EndRule,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            houses: 6,
            seeds: 4,
            capture: Capture::Standard,
            leftover: Leftover::Owner,
            end: EndRule::Either,
        }
    }
}

/// An invalid rule set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesError(pub String);

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RulesError {}

impl Rules {
    /// Standard Kalah with `houses` houses of `seeds` seeds each.
    pub fn standard(houses: usize, seeds: u32) -> Rules {
        Rules {
            houses,
            seeds,
            ..Rules::default()
        }
    }

    /// Checks that the board size and starting seeds are within the supported limits.
    pub fn validate(&self) -> Result<(), RulesError> {
        if self.houses == 0 || self.houses > MAX_HOUSES {
            return Err(RulesError(format!(
                "--houses must be between 1 and {MAX_HOUSES}, not {}",
                self.houses
            )));
        }
        let total = 2 * self.houses as u64 * self.seeds as u64;
        if total > MAX_SEEDS as u64 {
            return Err(RulesError(format!(
                "--seeds {} puts {total} seeds on the board; at most {MAX_SEEDS} are supported",
                self.seeds
            )));
        }
        Ok(())
    }

    /// The rules that decide the value of a position once its houses are given: everything but
    /// the starting seeds. Databases and tables are keyed on this.
    pub fn play_rules(&self) -> Rules {
        Rules { seeds: 0, ..*self }
    }

    /// A short name for the rules without the starting seeds, used for database directories,
    /// e.g. `h6-standard-owner-either`.
    pub fn slug(&self) -> String {
        format!(
            "h{}-{}-{}-{}",
            self.houses,
            self.capture.name(),
            self.leftover.name(),
            self.end.name()
        )
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} houses, {} seeds, capture {}, leftover {}, end {}",
            self.houses,
            self.seeds,
            self.capture.name(),
            self.leftover.name(),
            self.end.name()
        )
    }
}

macro_rules! named_enum {
    ($ty:ident, $what:literal, $($variant:ident => $name:literal),+) => {
        impl $ty {
            /// Every value, in a fixed order (the order of the on-disk code).
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The name used on the command line and in files.
            pub fn name(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }

            /// The one-byte code used in database headers.
            pub fn code(self) -> u8 {
                Self::ALL.iter().position(|&v| v == self).unwrap() as u8
            }

            /// The value of a one-byte code, if it is one.
            pub fn from_code(code: u8) -> Option<Self> {
                Self::ALL.get(code as usize).copied()
            }
        }

        impl FromStr for $ty {
            type Err = RulesError;
            fn from_str(s: &str) -> Result<Self, RulesError> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(RulesError(format!(
                        concat!("unknown ", $what, " rule {:?}; expected one of: {}"),
                        s,
                        [$($name),+].join(", ")
                    ))),
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum!(Capture, "capture", Standard => "standard", Empty => "empty", Never => "never");
named_enum!(Leftover, "leftover", Owner => "owner", Emptier => "emptier", Discard => "discard");
named_enum!(EndRule, "end", Either => "either", Mover => "mover");

impl Rules {
    /// Every combination of the three rule axes for a given board, for exhaustive tests.
    pub fn all_variants(houses: usize, seeds: u32) -> Vec<Rules> {
        let mut out = Vec::new();
        for &capture in Capture::ALL {
            for &leftover in Leftover::ALL {
                for &end in EndRule::ALL {
                    out.push(Rules {
                        houses,
                        seeds,
                        capture,
                        leftover,
                        end,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for r in Rules::all_variants(6, 4) {
            assert_eq!(r.capture.name().parse::<Capture>().unwrap(), r.capture);
            assert_eq!(r.leftover.name().parse::<Leftover>().unwrap(), r.leftover);
            assert_eq!(r.end.name().parse::<EndRule>().unwrap(), r.end);
            assert_eq!(Capture::from_code(r.capture.code()), Some(r.capture));
        }
        assert!("sometimes".parse::<Capture>().is_err());
        assert_eq!(Rules::all_variants(4, 3).len(), 18);
    }

    #[test]
    fn validate_limits() {
        assert!(Rules::standard(6, 6).validate().is_ok());
        assert!(Rules::standard(0, 3).validate().is_err());
        assert!(Rules::standard(9, 3).validate().is_err());
        assert!(Rules::standard(6, 22).validate().is_err());
    }
}
