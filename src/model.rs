//! The in-memory form of one decoded capture, shared by every decoder.
//!
//! Decoders (XPlane, trace JSON) fill a [`Capture`]: planes, lines and columnar event
//! chunks whose strings are ids into one run-wide [`StringPool`]. Nothing here owns a
//! String per event: names are pool ids, stat values that are not typed columns are
//! appended to one byte buffer per chunk. The tables stage turns a Capture into Arrow.

use rustc_hash::FxHashMap as HashMap;

/// Sentinel for "no string" in id columns.
pub const NO_STR: u32 = u32::MAX;
/// Sentinel for "null" in i64 columns.
pub const NULL_I64: i64 = i64::MIN;
/// Sentinel for "no parent" in parent columns.
pub const NO_PARENT: u32 = u32::MAX;
/// Tag bit marking a parent that is an event of an earlier part: the rest of the value
/// indexes [`Capture::carried_parents`] (a part's own positions stay below it).
pub const CARRIED_TAG: u32 = 1 << 31;
/// Tag bit marking a chunk-local string id (see [`EventChunk::local_strings`]).
pub const LOCAL_TAG: u32 = 1 << 31;

/// Run-wide string interner. Ids are dense and stable for the life of the capture.
///
/// The strings are kept once, end to end in one buffer, and found through a table of ids
/// hashed by their text: interning a new string allocates nothing of its own (a profile
/// has hundreds of thousands of distinct names: HLO instructions, shapes, scope paths).
#[derive(Clone, Default)]
pub struct StringPool {
    /// Every string's bytes, one after another in id order.
    bytes: String,
    /// Where each string ends in `bytes` (it starts where the one before ends).
    ends: Vec<usize>,
    /// Ids, hashed by their string's text.
    table: hashbrown::HashTable<u32>,
}

fn text_hash(s: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(s)
}

/// String `k` of a pool's `bytes` and `ends` (borrowed apart from its table).
fn pooled<'p>(bytes: &'p str, ends: &[usize], k: usize) -> &'p str {
    let start = if k == 0 { 0 } else { ends[k - 1] };
    &bytes[start..ends[k]]
}

impl StringPool {
    pub fn intern(&mut self, s: &str) -> u32 {
        let hash = text_hash(s);
        let (bytes, ends) = (&self.bytes, &self.ends);
        if let Some(&id) = self.table.find(hash, |&id| pooled(bytes, ends, id as usize) == s) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.bytes.push_str(s);
        self.ends.push(self.bytes.len());
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table.insert_unique(hash, id, |&k| text_hash(pooled(bytes, ends, k as usize)));
        id
    }
    pub fn get(&self, id: u32) -> Option<&str> {
        if id == NO_STR || id as usize >= self.ends.len() {
            return None;
        }
        Some(pooled(&self.bytes, &self.ends, id as usize))
    }
    pub fn lookup(&self, s: &str) -> Option<u32> {
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table.find(text_hash(s), |&id| pooled(bytes, ends, id as usize) == s).copied()
    }
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl std::fmt::Debug for StringPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries((0..self.ends.len()).map(|k| pooled(&self.bytes, &self.ends, k))).finish()
    }
}

/// What a plane is, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneKind {
    /// `/device:TPU:0`, `/device:GPU:3`, or a Kineto GPU process.
    Device,
    /// `/host:CPU` or a host process of a trace JSON.
    Host,
    /// `/host:metadata`, `Task Environment`, `/device:CUSTOM:*`: metadata only.
    Other,
}

#[derive(Debug, Clone)]
pub struct Plane {
    pub host: u32,
    pub name: u32,
    pub kind: PlaneKind,
    /// Device name for device planes (`TPU:0`, `GPU:3`), NO_STR otherwise.
    pub device: u32,
}

#[derive(Debug, Clone)]
pub struct Line {
    pub plane: u32,
    pub line_id: i64,
    pub name: u32,
}

/// A value with a sentinel for null in the event columns.
pub trait Nullable: Copy + PartialEq {
    const NULL: Self;
}
impl Nullable for u32 {
    const NULL: u32 = NO_STR;
}
impl Nullable for i64 {
    const NULL: i64 = NULL_I64;
}

/// An event column that most events leave null (stats such as `hlo_op` or `step`). Values
/// are given in event order (each `set` is of the latest event), and the column holds them in
/// one of two forms:
/// - **bitmap** (from its first value): a bit per event up to the last with a value, and the
///   values of those bits only. A CPU capture's XLA threads give `hlo_op`, `hlo_module`,
///   `program_id` and `device_ordinal` to one event in five: the nulls between cost a bit each,
///   not a slot each (~4 times less memory first touched).
/// - **dense** (once a column turns out nearly full, [`DENSE_AT`]): the values of events
///   `0..k` with nulls among them, where event `k - 1` is the last one given a value; `src`,
///   on nearly every CPU event, is read faster this way.
///
/// Either way a chunk whose events leave a column null holds nothing for it, and every event
/// past the last value is null.
#[derive(Debug, Clone)]
pub struct SparseColumn<T> {
    /// Dense form: the values of events `0..k`. Bitmap form: the values of the set bits, in
    /// event order.
    values: Vec<T>,
    /// Bitmap form: bit `i % 64` of word `i / 64` says event `i` has a value. Empty in the
    /// dense form.
    present: Vec<u64>,
    /// Bitmap form: how many values the words before each word hold.
    ranks: Vec<u32>,
}

/// A column in bitmap form turns dense when at least this share of its events have values
/// (checked as its bitmap reaches 16, 32, 64, … words): a dense slot costs what a value
/// costs, a bitmap value that plus a bit and a slower read.
const DENSE_AT: (usize, usize) = (7, 8);

impl<T> Default for SparseColumn<T> {
    fn default() -> Self {
        SparseColumn { values: Vec::new(), present: Vec::new(), ranks: Vec::new() }
    }
}

impl<T: Nullable> SparseColumn<T> {
    #[inline]
    pub fn get(&self, i: usize) -> T {
        if self.present.is_empty() {
            return self.values.get(i).copied().unwrap_or(T::NULL);
        }
        match self.present.get(i / 64) {
            Some(&word) if word >> (i % 64) & 1 == 1 => self.values[self.ranks[i / 64] as usize + (word & ((1u64 << (i % 64)) - 1)).count_ones() as usize],
            _ => T::NULL,
        }
    }
    /// Whether event `i` has a value (`get(i)` is not null).
    #[inline]
    pub fn is_set(&self, i: usize) -> bool {
        if self.present.is_empty() {
            return self.values.get(i).is_some_and(|&v| v != T::NULL);
        }
        self.present.get(i / 64).is_some_and(|word| word >> (i % 64) & 1 == 1)
    }
    /// Sets event `i` of a chunk expecting `capacity` events in all: the latest event given
    /// a value, or a later one.
    #[inline]
    pub fn set(&mut self, i: usize, capacity: usize, value: T) {
        if !self.present.is_empty() {
            self.set_bit(i, capacity, value);
        } else if let Some(slot) = self.values.get_mut(i) {
            *slot = value;
        } else if value != T::NULL {
            self.set_past_end(i, capacity, value);
        }
    }
    /// [`SparseColumn::set`] of a value past the ones held in the dense form, or of the
    /// column's first value (a null there is nothing to do: most events' columns are null,
    /// and they take only the inlined test above).
    #[inline(never)]
    fn set_past_end(&mut self, i: usize, capacity: usize, value: T) {
        if self.values.is_empty() {
            // Room for every event: what is not used is reserved, never touched.
            let capacity = capacity.max(i + 1);
            self.values.reserve_exact(capacity);
            self.present.reserve_exact(capacity.div_ceil(64));
            self.ranks.reserve_exact(capacity.div_ceil(64));
            return self.set_bit(i, capacity, value);
        }
        // Usually the event just before had a value too: nothing to fill.
        if self.values.len() < i {
            self.values.resize(i, T::NULL);
        }
        self.values.push(value);
    }
    /// [`SparseColumn::set`] in the bitmap form.
    fn set_bit(&mut self, i: usize, capacity: usize, value: T) {
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if self.present.get(w).is_some_and(|word| word & bit != 0) {
            // Set again: event `i` holds the last value.
            debug_assert_eq!(self.extent(), i + 1, "values are set in event order");
            if value != T::NULL {
                *self.values.last_mut().expect("a set bit has a value") = value;
            } else {
                self.values.pop();
                self.present[w] &= !bit;
            }
            return;
        }
        if value == T::NULL {
            return;
        }
        debug_assert!(i >= self.extent(), "values are set in event order");
        if w >= self.present.len() {
            if w >= 16 && w.is_power_of_two() && self.values.len() * DENSE_AT.1 >= i * DENSE_AT.0 {
                self.make_dense(capacity);
                return self.set_past_end(i, capacity, value);
            }
            let rank = self.values.len() as u32;
            self.present.resize(w + 1, 0);
            self.ranks.resize(w + 1, rank);
        }
        self.present[w] |= bit;
        self.values.push(value);
    }
    /// Turns the bitmap form into the dense form, with room for `capacity` events.
    fn make_dense(&mut self, capacity: usize) {
        let end = self.extent();
        let mut dense = Vec::with_capacity(capacity.max(end));
        self.append_range(0..end, &mut dense);
        *self = SparseColumn { values: dense, present: Vec::new(), ranks: Vec::new() };
    }
    /// An end past which every event is null: one past the last event with a value (0 if
    /// none). Where the last value set was cleared again, it may be later than that: the
    /// start of the bitmap word left empty, or one past the cleared dense slot.
    pub fn extent(&self) -> usize {
        match self.present.last() {
            None => self.values.len(),
            Some(&word) => (self.present.len() - 1) * 64 + (64 - word.leading_zeros() as usize),
        }
    }
    /// Appends the values of events `rows` to `out`, nulls included.
    pub fn append_range(&self, rows: std::ops::Range<usize>, out: &mut Vec<T>) {
        let first = out.len();
        if self.present.is_empty() {
            let held = self.values.get(rows.start..self.values.len().clamp(rows.start, rows.end)).unwrap_or_default();
            out.extend_from_slice(held);
            out.resize(first + rows.len(), T::NULL);
            return;
        }
        out.resize(first + rows.len(), T::NULL);
        let out = &mut out[first..];
        // The set bits of the words over `rows`, each word's first value found by its rank.
        for w in rows.start / 64..self.present.len().min(rows.end.div_ceil(64)) {
            let word_start = w * 64;
            let below_rows = if rows.start > word_start { (1u64 << (rows.start - word_start)) - 1 } else { 0 };
            let mut k = self.ranks[w] as usize + (self.present[w] & below_rows).count_ones() as usize;
            let mut bits = self.present[w] & !below_rows;
            while bits != 0 {
                let i = word_start + bits.trailing_zeros() as usize;
                if i >= rows.end {
                    break;
                }
                out[i - rows.start] = self.values[k];
                k += 1;
                bits &= bits - 1;
            }
        }
    }
    /// The values of events `rows`, nulls included.
    pub fn range(&self, rows: std::ops::Range<usize>) -> impl Iterator<Item = T> + '_ {
        rows.map(|i| self.get(i))
    }
    /// The values of events `rows` as they are held, where the column holds them so (the
    /// dense form, up to its last value).
    pub fn dense_slice(&self, rows: std::ops::Range<usize>) -> Option<&[T]> {
        if self.present.is_empty() {
            self.values.get(rows)
        } else {
            None
        }
    }
    /// The values held, in event order (nulls among them in the dense form).
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The values held, to change in place (nulls among them in the dense form).
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Calls `f` with each event that has a value and its value, in event order.
    pub fn for_each_value(&self, mut f: impl FnMut(usize, T)) {
        if self.present.is_empty() {
            for (i, &v) in self.values.iter().enumerate() {
                if v != T::NULL {
                    f(i, v);
                }
            }
            return;
        }
        let mut values = self.values.iter();
        for (w, &word) in self.present.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                f(w * 64 + bits.trailing_zeros() as usize, *values.next().expect("a value per set bit"));
                bits &= bits - 1;
            }
        }
    }
    /// `pieces` one after another (`lens`: their event counts), each piece's column freed once copied.
    fn concat(pieces: Vec<SparseColumn<T>>, lens: &[usize]) -> SparseColumn<T> {
        let total = lens.iter().sum();
        if pieces.iter().all(|p| p.present.is_empty()) {
            if pieces.iter().all(|p| p.values.is_empty()) {
                return SparseColumn::default();
            }
            let mut values = Vec::with_capacity(total);
            for (piece, &len) in pieces.into_iter().zip(lens) {
                let end = values.len() + len;
                values.extend_from_slice(&piece.values);
                values.resize(end, T::NULL);
            }
            return SparseColumn { values, present: Vec::new(), ranks: Vec::new() };
        }
        let mut out = SparseColumn::default();
        let mut base = 0;
        for (piece, &len) in pieces.into_iter().zip(lens) {
            piece.for_each_value(|i, v| out.set(base + i, total, v));
            base += len;
        }
        out
    }
    fn permute(&mut self, order: &[u32]) {
        *self = self.picked(order);
    }
    /// The values of events `rows`, in that order.
    fn picked(&self, rows: &[u32]) -> SparseColumn<T> {
        if self.values.is_empty() {
            return SparseColumn::default();
        }
        if self.present.is_empty() {
            return SparseColumn { values: rows.iter().map(|&i| self.get(i as usize)).collect(), present: Vec::new(), ranks: Vec::new() };
        }
        let mut out = SparseColumn::default();
        for (k, &i) in rows.iter().enumerate() {
            let v = self.get(i as usize);
            if v != T::NULL {
                out.set(k, rows.len(), v);
            }
        }
        out
    }
}

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
fn picked<T: Copy>(v: &[T], rows: &[u32]) -> Vec<T> {
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
    /// inlined into the decode's event loop (a call an event was 1 % of a summary's
    /// instructions, session 39).
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
        let remap: Vec<u32> = (0..self.local_strings.len() as u32).map(|i| pool.intern(self.local_strings.get(i).unwrap())).collect();
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
                if *id != NO_STR && *id & LOCAL_TAG != 0 {
                    *id = remap[(*id & !LOCAL_TAG) as usize];
                }
            }
        }
        self.local_strings = StringPool::default();
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
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| {
            let i = i as usize;
            (self.line[i], self.start_ns[i], -self.dur_ns[i])
        });
        self.permute(&order);
        true
    }

    fn permute(&mut self, order: &[u32]) {
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
    fn picked_args(&self, rows: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u8>) {
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

/// One instruction of an HLO module, as needed for op classification and scopes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloInstr {
    pub opcode: u32,
    pub op_name: u32,
    pub source_file: u32,
    pub source_line: i32,
    /// Shape rendered as `f32[8,128]` (tuples as `(f32[8], s32[])`).
    pub shape: u32,
    /// Bytes of the result shape (sum over tuple elements), when the element types are known.
    pub shape_bytes: Option<i64>,
}

/// HLO instructions of every module of a capture, by (program_id, name) and (module, name):
/// all but the fused ones, which no event names ([`crate::decode::hlo`], docs/decisions.md, Ops).
#[derive(Clone, Default, Debug)]
pub struct HloIndex {
    pub by_program: HashMap<(i64, u32), HloInstr>,
    pub by_module: HashMap<(u32, u32), HloInstr>,
    /// module name id -> program ids, so a module name maps to its programs.
    pub modules: HashMap<u32, Vec<i64>>,
    /// The instructions (name ids) of each scheduled computation in the order the module's
    /// schedule runs them, by program id and by module name (first module wins).
    pub schedule_by_program: HashMap<i64, Schedules>,
    pub schedule_by_module: HashMap<u32, Schedules>,
    /// The modules indexed so far, as (program id, byte length, hash of the bytes): a
    /// multi-host session holds every program's module once per host, byte for byte the same,
    /// and indexing it again would change nothing ([`crate::decode::hlo::index_hlo_proto`]).
    pub indexed: rustc_hash::FxHashSet<(Option<i64>, usize, u64)>,
}

/// A module's schedule, shared by its program id and its name.
pub type Schedules = std::sync::Arc<ModuleSchedule>;

/// A module's schedule: what its computations run, in order.
#[derive(Clone, Default, Debug, PartialEq)]
pub struct ModuleSchedule {
    /// One sequence of instruction name ids per scheduled computation, in the module's order
    /// of computations.
    pub sequences: Vec<Vec<u32>>,
    /// Each `async-start` (name id) → the instruction it starts (the root of its called
    /// computation, e.g. the dynamic-slice fusion of `fusion-start.4`): what its kernels run
    /// and, outside a CUDA graph, what they name.
    pub started: HashMap<u32, u32>,
}

/// Two indexes are equal when they find the same instructions and schedules; which bytes
/// they were read from (`indexed`) is bookkeeping. The fields are named one by one, so that a
/// field added to the index must be placed here too.
impl PartialEq for HloIndex {
    fn eq(&self, other: &Self) -> bool {
        let HloIndex { by_program, by_module, modules, schedule_by_program, schedule_by_module, indexed: _ } = self;
        *by_program == other.by_program
            && *by_module == other.by_module
            && *modules == other.modules
            && *schedule_by_program == other.schedule_by_program
            && *schedule_by_module == other.schedule_by_module
    }
}

impl HloIndex {
    /// The schedule of a program (else of a module of that name).
    pub fn schedule(&self, program_id: i64, module: u32) -> Option<&Schedules> {
        if program_id != NULL_I64 {
            if let Some(s) = self.schedule_by_program.get(&program_id) {
                return Some(s);
            }
        }
        if module != NO_STR {
            return self.schedule_by_module.get(&module);
        }
        None
    }

    pub fn find(&self, program_id: i64, module: u32, hlo_op: u32) -> Option<&HloInstr> {
        if program_id != NULL_I64 {
            if let Some(i) = self.by_program.get(&(program_id, hlo_op)) {
                return Some(i);
            }
        }
        if module != NO_STR {
            return self.by_module.get(&(module, hlo_op));
        }
        None
    }
}

/// Facts about the capture as a whole (feeds the runs table).
#[derive(Default, Debug, Clone)]
pub struct CaptureMeta {
    pub source_format: &'static str,
    pub hosts: Vec<String>,
    /// Absolute start of the capture (ns since the Unix epoch), when the profile says.
    pub start_epoch_ns: Option<i64>,
    pub num_events_total: i64,
    pub num_complete_events: i64,
    pub suspected_truncation: bool,
    pub quality_warnings: Vec<String>,
    pub jax_version: Option<String>,
    pub jaxlib_version: Option<String>,
    pub device_kinds: Vec<String>,
    /// Distinct peak FLOP rates (FLOP/s) the accelerator planes state, in the order seen.
    pub peak_flops_per_s: Vec<f64>,
    /// Distinct peak HBM bandwidths (bytes/s) the accelerator planes state, in the order seen.
    pub peak_hbm_bytes_per_s: Vec<f64>,
    /// Hosts (pool ids) whose device planes hold device ops: their host events that carry
    /// hlo_op are launches, not ops. Known from the XPlane layout before any events decode.
    pub hosts_with_device_ops: Vec<u32>,
    /// Trace JSON `displayTimeUnit` (a viewer hint, never applied to times).
    pub display_time_unit: Option<String>,
}

/// A decoded capture: what every decoder produces and every table is built from.
#[derive(Default, Debug)]
pub struct Capture {
    pub strings: StringPool,
    pub planes: Vec<Plane>,
    pub lines: Vec<Line>,
    pub chunks: Vec<EventChunk>,
    /// Shared with the parts handed to a sink ([`Capture::take_part`]): written only while a
    /// file's metadata plane or HLO side files are read.
    pub hlo: std::sync::Arc<HloIndex>,
    pub meta: CaptureMeta,
    /// When set, XPlane stats are kept as args, and `_src` as the `src` column, only as it
    /// says (an analysis that builds few `events` rows needs little else than what derive
    /// reads); None keeps every stat. Trace JSON keeps every arg either way.
    pub args_kept: Option<ArgsKept>,
    /// Event ids of the parents this part's events have in earlier parts (a plane streamed
    /// in time windows): a parent value `CARRIED_TAG | k` is event `carried_parents[k]`.
    pub carried_parents: Vec<i64>,
    /// Set when this part is a time window of a group of planes too large to be one part.
    pub window: Option<TimeWindow>,
}

/// A part that is a time window of a group of planes: whether it is the group's last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    pub last: bool,
}

/// Which args a decoder keeps, for a caller that reads only some.
#[derive(Clone, Copy, Debug)]
pub struct ArgsKept {
    /// Stat keys kept on every event: args, and `_src` (the `src` column, on nearly every
    /// CPU TraceMe).
    pub keys: fn(&str) -> bool,
    /// Event names whose events keep every arg.
    pub every_arg_of: fn(&str) -> bool,
}

impl Capture {
    pub fn str(&self, id: u32) -> Option<&str> {
        self.strings.get(id)
    }
    pub fn num_events(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }
    /// The part now decoded, for a sink on another thread while the next part decodes: its
    /// events move out; strings, planes, lines and metadata are copied as they are now (the
    /// decoder goes on appending to its own, with the same ids).
    pub fn take_part(&mut self) -> Capture {
        Capture {
            strings: self.strings.clone(),
            planes: self.planes.clone(),
            lines: self.lines.clone(),
            chunks: std::mem::take(&mut self.chunks),
            hlo: self.hlo.clone(),
            meta: self.meta.clone(),
            args_kept: self.args_kept,
            carried_parents: std::mem::take(&mut self.carried_parents),
            window: self.window.take(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column built by `set` calls of events `0..len` at the given density, and the same
    /// values as a plain vector of options (the reference).
    fn column(seed: u64, len: usize, per_mille: u64) -> (SparseColumn<i64>, Vec<Option<i64>>) {
        let mut next = crate::xorshift(seed | 1);
        let mut col = SparseColumn::default();
        let reference = (0..len)
            .map(|i| {
                if next() % 1000 >= per_mille {
                    if next().is_multiple_of(4) {
                        col.set(i, len, NULL_I64);
                    }
                    return None;
                }
                let v = (next() % 100) as i64;
                col.set(i, len, v);
                // A stat set again on the same event: the later value wins, a null clears it.
                match next() % 8 {
                    0 => {
                        col.set(i, len, v + 1);
                        Some(v + 1)
                    }
                    1 => {
                        col.set(i, len, NULL_I64);
                        None
                    }
                    _ => Some(v),
                }
            })
            .collect();
        (col, reference)
    }

    fn assert_same(col: &SparseColumn<i64>, reference: &[Option<i64>], what: &str) {
        let null = |v: &Option<i64>| v.unwrap_or(NULL_I64);
        for (i, v) in reference.iter().enumerate() {
            assert_eq!(col.get(i), null(v), "{what}: get({i})");
            assert_eq!(col.is_set(i), v.is_some(), "{what}: is_set({i})");
        }
        assert_eq!(col.get(reference.len() + 100), NULL_I64, "{what}: past the end");
        let last = reference.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        assert!(col.extent() >= last && reference[last..col.extent().min(reference.len())].iter().all(Option::is_none), "{what}: extent");
        let mut seen = Vec::new();
        col.for_each_value(|i, v| seen.push((i, v)));
        let expected: Vec<(usize, i64)> = reference.iter().enumerate().filter_map(|(i, v)| v.map(|v| (i, v))).collect();
        assert_eq!(seen, expected, "{what}: for_each_value");
        let n = reference.len();
        for rows in [0..n, 0..0, n / 3..n / 2, n.min(63)..n.min(129), n.min(1)..n.saturating_sub(1).max(n.min(1)), n..n + 70] {
            let mut out = vec![-5];
            col.append_range(rows.clone(), &mut out);
            let want: Vec<i64> = std::iter::once(-5).chain(rows.clone().map(|i| reference.get(i).map_or(NULL_I64, null))).collect();
            assert_eq!(out, want, "{what}: append_range({rows:?})");
            assert!(col.range(rows.clone()).eq(want[1..].iter().copied()), "{what}: range({rows:?})");
            if let Some(lent) = col.dense_slice(rows.clone()) {
                assert_eq!(lent, &want[1..], "{what}: dense_slice({rows:?})");
            }
        }
    }

    #[test]
    fn a_sparse_column_reads_back_what_was_set_at_every_density() {
        for (seed, per_mille) in [(1, 0), (2, 3), (3, 200), (4, 500), (5, 900), (6, 1000)] {
            for len in [1, 64, 65, 1000, 5000] {
                let (col, reference) = column(seed * 7919 + len as u64, len, per_mille);
                assert_same(&col, &reference, &format!("{per_mille}‰ of {len}"));
            }
        }
    }

    #[test]
    fn a_nearly_full_column_turns_dense_and_a_sparse_one_stays_a_bitmap() {
        let (full, _) = column(11, 5000, 1000);
        assert!(full.dense_slice(0..10).is_some());
        let (sparse, _) = column(12, 5000, 200);
        assert!(sparse.dense_slice(0..10).is_none());
        assert!(sparse.values().len() < 5000 / 3, "only the values are held");
    }

    #[test]
    fn sparse_columns_concatenate_and_permute_in_either_form() {
        let pieces = [(21, 700, 0), (22, 0, 1000), (23, 100, 300), (24, 1, 1000), (25, 130, 900)];
        let (mut cols, mut reference, mut lens) = (Vec::new(), Vec::new(), Vec::new());
        for (seed, len, per_mille) in pieces {
            let (c, r) = column(seed, len, per_mille);
            cols.push(c);
            reference.extend(r);
            lens.push(len);
        }
        let joined = SparseColumn::concat(cols, &lens);
        assert_same(&joined, &reference, "concat");
        let all_dense: Vec<SparseColumn<i64>> = [1000, 1000].iter().map(|&n| column(26, n, 1000).0).collect();
        let dense_reference: Vec<Option<i64>> = [1000, 1000].iter().flat_map(|&n| column(26, n, 1000).1).collect();
        assert_same(&SparseColumn::concat(all_dense, &[1000, 1000]), &dense_reference, "concat of dense pieces");

        let order: Vec<u32> = (0..reference.len() as u32).rev().step_by(3).chain((0..reference.len() as u32).step_by(3)).collect();
        let mut permuted = joined.clone();
        permuted.permute(&order);
        let permuted_reference: Vec<Option<i64>> = order.iter().map(|&i| reference[i as usize]).collect();
        assert_same(&permuted, &permuted_reference, "permute");
        assert!(SparseColumn::<i64>::default().picked(&[0, 1]).values().is_empty());
    }
}
