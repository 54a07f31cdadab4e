//! The table contract: every table's columns, types and meaning, defined once.
//!
//! Arrow schemas, `profq schema` and `docs/schema.md` are all generated from [`TABLES`];
//! a test fails when `docs/schema.md` drifts from it. `run_id` is the hive partition
//! column (`<store>/<table>/run_id=<id>/`): it is part of every table when read through the
//! store, and not repeated inside the Parquet files.

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

/// Logical column types of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    /// Dictionary-encoded string (Dictionary(Int32, Utf8)).
    Name,
    Text,
    Int,
    /// UInt64 (XLA program ids are unsigned 64-bit fingerprints).
    UInt,
    Float,
    Bool,
    TextList,
    /// Map<Utf8, Utf8>.
    TextMap,
}

impl Col {
    pub fn data_type(self) -> DataType {
        match self {
            Col::Name => DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            Col::Text => DataType::Utf8,
            Col::Int => DataType::Int64,
            Col::UInt => DataType::UInt64,
            Col::Float => DataType::Float64,
            Col::Bool => DataType::Boolean,
            Col::TextList => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            Col::TextMap => DataType::Map(
                Arc::new(Field::new(
                    "entries",
                    DataType::Struct(vec![Field::new("key", DataType::Utf8, false), Field::new("value", DataType::Utf8, true)].into()),
                    false,
                )),
                false,
            ),
        }
    }
    pub fn sql_name(self) -> &'static str {
        match self {
            Col::Name => "VARCHAR (dictionary)",
            Col::Text => "VARCHAR",
            Col::Int => "BIGINT",
            Col::UInt => "BIGINT UNSIGNED",
            Col::Float => "DOUBLE",
            Col::Bool => "BOOLEAN",
            Col::TextList => "LIST<VARCHAR>",
            Col::TextMap => "MAP<VARCHAR, VARCHAR>",
        }
    }
}

pub struct Column {
    pub name: &'static str,
    pub ty: Col,
    pub nullable: bool,
    pub doc: &'static str,
}

pub struct Table {
    pub name: &'static str,
    pub doc: &'static str,
    pub columns: &'static [Column],
}

const fn c(name: &'static str, ty: Col, nullable: bool, doc: &'static str) -> Column {
    Column { name, ty, nullable, doc }
}

use Col::*;

pub const RUN_ID_DOC: &str = "Run identifier; the hive partition (`run_id=<id>` directory), present in every table.";

pub const TABLES: &[Table] = &[
    Table {
        name: "runs",
        doc: "One row per ingested run (one capture session: one or more hosts' files).",
        columns: &[
            c("source_path", Text, false, "Path the run was ingested from (as given on the command line)."),
            c("source_format", Name, false, "`xplane`, `trace_json` or `nsys` (an Nsight Systems SQLite export)."),
            c("trace_sha256", Text, false, "SHA-256 of the file bytes (compressed bytes for .gz); for several files, of their sorted `name:sha256` lines."),
            c("hosts", TextList, false, "Host names in the run, in file order."),
            c("num_events_total", Int, false, "Every event in the source, including ones not kept (aggregated XPlane events, JSON metadata/flow events)."),
            c("num_complete_events", Int, false, "Events kept in the `events` table."),
            c("start_epoch_ns", Int, true, "Absolute start of the run (ns since the Unix epoch) when the profile records it; all `start_ns` are relative to it."),
            c("duration_ns", Int, false, "Latest event end minus earliest event start."),
            c("suspected_truncation", Bool, false, "True when the source looks cut (trace JSON at an exporter's event cap)."),
            c("quality_warnings", TextList, false, "Everything profq noticed that makes numbers less trustworthy (fallbacks, dropped events, XSpace errors)."),
            c("labels", TextMap, false, "`--label KEY=VALUE` pairs given at ingest."),
            c("framework", Text, true, "Framework that wrote the profile, as far as its format tells: `jax` (XPlane), `pytorch` (a Kineto trace JSON: `schemaVersion`, `deviceProperties` or `distributedInfo`); null when it does not."),
            c("jax_version", Text, true, "Producer JAX version, when the profile records it."),
            c("jaxlib_version", Text, true, "Producer jaxlib version, when the profile records it."),
            c("device_kinds", TextList, false, "Accelerator kinds seen (e.g. `TPU v6 Lite`, `AMD GPU`); empty for CPU-only captures."),
            c("num_devices", Int, false, "Distinct devices that ran ops."),
            c("peak_flops_per_s", Float, true, "Peak FLOP rate of one device as the profile states it (TPU `peak_teraflops_per_second`); null where it states none (GPU, CPU, trace JSON) or devices differ."),
            c("peak_hbm_bytes_per_s", Float, true, "Peak HBM bandwidth of one device as the profile states it (TPU `peak_hbm_bw_gigabytes_per_second`, GPU `memory_bandwidth`, Nsight Systems `TARGET_INFO_GPU.memoryBandwidth`); null where it states none or devices differ."),
            c("launch_run_ids", TextList, false, "The 20 most frequent values of the XLA `run_id` stat (one per program launch), most frequent first (ties: value); tells captures apart."),
            c("source_file_hints", TextList, false, "The 20 most frequent `source` / `source_file` / `file_name` stat values, most frequent first (ties: value)."),
            c("display_time_unit", Text, true, "Trace JSON `displayTimeUnit` (a viewer hint; times are always µs in trace JSON); null for XPlane."),
            c("ingested_at_ns", Int, false, "Wall-clock time of the ingest (ns since the epoch); orders runs in a store."),
            c("profq_version", Text, false, "profq version that wrote the run."),
        ],
    },
    Table {
        name: "hosts",
        doc: "One row per host of a run (an XPlane host, a trace JSON file, an Nsight Systems export): its rank in the job.",
        columns: &[
            c("host", Name, false, "Host, as in every other table: `rank<N>` for a trace JSON file that states its rank (Kineto `distributedInfo`), else the file's name."),
            c("rank", Int, false, "Rank of the host in its job: the one its file states, else its position (from 0) among the run's hosts in file order."),
            c("rank_source", Name, false, "`distributedInfo` (the file states the rank) or `file_order`."),
            c("world_size", Int, true, "Ranks in the job, as the file states (`distributedInfo.world_size`)."),
            c("backend", Text, true, "Communication backend the file states (`nccl`, `gloo`)."),
            c("source_file", Text, false, "Name of the host's file (without its profiler suffix)."),
            c("ts_origin_ns", Int, true, "The file's own timestamp (ns) at start_ns 0 of this host (trace JSON): file ts = start_ns + ts_origin_ns. Analyses that reproduce a tool working in file µs round on this grid."),
        ],
    },
    Table {
        name: "events",
        doc: "Every timeline event of every line (XPlane lines, trace JSON threads), sorted by host, plane, line, start.",
        columns: &[
            c("event_id", Int, false, "Dense id of the event within the run (row order)."),
            c("host", Name, false, "Host the event was captured on."),
            c("plane", Name, false, "XPlane name (`/device:TPU:0`, `/host:CPU`) or trace JSON process name."),
            c("device", Name, true, "Device of the plane (`TPU:0`, `GPU:1`); null on host planes."),
            c("line", Name, false, "Line (thread / stream) name."),
            c("line_id", Int, false, "XLine id or JSON tid (-1 when the tid is not a number)."),
            c("name", Name, true, "Event name (XEventMetadata.name; for TPU ops the full HLO text)."),
            c("display_name", Name, true, "XEventMetadata.display_name when it differs from `name` (TPU: the short HLO op name)."),
            c("category", Name, true, "Trace JSON `cat` (Kineto: kernel, cpu_op, cuda_runtime, ...); null for XPlane."),
            c("start_ns", Int, false, "Start, ns since the run start."),
            c("dur_ns", Int, false, "Duration in ns (0 for instant and counter events)."),
            c("self_ns", Int, false, "Exclusive time within its line: dur_ns minus the durations of its direct children."),
            c("depth", Int, false, "Nesting depth within its line (0 = top level)."),
            c("parent_id", Int, true, "event_id of the enclosing event on the same line."),
            c("hlo_op", Name, true, "`hlo_op` stat/arg."),
            c("hlo_module", Name, true, "`hlo_module` stat/arg."),
            c("program_id", UInt, true, "`program_id` stat/arg."),
            c("tf_op", Name, true, "`tf_op` stat/arg (framework op / scope path)."),
            c("step", Int, true, "`step_num` stat/arg (StepTraceAnnotation events)."),
            c("correlation_id", Int, true, "`correlation_id` stat or Kineto `correlation` arg."),
            c("device_ordinal", Int, true, "`device_ordinal` stat/arg (the only device attribution on CPU captures)."),
            c("src", Name, true, "`_src` stat/arg: the C++ source file that emitted the event (on nearly every CPU-capture event, so typed)."),
            c("args", TextMap, false, "Every other stat/arg as text (refs resolved, bytes as UTF-8 or 0x-hex); XPlane metadata stats included, event stats win."),
        ],
    },
    Table {
        name: "ops",
        doc: "One row per device-op execution: TPU `XLA Ops`/`Async XLA Ops`, GPU stream kernels (XPlane `Stream #N` lines, Kineto kernel/memcpy/memset), and on CPU-only captures the host events carrying `hlo_op`.",
        columns: &[
            c("event_id", Int, false, "The op's row in `events`."),
            c("host", Name, false, "Host."),
            c("device", Name, false, "`TPU:0`, `GPU:3`; on CPU captures `CPU:<device_ordinal>`."),
            c("line", Name, false, "Line the op ran on."),
            c("name", Name, true, "Event name as in `events.name`."),
            c("hlo_op", Name, false, "HLO instruction name (`fusion.3`, `psum.7`): the first of hlo_op stat, display name, event name that the program's HLO knows (a GPU kernel inside a command buffer is placed by the program's schedule and its kernel name, in a graph run on several streams by its graph node's index); the kernel name when there is none."),
            c("hlo_module", Name, true, "HLO module (`jit_train_step`)."),
            c("program_id", UInt, true, "XLA program id (from the op, else its `XLA Modules` event)."),
            c("opcode", Name, true, "HLO opcode from the module's HloProto (`fusion`, `all-reduce`, `dot`)."),
            c("category", Name, false, "`communication` (a collective), `stall` (waits, barriers), or `compute`."),
            c("hlo_category", Name, true, "XProf's `hlo_category` stat when present (TPU)."),
            c("collective_kind", Name, true, "all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, send-recv, other; null if not a collective."),
            c("tf_op", Name, true, "Framework scope path: the `tf_op` stat (when tf_op is the generic `XlaModule`: HLO metadata.op_name, else the `name` stat), else HLO metadata.op_name; for an Nsight Systems kernel of JAX, the op_name of the XLA `Thunk` range its launch ran in."),
            c("region_path", Name, true, "Named-scope path of the op: `tf_op` with transforms unwrapped (`jit(train_step)` → `train_step`, `transpose(jvp(forward))` → `forward`) and runtime plumbing (shard_map, pallas_call, ...) dropped; the primitive is the leaf. A Kineto kernel (no tf_op): the `record_function` scopes and autograd node its launch ran in, then the aten op that launched it (`forward/mlp/aten::addmm`, `AddmmBackward0/aten::mm`); an Nsight Systems kernel without an XLA op_name: the NVTX ranges its launch ran in."),
            c("pass", Name, false, "`forward`, `backward` (transpose), `remat`, `optimizer` or `other`, from the scope path."),
            c("step", Int, true, "Step whose window contains the op start (host step annotations or the device's `Steps` line); a Kineto kernel: the step its launch ran in."),
            c("start_ns", Int, false, "Start, ns since the run start."),
            c("dur_ns", Int, false, "Duration in ns: the device-measured `device_duration_ps` when the event has it (TPU, as XProf uses), else the event duration."),
            c("self_ns", Int, false, "Exclusive time on its line (dur_ns minus the time of ops nested in it)."),
            c("dur_ps", Int, false, "Duration in ps, exact where the profile measures below 1 ns (`device_duration_ps`); else dur_ns × 1000."),
            c("shape", Name, true, "Result shape from the HloProto (`f32[256,1024]`)."),
            c("source", Name, true, "`file:line` of the op from HLO metadata: its source_file, else the innermost frame of its call stack (stack_frame_id)."),
            c("flops", Float, true, "`flops` stat when the profile has it."),
            c("bytes_accessed", Float, true, "`bytes_accessed` stat when the profile has it."),
            c("is_async", Bool, false, "Async op (`*-start`/`*-done` opcodes or an `Async` line)."),
        ],
    },
    Table {
        name: "regions",
        doc: "Named-scope hierarchy rolled up from ops: one row per (pass, scope path prefix). Times sum op self time (concurrent ops on several devices or threads add up).",
        columns: &[
            c("pass", Name, false, "Pass of the ops under the region (forward/backward regions with the same path are separate rows)."),
            c("path", Text, false, "Scope path (`forward/layer_0/attention`)."),
            c("depth", Int, false, "Number of components minus one."),
            c("parent_path", Text, true, "Path of the parent region; null at the top."),
            c("name", Text, false, "Last component of the path."),
            c("op_count", Int, false, "Op executions at or under the region."),
            c("inclusive_ns", Int, false, "Sum of self_ns of ops at or under the region."),
            c("exclusive_ns", Int, false, "Sum of self_ns of ops exactly at the region."),
            c("num_devices", Int, false, "Distinct devices of those ops."),
        ],
    },
    Table {
        name: "steps",
        doc: "Training steps: from host StepTraceAnnotation events (events with `step_num`, device null) or device `Steps` lines (one row per device), with device activity inside the step window.",
        columns: &[
            c("host", Name, false, "Host."),
            c("device", Name, true, "Device of a device `Steps` line; null for host-derived steps."),
            c("step", Int, false, "Step number."),
            c("name", Name, true, "Name of the step event (`train`)."),
            c("start_ns", Int, false, "Step start."),
            c("end_ns", Int, false, "Step end."),
            c("dur_ns", Int, false, "end_ns - start_ns."),
            c("source", Name, false, "`step_annotation` (host events with step_num) or `device_steps_line`."),
            c("busy_ns", Int, false, "Union of op intervals inside the window (all devices for host steps)."),
            c("compute_ns", Int, false, "Union of non-collective op intervals inside the window."),
            c("communication_ns", Int, false, "Union of collective op intervals inside the window not covered by compute."),
            c("idle_ns", Int, false, "dur_ns - busy_ns."),
            c("op_count", Int, false, "Ops starting inside the window."),
        ],
    },
    Table {
        name: "collectives",
        doc: "One row per collective op execution, with its overlap against compute on the same device.",
        columns: &[
            c("event_id", Int, false, "The op's row in `events`."),
            c("host", Name, false, "Host."),
            c("device", Name, false, "Device, as in `ops.device`."),
            c("hlo_op", Name, false, "HLO op or kernel name."),
            c("hlo_module", Name, true, "HLO module."),
            c("kind", Name, false, "all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, send-recv or other."),
            c("step", Int, true, "Step containing the op start."),
            c("start_ns", Int, false, "Start."),
            c("dur_ns", Int, false, "Duration."),
            c("bytes", Int, true, "Result size from the HLO shape, when known."),
            c("is_async", Bool, false, "Async collective (start/done pair or Async line)."),
            c("overlapped_ns", Int, false, "Part of the op covered by compute ops on the same device."),
            c("exposed_ns", Int, false, "dur_ns - overlapped_ns."),
        ],
    },
    Table {
        name: "gaps",
        doc: "Idle gaps on device-op lines: an op (the marker) starting after every earlier op of its line ended. A setup marker (iota, constant, copy-start, ...) is attributed to the first real op within the next 8 that follows without a second gap (the payload).",
        columns: &[
            c("host", Name, false, "Host."),
            c("device", Name, false, "Device of the marker op."),
            c("line", Name, false, "Device-op line (TPU XLA Ops, GPU stream, CPU thread)."),
            c("step", Int, true, "Step of the marker op."),
            c("gap_start_ns", Int, false, "End of the latest earlier op on the line."),
            c("gap_ns", Int, false, "Idle time before the marker."),
            c("marker_event_id", Int, false, "event_id of the first op after the gap."),
            c("marker_op", Name, false, "hlo_op of the marker."),
            c("payload_event_id", Int, false, "event_id of the op the gap is attributed to."),
            c("payload_op", Name, false, "hlo_op of the payload (the marker itself unless it is a setup op)."),
            c("payload_tf_op", Name, true, "Scope path (tf_op) of the payload."),
            c("payload_region_path", Name, true, "Named-scope path (`ops.region_path`) of the payload."),
        ],
    },
    Table {
        name: "event_totals",
        doc: "The events table summed per (host, plane, line, name, category, op category): one row per distinct event name of a line. Overviews and breakdowns read this instead of scanning every event; its sums equal the events table's.",
        columns: &[
            c("host", Name, false, "Host."),
            c("plane", Name, false, "Plane (process)."),
            c("device", Name, true, "Device of a device plane; null on host planes."),
            c("line", Name, false, "Line (thread, stream)."),
            c("name", Name, true, "Event name."),
            c("category", Name, true, "The events' category (trace JSON `cat`, e.g. Kineto's `kernel`, `gpu_memcpy`); null when they have none."),
            c("op_category", Name, true, "`compute`, `communication` or `stall` for events that are ops (the `ops.category`); null for other events."),
            c("count", Int, false, "Events."),
            c("dur_ns", Int, false, "Summed duration."),
            c("self_ns", Int, false, "Summed exclusive time within the line."),
            c("first_start_ns", Int, false, "Earliest start."),
            c("last_end_ns", Int, false, "Latest end (start + duration)."),
        ],
    },
    Table {
        name: "op_totals",
        doc: "The ops table summed per distinct op of a device: one row per (host, device, hlo_op, hlo_module, program_id, opcode, category, collective_kind, tf_op, region_path, pass, shape, source). Analyses that rank or classify ops over the whole run (hot ops, families, shape churn) read this instead of every execution; its sums equal the ops table's. A key can repeat across the parts of a streamed ingest, so sum its rows.",
        columns: &[
            c("host", Name, false, "Host."),
            c("device", Name, false, "Device, as in `ops.device`."),
            c("hlo_op", Name, false, "HLO op or kernel name, as in `ops.hlo_op`."),
            c("hlo_module", Name, true, "HLO module."),
            c("program_id", UInt, true, "XLA program id."),
            c("opcode", Name, true, "HLO opcode."),
            c("category", Name, false, "`compute`, `communication` or `stall`."),
            c("collective_kind", Name, true, "Collective kind; null if not a collective."),
            c("tf_op", Name, true, "Framework scope path."),
            c("region_path", Name, true, "Named-scope path."),
            c("pass", Name, false, "`forward`, `backward`, `remat`, `optimizer` or `other`."),
            c("shape", Name, true, "Result shape."),
            c("source", Name, true, "`file:line` from HLO metadata."),
            c("count", Int, false, "Executions."),
            c("dur_ns", Int, false, "Summed duration."),
            c("self_ns", Int, false, "Summed exclusive time."),
            c("max_dur_ns", Int, false, "Longest execution."),
            c("first_start_ns", Int, false, "Earliest start."),
            c("first_step", Int, true, "Lowest step of an execution; null if none has a step."),
        ],
    },
    Table {
        name: "gap_totals",
        doc: "The gaps table summed per (host, device, line, marker_op, payload_op, payload_tf_op, payload_region_path). Gap rankings and region contexts read this instead of every gap; its sums equal the gaps table's. A key can repeat across the parts of a streamed ingest, so sum its rows.",
        columns: &[
            c("host", Name, false, "Host."),
            c("device", Name, false, "Device of the marker ops."),
            c("line", Name, false, "Device-op line."),
            c("marker_op", Name, false, "hlo_op of the marker."),
            c("payload_op", Name, false, "hlo_op of the payload."),
            c("payload_tf_op", Name, true, "Scope path (tf_op) of the payload."),
            c("payload_region_path", Name, true, "Named-scope path of the payload."),
            c("count", Int, false, "Gaps."),
            c("gap_ns", Int, false, "Summed idle time."),
            c("max_gap_ns", Int, false, "Longest gap."),
        ],
    },
    Table {
        name: "line_steps",
        doc: "The ops and gaps tables summed per (host, device, line, step): one row per device-op line and step it ran ops in (step null for ops outside every step). Per-step device activity (stragglers, the largest idle gap of a step) reads this instead of every op; its sums equal the ops and gaps tables'. A key can repeat across the parts of a streamed ingest, so sum its rows.",
        columns: &[
            c("host", Name, false, "Host."),
            c("device", Name, false, "Device, as in `ops.device`."),
            c("line", Name, false, "Device-op line, as in `ops.line`."),
            c("step", Int, true, "Step of the ops (`ops.step`, by op start) and of the gaps' marker ops."),
            c("op_count", Int, false, "Ops."),
            c("dur_ns", Int, false, "Summed op duration."),
            c("self_ns", Int, false, "Summed op exclusive time."),
            c("first_start_ns", Int, false, "Earliest op start."),
            c("last_end_ns", Int, false, "Latest op end (start + duration)."),
            c("gap_count", Int, false, "Gaps whose marker op is one of these ops."),
            c("gap_ns", Int, false, "Summed idle time of those gaps."),
            c("max_gap_ns", Int, true, "Longest of those gaps; null if there is none."),
        ],
    },
];

pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

/// Arrow schema of a table as stored in Parquet (without the run_id partition column).
pub fn arrow_schema(table: &Table) -> SchemaRef {
    Arc::new(Schema::new(table.columns.iter().map(|c| Field::new(c.name, c.ty.data_type(), c.nullable)).collect::<Vec<_>>()))
}

/// Markdown documentation of every table (the content of `docs/schema.md`).
pub fn markdown() -> String {
    let mut out = String::from(
        "# profq tables\n\nGenerated by `profq schema --markdown` from `src/tables/schema.rs`; a test keeps this file in sync.\n\n\
         Times are Int64 nanoseconds; `start_ns` is relative to the run start (`runs.start_epoch_ns` keeps the absolute epoch).\n\
         String columns marked *dictionary* are dictionary-encoded in Arrow and Parquet.\n\
         Every table is stored as `<store>/<table>/run_id=<id>/*.parquet` (hive partitioning; zstd, except number columns it barely shrinks).\n",
    );
    for t in TABLES {
        out.push_str(&format!("\n## `{}`\n\n{}\n\n| column | type | null | meaning |\n|---|---|---|---|\n", t.name, t.doc));
        out.push_str(&format!("| `run_id` | VARCHAR | no | {RUN_ID_DOC} |\n"));
        for c in t.columns {
            out.push_str(&format!("| `{}` | {} | {} | {} |\n", c.name, c.ty.sql_name(), if c.nullable { "yes" } else { "no" }, c.doc));
        }
    }
    out
}

/// Plain-text description of one table (for `profq schema TABLE`).
/// Every table as [`describe`] gives it, a blank line between two.
pub fn describe_all() -> String {
    TABLES.iter().map(describe).collect::<Vec<_>>().join("\n")
}

pub fn describe(t: &Table) -> String {
    let mut out = format!("{}: {}\n", t.name, t.doc);
    let width = t.columns.iter().map(|c| c.name.len()).max().unwrap_or(6).max(6);
    out.push_str(&format!("  {:width$}  {:22}  {}\n", "run_id", "VARCHAR", RUN_ID_DOC));
    for c in t.columns {
        let ty = format!("{}{}", c.ty.sql_name(), if c.nullable { "" } else { " NOT NULL" });
        out.push_str(&format!("  {:width$}  {:22}  {}\n", c.name, ty, c.doc));
    }
    out
}
