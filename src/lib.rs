//! profq: a columnar analytics engine for ML training profiles.
//!
//! The pipeline, one module per stage:
//! * [`decode`]: XPlane / trace JSON / Nsight Systems files → [`model::Capture`];
//! * [`tables`]: Capture → Arrow tables (runs, events, ops, regions, steps, collectives),
//!   whose contract lives in [`tables::schema`];
//! * [`store`]: tables → hive-partitioned Parquet dataset, committed atomically;
//! * [`engine`]: DataFusion over the store, read-only SQL;
//! * [`summary`]: named queries → the `profile_summary.v1` document;
//! * [`compare`]: two runs → comparison, regression record and history;
//! * [`render`]: every output format (tables, CSV, JSON text, markdown reports, HTML pages);
//! * [`export`]: a window of a run as a Perfetto (or Chrome JSON) trace with profq's tracks;
//! * [`ingest`]: the orchestration of decode → tables → store for one input;
//! * [`remote`]: object stores for `s3://` and `gs://` inputs and stores, and the input mirror;
//! * [`wandb`]: W&B runs as inputs, and summaries published to W&B;
//! * [`source`]: a run to analyse, from a store or decoded in memory;
//! * [`intervals`]: interval unions, shared by the derivation and the SQL aggregate;
//! * [`stats`]: quantiles and the noise test of step times (summary, compare, trends);
//! * [`process`]: how the process treats memory and its exit (the binary's tuning), and
//!   the names by which a writer's leftovers are told from a live writer's;
//! * [`error`]: the error every command ends with, and its kind (one exit code each).
//!
//! The `profq` binary (`src/main.rs`, `src/cli/`) only parses arguments, calls these and
//! prints. Imports point down the pipeline, never round a circle (`tests/architecture.rs`).

#[cfg(feature = "engine")]
pub mod compare;
pub mod decode;
#[cfg(feature = "engine")]
pub mod engine;
#[cfg(feature = "engine")]
pub mod error;
#[cfg(feature = "engine")]
pub mod export;
#[cfg(feature = "engine")]
pub mod ingest;
pub mod intervals;
pub mod model;
#[cfg(feature = "engine")]
pub mod process;
#[cfg(feature = "engine")]
pub mod remote;
#[cfg(feature = "engine")]
pub mod render;
#[cfg(feature = "engine")]
pub mod source;
#[cfg(feature = "engine")]
pub mod stats;
#[cfg(feature = "engine")]
pub mod store;
#[cfg(feature = "engine")]
pub mod summary;
pub mod tables;
pub mod timing;
#[cfg(feature = "engine")]
pub mod wandb;
pub mod work_queue;

/// A fixed pseudo-random sequence for tests (xorshift64 from `seed`, which must not be 0):
/// the same numbers on every run and machine.
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
