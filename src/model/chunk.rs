//! Event chunks: a line's events as columns (times, names, typed stats, args as offsets into
//! one byte buffer), and their nesting into self time, depth and parent by the stack rule.

use super::{HashMap, Nullable, SparseColumn, StringPool, LOCAL_TAG, NO_PARENT, NO_STR};

/// Computes self_ns, depth and parent for the events of `chunks` with the reference stack
/// rule: at equal start the longer event is the parent; a partially overlapping event is a
/// sibling of the one it overlaps; a child's full duration is subtracted from its parent.
/// The chunks' events, one after another, must hold each line as one run sorted by
/// (start, -dur); `first_position` is the position of the first one in its part. A line that
/// an earlier part (a time window of the same plane) left with events open starts from
/// them (`open_before`): its events nest under them, and their own self times were known
/// when they were written.
pub fn nest_lines(chunks: &mut [EventChunk], first_position: u32, open_before: &OpenBefore) {
    /// An open event: its end, where it is (chunk, index) and its position in the part.
    struct Open {
        end: i64,
        chunk: usize,
        index: usize,
        position: u32,
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut current_line = u32::MAX;
    let mut position = first_position;
    for ci in 0..chunks.len() {
        let (earlier, rest) = chunks.split_at_mut(ci);
        let c = &mut rest[0];
        let n = c.len();
        // A parent comes before its children, so its self time is in place (its duration)
        // before a child takes its own off: the three columns are written in one pass, with
        // no copy or fill of them first.
        let (mut self_ns, mut depth, mut parent) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            if c.line[i] != current_line {
                current_line = c.line[i];
                stack.clear();
                if let Some(open) = open_before.get(&current_line) {
                    stack.extend(open.iter().map(|o| Open { end: o.end, chunk: usize::MAX, index: 0, position: o.parent }));
                }
            }
            let (start, dur) = (c.start_ns[i], c.dur_ns[i]);
            let end = start.saturating_add(dur);
            while stack.last().is_some_and(|top| !encloses(top.end, start, end)) {
                stack.pop();
            }
            let (parent_position, event_depth) = match stack.last() {
                Some(top) => {
                    if top.chunk == ci {
                        self_ns[top.index] = i64::saturating_sub(self_ns[top.index], dur);
                    } else if top.chunk != usize::MAX {
                        let slot = &mut earlier[top.chunk].self_ns[top.index];
                        *slot = slot.saturating_sub(dur);
                    }
                    (top.position, stack.len() as u32)
                }
                None => (NO_PARENT, 0),
            };
            self_ns.push(dur);
            depth.push(event_depth);
            parent.push(parent_position);
            stack.push(Open { end, chunk: ci, index: i, position });
            position += 1;
        }
        (c.self_ns, c.depth, c.parent) = (self_ns, depth, parent);
    }
    for c in chunks.iter_mut() {
        for v in c.self_ns.iter_mut() {
            if *v < 0 {
                *v = 0;
            }
        }
    }
}

/// Whether an open event ending at `open_end` is the parent of the next event of its line,
/// `start..end` ([`nest_lines`]' rule): it must end after the event starts and not before
/// it ends (an event it only partly overlaps is its sibling).
pub fn encloses(open_end: i64, start: i64, end: i64) -> bool {
    open_end > start && open_end >= end
}

/// An event left open at the start of a part by an earlier part of its line: its end, and
/// the parent value its children take (`CARRIED_TAG | k`, [`Capture::carried_parents`]).
#[derive(Clone, Copy, Debug)]
pub struct OpenEvent {
    pub end: i64,
    pub parent: u32,
}

/// Per line, the events open when a part starts, outermost first (none: an empty map).
pub type OpenBefore = HashMap<u32, Vec<OpenEvent>>;

/// `v`'s values at `rows`, in that order (an unfilled column stays empty).
pub(super) fn picked<T: Copy>(v: &[T], rows: &[u32]) -> Vec<T> {
    if v.is_empty() {
        return Vec::new();
    }
    rows.iter().map(|&i| v[i as usize]).collect()
}

/// Columnar events of one or more lines, each line's events one run sorted by (start, -dur).
/// A part's chunks come in order, and a line cut into pieces to be decoded on several cores
/// runs on from one chunk into the next ([`nest_lines`]).
#[derive(Default, Debug)]
pub struct EventChunk {
    pub line: Vec<u32>,
    pub name: Vec<u32>,
    pub display_name: SparseColumn<u32>,
    pub category: SparseColumn<u32>,
    pub start_ns: Vec<i64>,
    pub dur_ns: Vec<i64>,
    pub self_ns: Vec<i64>,
    pub depth: Vec<u32>,
    /// Position of the parent among the part's events (its chunks' events one after
    /// another), or NO_PARENT.
    pub parent: Vec<u32>,
    pub hlo_op: SparseColumn<u32>,
    pub hlo_module: SparseColumn<u32>,
    pub tf_op: SparseColumn<u32>,
    pub program_id: SparseColumn<i64>,
    pub step: SparseColumn<i64>,
    pub correlation_id: SparseColumn<i64>,
    pub device_ordinal: SparseColumn<i64>,
    /// `_src` stat: the C++ source file of the TraceMe (on nearly every CPU event).
    pub src: SparseColumn<u32>,
    /// args of event i are entries arg_offsets[i]..arg_offsets[i+1].
    pub arg_offsets: Vec<u32>,
    pub arg_key: Vec<u32>,
    /// UTF-8 values of all args, entry j is arg_value_bytes[arg_value_offsets[j]..arg_value_offsets[j+1]].
    pub arg_value_offsets: Vec<u32>,
    pub arg_value_bytes: Vec<u8>,
    /// Strings met while decoding this chunk in parallel (ids carry LOCAL_TAG until merged).
    pub local_strings: StringPool,
}

impl EventChunk {
    pub fn new() -> Self {
        EventChunk { arg_offsets: vec![0], arg_value_offsets: vec![0], ..Default::default() }
    }
    /// An empty chunk with room for `n` events (their args grow as needed).
    pub fn with_capacity(n: usize) -> Self {
        let mut c = EventChunk::new();
        c.reserve(n);
        c
    }

    /// How many events the chunk has room for (what a sparse column reserves when it fills in).
    pub fn capacity(&self) -> usize {
        self.line.capacity()
    }

    /// Room for `n` more events.
    pub fn reserve(&mut self, n: usize) {
        self.line.reserve(n);
        self.name.reserve(n);
        self.start_ns.reserve(n);
        self.dur_ns.reserve(n);
        self.arg_offsets.reserve(n);
    }

    /// Room for `args` more args of `value_bytes` text in all, made once where the caller
    /// can tell how many are likely: doubling up to it would copy them at each step.
    pub fn reserve_args(&mut self, args: usize, value_bytes: usize) {
        self.arg_key.reserve(args);
        self.arg_value_offsets.reserve(args);
        self.arg_value_bytes.reserve(value_bytes);
    }

    /// The events of `pieces` one after another (strings already in one pool; no nesting
    /// yet). Built a column at a time, each piece's column freed once copied, so the peak is
    /// the pieces plus one column rather than twice the events.
    pub fn concat(mut pieces: Vec<EventChunk>) -> EventChunk {
        debug_assert!(pieces.iter().all(|p| p.local_strings.is_empty() && p.self_ns.is_empty()));
        if pieces.len() == 1 {
            return pieces.pop().expect("one piece");
        }
        fn column<T: Copy>(pieces: &mut [EventChunk], col: fn(&mut EventChunk) -> &mut Vec<T>) -> Vec<T> {
            let mut out = Vec::with_capacity(pieces.iter_mut().map(|p| col(p).len()).sum());
            for p in pieces.iter_mut() {
                out.extend_from_slice(&std::mem::take(col(p)));
            }
            out
        }
        // Offsets into the keys / value bytes, rebased onto what the earlier pieces hold.
        fn offsets(pieces: &mut [EventChunk], col: fn(&mut EventChunk) -> &mut Vec<u32>, len_of: fn(&EventChunk) -> usize) -> Vec<u32> {
            let mut out = Vec::with_capacity(pieces.iter_mut().map(|p| col(p).len()).sum::<usize>() + 1);
            out.push(0);
            let mut base = 0u32;
            for p in pieces.iter_mut() {
                let len = len_of(p) as u32;
                out.extend(std::mem::take(col(p))[1..].iter().map(|o| o + base));
                base += len;
            }
            out
        }
        let lens: Vec<usize> = pieces.iter().map(EventChunk::len).collect();
        fn sparse<T: Nullable>(pieces: &mut [EventChunk], lens: &[usize], col: fn(&mut EventChunk) -> &mut SparseColumn<T>) -> SparseColumn<T> {
            SparseColumn::concat(pieces.iter_mut().map(|p| std::mem::take(col(p))).collect(), lens)
        }
        let p = &mut pieces[..];
        EventChunk {
            line: column(p, |c| &mut c.line),
            name: column(p, |c| &mut c.name),
            display_name: sparse(p, &lens, |c| &mut c.display_name),
            category: sparse(p, &lens, |c| &mut c.category),
            start_ns: column(p, |c| &mut c.start_ns),
            dur_ns: column(p, |c| &mut c.dur_ns),
            hlo_op: sparse(p, &lens, |c| &mut c.hlo_op),
            hlo_module: sparse(p, &lens, |c| &mut c.hlo_module),
            tf_op: sparse(p, &lens, |c| &mut c.tf_op),
            program_id: sparse(p, &lens, |c| &mut c.program_id),
            step: sparse(p, &lens, |c| &mut c.step),
            correlation_id: sparse(p, &lens, |c| &mut c.correlation_id),
            device_ordinal: sparse(p, &lens, |c| &mut c.device_ordinal),
            src: sparse(p, &lens, |c| &mut c.src),
            arg_offsets: offsets(p, |c| &mut c.arg_offsets, |c| c.arg_key.len()),
            arg_key: column(p, |c| &mut c.arg_key),
            arg_value_offsets: offsets(p, |c| &mut c.arg_value_offsets, |c| c.arg_value_bytes.len()),
            arg_value_bytes: column(p, |c| &mut c.arg_value_bytes),
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.start_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.start_ns.is_empty()
    }
    pub fn arg_value(&self, j: usize) -> &str {
        let a = self.arg_value_offsets[j] as usize;
        let b = self.arg_value_offsets[j + 1] as usize;
        // Values are only ever appended as &str.
        unsafe { std::str::from_utf8_unchecked(&self.arg_value_bytes[a..b]) }
    }
    pub fn args_of(&self, i: usize) -> std::ops::Range<usize> {
        self.arg_offsets[i] as usize..self.arg_offsets[i + 1] as usize
    }
    /// Appends an event with no stats yet (typed stats null, no args); returns its index.
    /// Stats are then set on the returned index and the event closed with `end_args`. Always
    /// inlined into the decode's event loop: it runs once per event.
    #[inline(always)]
    pub fn push_event(&mut self, line: u32, name: u32, display_name: u32, category: u32, start_ns: i64, dur_ns: i64) -> usize {
        let i = self.len();
        let capacity = self.capacity();
        self.line.push(line);
        self.name.push(name);
        self.display_name.set(i, capacity, display_name);
        self.category.set(i, capacity, category);
        self.start_ns.push(start_ns);
        self.dur_ns.push(dur_ns);
        i
    }

    /// Closes the args of the last pushed event.
    pub fn end_args(&mut self) {
        self.arg_offsets.push(self.arg_key.len() as u32);
    }

    pub fn push_arg(&mut self, key: u32, value: &str) {
        self.arg_key.push(key);
        self.arg_value_bytes.extend_from_slice(value.as_bytes());
        self.arg_value_offsets.push(self.arg_value_bytes.len() as u32);
    }
    /// Interns a string local to this chunk; the id carries LOCAL_TAG.
    pub fn local(&mut self, s: &str) -> u32 {
        self.local_strings.intern(s) | LOCAL_TAG
    }

    /// Rewrites chunk-local string ids into `pool` ids.
    pub fn merge_strings_into(&mut self, pool: &mut StringPool) {
        if self.local_strings.is_empty() {
            return;
        }
        let remap = self.local_strings.ids_in(pool);
        self.map_string_ids(|id| if id & LOCAL_TAG != 0 { remap[(id & !LOCAL_TAG) as usize] } else { id });
        self.local_strings = StringPool::default();
    }

    /// Rewrites every string id `i` the chunk holds into `remap[i]` (ids of another pool).
    pub fn remap_strings(&mut self, remap: &[u32]) {
        self.map_string_ids(|id| remap[id as usize]);
    }

    /// Applies `f` to every string id the chunk holds (names, categories, string stats and
    /// arg keys), leaving nulls.
    fn map_string_ids(&mut self, f: impl Fn(u32) -> u32) {
        for col in [
            &mut self.name[..],
            self.display_name.values_mut(),
            self.category.values_mut(),
            self.hlo_op.values_mut(),
            self.hlo_module.values_mut(),
            self.tf_op.values_mut(),
            self.src.values_mut(),
            &mut self.arg_key[..],
        ] {
            for id in col.iter_mut() {
                if *id != NO_STR {
                    *id = f(*id);
                }
            }
        }
    }

    /// [`nest_lines`] of this chunk alone, the first of its part.
    pub fn compute_nesting(&mut self) {
        nest_lines(std::slice::from_mut(self), 0, &OpenBefore::default());
    }

    /// Whether `next` starts with more events of this chunk's last line, in (start, -dur)
    /// order after its last event.
    pub fn line_continues_into(&self, next: &EventChunk) -> bool {
        let (Some(&last), Some(&first)) = (self.line.last(), next.line.first()) else { return false };
        let n = self.len() - 1;
        last == first && (self.start_ns[n], -self.dur_ns[n]) <= (next.start_ns[0], -next.dur_ns[0])
    }

    /// The chunk's lines in order, each with the range of its events.
    pub fn line_runs(&self) -> impl Iterator<Item = (u32, std::ops::Range<usize>)> + '_ {
        self.line_runs_in(0..self.len())
    }

    /// [`EventChunk::line_runs`] within events `rows`: a line's range there is cut to them.
    pub fn line_runs_in(&self, rows: std::ops::Range<usize>) -> impl Iterator<Item = (u32, std::ops::Range<usize>)> + '_ {
        let mut start = rows.start;
        std::iter::from_fn(move || {
            let &line = self.line[..rows.end].get(start)?;
            let end = start + self.line[start..rows.end].iter().position(|&l| l != line).unwrap_or(rows.end - start);
            let run = start..end;
            start = end;
            Some((line, run))
        })
    }

    /// Whether every line's events are sorted by (start, -dur).
    pub fn lines_sorted(&self) -> bool {
        (1..self.len()).all(|i| self.line[i - 1] != self.line[i] || (self.start_ns[i - 1], -self.dur_ns[i - 1]) <= (self.start_ns[i], -self.dur_ns[i]))
    }

    /// Sorts the events of every line by (start, -dur), keeping lines in their order.
    /// Returns true if anything moved. Stable, so equal events keep file order.
    pub fn sort_within_lines(&mut self) -> bool {
        let n = self.len();
        if self.lines_sorted() {
            return false;
        }
        // Events bucketed by line (stably), then each line's run sorted by (start, -dur) where
        // it is not already: the same order as one stable sort by (line, start, -dur), at the
        // cost of a pass where a trace's threads each come in time order.
        let lines = self.line.iter().max().map_or(0, |&l| l as usize + 1);
        let mut ends = vec![0usize; lines];
        for &l in &self.line {
            ends[l as usize] += 1;
        }
        let mut start = 0;
        for e in ends.iter_mut() {
            start += *e;
            *e = start;
        }
        let mut next: Vec<usize> = std::iter::once(0).chain(ends.iter().copied()).take(lines).collect();
        let mut order = vec![0u32; n];
        for (i, &l) in self.line.iter().enumerate() {
            order[next[l as usize]] = i as u32;
            next[l as usize] += 1;
        }
        let mut runs = Vec::with_capacity(lines);
        let mut rest = &mut order[..];
        let mut at = 0;
        for &end in &ends {
            let (run, tail) = rest.split_at_mut(end - at);
            runs.push(run);
            rest = tail;
            at = end;
        }
        use rayon::prelude::*;
        let key = |&i: &u32| (self.start_ns[i as usize], -self.dur_ns[i as usize]);
        runs.into_par_iter().for_each(|run| {
            if !run.is_sorted_by_key(key) {
                run.sort_by_key(key);
            }
        });
        self.permute(&order);
        true
    }

    pub(super) fn permute(&mut self, order: &[u32]) {
        // A column at a time, each freed once replaced: the peak is one column more.
        self.line = picked(&self.line, order);
        self.name = picked(&self.name, order);
        self.display_name.permute(order);
        self.category.permute(order);
        self.start_ns = picked(&self.start_ns, order);
        self.dur_ns = picked(&self.dur_ns, order);
        self.hlo_op.permute(order);
        self.hlo_module.permute(order);
        self.tf_op.permute(order);
        self.program_id.permute(order);
        self.step.permute(order);
        self.correlation_id.permute(order);
        self.device_ordinal.permute(order);
        self.src.permute(order);
        (self.arg_offsets, self.arg_key, self.arg_value_offsets, self.arg_value_bytes) = self.picked_args(order);
    }

    /// Events `rows` of this chunk (in that order) as a chunk of their own, nesting included:
    /// `parent` keeps positions in this chunk's part. Its strings must be in the run's pool already
    /// (the picked chunk has no local strings).
    pub fn picked(&self, rows: &[u32]) -> EventChunk {
        let (arg_offsets, arg_key, arg_value_offsets, arg_value_bytes) = self.picked_args(rows);
        EventChunk {
            line: picked(&self.line, rows),
            name: picked(&self.name, rows),
            display_name: self.display_name.picked(rows),
            category: self.category.picked(rows),
            start_ns: picked(&self.start_ns, rows),
            dur_ns: picked(&self.dur_ns, rows),
            self_ns: picked(&self.self_ns, rows),
            depth: picked(&self.depth, rows),
            parent: picked(&self.parent, rows),
            hlo_op: self.hlo_op.picked(rows),
            hlo_module: self.hlo_module.picked(rows),
            tf_op: self.tf_op.picked(rows),
            program_id: self.program_id.picked(rows),
            step: self.step.picked(rows),
            correlation_id: self.correlation_id.picked(rows),
            device_ordinal: self.device_ordinal.picked(rows),
            src: self.src.picked(rows),
            arg_offsets,
            arg_key,
            arg_value_offsets,
            arg_value_bytes,
            local_strings: StringPool::default(),
        }
    }

    /// The args of events `rows`: (arg_offsets, arg_key, arg_value_offsets, arg_value_bytes).
    pub(super) fn picked_args(&self, rows: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u8>) {
        // Sized for every arg when every event is picked (a permutation).
        let every = rows.len() >= self.len();
        let mut offsets = Vec::with_capacity(rows.len() + 1);
        offsets.push(0u32);
        let mut keys = Vec::with_capacity(if every { self.arg_key.len() } else { 0 });
        let mut value_offsets = Vec::with_capacity(if every { self.arg_value_offsets.len() } else { 1 });
        value_offsets.push(0u32);
        let mut bytes = Vec::with_capacity(if every { self.arg_value_bytes.len() } else { 0 });
        for &i in rows {
            for j in self.args_of(i as usize) {
                keys.push(self.arg_key[j]);
                let a = self.arg_value_offsets[j] as usize;
                let b = self.arg_value_offsets[j + 1] as usize;
                bytes.extend_from_slice(&self.arg_value_bytes[a..b]);
                value_offsets.push(bytes.len() as u32);
            }
            offsets.push(keys.len() as u32);
        }
        (offsets, keys, value_offsets, bytes)
    }
}
