//! The `profq` command line: parse the arguments, run the command, exit with its status.
//! The grammar is in `cli::args`, each command in `cli::commands`, exit codes in `cli::exit`,
//! and how the process treats memory and its exit in `profq::process`.

mod cli;

use clap::Parser;

// Large column buffers come and go at every stage; mimalloc reuses their pages instead of
// returning them to the kernel and faulting them in again.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    profq::timing::mark_start();
    profq::process::keep_default_sigpipe();
    let cli = cli::args::Cli::parse();
    if let Some(marker) = cli.step_marker {
        profq::decode::nsys::set_step_marker(marker);
    }
    profq::process::tune(cli::workload(&cli.command));
    let status = cli::exit::status(cli::commands::run(cli.command));
    profq::process::exit(status)
}
