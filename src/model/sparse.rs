//! Sparse typed columns: a bit per event and only the values set, until nearly every event
//! has one (then a plain array, read faster). Most host events carry none of the typed stats.

use super::{NO_STR, NULL_I64};

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
    pub(super) values: Vec<T>,
    /// Bitmap form: bit `i % 64` of word `i / 64` says event `i` has a value. Empty in the
    /// dense form.
    pub(super) present: Vec<u64>,
    /// Bitmap form: how many values the words before each word hold.
    pub(super) ranks: Vec<u32>,
}

/// A column in bitmap form turns dense when at least this share of its events have values
/// (checked as its bitmap reaches 16, 32, 64, … words): a dense slot costs what a value
/// costs, a bitmap value that plus a bit and a slower read.
pub(super) const DENSE_AT: (usize, usize) = (7, 8);

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
    pub(super) fn set_past_end(&mut self, i: usize, capacity: usize, value: T) {
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
    pub(super) fn set_bit(&mut self, i: usize, capacity: usize, value: T) {
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
    pub(super) fn make_dense(&mut self, capacity: usize) {
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
    pub(super) fn concat(pieces: Vec<SparseColumn<T>>, lens: &[usize]) -> SparseColumn<T> {
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
    pub(super) fn permute(&mut self, order: &[u32]) {
        *self = self.picked(order);
    }
    /// The values of events `rows`, in that order.
    pub(super) fn picked(&self, rows: &[u32]) -> SparseColumn<T> {
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
