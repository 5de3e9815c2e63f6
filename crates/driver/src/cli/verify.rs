//! `kalah verify` (being written).

use super::common::{CliError, CliResult};
use clap::Args;

/// Arguments of `kalah verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {}

/// Runs `kalah verify`.
pub fn run(_args: &VerifyArgs) -> CliResult {
    Err(CliError::failure("not built yet"))
}
