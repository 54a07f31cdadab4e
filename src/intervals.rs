//! Half-open time intervals `[start, end)`: their union, and how much of a span it covers
//! (or leaves uncovered).
//! One implementation for the derivation (overlap of collectives with compute, busy time)
//! and for the SQL aggregate `interval_union_ns` ([`crate::engine::functions`]). Empty and
//! reversed intervals (`end <= start`) cover nothing and are dropped.

/// Merged (start, end) intervals.
pub type Intervals = Vec<(i64, i64)>;

/// Sorted, merged [start, end) intervals.
pub fn union(mut iv: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    // Stable sort: the intervals come as a few sorted runs (one per line), which it merges.
    iv.sort();
    union_of_sorted(iv)
}

/// [`union`] of intervals already sorted.
pub fn union_of_sorted(mut iv: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    // Merged in place: the kept intervals never overtake the one being read.
    let mut kept = 0;
    for r in 0..iv.len() {
        let (s, e) = iv[r];
        if e <= s {
            continue;
        }
        if kept > 0 && s <= iv[kept - 1].1 {
            iv[kept - 1].1 = iv[kept - 1].1.max(e);
        } else {
            iv[kept] = (s, e);
            kept += 1;
        }
    }
    iv.truncate(kept);
    iv
}

/// Length of the part of [s, e) covered by merged intervals.
pub fn covered(merged: &[(i64, i64)], s: i64, e: i64) -> i64 {
    let mut i = merged.partition_point(|iv| iv.1 <= s);
    let mut total = 0;
    while i < merged.len() && merged[i].0 < e {
        total += merged[i].1.min(e) - merged[i].0.max(s);
        i += 1;
    }
    total.max(0)
}

/// The parts of [s, e) that merged intervals do not cover.
pub fn uncovered(merged: &[(i64, i64)], s: i64, e: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut at = s;
    let mut i = merged.partition_point(|iv| iv.1 <= s);
    while i < merged.len() && merged[i].0 < e {
        if merged[i].0 > at {
            out.push((at, merged[i].0));
        }
        at = at.max(merged[i].1);
        i += 1;
    }
    if at < e {
        out.push((at, e));
    }
    out
}

/// The union of two merged interval lists.
pub fn merge_unions(a: Vec<(i64, i64)>, b: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    if a.is_empty() {
        return b;
    }
    let mut v = a;
    v.extend(b);
    union(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncovered_parts() {
        assert_eq!(uncovered(&[(2, 4), (6, 8)], 0, 10), [(0, 2), (4, 6), (8, 10)]);
        assert_eq!(uncovered(&[(0, 10)], 2, 5), []);
        assert_eq!(uncovered(&[], 2, 5), [(2, 5)]);
    }

    #[test]
    fn union_merges_overlapping_and_touching_intervals_and_drops_empty_ones() {
        type Case<'a> = (&'a [(i64, i64)], &'a [(i64, i64)]);
        let cases: [Case; 6] = [
            (&[], &[]),
            (&[(0, 10), (5, 20), (30, 40)], &[(0, 20), (30, 40)]),
            (&[(30, 40), (0, 10)], &[(0, 10), (30, 40)]),
            (&[(0, 10), (10, 20)], &[(0, 20)]),
            (&[(5, 5), (7, 3)], &[]),
            (&[(0, 100), (10, 20), (30, 40)], &[(0, 100)]),
        ];
        for (given, merged) in cases {
            assert_eq!(union(given.to_vec()), merged, "{given:?}");
        }
    }

    #[test]
    fn covered_counts_the_part_of_a_span_the_union_covers() {
        let m = union(vec![(0, 10), (5, 20), (30, 40)]);
        for (s, e, want) in [(15, 35, 10), (0, 40, 30), (20, 30, 0), (-5, 5, 5), (35, 35, 0), (50, 60, 0)] {
            assert_eq!(covered(&m, s, e), want, "[{s}, {e})");
        }
        assert_eq!(merge_unions(vec![(0, 5)], vec![(3, 8), (10, 12)]), [(0, 8), (10, 12)]);
    }
}
