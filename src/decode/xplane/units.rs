//! Work units: a plane's lines cut into units of events the workers take from a shared
//! queue, and the chunks they make put back in line order.

use super::{decode_unit, nest_lines, next_event_field, Capture, EventChunk, Fields, OpenBefore, PlaneCtx, Result, WireError};

/// A line whose events are to be decoded: its bytes (at file offset `base`), how many events
/// they hold, and where every [`EVENTS_PER_MARK`]-th event's field starts, so that a worker can
/// start reading at any multiple of it. No per-event index: a million events' slices would
/// be 16 MB written, faulted in and read back only to find each event once more.
pub(super) struct LineJob<'a> {
    pub(super) line_index: u32,
    pub(super) timestamp_ns: i64,
    pub(super) bytes: &'a [u8],
    pub(super) base: usize,
    pub(super) events: LineEvents,
    pub(super) plane: usize,
}

/// The fewest bytes an event's stat with a metadata id takes in its line (its field key and
/// length, the id's key and a one-byte id, a value's key and a one-byte value): what bounds
/// the args a unit reserves room for.
pub(super) const MIN_STAT_BYTES: usize = 6;

/// Arg text a unit reserves per event ([`decode_unit`]).
pub(super) const ARG_BYTES_PER_EVENT: usize = 8;

/// Args a unit reserves per event where every arg is kept ([`decode_unit`]).
pub(super) const ALL_ARGS_PER_EVENT: usize = 2;

/// Events between two marks of a [`LineJob`]; units of work start at multiples of it.
pub(super) const EVENTS_PER_MARK: usize = 1024;

impl LineJob<'_> {
    /// Where in `bytes` the field of the marked event at or before event `k` starts (event
    /// `k` itself for a multiple of [`EVENTS_PER_MARK`]), or the end of the line for
    /// `k == events`.
    pub(super) fn mark(&self, k: usize) -> usize {
        if k == self.events.count {
            self.bytes.len()
        } else {
            self.events.marks[k / EVENTS_PER_MARK]
        }
    }

    /// The line's fields from event `k` on: read from the mark at or before it, the events
    /// between passed over.
    pub(super) fn fields_from(&self, k: usize) -> Result<Fields<'_>> {
        let first = self.mark(k);
        let mut fields = Fields::with_base(&self.bytes[first..], self.base + first);
        if k < self.events.count {
            for _ in 0..k % EVENTS_PER_MARK {
                next_event_field(&mut fields)?;
            }
        }
        Ok(fields)
    }
}

/// A scanned line's events: how many, and where every [`EVENTS_PER_MARK`]-th one's field starts.
#[derive(Default)]
pub(super) struct LineEvents {
    pub(super) count: usize,
    pub(super) marks: Vec<usize>,
}

/// Pass 2 of a decode: events `ranges[j]` of each line `jobs[j]`, in parallel. Lines are cut
/// into units of similar size (one line of a CPU capture can hold most of the events),
/// decoded on all workers, then put back together line by line into chunks (their strings
/// merged into `capture`'s pool) whose nesting is computed in parallel too, each line from
/// the events `open_before` says are open where its range starts.
pub(super) fn decode_events(
    jobs: &[LineJob],
    ranges: &[std::ops::Range<usize>],
    ctxs: &[PlaneCtx],
    capture: &mut Capture,
    open_before: &OpenBefore,
) -> Result<Vec<EventChunk>> {
    let mut clock = std::time::Instant::now();
    let workers = crate::work_queue::workers();
    let units = plan_units(ranges, workers);
    let pool = &capture.strings;
    let decoded: Vec<Result<EventChunk>> =
        crate::work_queue::map_in_order(units.iter().collect(), |u: &Unit| decode_unit(&jobs[u.job], u.events.clone(), ctxs, pool));
    crate::timing::stage_done("  xplane events", &mut clock);
    let mut pieces = Vec::with_capacity(units.len());
    for piece in decoded {
        let mut piece = piece?;
        piece.merge_strings_into(&mut capture.strings);
        pieces.push(piece);
    }
    let starts_line: Vec<bool> = units.iter().map(|u| u.events.start == ranges[u.job].start).collect();
    let line_offsets: Vec<usize> = units.iter().map(|u| jobs[u.job].base).collect();
    let assembled = assemble_chunks(pieces, &starts_line, &line_offsets, workers, open_before);
    crate::timing::stage_done("  xplane string merge", &mut clock);
    assembled
}

/// A run of consecutive events of one line, decoded as one piece.
pub(super) struct Unit {
    pub(super) job: usize,
    pub(super) events: std::ops::Range<usize>,
}

/// Cuts every line's events `ranges[j]` into units of at most ~1/(16 × workers) of all
/// events (a multiple of [`EVENTS_PER_MARK`]): workers take units as they finish one, so no
/// worker waits long on another's last unit, nor on one long line.
pub(super) fn plan_units(ranges: &[std::ops::Range<usize>], workers: usize) -> Vec<Unit> {
    let total: usize = ranges.iter().map(|r| r.len()).sum();
    let max_events = (total / (workers * 16).max(1)).max(4096).next_multiple_of(EVENTS_PER_MARK);
    let mut units = Vec::new();
    for (job_index, range) in ranges.iter().enumerate() {
        let mut start = range.start;
        while start < range.end {
            let end = (start + max_events).min(range.end);
            units.push(Unit { job: job_index, events: start..end });
            start = end;
        }
    }
    units
}

/// Puts the decoded pieces (in order) together into the part's chunks, then sorts and nests
/// every line, in parallel over runs of chunks that share no line.
///
/// Whole lines are joined into chunks of about 1/`n` of the events each. The pieces of a line
/// cut into several (a CPU capture's busiest thread can be most of a file) are not copied:
/// they stay chunks of their own, the line running on from one into the next, unless they are
/// out of order, and are then joined and sorted.
///
/// A line whose stat text alone reaches 2 GiB cannot be one Arrow string column (i32
/// offsets): it is refused with the line's file offset rather than written wrong.
pub(super) fn assemble_chunks(
    pieces: Vec<EventChunk>,
    starts_line: &[bool],
    line_offsets: &[usize],
    n: usize,
    open_before: &OpenBefore,
) -> Result<Vec<EventChunk>> {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let target = total / n.max(1) + 1;
    // Arg offsets within a chunk are u32: a chunk also ends before its arg bytes near 2 GiB.
    const MAX_ARG_BYTES: usize = 1 << 31;
    // Each line's pieces (they follow each other).
    let mut lines: Vec<std::ops::Range<usize>> = Vec::new();
    for (k, &starts) in starts_line.iter().enumerate().take(pieces.len()) {
        match lines.last_mut() {
            Some(line) if !starts => line.end = k + 1,
            _ => lines.push(k..k + 1),
        }
    }
    let mut pieces = pieces.into_iter();
    let mut runs: Vec<ChunkRun> = Vec::new();
    // Whole lines being joined, their events and stat text.
    let (mut joining, mut events, mut arg_bytes): (Vec<EventChunk>, usize, usize) = (Vec::new(), 0, 0);
    for line in lines {
        let line_pieces: Vec<EventChunk> = pieces.by_ref().take(line.len()).collect();
        let line_events = line_pieces.iter().map(EventChunk::len).sum::<usize>();
        let line_bytes = line_pieces.iter().map(|p| p.arg_value_bytes.len()).sum::<usize>();
        if line_bytes >= MAX_ARG_BYTES {
            return Err(WireError { offset: line_offsets[line.start], what: "line with 2 GiB or more of stat text (more than profq holds per line)" });
        }
        let cut = line_pieces.len() > 1;
        if !joining.is_empty() && (cut || events >= target || arg_bytes + line_bytes >= MAX_ARG_BYTES) {
            runs.push(ChunkRun::Join(std::mem::take(&mut joining)));
            (events, arg_bytes) = (0, 0);
        }
        if cut {
            let in_order = line_pieces.iter().all(EventChunk::lines_sorted) && line_pieces.windows(2).all(|w| w[0].line_continues_into(&w[1]));
            runs.push(if in_order { ChunkRun::Keep(line_pieces) } else { ChunkRun::Join(line_pieces) });
        } else {
            joining.extend(line_pieces);
            (events, arg_bytes) = (events + line_events, arg_bytes + line_bytes);
        }
    }
    if !joining.is_empty() {
        runs.push(ChunkRun::Join(joining));
    }

    // Each run's first position in the part; runs are taken by the next free worker.
    let mut position = 0u32;
    let runs: Vec<(ChunkRun, u32)> = runs
        .into_iter()
        .map(|run| {
            let first = position;
            position += run.events() as u32;
            (run, first)
        })
        .collect();
    let assembled = crate::work_queue::map_in_order(runs, |(run, first)| run.assembled(first, open_before));
    Ok(assembled.into_iter().flatten().collect())
}

/// Pieces of a part that make chunks together.
pub(super) enum ChunkRun {
    /// Joined into one chunk: whole lines, or the pieces of a line that are out of order.
    Join(Vec<EventChunk>),
    /// Kept as chunks of their own: the pieces of one line, in order.
    Keep(Vec<EventChunk>),
}

impl ChunkRun {
    pub(super) fn events(&self) -> usize {
        let (ChunkRun::Join(pieces) | ChunkRun::Keep(pieces)) = self;
        pieces.iter().map(EventChunk::len).sum()
    }

    /// The run's chunks, each line sorted and nested; `first_position`: the position of the
    /// run's first event in its part.
    pub(super) fn assembled(self, first_position: u32, open_before: &OpenBefore) -> Vec<EventChunk> {
        let mut chunks = match self {
            ChunkRun::Join(pieces) => {
                let mut chunk = EventChunk::concat(pieces);
                chunk.sort_within_lines();
                vec![chunk]
            }
            ChunkRun::Keep(pieces) => pieces,
        };
        nest_lines(&mut chunks, first_position, open_before);
        chunks
    }
}
