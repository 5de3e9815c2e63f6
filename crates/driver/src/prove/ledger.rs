//! The ledger of a proof: an append-only text file of records, one per line, each a JSON
//! object followed by a tab and the xxh3-64 checksum (16 hex digits) of the JSON text.
//!
//! The first record is the header (format version, rules, the root position). Then come unit
//! records (a position, a threshold, what a search proved about it within its node budget)
//! root records (a question about the root answered from the units) and opening records (the
//! same about the value of one opening move, `kalah prove --openings`). A line cut short by
//! a crash can only be the last one: it is reported and dropped when the ledger is opened for
//! writing. Any other damage is an error naming the line. One process at a time writes a
//! ledger: it holds an exclusive lock on `ledger.lock` beside it for as long as it runs (the
//! system releases it when the process dies, `kill -9` included).

use kalah_solver::{parse_position, Board, Capture, EndRule, Leftover, Rules};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

/// The format version written in the header.
pub const VERSION: u64 = 1;
/// The ledger's file name in its directory.
pub const FILE: &str = "ledger.jsonl";
const LOCK: &str = "ledger.lock";

/// What a unit's search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The value is at least the threshold.
    AtLeast,
    /// The value is below the threshold.
    Below,
    /// The node budget ran out first (the unit was then split or retried).
    Open,
}

impl Verdict {
    /// The name written in the ledger.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::AtLeast => "at-least",
            Verdict::Below => "below",
            Verdict::Open => "open",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Verdict> {
        match s {
            "at-least" => Some(Verdict::AtLeast),
            "below" => Some(Verdict::Below),
            "open" => Some(Verdict::Open),
            _ => None,
        }
    }

    /// `Some(true)` for at least, `Some(false)` for below, `None` for open.
    pub fn truth(self) -> Option<bool> {
        match self {
            Verdict::AtLeast => Some(true),
            Verdict::Below => Some(false),
            Verdict::Open => None,
        }
    }
}

/// One proven (or attempted) unit: "is the value of `board` for the player to move at least
/// `threshold`?".
#[derive(Clone, Debug, PartialEq)]
pub struct UnitRecord {
    /// The moves from the root (0-based houses) that lead to the unit's position.
    pub path: Vec<usize>,
    /// The position, mover's houses first.
    pub board: Board,
    /// The threshold.
    pub threshold: i32,
    /// What was proven.
    pub verdict: Verdict,
    /// The node budget it was given (0: none).
    pub budget: u64,
    /// Nodes searched.
    pub nodes: u64,
    /// Seconds spent.
    pub seconds: f64,
    /// The largest database level the search used (0: none).
    pub db_seeds: u32,
    /// Who proved it (host and worker).
    pub worker: String,
}

/// A settled question about the root: "is South's value at least `threshold`?".
#[derive(Clone, Debug, PartialEq)]
pub struct RootRecord {
    /// The threshold.
    pub threshold: i32,
    /// The answer.
    pub holds: bool,
}

/// A settled question about an opening move: "is South's value after opening with `house`
/// (South playing on) at least `threshold`?".
#[derive(Clone, Debug, PartialEq)]
pub struct OpeningRecord {
    /// The opening move (0-based house).
    pub house: usize,
    /// The threshold, in South's final margin as at the root.
    pub threshold: i32,
    /// The answer.
    pub holds: bool,
}

/// A settled question about a first turn: "is South's final margin after the first turn
/// `moves` (South's moves until the turn passes or the game ends, both playing perfectly
/// after it) at least `threshold`?".
#[derive(Clone, Debug, PartialEq)]
pub struct TurnRecord {
    /// South's moves (0-based houses); every one but the last ends in South's store.
    pub moves: Vec<usize>,
    /// The threshold, in South's final margin as at the root.
    pub threshold: i32,
    /// The answer.
    pub holds: bool,
}

/// A record of the ledger.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A unit.
    Unit(UnitRecord),
    /// A root question.
    Root(RootRecord),
    /// A question about one opening move.
    Opening(OpeningRecord),
    /// A question about one first turn.
    Turn(TurnRecord),
}

/// The header: what the ledger proves.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The rules (the starting seeds give the root).
    pub rules: Rules,
}

/// A ledger read from disk: its header and records with their line numbers (1-based).
#[derive(Debug)]
pub struct Contents {
    /// The header.
    pub header: Header,
    /// The records after the header.
    pub records: Vec<(usize, Record)>,
    /// Bytes of a last line cut short by a crash, dropped.
    pub torn_bytes: usize,
    /// Length of the good part of the file.
    good_len: u64,
}

impl Contents {
    /// The file line of the last record (0 when there is none): what a file derived from the
    /// ledger (`needed.json`) records to tell whether the ledger has grown since.
    pub fn last_line(&self) -> usize {
        self.records.last().map_or(0, |r| r.0)
    }
}

/// A ledger open for appending, locked for this process.
pub struct Ledger {
    path: PathBuf,
    file: File,
    _lock: File,
}

fn checksum(json: &str) -> String {
    format!("{:016x}", xxh3_64(json.as_bytes()))
}

/// The line (with its newline) for a JSON value.
pub(crate) fn line(v: &Value) -> String {
    let text = v.to_string();
    format!("{text}\t{}\n", checksum(&text))
}

fn rules_json(r: &Rules) -> Value {
    json!({
        "houses": r.houses,
        "seeds": r.seeds,
        "capture": r.capture.name(),
        "leftover": r.leftover.name(),
        "end": r.end.name(),
    })
}

fn header_json(h: &Header) -> Value {
    json!({"kind": "header", "version": VERSION, "rules": rules_json(&h.rules)})
}

fn record_json(r: &Record) -> Value {
    match r {
        Record::Unit(u) => json!({
            "kind": "unit",
            "path": u.path.iter().map(|h| (h + 1).to_string()).collect::<Vec<_>>().join(" "),
            "board": u.board.to_string(),
            "threshold": u.threshold,
            "verdict": u.verdict.name(),
            "budget": u.budget,
            "nodes": u.nodes,
            "seconds": (u.seconds * 1000.0).round() / 1000.0,
            "db_seeds": u.db_seeds,
            "worker": u.worker,
        }),
        Record::Root(q) => json!({
            "kind": "root",
            "threshold": q.threshold,
            "holds": q.holds,
        }),
        Record::Opening(q) => json!({
            "kind": "opening",
            "house": q.house + 1,
            "threshold": q.threshold,
            "holds": q.holds,
        }),
        Record::Turn(q) => json!({
            "kind": "turn",
            "moves": q.moves.iter().map(|h| (h + 1).to_string()).collect::<Vec<_>>().join(" "),
            "threshold": q.threshold,
            "holds": q.holds,
        }),
    }
}

/// Reads one line's JSON object, checking its checksum; `Err` says what is wrong.
pub(crate) fn parse_line(text: &str) -> Result<Value, String> {
    let (json, sum) = text
        .rsplit_once('\t')
        .ok_or("no checksum (a tab and 16 hex digits) at the end")?;
    if sum != checksum(json) {
        return Err(format!(
            "checksum {sum} does not match the record (expected {}): the line was changed or damaged",
            checksum(json)
        ));
    }
    let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    Ok(v)
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value, String> {
    v.get(name).ok_or_else(|| format!("no field {name:?}"))
}

fn int(v: &Value, name: &str) -> Result<i64, String> {
    field(v, name)?
        .as_i64()
        .ok_or_else(|| format!("field {name:?} is not an integer"))
}

fn uint(v: &Value, name: &str) -> Result<u64, String> {
    field(v, name)?
        .as_u64()
        .ok_or_else(|| format!("field {name:?} is not a non-negative integer"))
}

fn text<'a>(v: &'a Value, name: &str) -> Result<&'a str, String> {
    field(v, name)?
        .as_str()
        .ok_or_else(|| format!("field {name:?} is not a string"))
}

fn parse_header(v: &Value) -> Result<Header, String> {
    if text(v, "kind")? != "header" {
        return Err("the first record is not the header".into());
    }
    let version = uint(v, "version")?;
    if version != VERSION {
        return Err(format!(
            "format version {version}; this program reads version {VERSION}"
        ));
    }
    let r = field(v, "rules")?;
    let houses = uint(r, "houses")?;
    let seeds = uint(r, "seeds")?;
    let rules = Rules {
        houses: usize::try_from(houses).map_err(|_| "bad houses")?,
        seeds: u32::try_from(seeds).map_err(|_| "bad seeds")?,
        capture: text(r, "capture")?
            .parse::<Capture>()
            .map_err(|e| e.to_string())?,
        leftover: text(r, "leftover")?
            .parse::<Leftover>()
            .map_err(|e| e.to_string())?,
        end: text(r, "end")?
            .parse::<EndRule>()
            .map_err(|e| e.to_string())?,
    };
    rules.validate().map_err(|e| e.to_string())?;
    Ok(Header { rules })
}

/// The 1-based houses of the text field `name` ("3 1 6"), as 0-based houses.
fn houses(v: &Value, name: &str, rules: &Rules) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for w in text(v, name)?.split_whitespace() {
        let h: usize = w
            .parse()
            .map_err(|_| format!("{name}: {w:?} is not a house number"))?;
        if h == 0 || h > rules.houses {
            return Err(format!("{name}: no house {h}"));
        }
        out.push(h - 1);
    }
    Ok(out)
}

fn parse_record(v: &Value, rules: &Rules) -> Result<Record, String> {
    let threshold = i32::try_from(int(v, "threshold")?).map_err(|_| "threshold out of range")?;
    match text(v, "kind")? {
        "unit" => {
            let path = houses(v, "path", rules)?;
            let board_text = text(v, "board")?;
            let board = parse_position(board_text, rules.houses)
                .map_err(|e| format!("board {board_text:?}: {e}"))?
                .board();
            let verdict_text = text(v, "verdict")?;
            let verdict = Verdict::parse(verdict_text).ok_or_else(|| {
                format!("verdict {verdict_text:?} is not at-least, below or open")
            })?;
            let seconds = field(v, "seconds")?
                .as_f64()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or("field \"seconds\" is not a non-negative number")?;
            Ok(Record::Unit(UnitRecord {
                path,
                board,
                threshold,
                verdict,
                budget: uint(v, "budget")?,
                nodes: uint(v, "nodes")?,
                seconds,
                db_seeds: u32::try_from(uint(v, "db_seeds")?).map_err(|_| "bad db_seeds")?,
                worker: text(v, "worker")?.to_string(),
            }))
        }
        "root" => Ok(Record::Root(RootRecord {
            threshold,
            holds: holds(v)?,
        })),
        "opening" => {
            let house = uint(v, "house")?;
            if house == 0 || house > rules.houses as u64 {
                return Err(format!("house: no house {house}"));
            }
            Ok(Record::Opening(OpeningRecord {
                house: house as usize - 1,
                threshold,
                holds: holds(v)?,
            }))
        }
        "turn" => {
            let moves = houses(v, "moves", rules)?;
            if moves.is_empty() {
                return Err("moves: a first turn has at least one move".into());
            }
            Ok(Record::Turn(TurnRecord {
                moves,
                threshold,
                holds: holds(v)?,
            }))
        }
        k => Err(format!("unknown record kind {k:?}")),
    }
}

fn holds(v: &Value) -> Result<bool, String> {
    field(v, "holds")?
        .as_bool()
        .ok_or_else(|| "field \"holds\" is not true or false".to_string())
}

/// The ledger file in `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Reads and checks the ledger in `dir`. A last line without its newline, or one whose
/// checksum fails, is taken as cut short by a crash (counted in `torn_bytes`); damage
/// anywhere else is an error naming the line.
pub fn read(dir: &Path) -> Result<Contents, String> {
    let p = path(dir);
    let mut bytes = Vec::new();
    File::open(&p)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", p.display()))?;
    parse(&p, &bytes)
}

/// The lines of a file of checksummed lines read from `p` (named in errors), parsed, each with
/// its line number, and the length of a last line cut short by a crash (no newline, or not a
/// good line), which is left out: with `keep_lone`, a file of one line keeps it, to be
/// reported as damage. Damage anywhere else is an error naming the line.
pub(crate) fn read_lines(
    p: &Path,
    bytes: &[u8],
    keep_lone: bool,
) -> Result<(Vec<(usize, Value)>, usize), String> {
    let mut lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let mut torn = 0;
    if let Some(last) = lines.last() {
        let ok = last.ends_with(b"\n")
            && std::str::from_utf8(last)
                .ok()
                .is_some_and(|t| parse_line(t.trim_end_matches('\n')).is_ok());
        let lone_kept = keep_lone && lines.len() == 1;
        if !ok && !lone_kept {
            torn = last.len();
            lines.pop();
        }
    }
    let mut out = Vec::with_capacity(lines.len());
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        let bad = |e: String| format!("{} line {n}: {e}", p.display());
        let t = std::str::from_utf8(raw)
            .map_err(|_| bad("not UTF-8".into()))?
            .trim_end_matches('\n');
        out.push((n, parse_line(t).map_err(bad)?));
    }
    Ok((out, torn))
}

/// Checks the bytes of a ledger read from `p` (named in errors); see [`read`].
fn parse(p: &Path, bytes: &[u8]) -> Result<Contents, String> {
    // A lone header line is never taken as torn: an empty ledger is damage.
    let (lines, torn_bytes) = read_lines(p, bytes, true)?;
    let good_len = (bytes.len() - torn_bytes) as u64;
    let mut header = None;
    let mut records = Vec::new();
    for (n, v) in lines {
        let bad = |e: String| format!("{} line {n}: {e}", p.display());
        match &header {
            None => header = Some(parse_header(&v).map_err(bad)?),
            Some(h) => records.push((n, parse_record(&v, &h.rules).map_err(bad)?)),
        }
    }
    let header = header.ok_or_else(|| format!("{}: empty ledger (no header)", p.display()))?;
    Ok(Contents {
        header,
        records,
        torn_bytes,
        good_len,
    })
}

impl Ledger {
    /// Opens (creating it if needed) the ledger in `dir` for `header`, locked for this process:
    /// a second process gets an error. Returns the ledger and what it holds; a torn last line
    /// is cut off the file.
    pub fn open(dir: &Path, header: &Header) -> Result<(Ledger, Contents), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let lock_path = dir.join(LOCK);
        let lock_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        if !kalah_solver::db::try_lock(&lock_file)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?
        {
            return Err(format!(
                "{} is in use by another process (it holds {}); wait for it or stop it",
                dir.display(),
                lock_path.display()
            ));
        }
        let p = path(dir);
        if !p.exists() {
            // A new ledger: the header is written to a temporary name and renamed.
            write_renamed(&p, line(&header_json(header)).as_bytes())?;
        }
        let contents = read(dir)?;
        if contents.header != *header {
            return Err(format!(
                "{} is the ledger of other rules ({}); use another --dir",
                p.display(),
                contents.header.rules
            ));
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        if contents.torn_bytes > 0 {
            file.set_len(contents.good_len)
                .and_then(|_| file.sync_all())
                .map_err(|e| format!("{}: {e}", p.display()))?;
        }
        file.seek(SeekFrom::End(0))
            .map_err(|e| format!("{}: {e}", p.display()))?;
        Ok((
            Ledger {
                path: p,
                file,
                _lock: lock_file,
            },
            contents,
        ))
    }

    /// Appends a record and makes it durable before returning. If the ledger's name no longer
    /// names the file this process opened (it was removed, or replaced by a checkout, a copy
    /// or an editor while the proof ran), the two are joined first; see [`Ledger::rejoin`].
    pub fn append(&mut self, r: &Record) -> Result<(), String> {
        if !self.path_is_ours() {
            self.rejoin()?;
        }
        self.file
            .write_all(line(&record_json(r)).as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Whether the ledger's path still names the open file (same device and inode).
    fn path_is_ours(&self) -> bool {
        match (std::fs::metadata(&self.path), self.file.metadata()) {
            (Ok(named), Ok(open)) => same_file(&named, &open),
            _ => false,
        }
    }

    /// Makes the ledger's path name a file that holds every record: those of the file now at
    /// the path (if any) followed by those of this process's file that it lacks, written to
    /// a temporary name and renamed, then reopened for appending. Records are facts, so
    /// their union is a ledger that claims nothing either side did not prove. If the file at
    /// the path is not a ledger of the same rules, this process's records are saved beside
    /// it as `ledger.jsonl.kept-<pid>` and the error says so.
    fn rejoin(&mut self) -> Result<(), String> {
        let p = self.path.clone();
        let err = |e: std::io::Error| format!("{}: {e}", p.display());
        let mut ours = Vec::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.read_to_end(&mut ours))
            .map_err(err)?;
        let mine = parse(&p, &ours)?;
        let theirs = match std::fs::read(&p) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(err(e)),
        };
        let joined = match &theirs {
            None => ours[..mine.good_len as usize].to_vec(),
            Some(b) => match parse(&p, b) {
                Ok(c) if c.header == mine.header => join(&b[..c.good_len as usize], &ours),
                found => {
                    let kept = p.with_file_name(format!("{FILE}.kept-{}", std::process::id()));
                    write_renamed(&kept, &ours)?;
                    let why = match found {
                        Ok(_) => "a ledger of other rules".to_string(),
                        Err(e) => format!("not a ledger ({e})"),
                    };
                    return Err(format!(
                        "{} was replaced while the proof ran, by {why}; this run's records are \
                         saved in {}",
                        p.display(),
                        kept.display()
                    ));
                }
            },
        };
        write_renamed(&p, &joined)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .map_err(err)?;
        file.seek(SeekFrom::End(0)).map_err(err)?;
        self.file = file;
        Ok(())
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &std::fs::Metadata, _b: &std::fs::Metadata) -> bool {
    true
}

/// The lines of `theirs` (a checked ledger without a torn tail), then every complete line
/// of `ours` after its header that `theirs` does not hold.
fn join(theirs: &[u8], ours: &[u8]) -> Vec<u8> {
    let have: std::collections::HashSet<&[u8]> = theirs.split_inclusive(|&b| b == b'\n').collect();
    let mut out = theirs.to_vec();
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    for l in ours.split_inclusive(|&b| b == b'\n').skip(1) {
        if l.ends_with(b"\n") && !have.contains(l) {
            out.extend_from_slice(l);
        }
    }
    out
}

/// [`crate::write_renamed::write_renamed`], with the path in its error.
fn write_renamed(p: &Path, bytes: &[u8]) -> Result<(), String> {
    crate::write_renamed::write_renamed(p, bytes).map_err(|e| format!("{}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        Rules {
            houses: 4,
            seeds: 3,
            ..Rules::default()
        }
    }

    fn unit(t: i32, v: Verdict) -> Record {
        Record::Unit(UnitRecord {
            path: vec![0, 3],
            board: Board::new(&[3, 3, 0, 4], &[4, 4, 3, 3]),
            threshold: t,
            verdict: v,
            budget: 1000,
            nodes: 12,
            seconds: 0.5,
            db_seeds: 8,
            worker: "test".into(),
        })
    }

    #[test]
    fn records_round_trip_and_torn_tails_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let h = Header { rules: rules() };
        let written = vec![
            unit(2, Verdict::AtLeast),
            unit(-3, Verdict::Below),
            unit(0, Verdict::Open),
            Record::Root(RootRecord {
                threshold: 1,
                holds: true,
            }),
            Record::Opening(OpeningRecord {
                house: 2,
                threshold: -4,
                holds: false,
            }),
            Record::Turn(TurnRecord {
                moves: vec![0, 3],
                threshold: 2,
                holds: true,
            }),
        ];
        {
            let (mut l, c) = Ledger::open(dir.path(), &h).unwrap();
            assert!(c.records.is_empty());
            for r in &written {
                l.append(r).unwrap();
            }
            // A second writer is refused while the first holds the lock.
            let e = Ledger::open(dir.path(), &h).err().unwrap();
            assert!(e.contains("in use"), "{e}");
        }
        let c = read(dir.path()).unwrap();
        let got: Vec<Record> = c.records.iter().map(|r| r.1.clone()).collect();
        assert_eq!(got, written);
        // A crash in the middle of a line: the part is dropped on the next open.
        let p = path(dir.path());
        let full = std::fs::read(&p).unwrap();
        let mut cut = full.clone();
        cut.extend_from_slice(&full[full.len() - 60..full.len() - 10]);
        std::fs::write(&p, &cut).unwrap();
        let c = read(dir.path()).unwrap();
        assert_eq!(c.torn_bytes, 50);
        assert_eq!(c.records.len(), written.len());
        let (mut l, _) = Ledger::open(dir.path(), &h).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), full);
        l.append(&unit(5, Verdict::Below)).unwrap();
        drop(l);
        assert_eq!(read(dir.path()).unwrap().records.len(), written.len() + 1);
        // Other rules are refused.
        let other = Header {
            rules: Rules {
                seeds: 4,
                ..rules()
            },
        };
        assert!(Ledger::open(dir.path(), &other).is_err());
    }

    #[test]
    fn a_ledger_replaced_or_removed_under_a_running_proof_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let h = Header { rules: rules() };
        let p = path(dir.path());
        let (mut l, _) = Ledger::open(dir.path(), &h).unwrap();
        l.append(&unit(1, Verdict::AtLeast)).unwrap();
        let older = std::fs::read(&p).unwrap();
        l.append(&unit(2, Verdict::AtLeast)).unwrap();
        // A checkout puts the older file back (a new file under the same name), and another
        // copy of the proof added a record of its own to it.
        let tmp = dir.path().join("checkout");
        std::fs::write(&tmp, &older).unwrap();
        {
            let mut other = OpenOptions::new().append(true).open(&tmp).unwrap();
            other
                .write_all(line(&record_json(&unit(7, Verdict::Below))).as_bytes())
                .unwrap();
        }
        std::fs::rename(&tmp, &p).unwrap();
        l.append(&unit(3, Verdict::Below)).unwrap();
        let thresholds = |c: Contents| -> Vec<i32> {
            c.records
                .iter()
                .map(|(_, r)| match r {
                    Record::Unit(u) => u.threshold,
                    Record::Root(r) => r.threshold,
                    Record::Opening(r) => r.threshold,
                    Record::Turn(r) => r.threshold,
                })
                .collect()
        };
        assert_eq!(thresholds(read(dir.path()).unwrap()), vec![1, 7, 2, 3]);
        // Removed: the next append writes it anew, whole.
        std::fs::remove_file(&p).unwrap();
        l.append(&unit(4, Verdict::Below)).unwrap();
        assert_eq!(thresholds(read(dir.path()).unwrap()), vec![1, 7, 2, 3, 4]);
        // Replaced by something that is not a ledger: an error, and nothing lost.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, "not a ledger\n").unwrap();
        let e = l.append(&unit(5, Verdict::Below)).unwrap_err();
        assert!(e.contains("replaced") && e.contains("kept"), "{e}");
        let kept = dir
            .path()
            .join(format!("{FILE}.kept-{}", std::process::id()));
        let saved = parse(&kept, &std::fs::read(&kept).unwrap()).unwrap();
        assert_eq!(thresholds(saved), vec![1, 7, 2, 3, 4]);
    }

    #[test]
    fn a_changed_line_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let h = Header { rules: rules() };
        let (mut l, _) = Ledger::open(dir.path(), &h).unwrap();
        l.append(&unit(2, Verdict::Below)).unwrap();
        l.append(&unit(4, Verdict::Below)).unwrap();
        drop(l);
        let p = path(dir.path());
        let text = std::fs::read_to_string(&p).unwrap();
        // A claim changed by hand, checksum left as it was.
        let forged = text.replacen("\"below\"", "\"at-least\"", 1);
        std::fs::write(&p, forged).unwrap();
        let e = read(dir.path()).unwrap_err();
        assert!(e.contains("line 2") && e.contains("checksum"), "{e}");
        // Garbage in the header.
        std::fs::write(&p, "hello\n").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("line 1"));
        std::fs::write(&p, "").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("empty"));
        // Well-formed lines (checksums right) that say impossible things: an error naming
        // the line and what is wrong.
        let header = line(&header_json(&h));
        for (bad, what) in [
            (
                json!({"kind": "opening", "house": 0, "threshold": 2, "holds": true}),
                "no house 0",
            ),
            (
                json!({"kind": "opening", "house": 7, "threshold": 2, "holds": true}),
                "no house 7",
            ),
            (
                json!({"kind": "opening", "house": 1, "threshold": 2, "holds": "yes"}),
                "holds",
            ),
            (
                json!({"kind": "opening", "threshold": 2, "holds": true}),
                "\"house\"",
            ),
            (
                json!({"kind": "guess", "threshold": 2, "holds": true}),
                "unknown record kind",
            ),
        ] {
            std::fs::write(&p, format!("{header}{}", line(&bad))).unwrap();
            let e = read(dir.path()).unwrap_err();
            assert!(e.contains("line 2") && e.contains(what), "{bad}: {e}");
        }
    }
}
