//! Making a book. Three sources, every one checked against the others:
//! - **facts**: values or bounds of the positions after given moves from the start, as
//!   recorded by `solve --first-turns` or stated by a proof ledger;
//! - **the search**: every position reachable within `plies` moves of the start gets its
//!   exact value. Only the farthest ones (the frontier) are searched; the value of each
//!   nearer one is its best move's, from its children's values.
//! - **the rules**: a position's value is its best move's, and no move is worth more than
//!   its position, which carries the facts' bounds up and down between a position and its
//!   moves.
//!
//! The frontier's values are appended, one checked line each, to a partial file as they are
//! found: a stopped build loses at most the position in progress and goes on from that file.

use super::{Book, BookError};
use crate::{Goal, Search, SearchError};
use kalah_solver::{Board, Position, Rules, Side};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use xxhash_rust::xxh3::xxh3_64;

/// What is known of the position after `moves` from the start.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// The moves from the start, 0-based houses (an extra turn keeps the same player).
    pub moves: Vec<usize>,
    /// What the bounds are bounds of.
    pub measure: Measure,
    /// Bounds with perfect play (equal when exact).
    pub lower: i32,
    /// Upper bound.
    pub upper: i32,
    /// Where the fact comes from, for error messages.
    pub source: String,
}

/// What a [`Fact`]'s bounds measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// South's final margin (stores included), as results and root records state it.
    Margin,
    /// The value of the position for the player to move (stores excluded), as proof units
    /// state it.
    Value,
}

/// How far a build has come.
#[derive(Clone, Debug)]
pub struct BuildProgress {
    /// Frontier positions valued so far (from the partial file, the database or a search).
    pub done: usize,
    /// Frontier positions in all.
    pub total: usize,
    /// Nodes searched by this run.
    pub nodes: u64,
}

/// Builds the book of `rules`: the facts, then (with `plies` > 0) the exact value of every
/// position within `plies` moves of the start, searched with `search`. `partial` keeps the
/// frontier's values found so far (read first when it exists). Returns the book and the nodes
/// searched. The book is checked for consistency before it is returned.
#[allow(clippy::too_many_arguments)]
pub fn build(
    rules: &Rules,
    plies: u8,
    facts: &[Fact],
    search: Option<&Search>,
    partial: Option<&Path>,
    note: &str,
    progress: &dyn Fn(&BuildProgress),
    cancel: &AtomicBool,
) -> Result<(Book, u64), BookError> {
    let mut entries: BTreeMap<Board, (i32, i32)> = BTreeMap::new();
    add_facts(rules, facts, &mut entries)?;
    let mut nodes = 0u64;
    if plies > 0 {
        let search = search.ok_or_else(|| {
            BookError::Inconsistent("a book of one or more plies needs a search".into())
        })?;
        nodes = add_plies(
            rules,
            plies,
            search,
            partial,
            progress,
            cancel,
            &mut entries,
        )?;
    }
    let book = Book::new(*rules, plies, note, &entries)?;
    book.check_consistent()?;
    if let Some(p) = partial {
        let _ = std::fs::remove_file(p);
    }
    Ok((book, nodes))
}

/// Narrows the bounds of `board` in `entries` to `lo..=hi`; an empty intersection is an
/// error naming `what`. Returns whether anything changed.
fn narrow(
    entries: &mut BTreeMap<Board, (i32, i32)>,
    board: Board,
    lo: i32,
    hi: i32,
    what: &dyn Fn() -> String,
) -> Result<bool, BookError> {
    let s = board.seeds() as i32;
    let e = entries.entry(board).or_insert((-s, s));
    let new = (e.0.max(lo), e.1.min(hi));
    if new.0 > new.1 {
        return Err(BookError::Inconsistent(format!(
            "{}: bounds {}..{} on {board} contradict {lo}..{hi}",
            what(),
            e.0,
            e.1
        )));
    }
    let changed = new != *e;
    *e = new;
    Ok(changed)
}

/// The facts as bounds on boards, carried up and down between each position on their paths
/// and its moves.
fn add_facts(
    rules: &Rules,
    facts: &[Fact],
    entries: &mut BTreeMap<Board, (i32, i32)>,
) -> Result<(), BookError> {
    // The positions on the facts' paths (not over), the start always among them: their
    // moves get bounds too.
    let mut inner: Vec<Board> = Vec::new();
    if !facts.is_empty() {
        inner.push(Board::start(rules));
    }
    for f in facts {
        let what = || format!("{} (after {:?})", f.source, f.moves);
        let mut pos = Position::start(rules);
        for &h in &f.moves {
            let b = pos.board();
            if b.final_value(rules).is_some() || h >= rules.houses || b.mover()[h] == 0 {
                return Err(BookError::Inconsistent(format!(
                    "{}: house {} cannot be played",
                    what(),
                    h + 1
                )));
            }
            inner.push(b);
            pos = pos.play(rules, h).0;
        }
        let lead = pos.store_lead();
        let (lo, hi) = match (f.measure, pos.to_move()) {
            (Measure::Value, _) => (f.lower, f.upper),
            (Measure::Margin, Side::South) => (f.lower - lead, f.upper - lead),
            (Measure::Margin, Side::North) => (-f.upper - lead, -f.lower - lead),
        };
        let b = pos.board();
        let (lo, hi) = rounded(rules, &b, lo, hi);
        if let Some(v) = b.final_value(rules) {
            if v < lo || v > hi {
                return Err(BookError::Inconsistent(format!(
                    "{}: the game is over there with value {v}, outside {lo}..{hi}",
                    what()
                )));
            }
            continue;
        }
        narrow(entries, b, lo, hi, &what)?;
    }
    inner.sort();
    inner.dedup();
    for b in &inner {
        let s = b.seeds() as i32;
        entries.entry(*b).or_insert((-s, s));
        for h in b.legal_houses() {
            let next = b.sow(rules, h).next();
            if next.final_value(rules).is_none() {
                let c = next.seeds() as i32;
                entries.entry(next).or_insert((-c, c));
            }
        }
    }
    // Up (a position is worth its best move) and down (no move is worth more than its
    // position) until nothing changes (about as many rounds as the longest path has moves).
    for _ in 0..1000 {
        let mut changed = false;
        for b in &inner {
            let what = || format!("the facts about {b}");
            let Some(a) = super::answer_from(rules, b, &|x| entries.get(x).copied()) else {
                continue;
            };
            let (lo, hi) = a.bounds();
            changed |= narrow(entries, *b, lo, hi, &what)?;
            let top = entries[b].1;
            for h in b.legal_houses() {
                let s = b.sow(rules, h);
                let next = s.next();
                if next.final_value(rules).is_some() {
                    continue;
                }
                // The move's value, gain ± the next position's value, is at most `top`.
                let c = next.seeds() as i32;
                let (lo, hi) = if s.extra_turn {
                    (-c, top - s.gain as i32)
                } else {
                    (s.gain as i32 - top, c)
                };
                let (lo, hi) = rounded(rules, &next, lo, hi);
                changed |= narrow(entries, next, lo, hi, &what)?;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(())
}

/// `lo..=hi` narrowed to the values a board can have: every seed ends in a store, so unless
/// left seeds are discarded, the value has the parity of the seeds on the board.
fn rounded(rules: &Rules, board: &Board, lo: i32, hi: i32) -> (i32, i32) {
    if rules.leftover == kalah_solver::Leftover::Discard {
        return (lo, hi);
    }
    let s = board.seeds() as i32;
    let lo = if (lo - s) % 2 != 0 { lo + 1 } else { lo };
    let hi = if (hi - s) % 2 != 0 { hi - 1 } else { hi };
    (lo, hi)
}

/// The first line of a partial file.
pub(super) fn partial_header(rules: &Rules, plies: u8) -> String {
    format!(
        "kalah book partial {} plies {plies}",
        super::file_name(rules)
    )
}

/// One checked line of a partial file.
pub(super) fn partial_line(b: &Board, v: i32) -> String {
    let hex: String = b.cells().iter().map(|c| format!("{c:02x}")).collect();
    let body = format!("{hex} {v}");
    format!("{body} {:016x}", xxh3_64(body.as_bytes()))
}

/// The values in a partial file of this build (none when it does not exist; lines that do
/// not check, such as one cut short by a crash, are skipped).
fn read_partial(path: &Path, rules: &Rules, plies: u8) -> Result<HashMap<Board, i32>, BookError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(BookError::Io(path.to_path_buf(), e)),
    };
    let mut lines = text.lines();
    if lines.next() != Some(partial_header(rules, plies).as_str()) {
        return Err(BookError::Corrupt(
            path.to_path_buf(),
            format!(
                "not the partial file of this build ({}); remove it to start again",
                partial_header(rules, plies)
            ),
        ));
    }
    let m = rules.houses;
    let mut out = HashMap::new();
    for line in lines {
        let Some((body, sum)) = line.rsplit_once(' ') else {
            continue;
        };
        if format!("{:016x}", xxh3_64(body.as_bytes())) != sum {
            continue;
        }
        let Some((hex, v)) = body.split_once(' ') else {
            continue;
        };
        let cells: Option<Vec<u8>> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
            .collect();
        let (Some(cells), Ok(v)) = (cells, v.parse::<i32>()) else {
            continue;
        };
        if cells.len() != 2 * m || cells.iter().map(|&c| c as u32).sum::<u32>() > 255 {
            continue;
        }
        out.insert(Board::new(&cells[..m], &cells[m..]), v);
    }
    Ok(out)
}

/// Every position within `plies` moves of the start, exactly: the frontier searched, the rest
/// from their moves. Returns the nodes searched.
fn add_plies(
    rules: &Rules,
    plies: u8,
    search: &Search,
    partial: Option<&Path>,
    progress: &dyn Fn(&BuildProgress),
    cancel: &AtomicBool,
    entries: &mut BTreeMap<Board, (i32, i32)>,
) -> Result<u64, BookError> {
    // The positions by the fewest moves that reach them.
    let mut levels: Vec<Vec<Board>> = vec![vec![Board::start(rules)]];
    let mut seen: HashSet<Board> = levels[0].iter().copied().collect();
    for d in 0..plies as usize {
        let mut next_level = Vec::new();
        for b in &levels[d] {
            for h in b.legal_houses() {
                let next = b.sow(rules, h).next();
                if next.final_value(rules).is_none() && seen.insert(next) {
                    next_level.push(next);
                }
            }
        }
        levels.push(next_level);
    }
    drop(seen);
    let frontier = &levels[plies as usize];
    let known = match partial {
        Some(p) => read_partial(p, rules, plies)?,
        None => HashMap::new(),
    };
    let mut out = match partial {
        Some(p) => {
            let fresh = !p.exists();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| BookError::Io(p.to_path_buf(), e))?;
            if fresh {
                writeln!(f, "{}", partial_header(rules, plies))
                    .map_err(|e| BookError::Io(p.to_path_buf(), e))?;
            }
            Some((p, f))
        }
        None => None,
    };
    let mut nodes = 0u64;
    let set = |entries: &mut BTreeMap<Board, (i32, i32)>, b: Board, v: i32, how: &str| {
        narrow(entries, b, v, v, &|| format!("the {how} value {v} of {b}")).map(|_| ())
    };
    for (i, b) in frontier.iter().enumerate() {
        progress(&BuildProgress {
            done: i,
            total: frontier.len(),
            nodes,
        });
        if let Some(&(lo, hi)) = entries.get(b) {
            if lo == hi {
                continue;
            }
        }
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(BookError::Search(SearchError::Interrupted {
                nodes,
                checkpoint: None,
                stage: format!("book position {} of {}", i + 1, frontier.len()),
                lower: -(b.seeds() as i32),
                upper: b.seeds() as i32,
            }));
        }
        if let Some(&v) = known.get(b) {
            set(entries, *b, v, "saved")?;
            continue;
        }
        let v = match search.known_value(b).map_err(BookError::Search)? {
            Some(v) => v,
            None => {
                let a = search
                    .analyse(b, false, Goal::Exact, &|_| {}, cancel)
                    .map_err(BookError::Search)?;
                nodes += a.nodes;
                a.value
            }
        };
        set(entries, *b, v, "searched")?;
        if let Some((p, f)) = &mut out {
            writeln!(f, "{}", partial_line(b, v))
                .and_then(|_| f.flush())
                .map_err(|e| BookError::Io(p.to_path_buf(), e))?;
        }
    }
    progress(&BuildProgress {
        done: frontier.len(),
        total: frontier.len(),
        nodes,
    });
    // Nearer positions from their moves. A move may lead to a position as near as its own
    // (a transposition), so passes go on until every value is known; a position whose moves
    // wait on each other (none known after a pass) is searched.
    let mut pending: Vec<Board> = levels[..plies as usize]
        .iter()
        .rev()
        .flatten()
        .copied()
        .collect();
    while !pending.is_empty() {
        let before = pending.len();
        let mut waiting = Vec::new();
        for b in pending {
            match value_by_moves(rules, &b, entries) {
                Some(v) => set(entries, b, v, "computed")?,
                None => waiting.push(b),
            }
        }
        if waiting.len() == before {
            let b = waiting.remove(0);
            let a = search.analyse(&b, false, Goal::Exact, &|_| {}, cancel)?;
            nodes += a.nodes;
            set(entries, b, a.value, "searched")?;
        }
        pending = waiting;
    }
    Ok(nodes)
}

/// The value of `board` from its moves, when every move leads to the end of the game or to a
/// position whose exact value is in `entries`.
fn value_by_moves(
    rules: &Rules,
    board: &Board,
    entries: &BTreeMap<Board, (i32, i32)>,
) -> Option<i32> {
    let mut best = i32::MIN;
    for h in board.legal_houses() {
        let s = board.sow(rules, h);
        let next = s.next();
        let v = match next.final_value(rules) {
            Some(v) => v,
            None => match entries.get(&next) {
                Some(&(lo, hi)) if lo == hi => lo,
                _ => return None,
            },
        };
        best = best.max(s.value_with(v));
    }
    Some(best)
}

impl From<SearchError> for BookError {
    fn from(e: SearchError) -> Self {
        BookError::Search(e)
    }
}
