//! The event loop: one unit's events read into an [`EventChunk`], their times made integer ns.

use super::{
    leading_field1_varint, push_varint_arg, read_stat, set_int_column, set_string_column, set_typed_column, usual_varint_value, value_i64, write_value,
    EventChunk, Fields, LineJob, PlaneCtx, Result, Role, StatInfo, StatSkips, StatValue, StringPool, WireError, ALL_ARGS_PER_EVENT, ARG_BYTES_PER_EVENT,
    MIN_STAT_BYTES, NO_STR,
};

/// `ps_to_ns(timestamp_ns × 1000 + offset_ps)` and the same of `+ dur_ps`: in u64 when every
/// term is ≥ 0 and small enough that nothing overflows (relative times of real captures; an
/// unsigned division by 1000 is a multiplication), else in i64, else in i128.
#[inline]
pub(super) fn event_span_ns(timestamp_ns: i64, offset_ps: i64, dur_ps: i64) -> (i64, i64) {
    let dur_ps = dur_ps.max(0);
    if (0..1 << 52).contains(&timestamp_ns) && (0..1 << 60).contains(&offset_ps) && dur_ps < 1 << 60 {
        // Below 2^62 + 2^60 + 2^60 + 500 < 2^63.
        let start_ps = timestamp_ns as u64 * 1000 + offset_ps as u64;
        return (((start_ps + 500) / 1000) as i64, ((start_ps + dur_ps as u64 + 500) / 1000) as i64);
    }
    let start_ps = timestamp_ns.checked_mul(1000).and_then(|t| t.checked_add(offset_ps));
    match start_ps.and_then(|s| Some((s.checked_add(500)?, s.checked_add(dur_ps)?.checked_add(500)?))) {
        Some((start, end)) => (start.div_euclid(1000), end.div_euclid(1000)),
        None => {
            let start_ps = timestamp_ns as i128 * 1000 + offset_ps as i128;
            (ps_to_ns(start_ps), ps_to_ns(start_ps + dur_ps as i128))
        }
    }
}

pub(super) fn ps_to_ns(ps: i128) -> i64 {
    let ns = (ps + 500).div_euclid(1000);
    ns.clamp(i64::MIN as i128 + 1, i64::MAX as i128) as i64
}

/// Decodes events `range` of one line (no sorting or nesting yet).
pub(super) fn decode_unit(job: &LineJob, range: std::ops::Range<usize>, ctxs: &[PlaneCtx], pool: &StringPool) -> Result<EventChunk> {
    let mut chunk = EventChunk::with_capacity(range.len());
    // Room for one short arg per event, and no more than the span's bytes can hold; more grow
    // by doubling. Most events keep no arg (their stats are typed columns or skipped): room
    // for every stat the span could hold would be many times what is kept, and though never
    // touched, it would move each part's buffers onto fresh pages and raise the peak.
    // A decode that keeps every arg (an ingest) fills far more: there the room is for what a
    // CPU capture's events hold (~1.6 args and ~9 bytes of text each), so that the columns
    // are not copied into fresh pages as they double.
    let (span, events) = (job.mark(range.end) - job.mark(range.start), range.len());
    let per_event = if ctxs[job.plane].all_args { ALL_ARGS_PER_EVENT } else { 1 };
    chunk.reserve_args((span / MIN_STAT_BYTES).min(events * per_event), (span / 2).min(events * per_event * ARG_BYTES_PER_EVENT));
    let mut fields = job.fields_from(range.start)?;
    let mut next_event = || next_event_field(&mut fields);
    let mut scratch = String::new();
    let mut seen: Vec<u32> = Vec::new();
    {
        let ctx = &ctxs[job.plane];
        // Filled anew by every event.
        let mut stats = StatSlices::new();
        for _ in range {
            let (ev, ev_offset) = next_event()?;
            let EventHead { meta_id, offset_ps, dur_ps, aggregated } = read_event(ev, ev_offset, &mut stats, &ctx.skips)?;
            if aggregated {
                continue;
            }
            let (start, end) = event_span_ns(job.timestamp_ns, offset_ps, dur_ps);
            let meta = ctx.events.get(meta_id);
            // An event that keeps every arg keeps the skipped ones too: read again without
            // dropping any (compile and transfer events, a few a file).
            let every_arg = meta.is_some_and(|m| m.every_arg);
            if every_arg {
                read_event(ev, ev_offset, &mut stats, &StatSkips::NONE)?;
            }
            let i = chunk.push_event(job.line_index, meta.map_or(NO_STR, |m| m.name), meta.map_or(NO_STR, |m| m.display_name), NO_STR, start, end - start);
            seen.clear();
            let role_for_event = |info: StatInfo| if every_arg && info.role == Role::Skip { StatInfo { role: info.kept_as, ..info } } else { info };
            for &(bytes, off) in stats.iter() {
                let mut pos = 0;
                if let Some(info) = leading_field1_varint(bytes, &mut pos).and_then(|id| ctx.stats.get(id as i64)) {
                    let info = role_for_event(*info);
                    // Most stats of a CPU capture are flow ids no caller reads: skipped
                    // unparsed. (Their metadata-level namesakes have the same role, so none is
                    // let through.)
                    if info.role == Role::Skip {
                        continue;
                    }
                    // Typed columns set from a reference or an integer (hlo_op, hlo_module,
                    // program_id, step, …: most stats that are read) straight from the bytes.
                    if let Some((key, raw)) = usual_varint_value(bytes, pos) {
                        if set_typed_column(&mut chunk, i, info.role, key, raw, &ctx.stats) || push_varint_arg(&mut chunk, info, key, raw, &ctx.stats, pool) {
                            seen.push(info.name);
                            continue;
                        }
                    }
                }
                let (info, value) = read_stat(bytes, off, &ctx.stats)?;
                if let Some(info) = info {
                    seen.push(info.name);
                    apply_stat(&mut chunk, i, role_for_event(info), value, pool, &mut scratch);
                }
            }
            if let Some(meta) = meta {
                for (info, value) in &meta.stats {
                    if !seen.contains(&info.name) {
                        apply_stat(&mut chunk, i, role_for_event(*info), value.as_value(), pool, &mut scratch);
                    }
                }
            }
            chunk.end_args();
        }
    }
    Ok(chunk)
}

/// The next event's bytes and file offset among a line's fields (its other fields are
/// passed over).
#[inline]
pub(super) fn next_event_field<'a>(fields: &mut Fields<'a>) -> Result<(&'a [u8], usize)> {
    if let Some(event) = fields.next_bytes_keyed(0x22) {
        return Ok(event);
    }
    loop {
        match fields.next_field()? {
            Some((4, value, off)) => return Ok((value.as_bytes(), off)),
            Some(_) => {}
            None => return Err(WireError { offset: fields.offset(), what: "line ends before the events its scan counted" }),
        }
    }
}

/// An XEvent's scalar fields.
#[derive(Default)]
pub(super) struct EventHead {
    pub(super) meta_id: i64,
    pub(super) offset_ps: i64,
    pub(super) dur_ps: i64,
    pub(super) aggregated: bool,
}

/// Reads an XEvent: its scalar fields, returned, and into `stats` its stats' bytes but those
/// `skips` drops. Events are read a million times a file, so the usual one-byte keys are matched directly;
/// anything else is read again field by field, which also reports malformed bytes. Always
/// inlined: called, it would cost saved registers and a head returned through memory, for
/// every event.
#[inline(always)]
pub(super) fn read_event<'a>(ev: &'a [u8], base: usize, stats: &mut StatSlices<'a>, skips: &StatSkips) -> Result<EventHead> {
    stats.clear();
    // Producers write the fields in field-number order, so each key is tested in turn: a
    // chain of branches that always go the same way (a `match` on the key jumps through a
    // table, which the CPU mispredicts at every field). A keyed read that does not match
    // reads nothing, so any other layout, or malformed bytes, leaves the event unfinished.
    let mut fields = Fields::with_base(ev, base);
    let mut scalar = |key| fields.next_varint_keyed(key).map_or(0, |v| v as i64);
    let (meta_id, offset_ps, dur_ps) = (scalar(0x08), scalar(0x10), scalar(0x18));
    while let Some((stat, off)) = fields.next_bytes_keyed(0x22) {
        if !skips.drops(stat) {
            stats.push(stat, off);
        }
    }
    let aggregated = fields.next_varint_keyed(0x28).is_some();
    if fields.at_end() {
        return Ok(EventHead { meta_id, offset_ps, dur_ps, aggregated });
    }
    read_event_fields(ev, base, stats, skips)
}

/// [`read_event`] field by field, in any order (the last of a repeated scalar wins), with an
/// error for malformed bytes.
pub(super) fn read_event_fields<'a>(ev: &'a [u8], base: usize, stats: &mut StatSlices<'a>, skips: &StatSkips) -> Result<EventHead> {
    stats.clear();
    let mut head = EventHead::default();
    let mut f = Fields::with_base(ev, base);
    while let Some((field, value, off)) = f.next_field()? {
        match field {
            1 => head.meta_id = value.as_i64(),
            2 => head.offset_ps = value.as_i64(),
            3 => head.dur_ps = value.as_i64(),
            4 if !skips.drops(value.as_bytes()) => stats.push(value.as_bytes(), off),
            5 => head.aggregated = true,
            _ => {}
        }
    }
    Ok(head)
}

/// An event's stats, as their bytes and file offsets in order: the first 16 in place (an
/// event seldom has more), the rest in a vector.
pub(super) struct StatSlices<'a> {
    pub(super) inline: [(&'a [u8], usize); 16],
    pub(super) extra: Vec<(&'a [u8], usize)>,
    pub(super) len: usize,
}

impl<'a> StatSlices<'a> {
    pub(super) fn new() -> Self {
        StatSlices { inline: [(&[], 0); 16], extra: Vec::new(), len: 0 }
    }

    #[inline]
    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.extra.clear();
    }

    #[inline]
    pub(super) fn push(&mut self, slice: &'a [u8], off: usize) {
        if self.len < 16 {
            self.inline[self.len] = (slice, off);
        } else {
            self.extra.push((slice, off));
        }
        self.len += 1;
    }

    #[inline]
    pub(super) fn iter(&self) -> impl Iterator<Item = &(&'a [u8], usize)> {
        self.inline[..self.len.min(16)].iter().chain(self.extra.iter())
    }
}

#[inline]
pub(super) fn apply_stat(chunk: &mut EventChunk, i: usize, info: StatInfo, value: StatValue, pool: &StringPool, scratch: &mut String) {
    match info.role {
        Role::HloOp | Role::HloModule | Role::TfOp | Role::Src => {
            let id = match value {
                StatValue::Pooled(id) => id,
                StatValue::Str(s) => chunk.local(s),
                other => {
                    scratch.clear();
                    write_value(other, pool, scratch);
                    chunk.local(scratch)
                }
            };
            set_string_column(chunk, i, info.role, id);
        }
        Role::ProgramId | Role::Step | Role::CorrelationId | Role::DeviceOrdinal => {
            let Some(v) = (match value {
                StatValue::Pooled(id) => pool.get(id).and_then(|s| s.trim().parse().ok()),
                other => value_i64(other),
            }) else {
                return;
            };
            set_int_column(chunk, i, info.role, v);
        }
        Role::Skip => {}
        Role::Arg => {
            scratch.clear();
            write_value(value, pool, scratch);
            chunk.push_arg(info.name, scratch);
        }
    }
}
