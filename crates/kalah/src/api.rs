//! Decoding the requests of the HTTP API (`kalah serve`): untrusted text in, rules and a
//! position out, or one line saying what is wrong.

use kalah_solver::{parse_position, Capture, EndRule, Leftover, Position, Rules};

/// The most text a position may take in a request.
pub const MAX_POSITION_TEXT: usize = 200;
/// The most seeds of a position a request may ask about.
pub const MAX_SEEDS: u32 = 255;

/// A decoded `GET /api/v1/position` query.
#[derive(Clone, Debug, PartialEq)]
pub struct PositionQuery {
    /// The rules (the starting seeds give the default position).
    pub rules: Rules,
    /// The position asked about.
    pub position: Position,
    /// The time budget asked for, in milliseconds.
    pub budget_ms: Option<u64>,
}

const KEYS: [&str; 7] = [
    "position",
    "houses",
    "seeds",
    "capture",
    "leftover",
    "end",
    "budget_ms",
];

/// Decodes a raw query string (`houses=6&position=...`, percent-encoded, `+` for space).
/// Unknown or repeated parameters, bad numbers, bad rules and bad positions are errors.
pub fn decode_position_query(raw: &str) -> Result<PositionQuery, String> {
    if raw.len() > 4096 {
        return Err("query too long".into());
    }
    let mut got: [Option<String>; 7] = Default::default();
    for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
        let i = KEYS.iter().position(|&key| key == k).ok_or_else(|| {
            format!(
                "unknown parameter {:?}",
                k.chars().take(40).collect::<String>()
            )
        })?;
        if got[i].is_some() {
            return Err(format!("parameter {k} given twice"));
        }
        got[i] = Some(v.into_owned());
    }
    let get = |k: &str| got[KEYS.iter().position(|&key| key == k).unwrap()].as_deref();
    let num = |k: &str, default: u64| -> Result<u64, String> {
        match get(k) {
            None => Ok(default),
            Some(s) => s.trim().parse::<u64>().map_err(|_| {
                format!(
                    "{k}: {:?} is not a number",
                    s.chars().take(40).collect::<String>()
                )
            }),
        }
    };
    let houses = num("houses", 6)?;
    let seeds = num("seeds", 4)?;
    if !(1..=8).contains(&houses) || seeds > 255 {
        return Err("houses must be 1 to 8 and seeds at most 255".into());
    }
    let rules = Rules {
        houses: houses as usize,
        seeds: seeds as u32,
        capture: get("capture")
            .unwrap_or("standard")
            .parse::<Capture>()
            .map_err(|e| format!("capture: {e}"))?,
        leftover: get("leftover")
            .unwrap_or("owner")
            .parse::<Leftover>()
            .map_err(|e| format!("leftover: {e}"))?,
        end: get("end")
            .unwrap_or("either")
            .parse::<EndRule>()
            .map_err(|e| format!("end: {e}"))?,
    };
    rules.validate().map_err(|e| e.to_string())?;
    let position = match get("position").map(str::trim).filter(|s| !s.is_empty()) {
        None => {
            if 2 * rules.houses as u64 * rules.seeds as u64 > MAX_SEEDS as u64 {
                return Err("seeds: too many seeds on the board".into());
            }
            Position::start(&rules)
        }
        Some(text) => {
            if text.len() > MAX_POSITION_TEXT {
                return Err("position: too long".into());
            }
            parse_position(text, rules.houses)
                .map_err(|e| format!("position: {}", e.to_string().replace("--houses", "houses")))?
        }
    };
    if position.board().seeds() > MAX_SEEDS {
        return Err("position: too many seeds".into());
    }
    let budget_ms = match get("budget_ms") {
        None => None,
        Some(_) => Some(num("budget_ms", 0)?),
    };
    Ok(PositionQuery {
        rules,
        position,
        budget_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_or_say_what_is_wrong() {
        let q = decode_position_query(
            "houses=3&capture=empty&position=S%3A+1+2+0+%5B3%5D+%2F+3+1+2+%5B0%5D&budget_ms=50",
        )
        .unwrap();
        assert_eq!(q.rules.houses, 3);
        assert_eq!(q.position.full(), "S: 1 2 0 [3] / 3 1 2 [0]");
        assert_eq!(q.budget_ms, Some(50));
        let start = decode_position_query("").unwrap();
        assert_eq!(start.position, Position::start(&Rules::default()));
        for bad in [
            "houses=9",
            "houses=0",
            "seeds=x",
            "capture=often",
            "what=1",
            "houses=3&houses=4",
            "position=1+2+%2F+3",
            "budget_ms=-1",
            "seeds=200",
            "position=%FF%FE",
        ] {
            assert!(decode_position_query(bad).is_err(), "{bad}");
        }
    }
}
