//! The Parquet encodings these writers use: RLE / bit-packed hybrid levels and keys,
//! DELTA_BINARY_PACKED integers, varints and zigzag, each as the format specifies them.

/// Appends levels as a format-v1 page holds them: their byte length, then the hybrid
/// encoding at the width of `max_level`.
pub(super) fn put_levels(levels: &[u8], max_level: i16, raw: &mut Vec<u8>) {
    let length_at = raw.len();
    raw.extend_from_slice(&[0; 4]);
    if max_level == 1 {
        hybrid_encode_bits(levels, raw);
    } else {
        hybrid_encode(levels, bit_width(max_level as u32), raw);
    }
    let length = (raw.len() - length_at - 4) as u32;
    raw[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
}

/// Appends dictionary keys as a data page holds them: their bit width (for a dictionary of
/// `entries` values), then the keys.
pub(super) fn put_keys(keys: &[u32], entries: u32, raw: &mut Vec<u8>) {
    let width = bit_width(entries.saturating_sub(1));
    raw.push(width);
    hybrid_encode(keys, width, raw);
}

/// Ors `$values[i]` into `$words` from bit `i × $w`, for each listed `i` (the bits past a
/// word start the next): with `$w` a constant, every shift and word is fixed when compiled.
macro_rules! or_at_fixed_width {
    ($values:ident, $words:ident, $w:ident; $($i:literal)*) => {$(
        {
            let (word, shift) = ($i * $w / 64, $i * $w % 64);
            $words[word] |= $values[$i] << shift;
            if shift + $w > 64 {
                $words[word + 1] |= $values[$i] >> (64 - shift);
            }
        }
    )*};
}

/// Values of a DELTA_BINARY_PACKED block, and of each of its miniblocks (arrow-rs's sizes).
pub(super) const DELTA_BLOCK: usize = 128;

pub(super) const DELTA_MINIBLOCKS: usize = 4;

pub(super) const DELTA_MINIBLOCK: usize = DELTA_BLOCK / DELTA_MINIBLOCKS;

/// Appends `values` in Parquet's DELTA_BINARY_PACKED encoding: a header (block size,
/// miniblocks per block, value count, first value), then per block of deltas its minimum
/// and each miniblock's bit width, and the miniblocks' deltas less that minimum, bit-packed.
/// Unused miniblocks of the last block have width 0 and no bytes; a partly used one is
/// padded to its full size, as the format says.
pub(super) fn delta_binary_pack(values: &[i64], out: &mut Vec<u8>) {
    put_varint(out, DELTA_BLOCK as u64);
    put_varint(out, DELTA_MINIBLOCKS as u64);
    put_varint(out, values.len() as u64);
    put_varint(out, zigzag(values.first().copied().unwrap_or(0)));
    let mut deltas = [0i64; DELTA_BLOCK];
    let mut previous = values.first().copied().unwrap_or(0);
    for block in values.get(1..).unwrap_or_default().chunks(DELTA_BLOCK) {
        let mut min = i64::MAX;
        for (d, &v) in deltas.iter_mut().zip(block) {
            *d = v.wrapping_sub(previous);
            min = min.min(*d);
            previous = v;
        }
        put_varint(out, zigzag(min));
        // Each delta less the block's minimum; past the block's end 0, the padding.
        let mut relative = [0u64; DELTA_BLOCK];
        for (r, &d) in relative.iter_mut().zip(&deltas[..block.len()]) {
            *r = d.wrapping_sub(min) as u64;
        }
        let mut widths = [0u8; DELTA_MINIBLOCKS];
        for (width, mini) in widths.iter_mut().zip(relative.chunks_exact(DELTA_MINIBLOCK)) {
            *width = (64 - mini.iter().fold(0, |acc, &r| acc | r).leading_zeros()) as u8;
        }
        out.extend_from_slice(&widths);
        for (&width, mini) in widths.iter().zip(relative.chunks_exact(DELTA_MINIBLOCK)) {
            pack_miniblock(mini.try_into().expect("a miniblock"), width, out);
        }
    }
}

/// Packs a miniblock's values at `width` bits each, least significant bit first (4 ×
/// `width` bytes; none at width 0).
pub(super) fn pack_miniblock(values: &[u64; DELTA_MINIBLOCK], width: u8, out: &mut Vec<u8>) {
    let mut words = [0u64; DELTA_MINIBLOCK];
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                0 => return,
                $($w => pack_at_width::<$w>(values, &mut words),)*
                _ => unreachable!("a delta's width is at most 64 bits"),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64);
    let mut bytes = [0u8; DELTA_MINIBLOCK * 8];
    for (b, w) in bytes.chunks_exact_mut(8).zip(words) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&bytes[..DELTA_MINIBLOCK / 8 * width as usize]);
}

/// [`pack_miniblock`]'s values at `W` bits each into `words`, value `i` from bit `i × W`:
/// every shift and word is fixed when compiled.
#[inline(always)]
pub(super) fn pack_at_width<const W: usize>(values: &[u64; DELTA_MINIBLOCK], words: &mut [u64; DELTA_MINIBLOCK]) {
    or_at_fixed_width!(values, words, W; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
}

pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Bits needed for `max` (at least 1).
pub(super) fn bit_width(max: u32) -> u8 {
    (32 - max.leading_zeros()).max(1) as u8
}

/// The longest bit-packed run arrow-rs writes: its header then fits one byte.
pub(super) const MAX_PACKED_GROUPS: usize = 63;

/// Appends `values` in Parquet's RLE / bit-packed hybrid encoding (no length prefix).
pub(super) fn hybrid_encode<T: Copy + PartialEq + Into<u32>>(values: &[T], width: u8, out: &mut Vec<u8>) {
    let value_bytes = (width as usize).div_ceil(8);
    hybrid_sections(
        values.len(),
        |i| values[i..].iter().take_while(|&&v| v == values[i]).count(),
        |i| values.get(i..i + 8).is_some_and(|group| group.iter().all(|&v| v == values[i])),
        |i, out| out.extend_from_slice(&values[i].into().to_le_bytes()[..value_bytes]),
        |range, groups, out| bit_pack(&values[range], groups * 8, width, out),
        out,
    );
}

/// [`hybrid_encode`] of levels that are all 0 or 1 (width 1), eight at a time: a group is
/// one word compared and one multiply packed. Most of a page's levels are of flat nullable
/// columns (definition levels) or of maps (repetition levels), and the generic encoder's
/// value-by-value runs and packing were ~4 % of an ingest's instructions.
pub(super) fn hybrid_encode_bits(levels: &[u8], out: &mut Vec<u8>) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Byte k of the word (0 or 1) moves to bit 56 + k; no two products meet or carry.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let n = levels.len();
    let word = |i: usize| u64::from_le_bytes(levels[i..i + 8].try_into().expect("eight levels"));
    let run_at = |i: usize| {
        let mut end = i + 1;
        while end + 8 <= n && word(end) == levels[i] as u64 * ONES {
            end += 8;
        }
        while end < n && levels[end] == levels[i] {
            end += 1;
        }
        end - i
    };
    let pack = |range: std::ops::Range<usize>, _groups: usize, out: &mut Vec<u8>| {
        for group in levels[range].chunks(8) {
            let mut bytes = [0u8; 8];
            bytes[..group.len()].copy_from_slice(group);
            out.push((u64::from_le_bytes(bytes).wrapping_mul(GATHER) >> 56) as u8);
        }
    };
    hybrid_sections(n, run_at, |i| i + 8 <= n && matches!(word(i), 0 | ONES), |i, out| out.push(levels[i]), pack, out);
}

/// The layout of the hybrid encoding over `n` values: a run of eight or more equal values
/// (`run_at(i)`: the length of the run starting at `i`) as one RLE run (`put_value(i)`
/// writes its value), everything else bit-packed in groups of eight, the last group padded
/// with zeros (`pack(range, groups)`), a packed section ending before eight equal values
/// (`eight_equal_at`).
pub(super) fn hybrid_sections(
    n: usize,
    run_at: impl Fn(usize) -> usize,
    eight_equal_at: impl Fn(usize) -> bool,
    put_value: impl Fn(usize, &mut Vec<u8>),
    pack: impl Fn(std::ops::Range<usize>, usize, &mut Vec<u8>),
    out: &mut Vec<u8>,
) {
    let mut i = 0;
    while i < n {
        let run = run_at(i);
        if run >= 8 {
            put_varint(out, (run as u64) << 1);
            put_value(i, out);
            i += run;
            continue;
        }
        let start = i;
        let mut groups = 0;
        loop {
            groups += 1;
            i += 8;
            if i >= n || groups == MAX_PACKED_GROUPS || eight_equal_at(i) {
                break;
            }
        }
        put_varint(out, ((groups as u64) << 1) | 1);
        pack(start..i.min(n), groups, out);
        i = i.min(n);
    }
}

/// Packs `count` values (zeros past the slice; `count` a multiple of eight) at `width` ≤ 32
/// bits each, least significant bit first: each eight values make `width` bytes. One packer
/// per width (dictionary keys and levels are packed by the million per ingest).
pub(super) fn bit_pack<T: Copy + Into<u32>>(values: &[T], count: usize, width: u8, out: &mut Vec<u8>) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => pack_eights::<T, $w>(values, count, out),)*
                _ => unreachable!("keys and levels are 1 to 32 bits wide"),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

/// [`bit_pack`] at `W` bits: value `k` of each eight from bit `k × W` of its `W` bytes.
#[inline(always)]
pub(super) fn pack_eights<T: Copy + Into<u32>, const W: usize>(values: &[T], count: usize, out: &mut Vec<u8>) {
    out.reserve(count / 8 * W);
    for start in (0..count).step_by(8) {
        let mut eight = [0u64; 8];
        for (k, v) in eight.iter_mut().enumerate() {
            *v = values.get(start + k).map_or(0, |&v| v.into() as u64);
        }
        let mut words = [0u64; 4];
        or_at_fixed_width!(eight, words, W; 0 1 2 3 4 5 6 7);
        let mut bytes = [0u8; 32];
        for (b, w) in bytes.chunks_exact_mut(8).zip(words) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&bytes[..W]);
    }
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packer of each width against the bit-at-a-time reading of the format: value `i`'s
    /// bit `b` is bit `i * width + b` of the miniblock, least significant first.
    #[test]
    fn miniblocks_pack_at_every_width_as_the_format_says() {
        let mut random = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for width in 0..=64u8 {
            let mut values = [0u64; DELTA_MINIBLOCK];
            for v in values.iter_mut() {
                let r = random();
                *v = if width == 64 { r } else { r & ((1u64 << width) - 1) };
            }
            let mut out = vec![0xAB];
            pack_miniblock(&values, width, &mut out);
            assert_eq!(out.len(), 1 + 4 * width as usize, "width {width}");
            let bit = |k: usize| (out[1 + k / 8] >> (k % 8)) & 1;
            for (i, &expected) in values.iter().enumerate() {
                let read = (0..width as usize).fold(0u64, |v, b| v | (bit(i * width as usize + b) as u64) << b);
                assert_eq!(read, expected, "width {width}, value {i}");
            }
        }
    }

    /// The key packer of each width against the bit-at-a-time reading of the format, with
    /// zeros past the values given.
    #[test]
    fn keys_bit_pack_at_every_width_as_the_format_says() {
        let mut random = crate::xorshift(0x2545_f491_4f6c_dd1d);
        for width in 1..=32u8 {
            for len in [0usize, 5, 8, 13, 24] {
                let values: Vec<u32> = (0..len).map(|_| (random() & ((1u64 << width) - 1)) as u32).collect();
                let count = len.div_ceil(8).max(1) * 8;
                let mut out = vec![0xCD];
                bit_pack(&values, count, width, &mut out);
                assert_eq!(out.len(), 1 + count / 8 * width as usize, "width {width}, len {len}");
                let bit = |k: usize| (out[1 + k / 8] >> (k % 8)) & 1;
                for i in 0..count {
                    let read = (0..width as usize).fold(0u32, |v, b| v | (bit(i * width as usize + b) as u32) << b);
                    assert_eq!(read, values.get(i).copied().unwrap_or(0), "width {width}, len {len}, value {i}");
                }
            }
        }
    }

    #[test]
    fn bit_levels_encode_as_the_generic_encoder_does() {
        let mut random = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut cases: Vec<Vec<u8>> = vec![vec![], vec![1], vec![0; 7], vec![1; 8], vec![0; 9], vec![1; 70_000]];
        for len in [3usize, 8, 15, 16, 17, 63, 64, 65, 511, 512, 513, 1000, 20_000] {
            // Random levels, long runs cut by noise, and runs of every length around eight.
            cases.push((0..len).map(|_| (random() & 1) as u8).collect());
            cases.push((0..len).map(|k| ((k / 97) % 2) as u8 ^ random().is_multiple_of(50) as u8).collect());
            cases.push((0..len).map(|k| ((k / (1 + k % 13)) % 2) as u8).collect());
        }
        for levels in cases {
            let (mut fast, mut generic) = (Vec::new(), Vec::new());
            hybrid_encode_bits(&levels, &mut fast);
            hybrid_encode(&levels, 1, &mut generic);
            assert_eq!(fast, generic, "{} levels", levels.len());
        }
    }

    #[test]
    fn hybrid_encoding_packs_runs_and_groups() {
        let mut out = Vec::new();
        hybrid_encode(&[5u32; 10], 3, &mut out);
        assert_eq!(out, vec![10 << 1, 5]);
        out.clear();
        hybrid_encode(&[1u8, 0, 1], 1, &mut out);
        assert_eq!(out, vec![0b11, 0b101]);
        // Bit-packing at every width against packing bit by bit.
        for width in 1..=32u8 {
            let values: Vec<u32> = (0..21u32).map(|k| k.wrapping_mul(2_654_435_761) & (u32::MAX >> (32 - width))).collect();
            let mut expected = vec![0u8; 24 * width as usize / 8];
            for (k, v) in values.iter().enumerate() {
                for b in 0..width as usize {
                    let at = k * width as usize + b;
                    expected[at / 8] |= (((v >> b) & 1) as u8) << (at % 8);
                }
            }
            out.clear();
            bit_pack(&values, 24, width, &mut out);
            assert_eq!(out, expected, "width {width}");
        }
    }
}
