//! The report of a check, as text or as one JSON object.

use crate::check::{moves_text, Bounds, Report};
use serde_json::{json, Value};

fn signed(t: i32) -> String {
    format!("{t:+}")
}

/// The bounds in words: the one value when they meet, with the bounds before rounding to
/// the parity of the seeds when that rounding narrowed them.
fn range(b: &Bounds) -> String {
    let (lo, hi) = (b.lower, b.upper);
    let text = if lo == hi {
        format!("exactly {}", signed(lo))
    } else if lo > hi {
        format!("none ({} > {}: contradictory)", signed(lo), signed(hi))
    } else {
        format!("from {} to {}", signed(lo), signed(hi))
    };
    if b.raw != (lo, hi) {
        format!(
            "{text} (from {} to {} before rounding to the parity of the seeds)",
            signed(b.raw.0),
            signed(b.raw.1)
        )
    } else {
        text
    }
}

fn bounds_json(b: &Bounds) -> Value {
    json!({"lower": b.lower, "upper": b.upper, "lower_unrounded": b.raw.0, "upper_unrounded": b.raw.1})
}

/// The report as lines of text.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!("{}", r.file.display()));
    line(format!("  rules:    {}", r.rules));
    line(format!(
        "  lines:    {}{}",
        r.lines,
        match r.torn {
            Some((n, bytes)) =>
                format!(" (line {n}, {bytes} bytes without a newline, is cut short and left out)"),
            None => String::new(),
        }
    ));
    line(format!(
        "  units:    {} ({} proven: {} at least, {} below; {} open), {} nodes, databases up to {} seeds",
        r.units(),
        r.at_least + r.below,
        r.at_least,
        r.below,
        r.open,
        r.nodes,
        r.db_seeds
    ));
    line(format!(
        "  records:  {} of {} confirmed ({} root, {} opening, {} turn)",
        r.confirmed, r.records, r.kinds.0, r.kinds.1, r.kinds.2
    ));
    line(format!("  root:     South's value {}", range(&r.root)));
    for (h, b) in &r.openings {
        line(format!("  opening {h}: South's value {}", range(b)));
    }
    for (m, b) in &r.turns {
        line(format!(
            "  first turn {}: South's margin {}",
            moves_text(m),
            range(b)
        ));
    }
    line(format!(
        "  leaves:   met deriving the records, settled by no unit nor the game's end: {} of at most {} seeds (the prover's database; unknown here), {} larger",
        r.met.0, r.db_seeds, r.met.1
    ));
    line(format!(
        "            needed by a record: {}",
        if r.needed == (0, 0) {
            "none".to_string()
        } else {
            format!(
                "{} database leaves, {} larger leaves settled by nothing",
                r.needed.0, r.needed.1
            )
        }
    ));
    for e in &r.errors {
        line(format!("  error:    {e}"));
    }
    line(format!(
        "  {}",
        if r.ok() {
            "OK: every line sound, every record confirmed"
        } else {
            "FAILED"
        }
    ));
    out
}

/// The report as one JSON object.
pub fn json(r: &Report) -> Value {
    json!({
        "ledger": r.file.display().to_string(),
        "rules": {
            "houses": r.rules.houses,
            "seeds": r.rules.seeds,
            "capture": r.rules.capture.name(),
            "leftover": r.rules.leftover.name(),
            "end": r.rules.end.name(),
        },
        "lines": r.lines,
        "torn_line": r.torn.map(|(n, _)| n),
        "units": {
            "total": r.units(),
            "at_least": r.at_least,
            "below": r.below,
            "open": r.open,
            "nodes": r.nodes,
            "db_seeds": r.db_seeds,
        },
        "records": {
            "total": r.records,
            "confirmed": r.confirmed,
            "root": r.kinds.0,
            "opening": r.kinds.1,
            "turn": r.kinds.2,
        },
        "root": bounds_json(&r.root),
        "openings": r.openings.iter().map(|(h, b)| {
            let mut v = bounds_json(b);
            v["house"] = json!(h);
            v
        }).collect::<Vec<_>>(),
        "turns": r.turns.iter().map(|(m, b)| {
            let mut v = bounds_json(b);
            v["moves"] = json!(m);
            v
        }).collect::<Vec<_>>(),
        "leaves_met": {"database": r.met.0, "unsettled": r.met.1},
        "leaves_needed": {"database": r.needed.0, "unsettled": r.needed.1},
        "errors": r.errors,
        "ok": r.ok(),
    })
}
