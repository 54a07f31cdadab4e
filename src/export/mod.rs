//! Export: a window of a run (a step, steps, the representative step or a time range) as a
//! trace that Perfetto's UI opens, with profq's findings drawn as tracks beside the
//! profile's own lines ([`tracks`]); written as Perfetto's TrackEvent protobuf
//! ([`perfetto`]) or Chrome JSON ([`json`]), gzip-compressed when the name ends in `.gz`.

pub mod json;
pub mod perfetto;
pub mod tracks;

use crate::engine::analyst::Analyst;
use crate::engine::Engine;
use crate::error::Error;
use crate::summary::doc::StepTime;
use crate::summary::steps;
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use std::collections::BTreeMap;
use std::path::Path;
use tracks::{Arg, Collective, Event, Gap, OpInfo, StepSpan, Str, Strings};

/// Which part of the run to export.
#[derive(Clone, Debug, PartialEq)]
pub enum Window {
    Step(i64),
    /// Steps A..B, both included.
    Steps(i64, i64),
    /// The summary's representative step.
    Representative,
    /// [from, to) in ns since the run start.
    Range(i64, i64),
}

impl Window {
    /// `A..B` (or `A..=B`) as [`Window::Steps`].
    pub fn parse_steps(text: &str) -> Result<Window, String> {
        let (a, b) = text.split_once("..=").or_else(|| text.split_once("..")).ok_or_else(|| format!("--steps {text:?}: expected A..B"))?;
        let num = |s: &str| s.trim().parse::<i64>().map_err(|_| format!("--steps {text:?}: {s:?} is not a step number"));
        let (a, b) = (num(a)?, num(b)?);
        if b < a {
            return Err(format!("--steps {text:?}: the last step is before the first"));
        }
        Ok(Window::Steps(a, b))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Perfetto's native protobuf (TrackEvent).
    Perfetto,
    /// Chrome trace JSON.
    Json,
}

#[derive(Clone, Debug)]
pub struct ExportOptions {
    pub window: Window,
    /// Hosts to export (all when empty).
    pub hosts: Vec<String>,
    pub max_events: usize,
    pub format: TraceFormat,
    /// Warm-up steps, for the representative step.
    pub warmup_steps: i64,
}

/// What an export wrote.
#[derive(Debug)]
pub struct Exported {
    /// The window, ns since the run start, and how it was chosen.
    pub from_ns: i64,
    pub to_ns: i64,
    pub label: String,
    pub events: usize,
    pub tracks: usize,
    pub slices: usize,
    pub flows: usize,
    /// Whether `max_events` cut the window short.
    pub truncated: bool,
    pub bytes: u64,
}

/// Exports the window `opts` names of run `run_id` to `output`; errors name the run as
/// `subject` says (`run "x"`, or the INPUT's path). The engine must hold every event of the
/// run (`source::open_whole`).
pub async fn export(engine: &Engine, run_id: &str, subject: &str, opts: &ExportOptions, output: &Path) -> Result<Exported, Error> {
    let mut clock = std::time::Instant::now();
    let a = Analyst::new(engine, run_id);
    let (from, to, label) = window(&a, subject, opts).await?;
    let range = [("from_ns", from.to_string()), ("to_ns", to.to_string())];
    let read_to = budget_end(&a, &range, opts.max_events).await?.map_or(to, |end| end.min(to));
    crate::timing::stage_done("export: event budget", &mut clock);
    let mut strings = Strings::default();
    let mut events = read_events(&a, &[("from_ns", from.to_string()), ("to_ns", read_to.to_string())], &mut strings).await?;
    // One order for everything built from the events (rows come in no order); past the
    // budget, the earliest events.
    events.sort_unstable_by_key(|e| (e.start, e.id));
    let truncated = events.len() > opts.max_events || read_to < to;
    events.truncate(opts.max_events);
    crate::timing::stage_done("export: window events read", &mut clock);
    let mut steps = read_steps(&a, &range, &mut strings).await?;
    let mut gaps = read_gaps(&a, &range, &mut strings).await?;
    if !opts.hosts.is_empty() {
        let known: std::collections::BTreeSet<&str> = events.iter().map(|e| strings.get(e.host)).collect();
        if let Some(h) = opts.hosts.iter().find(|h| !known.contains(h.as_str())) {
            let known: Vec<&str> = known.into_iter().collect();
            return Err(Error::usage(format!("no host {h:?} in the window (hosts: {})", known.join(", "))));
        }
        let wanted: Vec<u32> = opts.hosts.iter().map(|h| strings.id(h)).collect();
        events.retain(|e| wanted.contains(&e.host));
        steps.retain(|s| wanted.contains(&s.host));
        gaps.retain(|g| wanted.contains(&g.host));
    }
    if events.is_empty() {
        return Err(Error::usage(format!("{label} ({from}..{to} ns) of {subject} holds no events")));
    }
    let about = [
        ("run_id", Arg::Text(strings.id(run_id))),
        ("window", Arg::Text(strings.id(&label))),
        ("from_ns", Arg::Int(from)),
        ("to_ns", Arg::Int(to)),
        ("profq_version", Arg::Text(strings.id(env!("CARGO_PKG_VERSION")))),
    ];
    let n_events = events.len();
    let layout = tracks::layout(strings, events, steps, gaps, (from, to), &about, truncated);
    crate::timing::stage_done("export: tracks laid out", &mut clock);
    // JSON's time 0: the window's start, or an earlier start of an event overlapping it.
    let origin = layout.slices.iter().map(|s| s.start).min().unwrap_or(from).min(from);
    let bytes = write_file(output, |out| match opts.format {
        TraceFormat::Perfetto => perfetto::write(&layout, out),
        TraceFormat::Json => json::write(&layout, origin, out),
    })?;
    crate::timing::stage_done("export: written", &mut clock);
    Ok(Exported {
        from_ns: from,
        to_ns: to,
        label,
        events: n_events,
        tracks: layout.tracks.len(),
        slices: layout.slices.len(),
        flows: layout.flows,
        truncated,
        bytes,
    })
}

/// Where to stop reading a window's events to keep `max_events` of them and at most one
/// time bucket more (`queries/export_budget.sql`): the end of the bucket in which the
/// budget runs out, or None when the whole window fits.
async fn budget_end(a: &Analyst<'_>, range: &[(&str, String)], max_events: usize) -> Result<Option<i64>, Error> {
    let mut buckets: Vec<(i64, i64)> = Vec::new();
    for b in a.batches("export_budget", range).await? {
        let c = Cols::of(&b, &["first_start_ns", "events"], &[], &[]);
        buckets.extend((0..b.num_rows()).map(|r| (c.int("first_start_ns", r).unwrap_or(0), c.int("events", r).unwrap_or(0))));
    }
    buckets.sort_unstable();
    let mut seen = 0;
    for (k, &(_, events)) in buckets.iter().enumerate() {
        seen += events as usize;
        if seen > max_events {
            // Read through this bucket: up to the next one's first start (the last: to the end).
            return Ok(Some(buckets.get(k + 1).map_or(i64::MAX, |next| next.0)));
        }
    }
    Ok(None)
}

/// The window `opts` names: [from, to) ns and a label for it.
async fn window(a: &Analyst<'_>, subject: &str, opts: &ExportOptions) -> Result<(i64, i64, String), Error> {
    let (first, last) = match opts.window {
        Window::Range(from, to) if to <= from => return Err(Error::usage(format!("--to-ns {to} is not after --from-ns {from}"))),
        Window::Range(from, to) => return Ok((from, to, "time range".to_string())),
        Window::Step(n) => (n, n),
        Window::Steps(a, b) => (a, b),
        Window::Representative => {
            let rows = a.rows("step_durations", &[("warmup_steps", opts.warmup_steps.to_string())]).await?;
            let steady: Vec<(i64, f64)> = rows
                .iter()
                .filter(|r| r.get("warmup").and_then(|w| w.as_bool()) == Some(false))
                .filter_map(|r| Some((r.get("step")?.as_i64()?, r.get("dur_ns")?.as_f64()?)))
                .collect();
            let classes = steps::step_classes(&steady);
            let step = StepTime { classes, ..Default::default() }.representative_step().ok_or_else(|| {
                Error::usage(format!(
                    "{subject} has no steady step (after {} warm-up steps): export a step or a time range (--step, --from-ns/--to-ns)",
                    opts.warmup_steps
                ))
            })?;
            (step, step)
        }
    };
    let mut strings = Strings::default();
    let all = read_steps(a, &[("from_ns", i64::MIN.to_string()), ("to_ns", i64::MAX.to_string())], &mut strings).await?;
    if all.is_empty() {
        return Err(Error::usage(format!("{subject} has no steps: export a time range with --from-ns and --to-ns")));
    }
    let chosen: Vec<&StepSpan> = all.iter().filter(|s| (first..=last).contains(&s.step)).collect();
    if chosen.is_empty() {
        let (lo, hi) = (all.iter().map(|s| s.step).min().unwrap_or(0), all.iter().map(|s| s.step).max().unwrap_or(0));
        let asked = if first == last { format!("step {first}") } else { format!("steps {first}..{last}") };
        return Err(Error::usage(format!("no {asked} in {subject} (its steps: {lo}..{hi})")));
    }
    let from = chosen.iter().map(|s| s.start).min().expect("chosen");
    let to = chosen.iter().map(|s| s.end).max().expect("chosen");
    let label = match (opts.window.clone(), first == last) {
        (Window::Representative, _) => format!("representative step {first}"),
        (_, true) => format!("step {first}"),
        _ => format!("steps {first}..{last}"),
    };
    Ok((from, to, label))
}

/// Writes through `write` to `path` (gzip when it ends in `.gz`); the bytes written.
fn write_file(path: &Path, write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) -> Result<u64, Error> {
    let fail = |e: std::io::Error| Error::store(format!("{}: {e}", path.display()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut buffered = std::io::BufWriter::with_capacity(1 << 20, file);
    if path.extension().is_some_and(|e| e == "gz") {
        let mut gz = flate2::write::GzEncoder::new(&mut buffered, flate2::Compression::fast());
        write(&mut gz).map_err(fail)?;
        gz.finish().map_err(fail)?;
    } else {
        write(&mut buffered).map_err(fail)?;
    }
    std::io::Write::flush(&mut buffered).map_err(fail)?;
    drop(buffered);
    Ok(std::fs::metadata(path).map_err(fail)?.len())
}

fn column(b: &RecordBatch, name: &str, to: &DataType) -> std::sync::Arc<dyn Array> {
    let col = b.column_by_name(name).unwrap_or_else(|| panic!("the export queries return {name}"));
    arrow::compute::cast(col, to).expect("export columns cast")
}

/// Per batch, the number and flag columns as the caller needs them (cast once per batch);
/// text columns are read as layout strings ([`TextIds`]).
struct Cols {
    int: BTreeMap<&'static str, std::sync::Arc<dyn Array>>,
    float: BTreeMap<&'static str, std::sync::Arc<dyn Array>>,
    boolean: BTreeMap<&'static str, std::sync::Arc<dyn Array>>,
}

impl Cols {
    fn of(b: &RecordBatch, int: &[&'static str], float: &[&'static str], boolean: &[&'static str]) -> Cols {
        let cast = |names: &[&'static str], to: DataType| names.iter().map(|n| (*n, column(b, n, &to))).collect();
        Cols { int: cast(int, DataType::Int64), float: cast(float, DataType::Float64), boolean: cast(boolean, DataType::Boolean) }
    }
    fn int(&self, name: &str, r: usize) -> Option<i64> {
        let a = self.int[name].as_primitive::<Int64Type>();
        (!a.is_null(r)).then(|| a.value(r))
    }
    fn float(&self, name: &str, r: usize) -> Option<f64> {
        let a = self.float[name].as_primitive::<Float64Type>();
        (!a.is_null(r)).then(|| a.value(r))
    }
    fn flag(&self, name: &str, r: usize) -> bool {
        let a = self.boolean[name].as_boolean();
        !a.is_null(r) && a.value(r)
    }
}

/// A text column of a batch as layout strings: a dictionary's values interned once each,
/// on first use (a window reads a million rows of a few thousand names); other encodings
/// row by row.
enum TextIds {
    Dict { keys: arrow::array::Int32Array, values: arrow::array::ArrayRef, ids: Vec<Str> },
    Plain(arrow::array::ArrayRef),
}

/// An id not yet interned.
const UNSEEN: Str = Str::MAX;

impl TextIds {
    fn of(b: &RecordBatch, name: &str) -> TextIds {
        let col = b.column_by_name(name).unwrap_or_else(|| panic!("the export queries return {name}"));
        if let Some(d) = col.as_dictionary_opt::<arrow::datatypes::Int32Type>() {
            let values = arrow::compute::cast(d.values(), &DataType::Utf8).expect("dictionary values cast to text");
            return TextIds::Dict { keys: d.keys().clone(), ids: vec![UNSEEN; values.len()], values };
        }
        TextIds::Plain(arrow::compute::cast(col, &DataType::Utf8).expect("text columns cast"))
    }

    fn get(&mut self, r: usize, strings: &mut Strings) -> Option<Str> {
        match self {
            TextIds::Dict { keys, values, ids } => {
                if keys.is_null(r) {
                    return None;
                }
                let k = keys.value(r) as usize;
                if ids[k] == UNSEEN {
                    ids[k] = strings.id(values.as_string::<i32>().value(k));
                }
                Some(ids[k])
            }
            TextIds::Plain(a) => {
                let a = a.as_string::<i32>();
                (!a.is_null(r)).then(|| strings.id(a.value(r)))
            }
        }
    }
}

async fn read_events(a: &Analyst<'_>, params: &[(&str, String)], strings: &mut Strings) -> Result<Vec<Event>, Error> {
    let mut clock = std::time::Instant::now();
    let got = a.batches("export_events", params).await?;
    crate::timing::stage_done("export: events queried", &mut clock);
    let mut out = Vec::with_capacity(got.iter().map(|b| b.num_rows()).sum());
    for b in &got {
        let c = Cols::of(
            b,
            &[
                "event_id",
                "line_id",
                "start_ns",
                "dur_ns",
                "op_start_ns",
                "op_dur_ns",
                "correlation_id",
                "program_id",
                "step",
                "self_ns",
                "bytes",
                "overlapped_ns",
                "exposed_ns",
            ],
            &["flops", "bytes_accessed"],
            &["is_op", "is_async"],
        );
        let [mut host, mut plane, mut device, mut line, mut name, mut display, mut op_device, mut hlo_op, mut hlo_module, mut scope, mut category, mut pass, mut region, mut kind] =
            [
                "host",
                "plane",
                "device",
                "line",
                "name",
                "display_name",
                "op_device",
                "hlo_op",
                "hlo_module",
                "scope",
                "category",
                "pass",
                "region_path",
                "collective_kind",
            ]
            .map(|n| TextIds::of(b, n));
        for r in 0..b.num_rows() {
            let op = c.flag("is_op", r).then(|| {
                Box::new(OpInfo {
                    start: c.int("op_start_ns", r).unwrap_or(0),
                    dur: c.int("op_dur_ns", r).unwrap_or(0),
                    device: op_device.get(r, strings).unwrap_or(0),
                    hlo_op: hlo_op.get(r, strings),
                    hlo_module: hlo_module.get(r, strings),
                    program_id: c.int("program_id", r),
                    scope: scope.get(r, strings),
                    category: category.get(r, strings),
                    pass: pass.get(r, strings),
                    region_path: region.get(r, strings),
                    step: c.int("step", r),
                    flops: c.float("flops", r),
                    bytes_accessed: c.float("bytes_accessed", r),
                    self_ns: c.int("self_ns", r),
                    collective: kind.get(r, strings).map(|kind| Collective {
                        kind,
                        bytes: c.int("bytes", r),
                        is_async: c.flag("is_async", r),
                        overlapped_ns: c.int("overlapped_ns", r).unwrap_or(0),
                        exposed_ns: c.int("exposed_ns", r).unwrap_or(0),
                    }),
                })
            });
            let name = match display.get(r, strings) {
                Some(short) => short,
                None => name.get(r, strings).unwrap_or_else(|| strings.id("")),
            };
            out.push(Event {
                id: c.int("event_id", r).unwrap_or(0),
                host: host.get(r, strings).unwrap_or(0),
                plane: plane.get(r, strings).unwrap_or(0),
                device: device.get(r, strings),
                line: line.get(r, strings).unwrap_or(0),
                line_id: c.int("line_id", r).unwrap_or(0),
                name,
                start: c.int("start_ns", r).unwrap_or(0),
                dur: c.int("dur_ns", r).unwrap_or(0),
                correlation: c.int("correlation_id", r),
                op,
            });
        }
    }
    Ok(out)
}

async fn read_steps(a: &Analyst<'_>, params: &[(&str, String)], strings: &mut Strings) -> Result<Vec<StepSpan>, Error> {
    let got = a.batches("export_steps", params).await?;
    let mut out = Vec::new();
    for b in &got {
        let c = Cols::of(b, &["step", "start_ns", "end_ns", "busy_ns", "communication_ns", "idle_ns", "op_count"], &[], &[]);
        let [mut host, mut device] = ["host", "device"].map(|n| TextIds::of(b, n));
        for r in 0..b.num_rows() {
            let int = |n: &str| c.int(n, r).unwrap_or(0);
            out.push(StepSpan {
                host: host.get(r, strings).unwrap_or_else(|| strings.id("")),
                device: device.get(r, strings),
                step: int("step"),
                start: int("start_ns"),
                end: int("end_ns"),
                busy_ns: int("busy_ns"),
                communication_ns: int("communication_ns"),
                idle_ns: int("idle_ns"),
                op_count: int("op_count"),
            });
        }
    }
    Ok(out)
}

async fn read_gaps(a: &Analyst<'_>, params: &[(&str, String)], strings: &mut Strings) -> Result<Vec<Gap>, Error> {
    let got = a.batches("export_gaps", params).await?;
    let mut out = Vec::new();
    for b in &got {
        let c = Cols::of(b, &["step", "start_ns", "gap_ns"], &[], &[]);
        let [mut host, mut device, mut line, mut marker, mut payload, mut region] =
            ["host", "device", "line", "marker_op", "payload_op", "payload_region"].map(|n| TextIds::of(b, n));
        for r in 0..b.num_rows() {
            let mut id = |t: &mut TextIds| t.get(r, strings).unwrap_or_else(|| strings.id(""));
            out.push(Gap {
                host: id(&mut host),
                device: id(&mut device),
                line: id(&mut line),
                marker_op: id(&mut marker),
                payload_op: id(&mut payload),
                payload_region: region.get(r, strings),
                step: c.int("step", r),
                start: c.int("start_ns", r).unwrap_or(0),
                gap_ns: c.int("gap_ns", r).unwrap_or(0),
            });
        }
    }
    Ok(out)
}
