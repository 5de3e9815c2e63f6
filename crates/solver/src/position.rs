//! A full position of a real game: both sides' houses, both stores and the side to move.

use crate::board::{Board, Sowing};
use crate::rules::{Leftover, Rules};
use std::fmt;

/// A player. South moves first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The first player, whose houses are drawn at the bottom.
    South,
    /// The second player, whose houses are drawn at the top.
    North,
}

impl Side {
    /// The other player.
    pub fn other(self) -> Side {
        match self {
            Side::South => Side::North,
            Side::North => Side::South,
        }
    }

    /// 0 for South, 1 for North.
    pub fn index(self) -> usize {
        self as usize
    }

    /// `"south"` or `"north"`.
    pub fn name(self) -> &'static str {
        match self {
            Side::South => "south",
            Side::North => "north",
        }
    }

    /// `'S'` or `'N'`, as in the full notation.
    pub fn letter(self) -> char {
        match self {
            Side::South => 'S',
            Side::North => 'N',
        }
    }
}

/// A position: the houses (mover's side first), the stores and the player to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    board: Board,
    to_move: Side,
    stores: [u32; 2],
}

/// The result of a finished game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Score {
    /// South's store after the seeds left in the houses are settled.
    pub south: u32,
    /// North's store after the settlement.
    pub north: u32,
}

impl Position {
    /// A position from its parts. `stores` is indexed by [`Side::index`].
    pub fn new(board: Board, to_move: Side, stores: [u32; 2]) -> Position {
        Position {
            board,
            to_move,
            stores,
        }
    }

    /// The start of a game: every house holds `rules.seeds`, South to move.
    pub fn start(rules: &Rules) -> Position {
        Position::new(Board::start(rules), Side::South, [0, 0])
    }

    /// The houses, the side to move first.
    pub fn board(&self) -> Board {
        self.board
    }

    /// The player to move.
    pub fn to_move(&self) -> Side {
        self.to_move
    }

    /// The seeds in `side`'s store.
    pub fn store(&self, side: Side) -> u32 {
        self.stores[side.index()]
    }

    /// `side`'s houses in that side's sowing order.
    pub fn houses(&self, side: Side) -> &[u8] {
        if side == self.to_move {
            self.board.mover()
        } else {
            self.board.opponent()
        }
    }

    /// The mover's store minus the opponent's store.
    pub fn store_lead(&self) -> i32 {
        self.store(self.to_move) as i32 - self.store(self.to_move.other()) as i32
    }

    /// Plays the mover's house `house` (0-based) and returns the new position and what the
    /// sowing did.
    pub fn play(&self, rules: &Rules, house: usize) -> (Position, Sowing) {
        let sowing = self.board.sow(rules, house);
        let mut stores = self.stores;
        stores[self.to_move.index()] += sowing.gain;
        let to_move = if sowing.extra_turn {
            self.to_move
        } else {
            self.to_move.other()
        };
        (Position::new(sowing.next(), to_move, stores), sowing)
    }

    /// The final score if the game is over under `rules`, with the seeds left in the houses
    /// settled by the leftover rule.
    pub fn final_score(&self, rules: &Rules) -> Option<Score> {
        self.board.final_value(rules)?;
        let mover = self.to_move.index();
        let mut stores = self.stores;
        let mine = self.board.mover_seeds();
        let theirs = self.board.opponent_seeds();
        match rules.leftover {
            Leftover::Owner => {
                stores[mover] += mine;
                stores[1 - mover] += theirs;
            }
            Leftover::Emptier => {
                if mine == 0 {
                    stores[mover] += theirs;
                } else {
                    stores[1 - mover] += mine;
                }
            }
            Leftover::Discard => {}
        }
        Some(Score {
            south: stores[0],
            north: stores[1],
        })
    }

    /// The full notation: `S: <South's houses> [<South's store>] / <North's houses> [<North's
    /// store>]`, with `S` or `N` naming the player to move.
    pub fn full(&self) -> String {
        let join = |side: &[u8]| {
            side.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        format!(
            "{}: {} [{}] / {} [{}]",
            self.to_move.letter(),
            join(self.houses(Side::South)),
            self.store(Side::South),
            join(self.houses(Side::North)),
            self.store(Side::North)
        )
    }
}

/// The full notation (see [`Position::full`]).
impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full())
    }
}
