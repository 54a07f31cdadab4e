//! W&B: training runs as the place profiles are found, and summaries published back.
//!
//! * [`api`]: W&B's GraphQL API, as its client calls it;
//! * [`run_target`]: which profile a W&B run wrote, and the run's metadata as labels;
//! * [`artifact`]: a profile kept as a W&B artifact, fetched into the local cache;
//! * [`publish`]: a summary (and its report) logged as a `profile_summary` artifact.
//!
//! It sits above the summary in the pipeline: publishing names the summary's schema
//! version. Object storage, which W&B runs usually point into, is [`crate::remote`]'s.

pub mod api;
pub mod artifact;
pub mod publish;
pub mod run_target;
