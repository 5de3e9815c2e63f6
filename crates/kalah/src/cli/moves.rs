//! `kalah moves`: every legal move and where it leads.

use super::common::{read_position, CliResult, RuleArgs};
use clap::Args;
use serde_json::json;

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
