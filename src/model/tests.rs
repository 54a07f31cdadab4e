//! Sparse columns read back what was set, at every density and through concatenation and permutation.

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
