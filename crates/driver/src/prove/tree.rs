//! The top of the proof tree that the coordinator keeps, with proof and disproof numbers.
//!
//! Every node asks "is the value of this board, for the player to move, at least `t`?". A
//! move with an extra turn leads to the same question for the same player (`t - gain`); any
//! other move to the opponent's question `gain - t + 1`, whose answer is the negation. A node
//! holds if one of its moves does. Proof and disproof numbers are kept in the negamax form
//! (each node's own question): `phi` estimates the units needed to show it holds, `delta` the
//! units needed to show it fails. The most-proving leaf is found by descending from the root
//! to the child with the least contribution to `phi`, as in proof-number search; leaves whose
//! units are being proven count as infinite, so that several workers get different leaves.

use kalah_solver::{Board, Rules};
use std::collections::HashMap;

/// An infinite proof or disproof number.
pub const INF: u64 = u64::MAX / 4;

/// What is known of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// A unit to prove.
    Leaf,
    /// Its unit is being proven.
    InFlight,
    /// Split into its moves.
    Expanded,
    /// Settled: whether the question holds.
    Solved(bool),
}

/// A node of the tree.
#[derive(Clone, Debug)]
pub struct Node {
    /// The position, mover first.
    pub board: Board,
    /// The threshold asked.
    pub threshold: i32,
    /// Moves from the root.
    pub path: Vec<usize>,
    /// The node budget for its unit.
    pub budget: u64,
    /// What is known.
    pub state: State,
    parent: Option<usize>,
    /// The answer here is the negation of the child's (the turn passed).
    flip: bool,
    children: Vec<usize>,
    phi: u64,
    delta: u64,
}

/// A child question of a node: the move, the board and threshold, and whether its answer is
/// negated for the parent.
#[derive(Clone, Debug)]
pub struct Question {
    /// The move (0-based house).
    pub house: usize,
    /// The board after it, for the player to move there.
    pub board: Board,
    /// The threshold of the child's question.
    pub threshold: i32,
    /// The turn passed: the parent holds through this move if the child fails.
    pub flip: bool,
}

/// The questions a node `board`/`t` is made of, one per legal move.
pub fn questions(rules: &Rules, board: &Board, t: i32) -> Vec<Question> {
    board
        .legal_houses()
        .map(|h| {
            let s = board.sow(rules, h);
            let gain = s.gain as i32;
            if s.extra_turn {
                Question {
                    house: h,
                    board: s.next(),
                    threshold: t - gain,
                    flip: false,
                }
            } else {
                Question {
                    house: h,
                    board: s.next(),
                    threshold: gain - t + 1,
                    flip: true,
                }
            }
        })
        .collect()
}

/// The question about the position after the opening move `house` (0-based, legal at the
/// start) whose answer, negated where the turn passes (`flip`), says whether South's value
/// after that move is at least `t`.
pub fn opening_question(rules: &Rules, house: usize, t: i32) -> Question {
    questions(rules, &Board::start(rules), t)
        .into_iter()
        .find(|q| q.house == house)
        .expect("a legal opening move")
}

/// Every first turn of South at the start: one move, or a move whose last seed lands in
/// South's store followed by a first turn from there, until the turn passes or the game
/// ends (0-based houses, in the order houses are tried).
pub fn first_turns(rules: &Rules) -> Vec<Vec<usize>> {
    fn walk(rules: &Rules, board: &Board, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        for h in board.legal_houses() {
            let s = board.sow(rules, h);
            let next = s.next();
            path.push(h);
            if s.extra_turn && next.final_value(rules).is_none() {
                walk(rules, &next, path, out);
            } else {
                out.push(path.clone());
            }
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(rules, &Board::start(rules), &mut Vec::new(), &mut out);
    out
}

/// The question about the position after the first turn `moves` (0-based houses from the
/// start) whose answer, negated where the turn passed (`flip`), says whether South's final
/// margin after that turn is at least `t`; `house` is the turn's last move. An error if
/// `moves` is not a first turn (an illegal move, a move before the last that passes the turn
/// or ends the game, or a last move that leaves South to move in a game not over).
pub fn turn_question(rules: &Rules, moves: &[usize], t: i32) -> Result<Question, String> {
    let mut q = Question {
        house: 0,
        board: Board::start(rules),
        threshold: t,
        flip: false,
    };
    for (i, &h) in moves.iter().enumerate() {
        let last = i + 1 == moves.len();
        let child = questions(rules, &q.board, q.threshold)
            .into_iter()
            .find(|c| c.house == h)
            .ok_or_else(|| format!("move {} of the first turn is not legal", i + 1))?;
        let passes = child.flip;
        let over = child.board.final_value(rules).is_some();
        if !last && (passes || over) {
            return Err(format!(
                "move {} of the first turn ends it before its last move",
                i + 1
            ));
        }
        if last && !passes && !over {
            return Err("the first turn's last move leaves South to move again".into());
        }
        q = Question {
            house: h,
            board: child.board,
            threshold: child.threshold,
            flip: q.flip != child.flip,
        };
    }
    if moves.is_empty() {
        return Err("a first turn has at least one move".into());
    }
    Ok(q)
}

/// How a new child starts: settled, or with estimated proof and disproof numbers.
#[derive(Clone, Copy, Debug)]
pub enum Start {
    /// Already known.
    Solved(bool),
    /// Estimated numbers (`phi`, `delta`).
    Estimate(u64, u64),
}

/// The tree of one root question.
pub struct Tree {
    nodes: Vec<Node>,
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b).min(INF)
}

/// Proof and disproof numbers `(phi, delta)` seen from the other side where `flip` (the turn
/// passes, so proving the question disproves its negation): the pair swapped.
pub(crate) fn swap_if(flip: bool, (phi, delta): (u64, u64)) -> (u64, u64) {
    if flip {
        (delta, phi)
    } else {
        (phi, delta)
    }
}

impl Tree {
    /// A tree of one leaf: the root question `board`/`t`.
    pub fn new(board: Board, t: i32, budget: u64) -> Tree {
        Tree::at(board, Vec::new(), t, budget)
    }

    /// A tree of one leaf, the question `board`/`t` about the position that the moves `path`
    /// lead to from the start (the paths of its nodes start with them).
    pub fn at(board: Board, path: Vec<usize>, t: i32, budget: u64) -> Tree {
        Tree {
            nodes: vec![Node {
                board,
                threshold: t,
                path,
                budget,
                state: State::Leaf,
                parent: None,
                flip: false,
                children: Vec::new(),
                phi: 1,
                delta: 1,
            }],
        }
    }

    /// The node `i`.
    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    /// Nodes in the tree.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree holds no node (never: it has its root).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The answer at the root, once settled.
    pub fn result(&self) -> Option<bool> {
        match self.nodes[0].state {
            State::Solved(v) => Some(v),
            _ => None,
        }
    }

    /// The root's proof and disproof numbers, for reports: leaves in flight count with their
    /// own estimates here (selection counts them as infinite, which would show a question
    /// under way as if it were settled).
    pub fn numbers(&self) -> (u64, u64) {
        self.calm(0)
    }

    fn calm(&self, i: usize) -> (u64, u64) {
        let n = &self.nodes[i];
        match n.state {
            State::Expanded => self.over_children(i, |c| self.calm(c)),
            _ => (n.phi, n.delta),
        }
    }

    /// The numbers of the split node `i` from its children's, each child's own numbers
    /// read by `child` (and swapped where the turn passes): a node holds if one move does.
    fn over_children(&self, i: usize, child: impl Fn(usize) -> (u64, u64)) -> (u64, u64) {
        let mut phi = INF;
        let mut delta = 0;
        for &c in &self.nodes[i].children {
            let (p, d) = swap_if(self.nodes[c].flip, child(c));
            phi = phi.min(p);
            delta = add(delta, d);
        }
        (phi, delta)
    }

    /// Leaves not yet settled and not in flight, and leaves in flight.
    pub fn open_counts(&self) -> (usize, usize) {
        let mut open = 0;
        let mut flying = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            if self.settled_above(i) {
                continue;
            }
            match n.state {
                State::Leaf => open += 1,
                State::InFlight => flying += 1,
                _ => {}
            }
        }
        (open, flying)
    }

    /// Whether `i` or an ancestor is settled (so that `i` no longer matters).
    fn settled_above(&self, mut i: usize) -> bool {
        loop {
            if let State::Solved(_) = self.nodes[i].state {
                return true;
            }
            match self.nodes[i].parent {
                Some(p) => i = p,
                None => return false,
            }
        }
    }

    /// A node's own numbers as selection counts them: infinite while in flight.
    fn pending(&self, c: usize) -> (u64, u64) {
        let n = &self.nodes[c];
        match n.state {
            State::InFlight => (INF, INF),
            _ => (n.phi, n.delta),
        }
    }

    /// The child's contribution to its parent's (phi, delta).
    fn contribution(&self, c: usize) -> (u64, u64) {
        swap_if(self.nodes[c].flip, self.pending(c))
    }

    /// The most-proving leaf that is not in flight, if any.
    pub fn select(&self) -> Option<usize> {
        if self.result().is_some() {
            return None;
        }
        self.select_from(0)
    }

    fn select_from(&self, i: usize) -> Option<usize> {
        match self.nodes[i].state {
            State::Leaf => Some(i),
            State::InFlight | State::Solved(_) => None,
            State::Expanded => {
                let mut order: Vec<(u64, u64, usize)> = self.nodes[i]
                    .children
                    .iter()
                    .filter(|&&c| matches!(self.nodes[c].state, State::Leaf | State::Expanded))
                    .map(|&c| {
                        let (p, d) = self.contribution(c);
                        (p, d, c)
                    })
                    .collect();
                order.sort();
                order.into_iter().find_map(|(_, _, c)| self.select_from(c))
            }
        }
    }

    /// Marks the leaf `i` as being proven.
    pub fn start(&mut self, i: usize) {
        debug_assert_eq!(self.nodes[i].state, State::Leaf);
        self.nodes[i].state = State::InFlight;
        self.update(i);
    }

    /// Puts the leaf `i` back (its unit is to run again with `budget`).
    pub fn retry(&mut self, i: usize, budget: u64) {
        let n = &mut self.nodes[i];
        n.budget = budget;
        if n.state == State::InFlight {
            n.state = State::Leaf;
        }
        self.update(i);
    }

    /// Settles node `i` (a leaf, in flight or not).
    pub fn solve(&mut self, i: usize, holds: bool) {
        if let State::Solved(_) = self.nodes[i].state {
            return;
        }
        self.nodes[i].state = State::Solved(holds);
        self.update(i);
    }

    /// Splits the leaf `i` into its moves; `kids` gives each child question with how it
    /// starts, and the budget of each child's unit.
    pub fn expand(&mut self, i: usize, kids: Vec<(Question, Start)>, budget: u64) {
        let mut ids = Vec::with_capacity(kids.len());
        for (q, start) in kids {
            let mut path = self.nodes[i].path.clone();
            path.push(q.house);
            let (state, phi, delta) = match start {
                Start::Solved(true) => (State::Solved(true), 0, INF),
                Start::Solved(false) => (State::Solved(false), INF, 0),
                Start::Estimate(p, d) => (State::Leaf, p.max(1), d.max(1)),
            };
            ids.push(self.nodes.len());
            self.nodes.push(Node {
                board: q.board,
                threshold: q.threshold,
                path,
                budget,
                state,
                parent: Some(i),
                flip: q.flip,
                children: Vec::new(),
                phi,
                delta,
            });
        }
        self.nodes[i].children = ids;
        self.nodes[i].state = State::Expanded;
        self.update(i);
    }

    /// Recomputes the numbers of `i` and its ancestors, settling those that are decided.
    fn update(&mut self, mut i: usize) {
        loop {
            let n = &self.nodes[i];
            let (phi, delta) = match n.state {
                State::Solved(true) => (0, INF),
                State::Solved(false) => (INF, 0),
                State::Leaf | State::InFlight => (n.phi, n.delta),
                State::Expanded => self.over_children(i, |c| self.pending(c)),
            };
            let n = &mut self.nodes[i];
            n.phi = phi;
            n.delta = delta;
            if n.state == State::Expanded {
                if phi == 0 {
                    n.state = State::Solved(true);
                    n.delta = INF;
                } else if delta == 0 {
                    n.state = State::Solved(false);
                    n.phi = INF;
                }
            }
            let parent = n.parent;
            match parent {
                // Below a settled node nothing changes above.
                Some(p) if !matches!(self.nodes[p].state, State::Solved(_)) => i = p,
                _ => return,
            }
        }
    }

    /// The unsettled leaves (in flight or not) on `board`.
    pub fn leaves_at(&self, board: &Board) -> Vec<usize> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.board == *board && matches!(n.state, State::Leaf | State::InFlight))
            .map(|(i, _)| i)
            .collect()
    }
}

/// Proven facts about boards: for each board the largest threshold known to hold and the
/// smallest known to fail (a value at least `t` is at least every smaller threshold). Where
/// values have parity (every seed ends in a store, so a board's value has the parity of its
/// seeds), a fact says as much at the equivalent threshold: "at least 1?" and "at least 2?" are
/// one question about a board of even seeds.
#[derive(Debug)]
pub struct Facts {
    map: HashMap<Board, (i32, i32)>,
    parity: bool,
}

/// Whether `t` is a value `board` can have, under rules whose values have parity.
fn is_value(board: &Board, t: i32) -> bool {
    (i64::from(t) - i64::from(board.seeds())).rem_euclid(2) == 0
}

/// The one threshold that stands for "is the value of `board` at least `t`?" among the
/// thresholds that ask the same question: under rules whose values have parity (`parity`),
/// a threshold `t` that is a possible value asks what `t - 1` asks; otherwise `t` itself.
/// Work recorded at one of them (a unit that ran out, a unit under way) is work at both.
pub fn same_question(board: &Board, t: i32, parity: bool) -> i32 {
    if parity && is_value(board, t) {
        t - 1
    } else {
        t
    }
}

impl Facts {
    /// No facts yet; `parity`: whether the rules' values have the parity of the seeds.
    pub fn new(parity: bool) -> Facts {
        Facts {
            map: HashMap::new(),
            parity,
        }
    }

    /// What is known of "the value of `board` is at least `t`".
    pub fn get(&self, board: &Board, t: i32) -> Option<bool> {
        let &(hi_true, lo_false) = self.map.get(board)?;
        if t <= hi_true {
            Some(true)
        } else if t >= lo_false {
            Some(false)
        } else {
            None
        }
    }

    /// Adds a fact; an error if it contradicts one already known.
    pub fn add(&mut self, board: &Board, t: i32, holds: bool) -> Result<(), String> {
        // With parity: at least t means at least the least value from t; below t means at
        // most the greatest value under t, so below the threshold just above it.
        let (t_true, t_false) = match self.parity {
            true if !is_value(board, t) => (t.saturating_add(1), t),
            true => (t, t.saturating_sub(1)),
            false => (t, t),
        };
        let e = self.map.entry(*board).or_insert((i32::MIN, i32::MAX));
        if holds {
            e.0 = e.0.max(t_true);
        } else {
            e.1 = e.1.min(t_false);
        }
        if e.0 >= e.1 {
            return Err(format!(
                "contradiction: {board} is proven at least {:+} and below {:+}",
                e.0, e.1
            ));
        }
        Ok(())
    }

    /// Boards with facts.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no fact is known.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(house: usize, flip: bool) -> Question {
        Question {
            house,
            board: Board::new(&[house as u8 + 1, 0], &[1, 1]),
            threshold: 0,
            flip,
        }
    }

    #[test]
    fn swap_if_swaps_only_where_the_turn_passes() {
        assert_eq!(swap_if(false, (3, 7)), (3, 7));
        assert_eq!(swap_if(true, (3, 7)), (7, 3));
        assert_eq!(swap_if(true, (INF, 0)), (0, INF));
    }

    #[test]
    fn numbers_follow_negamax_and_settle_the_root() {
        let root = Board::new(&[2, 2], &[2, 2]);
        let mut t = Tree::new(root, 1, 100);
        assert_eq!(t.select(), Some(0));
        t.start(0);
        assert_eq!(t.select(), None);
        t.retry(0, 100);
        // Split into a same-player child and two flipped ones.
        t.expand(
            0,
            vec![
                (q(0, false), Start::Estimate(3, 1)),
                (q(1, true), Start::Estimate(1, 2)),
                (q(2, true), Start::Estimate(5, 1)),
            ],
            100,
        );
        // phi = min(3, 2, 1) = 1 (the third child's delta), delta = 1 + 1 + 5.
        assert_eq!(t.numbers(), (1, 7));
        assert_eq!(t.select(), Some(3));
        t.start(3);
        // In flight, the third child no longer counts; the next best is the second.
        assert_eq!(t.select(), Some(2));
        // Reports still count it with its estimate (not as infinite).
        assert_eq!(t.numbers(), (1, 7));
        t.start(2);
        assert_eq!(t.numbers(), (1, 7));
        t.retry(2, 100);
        t.solve(2, true); // the opponent's question holds: no help to the root
        assert_eq!(t.result(), None);
        t.solve(3, true);
        t.solve(1, false);
        // Every move fails: the root fails.
        assert_eq!(t.result(), Some(false));
        assert_eq!(t.select(), None);
    }

    #[test]
    fn one_move_that_holds_settles_the_root() {
        let root = Board::new(&[2, 2], &[2, 2]);
        let mut t = Tree::new(root, 1, 100);
        t.expand(
            0,
            vec![
                (q(0, true), Start::Estimate(1, 1)),
                (q(1, false), Start::Estimate(1, 1)),
            ],
            100,
        );
        assert_eq!(t.open_counts(), (2, 0));
        t.solve(2, true);
        assert_eq!(t.result(), Some(true));
        assert_eq!(t.open_counts(), (0, 0));
    }

    /// Where values have parity, a fact answers the equivalent threshold too (a board of
    /// 8 seeds has even values: "at least 1?" is "at least 2?", "below 2" is "below 1");
    /// where they do not, only the thresholds it covers.
    #[test]
    fn facts_answer_equivalent_thresholds_where_values_have_parity() {
        let b = Board::new(&[2, 2], &[2, 2]);
        let odd = Board::new(&[2, 1], &[2, 2]);
        let mut f = Facts::new(true);
        f.add(&b, 1, true).unwrap();
        assert_eq!(f.get(&b, 2), Some(true));
        assert_eq!(f.get(&b, 3), None);
        f.add(&b, 6, false).unwrap();
        assert_eq!(f.get(&b, 5), Some(false));
        assert_eq!(f.get(&b, 4), None);
        f.add(&b, 4, false).unwrap();
        assert_eq!(f.get(&b, 3), Some(false));
        assert_eq!(f.get(&b, 2), Some(true));
        // At least 2 and below 3 is exactly 2; below 2 then contradicts "at least 1".
        assert!(f.add(&b, 2, false).is_err());
        // 7 seeds: odd values; "below -1" is "below -2", "at least -4" is "at least -3".
        f.add(&odd, -1, false).unwrap();
        assert_eq!(f.get(&odd, -2), Some(false));
        assert_eq!(f.get(&odd, -3), None);
        f.add(&odd, -4, true).unwrap();
        assert_eq!(f.get(&odd, -3), Some(true));
        assert!(f.add(&odd, -3, false).is_err());
        let mut g = Facts::new(false);
        g.add(&b, 1, true).unwrap();
        g.add(&b, 4, false).unwrap();
        assert_eq!(g.get(&b, 2), None);
        assert_eq!(g.get(&b, 3), None);
        assert_eq!(same_question(&b, 2, true), 1);
        assert_eq!(same_question(&b, 1, true), 1);
        assert_eq!(same_question(&odd, -1, true), -2);
        assert_eq!(same_question(&odd, -2, true), -2);
        assert_eq!(same_question(&b, 2, false), 2);
    }

    #[test]
    fn facts_are_monotone_and_contradictions_are_errors() {
        let b = Board::new(&[2, 2], &[2, 2]);
        let mut f = Facts::new(false);
        assert_eq!(f.get(&b, 0), None);
        f.add(&b, 2, true).unwrap();
        f.add(&b, 6, false).unwrap();
        assert_eq!(f.get(&b, -4), Some(true));
        assert_eq!(f.get(&b, 2), Some(true));
        assert_eq!(f.get(&b, 4), None);
        assert_eq!(f.get(&b, 7), Some(false));
        assert!(f.add(&b, 1, false).is_err());
    }
}
