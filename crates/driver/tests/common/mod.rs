//! Helpers shared by the driver's tests: a small in-memory endgame table.
#![allow(dead_code)]

use kalah_solver::{Board, DbError, Endgame, Exhaustive, Rules};
use std::collections::HashMap;

/// Every board with at most `max` seeds, valued by [`Exhaustive`], in a hash map.
pub struct MemEndgame {
    max: u32,
    values: HashMap<Board, i32>,
}

fn boards(m: usize, seeds: u32, cell: usize, cells: &mut Vec<u8>, out: &mut Vec<Board>) {
    if cell == 2 * m - 1 {
        cells[cell] = seeds as u8;
        out.push(Board::new(&cells[..m], &cells[m..]));
        return;
    }
    for s in 0..=seeds {
        cells[cell] = s as u8;
        boards(m, seeds - s, cell + 1, cells, out);
    }
}

impl MemEndgame {
    /// The table for `rules` up to `max` seeds.
    pub fn new(rules: &Rules, max: u32) -> MemEndgame {
        let mut ex = Exhaustive::new(rules.play_rules());
        let mut values = HashMap::new();
        let m = rules.houses;
        for s in 0..=max {
            let mut all = Vec::new();
            boards(m, s, 0, &mut vec![0; 2 * m], &mut all);
            for b in all {
                values.insert(b, ex.value(&b));
            }
        }
        MemEndgame { max, values }
    }
}

impl Endgame for MemEndgame {
    fn max_seeds(&self) -> u32 {
        self.max
    }

    fn probe(&self, board: &Board) -> Result<Option<i32>, DbError> {
        if board.seeds() > self.max {
            return Ok(None);
        }
        Ok(Some(self.values[board]))
    }
}
