//! Plain exhaustive search with a memo of every board seen: exact, simple, and only for small
//! boards. The databases and the driver's search are checked against it and against the naive
//! reference minimax of the tests.

use crate::board::Board;
use crate::rules::Rules;
use std::collections::HashMap;

/// Memoised exhaustive negamax over boards.
#[derive(Debug)]
pub struct Exhaustive {
    rules: Rules,
    memo: HashMap<Board, i16>,
}

impl Exhaustive {
    /// A search for `rules` with an empty memo.
    pub fn new(rules: Rules) -> Exhaustive {
        Exhaustive {
            rules,
            memo: HashMap::new(),
        }
    }

    /// Boards whose value is memoised.
    pub fn len(&self) -> usize {
        self.memo.len()
    }

    /// Whether nothing is memoised yet.
    pub fn is_empty(&self) -> bool {
        self.memo.is_empty()
    }

    /// The value of `board` for the player to move.
    pub fn value(&mut self, board: &Board) -> i32 {
        if let Some(v) = board.final_value(&self.rules) {
            return v;
        }
        if let Some(&v) = self.memo.get(board) {
            return v as i32;
        }
        let mut best = i32::MIN;
        for h in board.legal_houses() {
            let v = self.move_value(board, h);
            best = best.max(v);
        }
        self.memo.insert(*board, best as i16);
        best
    }

    /// The value of sowing `house` (0-based) first, for the player to move.
    pub fn move_value(&mut self, board: &Board, house: usize) -> i32 {
        let s = board.sow(&self.rules, house);
        let next = self.value(&s.next());
        s.value_with(next)
    }
}
