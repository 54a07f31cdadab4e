//! Exit codes, the one place a failure becomes a process status (README, "Exit codes"):
//! 0 ok, 1 internal error, 2 usage, 3 bad input, 4 store or query error, 5 provenance checks
//! failed under `--strict-provenance`.

use profq::error::{Error, Kind};

pub const SUCCESS: u8 = 0;

pub fn code(kind: Kind) -> u8 {
    match kind {
        Kind::Internal => 1,
        Kind::Usage => 2,
        Kind::Input => 3,
        Kind::Store => 4,
        Kind::Provenance => 5,
    }
}

/// Prints a command's result, and gives the status it ends profq with: its output goes to
/// stdout, a failure's line to stderr.
pub fn status(result: Result<String, Error>) -> u8 {
    match result {
        Ok(output) => {
            print!("{output}");
            SUCCESS
        }
        Err(e) => {
            print!("{}", e.output);
            if !e.message.is_empty() {
                eprintln!("profq: {}", e.message);
            }
            code(e.kind)
        }
    }
}
