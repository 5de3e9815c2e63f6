//! `kalah show` and `kalah moves`: the board as players see it, and where each move leads.

use super::common::{read_position, CliResult, RuleArgs};
use clap::Args;
use kalah_solver::{Position, Rules, Side};
use serde_json::json;

/// Arguments of `kalah show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The position, short form (mover first) or full form (see README).
    pub position: String,
    #[command(flatten)]
    pub rules: RuleArgs,
}

/// Arguments of `kalah moves`.
#[derive(Args, Debug)]
pub struct MovesArgs {
    /// The position, short form (mover first) or full form (see README).
    pub position: String,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Draws the board: North's houses on top from right to left, South's below from left to right,
/// North's store on the left and South's on the right.
pub fn draw(pos: &Position, rules: &Rules) -> String {
    let m = rules.houses;
    let south = pos.houses(Side::South);
    let north = pos.houses(Side::North);
    let widest = south
        .iter()
        .chain(north)
        .map(|s| s.to_string().len())
        .max()
        .unwrap_or(1)
        .max(m.to_string().len())
        .max(2);
    let cell = |v: String| format!(" {v:>widest$} ");
    let rule = format!("+{}", format!("{}+", "-".repeat(widest + 2)).repeat(m));
    let stores = [pos.store(Side::North), pos.store(Side::South)];
    let store_w = stores
        .iter()
        .map(|s| s.to_string().len())
        .max()
        .unwrap_or(1)
        + 2;
    let pad = " ".repeat(store_w + 1);
    let mut out = String::new();
    let labels_n: String = (1..=m)
        .rev()
        .map(|i| format!("{} ", cell(i.to_string())))
        .collect();
    out.push_str(&format!("{pad}{labels_n} North\n"));
    out.push_str(&format!("{pad}{rule}\n"));
    let row_n: String = (0..m)
        .rev()
        .map(|i| format!("{}|", cell(north[i].to_string())))
        .collect();
    out.push_str(&format!("{pad}|{row_n}\n"));
    let (north_store, south_store) = (format!("[{}]", stores[0]), format!("[{}]", stores[1]));
    out.push_str(&format!("{north_store:>store_w$} {rule} {south_store}\n"));
    let row_s: String = (0..m)
        .map(|i| format!("{}|", cell(south[i].to_string())))
        .collect();
    out.push_str(&format!("{pad}|{row_s}\n"));
    out.push_str(&format!("{pad}{rule}\n"));
    let labels_s: String = (1..=m)
        .map(|i| format!("{} ", cell(i.to_string())))
        .collect();
    out.push_str(&format!("{pad}{labels_s} South\n"));
    let to_move = match pos.to_move() {
        Side::South => "South",
        Side::North => "North",
    };
    match pos.final_score(rules) {
        Some(score) => out.push_str(&format!(
            "Game over: South {} - North {} after the seeds left are settled ({}).\n",
            score.south, score.north, rules.leftover
        )),
        None => out.push_str(&format!(
            "{to_move} to move. Stores: South {}, North {}. Seeds in houses: {}.\n",
            pos.store(Side::South),
            pos.store(Side::North),
            pos.board().seeds()
        )),
    }
    out
}

/// `kalah show`.
pub fn show(args: &ShowArgs) -> CliResult {
    let rules = args.rules.rules()?;
    let pos = read_position(&args.position, &rules)?;
    print!("{}", draw(&pos, &rules));
    Ok(())
}

/// `kalah moves`.
pub fn moves(args: &MovesArgs) -> CliResult {
    let rules = args.rules.rules()?;
    let pos = read_position(&args.position, &rules)?;
    let mut list = Vec::new();
    if pos.final_score(&rules).is_none() {
        for h in pos.board().legal_houses() {
            let (next, sowing) = pos.play(&rules, h);
            let score = next.final_score(&rules);
            list.push(json!({
                "house": h + 1,
                "position": next.full(),
                "short": next.board().to_string(),
                "to_move": next.to_move().name(),
                "extra_turn": sowing.extra_turn,
                "captured": sowing.captured,
                "gain": sowing.gain,
                "ends_game": score.is_some(),
                "final_score": score.map(|s| json!({"south": s.south, "north": s.north})),
            }));
        }
    }
    if args.json {
        let out = json!({
            "position": pos.full(),
            "to_move": pos.to_move().name(),
            "over": pos.final_score(&rules).is_some(),
            "moves": list,
        });
        println!("{out}");
        return Ok(());
    }
    if list.is_empty() {
        println!("No moves: the game is over.");
        return Ok(());
    }
    for mv in &list {
        let mut notes = Vec::new();
        if mv["extra_turn"] == true {
            notes.push("extra turn".to_string());
        }
        if let Some(c) = mv["captured"].as_u64() {
            notes.push(format!("captures {c} (+{} to store)", c + 1));
        }
        if mv["ends_game"] == true {
            notes.push(format!(
                "ends the game: South {} - North {}",
                mv["final_score"]["south"], mv["final_score"]["north"]
            ));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join(", "))
        };
        println!(
            "house {}: {}{}",
            mv["house"],
            mv["position"].as_str().unwrap_or_default(),
            notes
        );
    }
    Ok(())
}
