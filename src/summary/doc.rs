//! The `profile_summary.v1` document as types: every key the summary writes is a field here,
//! so that a renamed or misspelt key fails the build rather than a reader.
//!
//! Keys and units (µs) are the reference tool's (`docs/profile_summary_v1.md`); the `profq_*`
//! keys are profq's own. Serialized through `serde_json::Value` ([`Summary::to_value`]), whose
//! maps sort their keys, so the text is the reference's layout whatever the field order
//! here. Every struct reads back leniently (`#[serde(default)]`, leaves `Option`), so a
//! summary the reference tool wrote reads too: its `profq_*` keys are absent, and read back
//! as empty lists or `None` (null), as they were in the file.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A part of a summary (or any serializable value) as JSON.
pub fn json_of<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).expect("summary parts serialize")
}

/// A number of µs, or of events, that a query may leave null.
pub type Micros = Option<f64>;
pub type Count = Option<i64>;
pub type Text = Option<String>;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub schema_version: String,
    pub generated_at_utc: String,
    pub source_format: String,
    pub source_path: String,
    pub run_metadata: RunMetadata,
    pub trace_overview: TraceOverview,
    pub trace_provenance: TraceProvenance,
    pub step_time: StepTime,
    pub time_breakdown: TimeBreakdown,
    pub hot_ops: Vec<HotOp>,
    pub semantic_families: Vec<SemanticFamily>,
    pub communication_ops: Vec<CommunicationOp>,
    pub gap_before_ops: Vec<GapBeforeOp>,
    pub hierarchical_regions: Vec<Region>,
    pub gap_region_contexts: Vec<GapRegionContext>,
    pub optimization_candidates: Vec<Candidate>,
    pub profq_version: Text,
    pub profq_producer: Option<Producer>,
    pub profq_collectives: Vec<Collective>,
    pub profq_regions_by_pass: Vec<PassRegion>,
    pub profq_per_device: Vec<PerDevice>,
    pub profq_per_host: Vec<PerHost>,
    pub profq_straggler_ranks: Vec<StragglerRank>,
    pub profq_recompilation: Option<Recompilation>,
    pub profq_transfers: Vec<Transfer>,
    pub profq_tiny_kernels: Option<TinyKernels>,
    pub profq_device_idle: Option<DeviceIdle>,
    pub profq_steps: Vec<StepRow>,
}

impl Summary {
    /// The document as JSON (keys sorted).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a summary serializes")
    }

    /// Whether a JSON document says it is a profile_summary.v1 (its `schema_version`).
    pub fn is_summary(json: &Value) -> bool {
        json["schema_version"] == super::SCHEMA_VERSION
    }

    /// The document a profile_summary.v1 JSON holds (read in place, not copied).
    pub fn from_json(json: &Value) -> Result<Summary, serde_json::Error> {
        Summary::deserialize(json)
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunMetadata {
    pub run_path: Text,
    pub run_id: Text,
    pub artifact_ref: Text,
    pub artifact_name: Text,
    pub hardware_type: Text,
    pub mesh_or_topology: Text,
    pub git_sha: Text,
    pub config_hash: Text,
    pub num_devices: Count,
    pub num_hosts: Count,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceOverview {
    pub display_time_unit: Text,
    pub num_events_total: Count,
    pub num_complete_events: Count,
    pub num_processes: Count,
    pub num_threads: Count,
    pub profile_start_ts: Micros,
    pub profile_end_ts: Micros,
    pub duration_basis: String,
    pub suspected_truncation: bool,
    pub quality_warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceProvenance {
    pub trace_sha256: Text,
    pub run_ids: Vec<String>,
    pub source_file_hints: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StepTime {
    pub warmup_steps_ignored: i64,
    pub all_steps: DurationStats,
    pub steady_state_steps: DurationStats,
    pub classes: Vec<StepClass>,
}

impl StepTime {
    /// The step that stands for the run: the representative step of the class with the most
    /// steps (ties: class name); None without steady steps.
    pub fn representative_step(&self) -> Option<i64> {
        let class = self.classes.iter().filter(|c| c.representative_step.is_some()).max_by(|a, b| a.count.cmp(&b.count).then(b.name.cmp(&a.name)))?;
        class.representative_step
    }
}

/// Statistics of step durations (µs); all null but the count when there are none.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DurationStats {
    pub count: i64,
    pub mean: Micros,
    pub median: Micros,
    pub p90: Micros,
    pub min: Micros,
    pub max: Micros,
}

/// One step of the run (µs), as the step-time chart draws it: the longest instance of the
/// step number over hosts and devices (`queries/step_durations.sql`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StepRow {
    pub step: i64,
    pub duration: f64,
    /// Device busy time (union of ops); compute is busy less exposed communication.
    pub busy_duration: Micros,
    /// Collective time not hidden by compute.
    pub communication_duration: Micros,
    pub idle_duration: Micros,
    pub op_count: Count,
    pub warmup: bool,
    /// The step class it belongs to (`light`, `heavy`, `typical`); null for warm-up steps.
    pub class: Text,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StepClass {
    pub name: String,
    pub count: i64,
    pub fraction_of_steady: f64,
    pub duration_stats: DurationStats,
    pub representative_step: Option<i64>,
    pub representative_duration: Micros,
    pub periodicity: Option<i64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TimeBreakdown {
    pub compute: CategoryTime,
    pub communication: CategoryTime,
    pub host: CategoryTime,
    pub stall: CategoryTime,
    pub other: CategoryTime,
    pub duration_basis: String,
    pub total_duration: f64,
}

impl TimeBreakdown {
    /// The category of this name (`compute`, `communication`, `host`, `stall`, `other`).
    pub fn category(&self, name: &str) -> Option<&CategoryTime> {
        Some(match name {
            "compute" => &self.compute,
            "communication" => &self.communication,
            "host" => &self.host,
            "stall" => &self.stall,
            "other" => &self.other,
            _ => return None,
        })
    }
    pub fn category_mut(&mut self, name: &str) -> Option<&mut CategoryTime> {
        Some(match name {
            "compute" => &mut self.compute,
            "communication" => &mut self.communication,
            "host" => &mut self.host,
            "stall" => &mut self.stall,
            "other" => &mut self.other,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CategoryTime {
    pub total_duration: f64,
    pub share_of_total: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HotOp {
    pub name: Text,
    pub canonical_name: Text,
    pub category: Text,
    pub count: Count,
    pub total_duration: Micros,
    pub exclusive_duration: Micros,
    pub avg_duration: Micros,
    pub shape_signature: Text,
    pub source_file: Text,
    pub tf_op_path: Text,
    pub flop_proxy_per_invocation: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SemanticFamily {
    pub family: Text,
    pub count: Count,
    pub total_duration: Micros,
    pub exclusive_duration: Micros,
    pub share_of_total: f64,
    pub avg_duration: Micros,
    pub avg_exclusive_duration: Micros,
    pub example_op: Text,
    pub dominant_shape_signature: Text,
    pub flop_proxy_total: Option<f64>,
    pub time_per_flop_proxy: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CommunicationOp {
    pub collective: Text,
    pub count: Count,
    pub total_duration: Micros,
    pub avg_duration: Micros,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GapBeforeOp {
    pub name: Text,
    pub payload_op: Text,
    pub marker_op: Text,
    pub count: Count,
    pub total_gap_duration: Micros,
    pub max_gap_duration: Micros,
    pub avg_gap_duration: Micros,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Region {
    /// Components joined by `=>`.
    pub path: String,
    pub depth: Count,
    pub count: Count,
    pub inclusive_duration: Micros,
    pub exclusive_duration: Micros,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GapRegionContext {
    pub op_name: Text,
    pub region_path: String,
    pub count: Count,
    pub total_gap_duration: Micros,
    pub avg_gap_duration: Micros,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Candidate {
    pub candidate_id: String,
    pub title: String,
    pub rationale: String,
    pub evidence: Vec<String>,
    pub suggestions: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Producer {
    /// `jax`, `pytorch` or null (`runs.framework`): the framework the suggestions speak.
    pub framework: Text,
    pub jax_version: Text,
    pub jaxlib_version: Text,
    pub device_kinds: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Collective {
    pub collective: Text,
    pub count: Count,
    pub total_duration: Micros,
    pub exposed_duration: Micros,
    pub overlapped_duration: Micros,
    pub exposed_share: f64,
    pub bytes: Count,
    pub gbytes_per_s: Option<f64>,
    pub top_op: Text,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PassRegion {
    pub pass: Text,
    pub path: String,
    pub depth: Count,
    pub count: Count,
    pub inclusive_duration: Micros,
    pub exclusive_duration: Micros,
    pub inclusive_share: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PerDevice {
    pub host: Text,
    pub device: Text,
    pub steps: Count,
    pub avg_active_duration: Micros,
    pub avg_lag_duration: Micros,
    pub max_lag_duration: Micros,
    pub times_slowest: Count,
}

/// A rank of a multi-rank run and how it held up the collectives (`straggler_ranks`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StragglerRank {
    pub rank: Count,
    pub host: Text,
    pub instances: Count,
    pub times_last: Count,
    pub lateness_duration: Micros,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PerHost {
    pub host: Text,
    pub steady_steps: Count,
    pub median_step_duration: Micros,
    pub busy_share: Option<f64>,
    pub ops: Count,
    pub op_exclusive_duration: Micros,
    pub devices: Count,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Recompilation {
    pub steps_with_compilation: Vec<StepCompilation>,
    pub compile_outside_steps: Micros,
    pub modules_with_several_programs: Vec<ModulePrograms>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StepCompilation {
    pub step: Count,
    pub compile_duration: Micros,
    pub compile_share_of_step: Option<f64>,
    pub compile_events: Count,
    pub example: Text,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ModulePrograms {
    pub hlo_module: Text,
    pub programs: Count,
    pub first_steps: Text,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Transfer {
    pub direction: Text,
    pub on_device: Option<bool>,
    pub count: Count,
    pub total_duration: Micros,
    pub bytes: Count,
    pub example: Text,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TinyKernels {
    pub tiny_threshold_us: i64,
    pub steady_steps: i64,
    pub launch_bound_steps: i64,
    pub avg_ops_per_step: Option<f64>,
    pub avg_tiny_share: Option<f64>,
    pub avg_busy_share: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceIdle {
    pub steady_steps: i64,
    pub avg_idle_share: Option<f64>,
    pub max_idle_share: Option<f64>,
    pub total_idle_duration: f64,
}
