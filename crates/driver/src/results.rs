//! The results table: the game values the project has proven, for every rule set of the rule
//! books and every number of seeds, with where each came from.
//!
//! Two sources feed it. Values found by `kalah solve --first-turns` (the exact value of every
//! first turn, and from them the start's value and its value under the pie rule) are recorded
//! in one JSON file, `data/results.json`, by `kalah results add`. Values proven in units (the
//! 6-seed games) are read from their ledgers under `data/proofs/` each time, so the table never
//! says more than a ledger holds. The file is untrusted input: [`ResultsFile::read`] checks it
//! (rules, every first turn replayed from the start, each value consistent with the turns) and
//! answers a clear error instead of a wrong table.

use crate::prove::{derive, ledger, ledger::Record, recheck};
use crate::Pie;
use kalah_solver::{Board, Capture, EndRule, Leftover, Rules, RulesError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A rule set of the rule books: a name, where it comes from, and its rule axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleSet {
    /// Short name (`kalah`, `empty`, `brio`, `russian`, `no-capture`).
    pub name: &'static str,
    /// The rule book.
    pub book: &'static str,
    /// Capture rule.
    pub capture: Capture,
    /// Seeds left at the end.
    pub leftover: Leftover,
    /// When the game ends.
    pub end: EndRule,
}

impl RuleSet {
    /// The rules of this set on `houses` houses with `seeds` seeds per house.
    pub fn rules(&self, houses: usize, seeds: u32) -> Rules {
        Rules {
            houses,
            seeds,
            capture: self.capture,
            leftover: self.leftover,
            end: self.end,
        }
    }

    /// The rule set whose axes are those of `rules`, if it is one of [`RULE_SETS`].
    pub fn of(rules: &Rules) -> Option<RuleSet> {
        RULE_SETS.iter().copied().find(|s| {
            s.capture == rules.capture && s.leftover == rules.leftover && s.end == rules.end
        })
    }
}

/// The rule sets of the rule books, in the order of the table. Tournament rules (Russian
/// clubs) are standard Kalah with the pie rule: the `kalah` row's pie column.
pub const RULE_SETS: [RuleSet; 5] = [
    RuleSet {
        name: "kalah",
        book: "standard Kalah (with the pie rule: Russian club tournaments)",
        capture: Capture::Standard,
        leftover: Leftover::Owner,
        end: EndRule::Either,
    },
    RuleSet {
        name: "empty",
        book: "empty capture: Irving et al. 2000, Rawlings 2015, Kalah Game Co. 1958",
        capture: Capture::Empty,
        leftover: Leftover::Owner,
        end: EndRule::Either,
    },
    RuleSet {
        name: "brio",
        book: "BRIO/Alga \"Kalaha\" sheet",
        capture: Capture::Empty,
        leftover: Leftover::Emptier,
        end: EndRule::Either,
    },
    RuleSet {
        name: "russian",
        book: "Russian text with K seeds per house",
        capture: Capture::Standard,
        leftover: Leftover::Emptier,
        end: EndRule::Mover,
    },
    RuleSet {
        name: "no-capture",
        book: "Russian club rules, \"without capture\"",
        capture: Capture::Never,
        leftover: Leftover::Owner,
        end: EndRule::Either,
    },
];

/// One first turn and South's exact final margin after it (perfect play on both sides).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnValue {
    /// South's houses (1-based) in the order sown; every one but the last ends in South's store.
    pub moves: Vec<usize>,
    /// South's final margin.
    pub margin: i32,
}

/// Where a recorded entry came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The command that computed it.
    pub command: String,
    /// Nodes searched.
    pub nodes: u64,
    /// Seconds of search (opening the database not counted).
    pub seconds: f64,
    /// The largest level of the database used (0: none).
    pub database_seeds: u32,
    /// The program's version.
    pub version: String,
    /// The day it was computed (YYYY-MM-DD, UTC).
    pub date: String,
}

/// A recorded result: the exact value of every first turn of one game, and what follows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Houses per side.
    pub houses: usize,
    /// Seeds per house at the start.
    pub seeds: u32,
    /// Capture rule (`standard`, `empty`, `never`).
    pub capture: String,
    /// Leftover rule (`owner`, `emptier`, `discard`).
    pub leftover: String,
    /// End rule (`either`, `mover`).
    pub end: String,
    /// The start's value: South's final margin with perfect play (the best first turn's).
    pub value: i32,
    /// The first turns that reach it.
    pub best: Vec<Vec<usize>>,
    /// The value under the pie rule: `-min |M|` over the first turns' margins `M`.
    pub pie_value: i32,
    /// The first turns that reach it (North is indifferent to swapping only where M = 0).
    pub pie_best: Vec<Vec<usize>>,
    /// Every first turn, in the order of [`first_turns`].
    pub turns: Vec<TurnValue>,
    /// Where it came from.
    pub source: Source,
}

impl Entry {
    /// The rules of the entry, or what is wrong with them.
    pub fn rules(&self) -> Result<Rules, String> {
        let rules = Rules {
            houses: self.houses,
            seeds: self.seeds,
            capture: self
                .capture
                .parse()
                .map_err(|e: RulesError| e.to_string())?,
            leftover: self
                .leftover
                .parse()
                .map_err(|e: RulesError| e.to_string())?,
            end: self.end.parse().map_err(|e: RulesError| e.to_string())?,
        };
        rules.validate().map_err(|e| e.to_string())?;
        Ok(rules)
    }

    /// An entry from the exact first-turn values of a search ([`crate::Search::first_turn_values`]).
    pub fn from_first_turns(rules: &Rules, p: &Pie, source: Source) -> Result<Entry, String> {
        if let Some(t) = p.turns.iter().find(|t| !t.exact) {
            return Err(format!("first turn {:?} is not exact", t.moves));
        }
        let turns: Vec<TurnValue> = p
            .turns
            .iter()
            .map(|t| TurnValue {
                moves: t.moves.iter().map(|&h| h + 1).collect(),
                margin: t.margin,
            })
            .collect();
        let mut e = Entry {
            houses: rules.houses,
            seeds: rules.seeds,
            capture: rules.capture.name().to_string(),
            leftover: rules.leftover.name().to_string(),
            end: rules.end.name().to_string(),
            value: 0,
            best: Vec::new(),
            pie_value: 0,
            pie_best: Vec::new(),
            turns,
            source,
        };
        e.derive_values();
        Ok(e)
    }

    /// Sets the start's value, the pie rule's value and their best turns from the turns.
    fn derive_values(&mut self) {
        let value = self.turns.iter().map(|t| t.margin).max().unwrap_or(0);
        let least = self.turns.iter().map(|t| t.margin.abs()).min().unwrap_or(0);
        self.value = value;
        self.pie_value = -least;
        self.best = self.turns_where(|m| m == value);
        self.pie_best = self.turns_where(|m| m.abs() == least);
    }

    fn turns_where(&self, f: impl Fn(i32) -> bool) -> Vec<Vec<usize>> {
        self.turns
            .iter()
            .filter(|t| f(t.margin))
            .map(|t| t.moves.clone())
            .collect()
    }

    /// Checks the entry: valid rules, exactly the first turns of the start in order, margins
    /// within what the seeds allow and of their parity, and the values and best turns that
    /// follow from the margins.
    pub fn check(&self) -> Result<Rules, String> {
        let rules = self.rules()?;
        let want = first_turns(&rules);
        let got: Vec<Vec<usize>> = self.turns.iter().map(|t| t.moves.clone()).collect();
        if got != want {
            return Err(format!(
                "its first turns are not those of the start: expected {}, found {}",
                want.iter()
                    .map(|m| notation(m))
                    .collect::<Vec<_>>()
                    .join(", "),
                got.iter()
                    .map(|m| notation(m))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let seeds = Board::start(&rules).seeds() as i32;
        for t in &self.turns {
            if t.margin.abs() > seeds
                || (rules.leftover != Leftover::Discard && (t.margin - seeds) % 2 != 0)
            {
                return Err(format!(
                    "first turn {}: margin {:+} is impossible with {seeds} seeds",
                    notation(&t.moves),
                    t.margin
                ));
            }
        }
        let mut again = self.clone();
        again.derive_values();
        for (what, a, b) in [
            ("value", self.value, again.value),
            ("pie_value", self.pie_value, again.pie_value),
        ] {
            if a != b {
                return Err(format!(
                    "{what} {a:+} does not follow from its first turns ({b:+})"
                ));
            }
        }
        if self.best != again.best || self.pie_best != again.pie_best {
            return Err("its best first turns do not follow from their margins".into());
        }
        Ok(rules)
    }

    /// The rule set of the rule books that the entry belongs to, if any.
    pub fn rule_set(&self) -> Option<RuleSet> {
        self.rules().ok().as_ref().and_then(RuleSet::of)
    }
}

/// A first turn in the notation of move lists (`S4 S5`).
pub fn notation(moves: &[usize]) -> String {
    moves
        .iter()
        .map(|h| format!("S{h}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every first turn of South at the start (1-based houses): one move, or a move whose last
/// seed lands in South's store followed by a first turn from there, until the turn passes or
/// the game ends; in the order houses are tried.
pub fn first_turns(rules: &Rules) -> Vec<Vec<usize>> {
    crate::prove::tree::first_turns(rules)
        .into_iter()
        .map(|m| m.into_iter().map(|h| h + 1).collect())
        .collect()
}

/// The first turn written `text` (`"S2 S1"`, or `"2 1"`: South's houses, 1-based, in order),
/// as 1-based houses; an error naming every first turn of the game if it is not one of them.
pub fn parse_first_turn(rules: &Rules, text: &str) -> Result<Vec<usize>, String> {
    let all = first_turns(rules);
    let houses: Option<Vec<usize>> = text
        .split_whitespace()
        .map(|w| {
            let w = w.strip_prefix(['S', 's']).unwrap_or(w);
            w.parse::<usize>().ok()
        })
        .collect();
    houses.filter(|m| all.contains(m)).ok_or_else(|| {
        format!(
            "\"{}\" is not a first turn of this game (they are {})",
            text.trim(),
            all.iter()
                .map(|m| notation(m))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The recorded results (`data/results.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    /// Format version (1).
    pub version: u32,
    /// One entry per game (houses, seeds, rules), sorted.
    pub entries: Vec<Entry>,
}

/// The format version written and read.
pub const RESULTS_VERSION: u32 = 1;

impl ResultsFile {
    /// An empty file.
    pub fn new() -> ResultsFile {
        ResultsFile {
            version: RESULTS_VERSION,
            entries: Vec::new(),
        }
    }

    /// Reads and checks `path`; a file that is not there is an empty table.
    pub fn read(path: &Path) -> Result<ResultsFile, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ResultsFile::new()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks the text of a results file.
    pub fn parse(text: &str) -> Result<ResultsFile, String> {
        let file: ResultsFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.version != RESULTS_VERSION {
            return Err(format!(
                "format version {} (this program reads {RESULTS_VERSION})",
                file.version
            ));
        }
        let mut keys = Vec::new();
        for (i, e) in file.entries.iter().enumerate() {
            let rules = e.check().map_err(|m| {
                format!(
                    "entry {} ({}x{} {}-{}-{}): {m}",
                    i + 1,
                    e.houses,
                    e.seeds,
                    e.capture,
                    e.leftover,
                    e.end
                )
            })?;
            let key = key(&rules);
            if keys.contains(&key) {
                return Err(format!("entry {}: a second entry for {rules}", i + 1));
            }
            keys.push(key);
        }
        Ok(file)
    }

    /// Adds `e`, replacing the entry of the same game.
    pub fn insert(&mut self, e: Entry) -> Result<(), String> {
        let k = key(&e.check()?);
        self.entries
            .retain(|x| x.rules().map(|r| key(&r) != k).unwrap_or(true));
        self.entries.push(e);
        self.entries
            .sort_by_key(|x| x.rules().map(|r| key(&r)).unwrap_or_default());
        Ok(())
    }

    /// The entry of the game `rules`.
    pub fn get(&self, rules: &Rules) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.rules().is_ok_and(|r| key(&r) == key(rules)))
    }

    /// The file's text (pretty JSON).
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("results serialize");
        s.push('\n');
        s
    }

    /// Writes the file to `path` under a temporary name, then renames it.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        crate::write_renamed::write_renamed(path, self.to_text().as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The order of the table: rule set, houses, seeds.
fn key(r: &Rules) -> (usize, usize, u32, String) {
    let set = RULE_SETS
        .iter()
        .position(|s| Some(*s) == RuleSet::of(r))
        .unwrap_or(RULE_SETS.len());
    (set, r.houses, r.seeds, r.slug())
}

/// What a proof ledger says about its game, read from its root and opening records.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerSummary {
    /// The game.
    pub rules: Rules,
    /// Bounds on the start's value (equal when exact).
    pub lower: i32,
    /// Upper bound.
    pub upper: i32,
    /// Bounds on each opening move that has records (1-based house, lower, upper).
    pub openings: Vec<(usize, i32, i32)>,
    /// Bounds on each first turn that has records (1-based houses, lower, upper).
    pub turns: Vec<(Vec<usize>, i32, i32)>,
    /// Proven units.
    pub units: u64,
    /// Nodes of every unit.
    pub nodes: u64,
    /// Seconds of every unit.
    pub seconds: f64,
    /// What `prove check --needed` has proven again of its units (`rechecked.jsonl`): none
    /// without the file, an error when the file is damaged.
    pub rechecked: Result<Option<recheck::Summary>, String>,
}

impl LedgerSummary {
    /// Bounds on the value under the pie rule, `-min |M|` over the first turns' margins `M`,
    /// from the bounds on each first turn; a turn without records is bounded by the seeds
    /// and the upper bound of its opening move (or of the start) only. Exact (equal bounds)
    /// once every turn is, or as soon as one turn is exactly 0. The start and each opening
    /// move are worth their best first turn, so some turn lies within each one's bounds:
    /// an exact start of value `v` puts the pie value at `-|v|` or above.
    pub fn pie_bounds(&self) -> (i32, i32) {
        // The summary's lists have 1-based houses; the derivation's 0-based.
        let turns: Vec<(Vec<usize>, i32, i32)> = self
            .turns
            .iter()
            .map(|(m, lo, hi)| (m.iter().map(|h| h - 1).collect(), *lo, *hi))
            .collect();
        let openings: Vec<(usize, i32, i32)> = self
            .openings
            .iter()
            .map(|&(h, lo, hi)| (h - 1, lo, hi))
            .collect();
        derive::pie_bounds(&self.rules, &turns, &openings, (self.lower, self.upper))
    }
}

/// Reads the ledger in `dir` and the bounds its records state.
pub fn ledger_summary(dir: &Path) -> Result<LedgerSummary, String> {
    let contents = ledger::read(dir)?;
    let rules = contents.header.rules;
    let mut roots = Vec::new();
    let mut openings = Vec::new();
    let mut turns = Vec::new();
    let (mut units, mut nodes, mut seconds) = (0u64, 0u64, 0f64);
    for (_, r) in &contents.records {
        match r {
            Record::Unit(u) => {
                if u.verdict.truth().is_some() {
                    units += 1;
                }
                nodes += u.nodes;
                seconds += u.seconds;
            }
            Record::Root(q) => roots.push(q.clone()),
            Record::Opening(q) => openings.push(q.clone()),
            Record::Turn(q) => turns.push(q.clone()),
        }
    }
    let seeds = Board::start(&rules).seeds() as i32;
    let parity = rules.leftover != Leftover::Discard;
    let (lower, upper) = derive::root_bounds(&roots, seeds, parity);
    let mut houses: Vec<usize> = openings.iter().map(|o| o.house).collect();
    houses.sort();
    houses.dedup();
    let openings = houses
        .into_iter()
        .map(|h| {
            let (lo, hi) = derive::opening_bounds(&openings, h, upper, seeds, parity);
            (h + 1, lo, hi)
        })
        .collect();
    let turns = derive::recorded_turns(&rules, &turns, upper, seeds, parity)
        .into_iter()
        .map(|(m, lo, hi)| (m.iter().map(|h| h + 1).collect(), lo, hi))
        .collect();
    Ok(LedgerSummary {
        rules,
        lower,
        upper,
        openings,
        turns,
        units,
        nodes,
        seconds,
        rechecked: recheck::summary(dir, &contents),
    })
}

/// The day of `secs` seconds since the Unix epoch, as YYYY-MM-DD (UTC).
pub fn date_of(secs: u64) -> String {
    // Days to a civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first turn is read with or without the `S`, and anything that is not one of the
    /// game's first turns is refused with the list of those that are.
    #[test]
    fn first_turns_are_parsed_and_checked() {
        // 6x4: house 3 ends in the store, so a turn that begins with it goes on.
        let rules = Rules::standard(6, 4);
        assert_eq!(parse_first_turn(&rules, "S3 S1"), Ok(vec![3, 1]));
        assert_eq!(parse_first_turn(&rules, " 3  s6 "), Ok(vec![3, 6]));
        assert_eq!(parse_first_turn(&rules, "S5"), Ok(vec![5]));
        for bad in ["S3", "S3 S3", "S7", "S0", "S1 S2", "", "S", "three", "S-1"] {
            let e = parse_first_turn(&rules, bad).unwrap_err();
            assert!(e.contains("S3 S1, S3 S2"), "{bad:?}: {e}");
        }
    }

    /// The pie rule's bounds follow the first turns' bounds: open while a turn could still
    /// be nearer 0, exact once every turn is or once one is exactly 0.
    #[test]
    fn pie_bounds_follow_the_first_turns() {
        let rules = Rules::standard(6, 3);
        let all = first_turns(&rules);
        let bounded = |lower: i32,
                       upper: i32,
                       openings: Vec<(usize, i32, i32)>,
                       turns: Vec<(Vec<usize>, i32, i32)>| LedgerSummary {
            rules,
            lower,
            upper,
            openings,
            turns,
            units: 0,
            nodes: 0,
            seconds: 0.0,
            rechecked: Ok(None),
        };
        let summary = |turns| bounded(2, 2, Vec::new(), turns);
        // Nothing known: every turn in [-36, +36], so min |M| is anywhere in [0, 36].
        assert_eq!(
            bounded(-36, 36, Vec::new(), Vec::new()).pie_bounds(),
            (-36, 0)
        );
        // A start between +4 and +8: its best turn is too, so min |M| is at most 8.
        assert_eq!(bounded(4, 8, Vec::new(), Vec::new()).pie_bounds(), (-8, 0));
        // A start of exactly +2: its best turn is +2, so min |M| is 0 or 2.
        assert_eq!(summary(Vec::new()).pie_bounds(), (-2, 0));
        // An opening move between -6 and -4 has a turn there, and with every other opening at
        // most -2 every turn is at most -2: min |M| in [2, 6].
        let openings: Vec<_> = (1..=6)
            .map(|h| if h == 3 { (h, -6, -4) } else { (h, -36, -2) })
            .collect();
        assert_eq!(
            bounded(-36, -2, openings, Vec::new()).pie_bounds(),
            (-6, -2)
        );
        // Every turn exact: -min |M|.
        let exact: Vec<_> = all
            .iter()
            .enumerate()
            .map(|(i, m)| (m.clone(), -4 - 2 * i as i32, -4 - 2 * i as i32))
            .collect();
        // The start is the best of them, -4.
        assert_eq!(
            bounded(-4, -4, Vec::new(), exact.clone()).pie_bounds(),
            (-4, -4)
        );
        // One exactly 0 settles it whatever the others are.
        let zero = vec![(all[3].clone(), 0, 0), (all[0].clone(), -36, 2)];
        assert_eq!(summary(zero).pie_bounds(), (0, 0));
        // A turn between -6 and -2 among exact ones far from 0: min |M| in [2, 4].
        let mut mixed = exact;
        mixed[1] = (all[1].clone(), -6, -2);
        // The start is between -4 and -2 then.
        assert_eq!(bounded(-4, -2, Vec::new(), mixed).pie_bounds(), (-4, -2));
    }

    #[test]
    fn dates() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(date_of(1_795_651_200), "2026-11-26");
    }

    #[test]
    fn every_rule_set_is_told_apart() {
        for s in RULE_SETS {
            assert_eq!(RuleSet::of(&s.rules(6, 4)), Some(s));
        }
    }
}
