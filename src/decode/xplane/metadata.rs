//! Plane metadata: the event and stat metadata of a plane, what each stat becomes (a typed
//! column, an arg, or skipped), and the context a plane's events are decoded in.

use super::{
    bytes_text, index_hlo_proto, map_entry, plane_fields, read_stat, scan_lines, stat_metadata_name, value_f64, value_i64, value_text, Capture, Fields,
    HashMap, Line, LineJob, PendingLine, Plane, PlaneFields, PlaneKind, PlaneRef, Release, Result, NO_STR, RELEASE_SCANNED_ABOVE,
};
use crate::model::note_peak;

/// What a stat becomes in the events table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    HloOp,
    HloModule,
    TfOp,
    Src,
    ProgramId,
    Step,
    CorrelationId,
    DeviceOrdinal,
    Arg,
    /// A stat the caller does not read ([`Capture::args_kept`]: an arg, or `_src`, whose key
    /// it does not name), unless the event keeps every arg ([`EventMeta::every_arg`]): then the stat
    /// takes its own role ([`StatInfo::kept_as`]).
    Skip,
}

pub(super) fn role_of(name: &str) -> Role {
    match name {
        "hlo_op" => Role::HloOp,
        "hlo_module" => Role::HloModule,
        "tf_op" => Role::TfOp,
        "program_id" => Role::ProgramId,
        "step_num" => Role::Step,
        "correlation_id" => Role::CorrelationId,
        "device_ordinal" => Role::DeviceOrdinal,
        "_src" => Role::Src,
        _ => Role::Arg,
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct StatInfo {
    pub(super) name: u32,
    pub(super) role: Role,
    /// The role of a [`Role::Skip`] stat on an event that keeps every arg (else `role`).
    pub(super) kept_as: Role,
}

/// A stat value resolved enough to be applied to an event.
#[derive(Clone, Copy, Debug)]
pub(super) enum StatValue<'a> {
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(&'a str),
    /// A string already in the run pool (refs, metadata strings).
    Pooled(u32),
    Bytes(&'a [u8]),
}

/// Dense-or-sparse map from protobuf int64 ids (metadata ids are usually small and dense).
pub(super) struct IdMap<T> {
    pub(super) dense: Vec<Option<T>>,
    pub(super) sparse: HashMap<i64, T>,
}

impl<T> IdMap<T> {
    pub(super) fn new() -> Self {
        IdMap { dense: Vec::new(), sparse: HashMap::new() }
    }
    pub(super) fn insert(&mut self, id: i64, v: T) {
        if (0..1 << 20).contains(&id) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i] = Some(v);
        } else {
            self.sparse.insert(id, v);
        }
    }
    #[inline]
    pub(super) fn get(&self, id: i64) -> Option<&T> {
        if (0..self.dense.len() as i64).contains(&id) {
            self.dense[id as usize].as_ref()
        } else if self.sparse.is_empty() {
            None
        } else {
            self.sparse.get(&id)
        }
    }
}

pub(super) struct EventMeta {
    pub(super) name: u32,
    pub(super) display_name: u32,
    /// Its events keep the args [`Role::Skip`] leaves out ([`crate::model::ArgsKept::every_arg_of`]).
    pub(super) every_arg: bool,
    /// Stats attached to the metadata; event-level stats with the same key win.
    pub(super) stats: Vec<(StatInfo, OwnedStat)>,
}

#[derive(Clone, Debug)]
pub(super) enum OwnedStat {
    Int(i64),
    UInt(u64),
    Double(f64),
    Pooled(u32),
}

impl OwnedStat {
    pub(super) fn as_value(&self) -> StatValue<'static> {
        match *self {
            OwnedStat::Int(v) => StatValue::Int(v),
            OwnedStat::UInt(v) => StatValue::UInt(v),
            OwnedStat::Double(v) => StatValue::Double(v),
            OwnedStat::Pooled(v) => StatValue::Pooled(v),
        }
    }
}

/// Plane-level decoding context shared read-only by the line workers.
pub(super) struct PlaneCtx {
    pub(super) stats: IdMap<StatInfo>,
    /// The plane's [`Role::Skip`] stats, dropped as their events are read.
    pub(super) skips: StatSkips,
    pub(super) events: IdMap<EventMeta>,
    /// Every arg of every event is kept (no [`Capture::args_kept`]: an ingest).
    pub(super) all_args: bool,
}

/// The stats [`read_event`] drops on sight by their metadata id, when it is below 128 (one byte:
/// every producer numbers stat metadata from 1 and writes the id first). Most stats of a CPU
/// capture are flow ids and `_src` files that a summary does not read: dropped there, they are
/// neither kept as slices nor looked up again.
pub(super) struct StatSkips(pub(super) [bool; 128]);

impl StatSkips {
    pub(super) const NONE: StatSkips = StatSkips([false; 128]);
    /// For a reader of the events' times only.
    pub(super) const ALL: StatSkips = StatSkips([true; 128]);

    pub(super) fn of(stats: &IdMap<StatInfo>) -> Self {
        StatSkips(std::array::from_fn(|id| stats.get(id as i64).is_some_and(|info| info.role == Role::Skip)))
    }

    #[inline]
    pub(super) fn drops(&self, stat: &[u8]) -> bool {
        match *stat {
            [0x08, id, ..] if id < 0x80 => self.0[id as usize],
            _ => false,
        }
    }
}

/// Pass 1 of a decode: `planes`' headers, metadata tables and special planes into
/// `capture`, and their lines registered; returns each plane's context and the lines that
/// hold events, to be decoded.
pub(super) fn prepare_planes<'a>(
    planes: &[&PlaneRef<'a>],
    host: u32,
    start_epoch: Option<i64>,
    capture: &mut Capture,
    read: &Release<'_>,
) -> Result<(Vec<PlaneCtx>, Vec<LineJob<'a>>)> {
    let mut clock = std::time::Instant::now();
    let mut ctxs: Vec<PlaneCtx> = Vec::new();
    let mut jobs: Vec<LineJob> = Vec::new();
    // Every line, in file order.
    let mut pending_lines: Vec<PendingLine> = Vec::new();
    for plane in planes {
        let PlaneFields { name, lines: line_slices, event_metadata: event_meta_entries, stat_metadata: stat_meta_entries, stats: plane_stats } =
            plane_fields(plane.bytes, plane.off)?;
        let mut stats = IdMap::new();
        for (entry, off) in stat_meta_entries {
            let (id, sname) = stat_metadata_name(entry, off)?;
            let sname = String::from_utf8_lossy(sname);
            let kept_as = role_of(&sname);
            let role = match (kept_as, capture.args_kept) {
                (Role::Arg | Role::Src, Some(kept)) if !(kept.keys)(&sname) => Role::Skip,
                (role, _) => role,
            };
            stats.insert(id, StatInfo { name: capture.strings.intern(&sname), role, kept_as });
        }

        let plane_index = capture.planes.len() as u32;
        let kind = plane_kind(&name);
        let device = if kind == PlaneKind::Device { capture.strings.intern(name.trim_start_matches("/device:")) } else { NO_STR };
        let plane_name = capture.strings.intern(&name);
        capture.planes.push(Plane { host, name: plane_name, kind, device });

        // Plane stats: producer versions, profile start, device kind.
        for (stat_bytes, off) in plane_stats {
            let (info, value) = read_stat(stat_bytes, off, &stats)?;
            let Some(info) = info else { continue };
            let key = capture.strings.get(info.name).unwrap_or("").to_string();
            let text = value_text(value, &capture.strings);
            match key.as_str() {
                "jax_version" => capture.meta.jax_version = Some(text),
                "jaxlib_version" => capture.meta.jaxlib_version = Some(text),
                "device_type_string" | "device_vendor" => {
                    let kind = if key == "device_vendor" { format!("{text} GPU") } else { text };
                    if !capture.meta.device_kinds.contains(&kind) {
                        capture.meta.device_kinds.push(kind);
                    }
                }
                // TPU planes state peaks in decimal tera / giga units, a GPU's bandwidth in bytes/s.
                "peak_teraflops_per_second" => note_peak(&mut capture.meta.peak_flops_per_s, value_f64(value).map(|v| v * 1e12)),
                "peak_hbm_bw_gigabytes_per_second" => note_peak(&mut capture.meta.peak_hbm_bytes_per_s, value_f64(value).map(|v| v * 1e9)),
                "memory_bandwidth" => note_peak(&mut capture.meta.peak_hbm_bytes_per_s, value_f64(value)),
                _ => {}
            }
        }

        let is_metadata_plane = name == "/host:metadata";
        let mut events = IdMap::new();
        for (entry, off) in event_meta_entries {
            let (id, msg) = map_entry(entry, off)?;
            let mut mname: &[u8] = b"";
            let mut dname: &[u8] = b"";
            let mut mstats = Vec::new();
            let mut hlo_bytes: Option<&[u8]> = None;
            let mut program_id: Option<i64> = None;
            let mut mf = Fields::with_base(msg.0, msg.1);
            while let Some((field, value, off)) = mf.next_field()? {
                match field {
                    2 => mname = value.as_bytes(),
                    4 => dname = value.as_bytes(),
                    5 => {
                        let (info, v) = read_stat(value.as_bytes(), off, &stats)?;
                        let Some(info) = info else { continue };
                        if is_metadata_plane {
                            let key = capture.strings.get(info.name).unwrap_or("");
                            if key == "Hlo Proto" {
                                if let StatValue::Bytes(b) = v {
                                    hlo_bytes = Some(b);
                                }
                                continue;
                            }
                            if key == "program_id" {
                                program_id = value_i64(v);
                            }
                        }
                        let owned = match v {
                            StatValue::Int(x) => OwnedStat::Int(x),
                            StatValue::UInt(x) => OwnedStat::UInt(x),
                            StatValue::Double(x) => OwnedStat::Double(x),
                            StatValue::Pooled(x) => OwnedStat::Pooled(x),
                            StatValue::Str(s) => OwnedStat::Pooled(capture.strings.intern(s)),
                            StatValue::Bytes(b) => OwnedStat::Pooled(capture.strings.intern(&bytes_text(b))),
                        };
                        mstats.push((info, owned));
                    }
                    _ => {}
                }
            }
            let mname = String::from_utf8_lossy(mname);
            if let Some(hlo) = hlo_bytes {
                let program_id = program_id.or_else(|| program_id_from_module_name(&mname));
                if let Err(e) = index_hlo_proto(hlo, program_id, &mut capture.strings, std::sync::Arc::make_mut(&mut capture.hlo)) {
                    capture.meta.quality_warnings.push(format!("{mname}: {e}"));
                }
            }
            let dname = String::from_utf8_lossy(dname);
            let name_id = capture.strings.intern(&mname);
            let display_id = if dname.is_empty() || dname == mname { NO_STR } else { capture.strings.intern(&dname) };
            let every_arg = capture.args_kept.is_some_and(|kept| (kept.every_arg_of)(&mname));
            events.insert(id, EventMeta { name: name_id, display_name: display_id, every_arg, stats: mstats });
        }

        // Lines: headers and events' bytes once every plane's metadata is read.
        pending_lines.extend(line_slices.into_iter().map(|(bytes, off)| (plane_index, ctxs.len(), bytes, off)));
        ctxs.push(PlaneCtx { skips: StatSkips::of(&stats), stats, events, all_args: capture.args_kept.is_none() });
    }

    // The lines are split into events on every worker (a CPU line can hold most of a file's
    // events), then registered in file order.
    // A group larger than memory should hold drops the pages its scan read (they are read
    // again when decoded); a smaller one keeps them for its decode.
    let scanned_bytes: usize = planes.iter().map(|p| p.bytes.len()).sum();
    let scanned = scan_lines(&pending_lines, if scanned_bytes > RELEASE_SCANNED_ABOVE { read } else { &|_| {} });
    for ((plane_index, ctx, bytes, off), scan) in pending_lines.iter().zip(scanned) {
        let (header, events) = scan?;
        let chosen = header.display();
        let line_name = if chosen.is_empty() { format!("xline:{}", capture.lines.len()) } else { String::from_utf8_lossy(chosen).into_owned() };
        capture.meta.num_events_total += events.count as i64;
        let line_index = capture.lines.len() as u32;
        capture.lines.push(Line { plane: *plane_index, line_id: header.id, name: capture.strings.intern(&line_name) });
        if events.count > 0 {
            jobs.push(LineJob { line_index, timestamp_ns: header.timestamp_ns, bytes, base: *off, events, plane: *ctx });
        }
    }

    // Line timestamps are relative to the profile start on every producer we know; a value
    // that is plainly an epoch time is made relative too.
    for job in jobs.iter_mut() {
        if let Some(start) = start_epoch {
            if job.timestamp_ns > 1_000_000_000_000_000_000 / 10 && job.timestamp_ns >= start / 2 {
                job.timestamp_ns -= start;
            }
        }
    }

    crate::timing::stage_done("  xplane headers and metadata", &mut clock);
    Ok((ctxs, jobs))
}

pub fn plane_kind(name: &str) -> PlaneKind {
    if name.starts_with("/device:") && !name.starts_with("/device:CUSTOM") {
        PlaneKind::Device
    } else if name.starts_with("/host:") && name != "/host:metadata" {
        PlaneKind::Host
    } else {
        PlaneKind::Other
    }
}

pub(super) fn program_id_from_module_name(name: &str) -> Option<i64> {
    let open = name.rfind('(')?;
    let inner = name[open + 1..].strip_suffix(')')?;
    inner.parse::<u64>().ok().map(|v| v as i64)
}
