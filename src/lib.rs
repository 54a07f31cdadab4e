//! profq: a columnar analytics engine for ML training profiles.
//!
//! The pipeline, one module per stage:
//! * [`decode`]: XPlane / trace JSON files → [`model::Capture`] (zero-copy, parallel);
//! * [`tables`]: Capture → Arrow tables (runs, events, ops, regions, steps, collectives),
//!   whose contract lives in [`tables::schema`];
//! * [`store`]: tables → hive-partitioned Parquet dataset, committed atomically;
//! * [`engine`]: DataFusion over the store, read-only SQL;
//! * [`summary`]: named queries → the `profile_summary.v1` document;
//! * [`compare`]: two runs → comparison, regression record and history;
//! * [`render`]: record batches → table / CSV / JSON text;
//! * [`ingest`]: the orchestration of decode → tables → store for one input;
//! * [`source`]: a run to analyse, from a store or decoded in memory.
//!
//! The `profq` binary (src/main.rs) only parses arguments and calls these.

pub mod compare;
pub mod decode;
pub mod engine;
pub mod ingest;
pub mod model;
pub mod render;
pub mod source;
pub mod store;
pub mod summary;
pub mod tables;
pub mod timing;
