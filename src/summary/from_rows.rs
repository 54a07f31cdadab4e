//! How a summary's parts are read from the rows of its named queries: one mapping per part,
//! from a row's columns (ns, counts, texts) to the part's keys (µs, counts, texts).
//!
//! A query's columns are documented in its `queries/*.sql` header; a part's keys in
//! [`super::doc`]. A cell a query leaves null stays null; a share it leaves null is 0.

use super::doc::{
    Collective, CommunicationOp, GapBeforeOp, GapRegionContext, HotOp, ModulePrograms, PassRegion, PerDevice, PerHost, Region, SemanticFamily, StepCompilation,
    StragglerRank, Transfer,
};
use crate::engine::functions::{flop_proxy, proxy_family_of_name, shape_signature};
use crate::engine::rows::Row;
use serde_json::Value;

/// Typed reads of a row's cells.
pub trait Cells {
    /// A number, 0 when null or absent.
    fn float(&self, key: &str) -> f64;
    /// A number, null when null.
    fn number(&self, key: &str) -> Option<f64>;
    /// A cell of ns as µs (null stays null).
    fn us(&self, key: &str) -> Option<f64>;
    fn count(&self, key: &str) -> Option<i64>;
    fn text(&self, key: &str) -> Option<String>;
    fn flag(&self, key: &str) -> Option<bool>;
    /// A `/`-separated path as the reference writes it, `=>`-separated ("" when null).
    fn arrow_path(&self, key: &str) -> String;
}

impl Cells for Row {
    fn float(&self, key: &str) -> f64 {
        self.number(key).unwrap_or(0.0)
    }
    fn number(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }
    fn us(&self, key: &str) -> Option<f64> {
        self.number(key).map(|ns| ns / 1000.0)
    }
    fn count(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Value::as_i64)
    }
    fn text(&self, key: &str) -> Option<String> {
        self.get(key).and_then(Value::as_str).map(str::to_string)
    }
    fn flag(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }
    fn arrow_path(&self, key: &str) -> String {
        self.get(key).and_then(Value::as_str).unwrap_or("").replace('/', "=>")
    }
}

/// A part of the summary made from one row of a named query.
pub trait FromRow: Sized {
    fn from_row(r: &Row) -> Self;
}

/// Each row as a part, in the query's order.
pub fn each<T: FromRow>(rows: &[Row]) -> Vec<T> {
    rows.iter().map(T::from_row).collect()
}

/// `hot_ops`.
impl FromRow for HotOp {
    fn from_row(r: &Row) -> Self {
        let sig = r.get("shape").and_then(Value::as_str).and_then(shape_signature);
        let family = r.get("hlo_op").and_then(Value::as_str).and_then(proxy_family_of_name);
        let proxy = sig.as_deref().and_then(|s| flop_proxy(family, s));
        HotOp {
            name: r.text("hlo_op"),
            canonical_name: r.text("canonical_name"),
            category: r.text("category"),
            count: r.count("count"),
            total_duration: r.us("total_ns"),
            exclusive_duration: r.us("self_ns"),
            avg_duration: r.us("avg_ns"),
            shape_signature: sig,
            source_file: r.text("source"),
            tf_op_path: r.text("scope_path"),
            flop_proxy_per_invocation: proxy,
        }
    }
}

/// `semantic_families`.
impl FromRow for SemanticFamily {
    fn from_row(r: &Row) -> Self {
        let work = r.number("flop_proxy_total").filter(|w| *w > 0.0);
        SemanticFamily {
            family: r.text("family"),
            count: r.count("count"),
            total_duration: r.us("total_ns"),
            exclusive_duration: r.us("self_ns"),
            share_of_total: r.float("share_of_total"),
            avg_duration: r.us("avg_ns"),
            avg_exclusive_duration: r.us("avg_self_ns"),
            example_op: r.text("example_op"),
            dominant_shape_signature: r.get("dominant_shape").and_then(Value::as_str).and_then(shape_signature),
            flop_proxy_total: work,
            time_per_flop_proxy: work.map(|w| r.float("self_ns") / 1000.0 / w),
        }
    }
}

/// `collectives_by_kind`, the reference's keys.
impl FromRow for CommunicationOp {
    fn from_row(r: &Row) -> Self {
        CommunicationOp { collective: r.text("kind"), count: r.count("count"), total_duration: r.us("total_ns"), avg_duration: r.us("avg_ns") }
    }
}

/// `collectives_by_kind`, with overlap and bandwidth.
impl FromRow for Collective {
    fn from_row(r: &Row) -> Self {
        Collective {
            collective: r.text("kind"),
            count: r.count("count"),
            total_duration: r.us("total_ns"),
            exposed_duration: r.us("exposed_ns"),
            overlapped_duration: r.us("overlapped_ns"),
            exposed_share: r.float("exposed_share"),
            bytes: r.count("bytes"),
            gbytes_per_s: r.number("gbytes_per_s"),
            top_op: r.text("top_op"),
        }
    }
}

/// `pre_op_gaps`: a gap is named after its payload op.
impl FromRow for GapBeforeOp {
    fn from_row(r: &Row) -> Self {
        GapBeforeOp {
            name: r.text("payload_op"),
            payload_op: r.text("payload_op"),
            marker_op: r.text("marker_op"),
            count: r.count("count"),
            total_gap_duration: r.us("total_gap_ns"),
            max_gap_duration: r.us("max_gap_ns"),
            avg_gap_duration: r.us("avg_gap_ns"),
        }
    }
}

/// `gap_contexts`.
impl FromRow for GapRegionContext {
    fn from_row(r: &Row) -> Self {
        GapRegionContext {
            op_name: r.text("op_name"),
            region_path: r.arrow_path("region_path"),
            count: r.count("count"),
            total_gap_duration: r.us("total_gap_ns"),
            avg_gap_duration: r.us("avg_gap_ns"),
        }
    }
}

/// `hierarchical_regions`.
impl FromRow for Region {
    fn from_row(r: &Row) -> Self {
        Region {
            path: r.arrow_path("path"),
            depth: r.count("depth"),
            count: r.count("op_count"),
            inclusive_duration: r.us("inclusive_ns"),
            exclusive_duration: r.us("exclusive_ns"),
        }
    }
}

/// `regions` (by pass).
impl FromRow for PassRegion {
    fn from_row(r: &Row) -> Self {
        PassRegion {
            pass: r.text("pass"),
            path: r.arrow_path("path"),
            depth: r.count("depth"),
            count: r.count("op_count"),
            inclusive_duration: r.us("inclusive_ns"),
            exclusive_duration: r.us("exclusive_ns"),
            inclusive_share: r.float("inclusive_share"),
        }
    }
}

/// `step_skew`.
impl FromRow for PerDevice {
    fn from_row(r: &Row) -> Self {
        PerDevice {
            host: r.text("host"),
            device: r.text("device"),
            steps: r.count("steps"),
            avg_active_duration: r.us("avg_active_ns"),
            avg_lag_duration: r.us("avg_lag_ns"),
            max_lag_duration: r.us("max_lag_ns"),
            times_slowest: r.count("times_slowest"),
        }
    }
}

/// `straggler_ranks`.
impl FromRow for StragglerRank {
    fn from_row(r: &Row) -> Self {
        StragglerRank {
            rank: r.count("rank"),
            host: r.text("host"),
            instances: r.count("instances"),
            times_last: r.count("times_last"),
            lateness_duration: r.us("lateness_ns"),
        }
    }
}

/// `per_host`.
impl FromRow for PerHost {
    fn from_row(r: &Row) -> Self {
        PerHost {
            host: r.text("host"),
            steady_steps: r.count("steady_steps"),
            median_step_duration: r.us("median_step_ns"),
            busy_share: r.number("busy_share"),
            ops: r.count("ops"),
            op_exclusive_duration: r.us("op_self_ns"),
            devices: r.count("devices"),
        }
    }
}

/// `recompilation`, a row of a step.
impl FromRow for StepCompilation {
    fn from_row(r: &Row) -> Self {
        StepCompilation {
            step: r.count("step"),
            compile_duration: r.us("compile_ns"),
            compile_share_of_step: r.number("compile_share"),
            compile_events: r.count("compile_events"),
            example: r.text("example"),
        }
    }
}

/// `shape_churn`.
impl FromRow for ModulePrograms {
    fn from_row(r: &Row) -> Self {
        ModulePrograms { hlo_module: r.text("hlo_module"), programs: r.count("programs"), first_steps: r.text("first_steps") }
    }
}

/// `transfers`.
impl FromRow for Transfer {
    fn from_row(r: &Row) -> Self {
        Transfer {
            direction: r.text("direction"),
            on_device: r.flag("on_device"),
            count: r.count("count"),
            total_duration: r.us("total_ns"),
            bytes: r.count("bytes"),
            example: r.text("example"),
        }
    }
}
