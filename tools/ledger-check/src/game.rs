//! The rules of Kalah, written from the text of the project's README ("Rules and variants",
//! "Values") and nothing else: a plain board, sown one seed at a time.
//!
//! A board holds the seeds in the houses only, as the player to move sees it: the mover's
//! houses 1..M, then the opponent's houses 1..M, each side in its own sowing order (house 1
//! is the farthest from that side's store). Stores are left out: they never lose seeds, so
//! what is still to be won depends on the houses alone. The *value* of a board is the net
//! number of seeds the player to move will still gain from the seeds in the houses, with
//! perfect play by both sides.

use std::fmt;

/// What a last seed in an empty house of the mover's own does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// The seed and the opposite seeds go to the mover's store, if the opposite house holds
    /// seeds.
    Standard,
    /// The seed goes to the mover's store with whatever is opposite, even nothing.
    Empty,
    /// No captures.
    Never,
}

/// Who gets the seeds left in the houses when the game ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// Each side's seeds go to that side's owner.
    Owner,
    /// The player whose side is empty takes everything left on the other side.
    Emptier,
    /// Seeds left count for nobody.
    Discard,
}

/// When the game ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// As soon as either side has no seeds, checked after every move.
    Either,
    /// Only when the player to move has no seeds.
    Mover,
}

/// A rule set: board size, starting seeds, the three rule axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Houses per side.
    pub houses: usize,
    /// Seeds in every house at the start.
    pub seeds: u32,
    /// The capture rule.
    pub capture: Capture,
    /// The leftover rule.
    pub leftover: Leftover,
    /// The end rule.
    pub end: End,
}

impl Capture {
    /// The name used in ledgers and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Capture::Standard => "standard",
            Capture::Empty => "empty",
            Capture::Never => "never",
        }
    }

    /// The rule named `s`.
    pub fn from_name(s: &str) -> Option<Capture> {
        [Capture::Standard, Capture::Empty, Capture::Never]
            .into_iter()
            .find(|c| c.name() == s)
    }
}

impl Leftover {
    /// The name used in ledgers and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Leftover::Owner => "owner",
            Leftover::Emptier => "emptier",
            Leftover::Discard => "discard",
        }
    }

    /// The rule named `s`.
    pub fn from_name(s: &str) -> Option<Leftover> {
        [Leftover::Owner, Leftover::Emptier, Leftover::Discard]
            .into_iter()
            .find(|c| c.name() == s)
    }
}

impl End {
    /// The name used in ledgers and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            End::Either => "either",
            End::Mover => "mover",
        }
    }

    /// The rule named `s`.
    pub fn from_name(s: &str) -> Option<End> {
        [End::Either, End::Mover]
            .into_iter()
            .find(|c| c.name() == s)
    }
}

impl Rules {
    /// Standard Kalah with `houses` houses and `seeds` seeds a house.
    pub fn kalah(houses: usize, seeds: u32) -> Rules {
        Rules {
            houses,
            seeds,
            capture: Capture::Standard,
            leftover: Leftover::Owner,
            end: End::Either,
        }
    }

    /// Whether final margins and values always have the parity of the seeds: every seed ends
    /// in a store unless the leftover rule discards some.
    pub fn values_have_parity(&self) -> bool {
        self.leftover != Leftover::Discard
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

/// The houses of both sides, seen by the player to move.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Board {
    /// The mover's houses, house 1 first.
    pub mover: Vec<u8>,
    /// The opponent's houses, the opponent's house 1 first.
    pub opponent: Vec<u8>,
}

/// What one move did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The board after the move, seen by the player to move next (the same player after an
    /// extra turn, the other one otherwise).
    pub next: Board,
    /// Seeds the move put in the mover's store, captured seeds included.
    pub gain: i32,
    /// The last seed landed in the mover's store: the mover moves again.
    pub extra_turn: bool,
    /// Seeds taken from the opposite house by a capture (`Some(0)`: an empty capture of an
    /// empty house); `None` without a capture.
    pub captured: Option<u32>,
}

impl Board {
    /// The start position of `rules`.
    pub fn start(rules: &Rules) -> Board {
        let side = vec![rules.seeds as u8; rules.houses];
        Board {
            mover: side.clone(),
            opponent: side,
        }
    }

    /// Reads the short form "mover's houses / opponent's houses" (numbers separated by spaces
    /// and/or commas), `houses` numbers a side.
    pub fn parse(text: &str, houses: usize) -> Result<Board, String> {
        let (a, b) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?}: no '/' between the two sides"))?;
        let side = |s: &str| -> Result<Vec<u8>, String> {
            let v: Vec<u8> = s
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|w| !w.is_empty())
                .map(|w| {
                    w.parse::<u8>()
                        .map_err(|_| format!("{text:?}: {w:?} is not a number of seeds"))
                })
                .collect::<Result<_, _>>()?;
            if v.len() != houses {
                return Err(format!(
                    "{text:?}: a side has {} houses, not {houses}",
                    v.len()
                ));
            }
            Ok(v)
        };
        let board = Board {
            mover: side(a)?,
            opponent: side(b)?,
        };
        if board.seeds() > 255 {
            return Err(format!("{text:?}: more than 255 seeds"));
        }
        Ok(board)
    }

    /// Seeds in all houses.
    pub fn seeds(&self) -> u32 {
        self.mover_seeds() + self.opponent_seeds()
    }

    /// Seeds on the mover's side.
    pub fn mover_seeds(&self) -> u32 {
        self.mover.iter().map(|&s| s as u32).sum()
    }

    /// Seeds on the opponent's side.
    pub fn opponent_seeds(&self) -> u32 {
        self.opponent.iter().map(|&s| s as u32).sum()
    }

    /// The same houses seen by the other player.
    pub fn turned(&self) -> Board {
        Board {
            mover: self.opponent.clone(),
            opponent: self.mover.clone(),
        }
    }

    /// If the game is over on this board, its value for the player to move: the settlement
    /// of the seeds left by the leftover rule. `None` while the game goes on.
    pub fn final_value(&self, rules: &Rules) -> Option<i32> {
        let mine = self.mover_seeds() as i32;
        let theirs = self.opponent_seeds() as i32;
        let over = match rules.end {
            End::Either => mine == 0 || theirs == 0,
            End::Mover => mine == 0,
        };
        if !over {
            return None;
        }
        Some(match rules.leftover {
            Leftover::Owner => mine - theirs,
            Leftover::Discard => 0,
            Leftover::Emptier => {
                if mine == 0 {
                    // The mover's side is empty: the mover takes the rest.
                    theirs
                } else {
                    // Only the opponent's side is empty: the opponent takes the mover's seeds.
                    -mine
                }
            }
        })
    }

    /// The moves of the player to move: the non-empty houses (1-based), none if the game is
    /// over.
    pub fn moves(&self, rules: &Rules) -> Vec<usize> {
        if self.final_value(rules).is_some() {
            return Vec::new();
        }
        (1..=self.mover.len())
            .filter(|&h| self.mover[h - 1] > 0)
            .collect()
    }

    /// Plays the mover's house `house` (1-based): an error if the game is over, or the house
    /// does not exist or is empty.
    pub fn play(&self, rules: &Rules, house: usize) -> Result<Move, String> {
        let m = self.mover.len();
        if self.final_value(rules).is_some() {
            return Err(format!("the game is over on {self}"));
        }
        if house == 0 || house > m {
            return Err(format!("there is no house {house}"));
        }
        if self.mover[house - 1] == 0 {
            return Err(format!("house {house} is empty on {self}"));
        }
        // The round the seeds go: the mover's houses 1..M (pits 0..M-1), the mover's store
        // (pit M), the opponent's houses 1..M (pits M+1..2M). The opponent's store is not on
        // it. The house the sowing starts from is, so a sowing of 2M+1 seeds or more drops
        // seeds in it too.
        let store = m;
        let mut pits: Vec<u32> = Vec::with_capacity(2 * m + 1);
        pits.extend(self.mover.iter().map(|&s| s as u32));
        pits.push(0);
        pits.extend(self.opponent.iter().map(|&s| s as u32));
        let mut at = house - 1;
        let mut hand = pits[at];
        pits[at] = 0;
        while hand > 0 {
            at = (at + 1) % pits.len();
            pits[at] += 1;
            hand -= 1;
        }
        let extra_turn = at == store;
        let mut captured = None;
        // The last seed in a house of the mover's own that was empty (it holds that one seed
        // now). The mover's house i faces the opponent's house M + 1 - i.
        if at < m && pits[at] == 1 {
            let i = at + 1;
            let opposite = store + (m + 1 - i);
            let take = match rules.capture {
                Capture::Standard => pits[opposite] > 0,
                Capture::Empty => true,
                Capture::Never => false,
            };
            if take {
                captured = Some(pits[opposite]);
                pits[store] += pits[opposite] + 1;
                pits[opposite] = 0;
                pits[at] = 0;
            }
        }
        let after = Board {
            mover: pits[..m].iter().map(|&s| s as u8).collect(),
            opponent: pits[m + 1..].iter().map(|&s| s as u8).collect(),
        };
        Ok(Move {
            next: if extra_turn { after } else { after.turned() },
            gain: pits[store] as i32,
            extra_turn,
            captured,
        })
    }
}

/// The short form: the mover's houses, `/`, the opponent's houses.
impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |v: &[u8]| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        write!(f, "{} / {}", side(&self.mover), side(&self.opponent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(text: &str) -> Board {
        Board::parse(
            text,
            text.split('/').next().unwrap().split_whitespace().count(),
        )
        .unwrap()
    }

    fn rules(houses: usize, capture: Capture, leftover: Leftover, end: End) -> Rules {
        Rules {
            houses,
            seeds: 0,
            capture,
            leftover,
            end,
        }
    }

    fn std6() -> Rules {
        Rules::kalah(6, 4)
    }

    #[test]
    fn notation_reads_and_writes() {
        let x = Board::parse("1,2 3 4 5 6/ 7 8 9 10 11 12", 6).unwrap();
        assert_eq!(x.mover, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(x.opponent, vec![7, 8, 9, 10, 11, 12]);
        assert_eq!(x.to_string(), "1 2 3 4 5 6 / 7 8 9 10 11 12");
        assert!(Board::parse("1 2 3 / 1 2", 3).is_err());
        assert!(Board::parse("1 2 3 1 2 3", 3).is_err());
        assert!(Board::parse("1 x 3 / 1 2 3", 3).is_err());
        assert!(Board::parse("200 0 0 / 100 0 0", 3).is_err());
    }

    #[test]
    fn a_plain_sowing_passes_the_turn() {
        // 4-seed Kalah, South opens with house 2: houses 3, 4, 5, 6 get a seed each.
        let mv = Board::start(&std6()).play(&std6(), 2).unwrap();
        assert!(!mv.extra_turn);
        assert_eq!(mv.gain, 0);
        assert_eq!(mv.captured, None);
        // North to move: North's houses first.
        assert_eq!(mv.next, b("4 4 4 4 4 4 / 4 0 5 5 5 5"));
    }

    #[test]
    fn the_last_seed_in_the_store_is_an_extra_turn() {
        // House 3 of 4-seed Kalah: 4 seeds to houses 4, 5, 6 and the store.
        let mv = Board::start(&std6()).play(&std6(), 3).unwrap();
        assert!(mv.extra_turn);
        assert_eq!(mv.gain, 1);
        // The same player moves again: the board is not turned.
        assert_eq!(mv.next, b("4 4 0 5 5 5 / 4 4 4 4 4 4"));
    }

    #[test]
    fn sowing_goes_round_skipping_the_opponents_store() {
        // House 6 with 8 seeds on 6 houses: store, opponent's 1..6, then own house 1.
        let x = b("0 0 0 0 0 8 / 0 0 0 0 0 1");
        let mv = x.play(&std6(), 6).unwrap();
        // Own house 1 was empty and gets the last seed; it faces the opponent's house 6,
        // which now holds 2 seeds: a capture of 2 + 1.
        assert_eq!(mv.captured, Some(2));
        assert_eq!(mv.gain, 1 + 3);
        assert_eq!(mv.next, b("1 1 1 1 1 0 / 0 0 0 0 0 0"));
    }

    #[test]
    fn captures_in_each_variant() {
        // South's house 1 (1 seed) into the empty house 2, which faces North's house 5.
        let with_seeds = b("1 0 0 0 0 1 / 0 0 0 0 3 0");
        let empty_opposite = b("1 0 0 0 0 1 / 0 0 0 0 0 3");
        for (capture, seeds_taken, nothing_taken) in [
            (Capture::Standard, Some(3), None),
            (Capture::Empty, Some(3), Some(0)),
            (Capture::Never, None, None),
        ] {
            let r = rules(6, capture, Leftover::Owner, End::Either);
            let mv = with_seeds.play(&r, 1).unwrap();
            assert_eq!(mv.captured, seeds_taken, "{capture:?}");
            if seeds_taken.is_some() {
                assert_eq!(mv.gain, 4);
                // North to move, with nothing in house 5 any more.
                assert_eq!(mv.next, b("0 0 0 0 0 0 / 0 0 0 0 0 1"));
            } else {
                assert_eq!(mv.gain, 0);
                assert_eq!(mv.next, b("0 0 0 0 3 0 / 0 1 0 0 0 1"));
            }
            let mv = empty_opposite.play(&r, 1).unwrap();
            assert_eq!(mv.captured, nothing_taken, "{capture:?}");
            if nothing_taken.is_some() {
                // Empty capture: the lone seed goes to the store.
                assert_eq!(mv.gain, 1);
                assert_eq!(mv.next, b("0 0 0 0 0 3 / 0 0 0 0 0 1"));
            } else {
                assert_eq!(mv.gain, 0);
                assert_eq!(mv.next, b("0 0 0 0 0 3 / 0 1 0 0 0 1"));
            }
        }
        // A last seed in a house of the opponent's never captures, and neither does one in a
        // house of the mover's that held seeds.
        let r = rules(6, Capture::Empty, Leftover::Owner, End::Either);
        let mv = b("0 0 0 0 0 2 / 0 1 1 0 0 0").play(&r, 6).unwrap();
        assert_eq!(mv.captured, None);
        assert_eq!(mv.next, b("1 1 1 0 0 0 / 0 0 0 0 0 0"));
        let mv = b("1 1 0 0 0 0 / 3 3 3 3 3 3").play(&r, 1).unwrap();
        assert_eq!(mv.captured, None);
        assert_eq!(mv.next, b("3 3 3 3 3 3 / 0 2 0 0 0 0"));
    }

    #[test]
    fn a_sowing_of_2m_plus_1_seeds_drops_one_in_its_own_house() {
        // 4 houses: 2M + 1 = 9 seeds from house 2 go round once: houses 3, 4, the store,
        // North's 1..4, South's 1, and the last into house 2 itself, which was emptied: a
        // capture of the opposite house 3 (which got one seed on the way) under standard
        // rules. (The game ends only when the mover has no seeds, so that North's empty side
        // does not end it before the move.)
        let r = rules(4, Capture::Standard, Leftover::Owner, End::Mover);
        let x = b("0 9 0 0 / 0 0 0 0");
        let mv = x.play(&r, 2).unwrap();
        assert_eq!(mv.captured, Some(1));
        assert_eq!(mv.gain, 1 + 2);
        assert_eq!(mv.next, b("1 1 0 1 / 1 0 1 1"));
        // Without captures the seed stays in the house it started from.
        let r = rules(4, Capture::Never, Leftover::Owner, End::Mover);
        let mv = x.play(&r, 2).unwrap();
        assert_eq!(mv.gain, 1);
        assert_eq!(mv.next, b("1 1 1 1 / 1 1 1 1"));
        // 11 seeds: two more, into houses 3 and 4 (their second seed each).
        let mv = b("0 11 0 0 / 0 0 0 0").play(&r, 2).unwrap();
        assert_eq!(mv.next, b("1 1 1 1 / 1 1 2 2"));
        assert_eq!(mv.gain, 1);
        // 11 seeds from house 3: a lap and two more, the last in the store: an extra turn
        // (the board is not turned), two seeds in the store.
        let mv = b("0 0 11 0 / 0 0 0 0").play(&r, 3).unwrap();
        assert!(mv.extra_turn);
        assert_eq!(mv.gain, 2);
        assert_eq!(mv.next, b("1 1 1 2 / 1 1 1 1"));
        // 18 seeds are two whole laps: two seeds in every pit, the house they came from
        // included, the last of them there; it held a seed before that one, so no capture.
        let r = rules(4, Capture::Empty, Leftover::Owner, End::Mover);
        let mv = b("0 18 0 0 / 0 0 0 0").play(&r, 2).unwrap();
        assert_eq!(mv.captured, None);
        assert!(!mv.extra_turn);
        assert_eq!(mv.gain, 2);
        assert_eq!(mv.next, b("2 2 2 2 / 2 2 2 2"));
    }

    #[test]
    fn illegal_moves_are_errors() {
        let r = std6();
        let x = b("0 1 0 0 0 0 / 1 0 0 0 0 0");
        assert!(x.play(&r, 1).is_err());
        assert!(x.play(&r, 0).is_err());
        assert!(x.play(&r, 7).is_err());
        assert_eq!(x.moves(&r), vec![2]);
        let over = b("0 0 0 0 0 0 / 1 0 0 0 0 0");
        assert!(over.play(&r, 1).is_err());
        assert!(over.moves(&r).is_empty());
    }

    #[test]
    fn end_and_leftover_rules() {
        // The opponent's side is empty, the mover holds 5.
        let theirs_empty = b("2 3 0 / 0 0 0");
        // The mover's side is empty, the opponent holds 4.
        let mine_empty = b("0 0 0 / 1 3 0");
        let both = b("0 0 0 / 0 0 0");
        let going = b("1 0 0 / 0 2 0");
        for (leftover, end, a, c) in [
            (Leftover::Owner, End::Either, Some(5), Some(-4)),
            (Leftover::Emptier, End::Either, Some(-5), Some(4)),
            (Leftover::Discard, End::Either, Some(0), Some(0)),
            (Leftover::Owner, End::Mover, None, Some(-4)),
            (Leftover::Emptier, End::Mover, None, Some(4)),
            (Leftover::Discard, End::Mover, None, Some(0)),
        ] {
            let r = rules(3, Capture::Standard, leftover, end);
            assert_eq!(theirs_empty.final_value(&r), a, "{leftover:?} {end:?}");
            assert_eq!(mine_empty.final_value(&r), c, "{leftover:?} {end:?}");
            assert_eq!(both.final_value(&r), Some(0));
            assert_eq!(going.final_value(&r), None);
        }
        // Under `mover` the game goes on while the mover has seeds, the opponent none.
        let r = rules(3, Capture::Standard, Leftover::Owner, End::Mover);
        assert_eq!(theirs_empty.moves(&r), vec![1, 2]);
        // Sowing house 2 (3 seeds): house 3, the store, North's house 1. North to move.
        let mv = theirs_empty.play(&r, 2).unwrap();
        assert_eq!(mv.next, b("1 0 0 / 2 0 1"));
        assert_eq!(mv.next.final_value(&r), None);
        // Under `either`, a move that empties the mover's own side ends the game at once,
        // whoever is to move next.
        let r = rules(3, Capture::Standard, Leftover::Owner, End::Either);
        let mv = b("0 0 1 / 1 1 0").play(&r, 3).unwrap();
        assert!(mv.extra_turn);
        assert_eq!(mv.next.final_value(&r), Some(-2));
        let r = rules(3, Capture::Standard, Leftover::Emptier, End::Either);
        assert_eq!(mv.next.final_value(&r), Some(2));
    }

    #[test]
    fn rule_names_round_trip() {
        for c in [Capture::Standard, Capture::Empty, Capture::Never] {
            assert_eq!(Capture::from_name(c.name()), Some(c));
        }
        for l in [Leftover::Owner, Leftover::Emptier, Leftover::Discard] {
            assert_eq!(Leftover::from_name(l.name()), Some(l));
        }
        for e in [End::Either, End::Mover] {
            assert_eq!(End::from_name(e.name()), Some(e));
        }
        assert_eq!(Capture::from_name("all"), None);
        assert_eq!(
            Rules::kalah(6, 6).to_string(),
            "6 houses, 6 seeds, capture standard, leftover owner, end either"
        );
    }
}
