//! Zero-copy protobuf wire-format reader.
//!
//! XPlane files are decoded field by field straight from the (memory-mapped) file bytes:
//! no message is materialised, no string is copied, and a length prefix can never make us
//! allocate, because every length is checked against the bytes that are really there.
//! This is also what lets profq read XSpaces larger than protobuf's 2 GiB message limit.

use std::fmt;

/// A decoding failure with the byte offset (relative to the buffer being read) where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub offset: usize,
    pub what: &'static str,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for WireError {}

/// The value of one field, borrowed from the buffer.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    pub fn as_u64(self) -> u64 {
        match self {
            Value::Varint(v) | Value::Fixed64(v) => v,
            Value::Fixed32(v) => v as u64,
            Value::Bytes(_) => 0,
        }
    }
    pub fn as_i64(self) -> i64 {
        self.as_u64() as i64
    }
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Fixed64(v) => f64::from_bits(v),
            Value::Fixed32(v) => f32::from_bits(v) as f64,
            Value::Varint(v) => v as f64,
            Value::Bytes(_) => 0.0,
        }
    }
    pub fn as_bytes(self) -> &'a [u8] {
        match self {
            Value::Bytes(b) => b,
            _ => &[],
        }
    }
}

/// Iterates over the fields of one message. Stops at the first malformed field and reports it.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf` within the file, so errors point at file positions.
    base: usize,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Fields { buf, pos: 0, base: 0 }
    }
    pub fn with_base(buf: &'a [u8], base: usize) -> Self {
        Fields { buf, pos: 0, base }
    }

    /// File offset of the next unread byte.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn err(&self, what: &'static str) -> WireError {
        WireError { offset: self.base + self.pos, what }
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, WireError> {
        // Tags, small ids and short lengths: one byte, by far the common case, read inline
        // wherever a varint is read; longer ones take the call.
        if let Some(&byte) = self.buf.get(self.pos) {
            if byte < 0x80 {
                self.pos += 1;
                return Ok(byte as u64);
            }
        }
        self.long_varint()
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, WireError> {
        // Picosecond offsets and durations take 3 to 7 bytes: with 8 bytes in hand, the
        // varint is found and unpacked in one go rather than a byte at a time.
        if let Some(value) = varint_from_word(self.buf, &mut self.pos) {
            return Ok(value);
        }
        let mut result: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(self.err("truncated varint"));
            };
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(self.err("varint overflows 64 bits"));
            }
            result |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 {
                return Ok(result);
            }
            shift += 7;
            if shift > 63 {
                return Err(self.err("varint longer than 10 bytes"));
            }
        }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if n > self.buf.len() - self.pos {
            return Err(self.err(what));
        }
        let slice = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    /// The next field when it is a length-delimited one with the one-byte `key` (field number
    /// 1 to 15): its bytes and their file offset. None, with nothing read, for anything else
    /// (another field, the end, malformed bytes), which [`Fields::next_field`] then reads.
    #[inline]
    pub fn next_bytes_keyed(&mut self, key: u8) -> Option<(&'a [u8], usize)> {
        if self.buf.get(self.pos) != Some(&key) {
            return None;
        }
        let mut pos = self.pos + 1;
        let len = usize::try_from(varint_at(self.buf, &mut pos)?).ok().filter(|&n| n <= self.buf.len() - pos)?;
        self.pos = pos + len;
        Some((&self.buf[pos..pos + len], self.base + pos))
    }

    /// The next field's value when it is a varint with the one-byte `key` (field number 1 to
    /// 15). None, with nothing read, for anything else, as [`Fields::next_bytes_keyed`].
    #[inline]
    pub fn next_varint_keyed(&mut self, key: u8) -> Option<u64> {
        if self.buf.get(self.pos) != Some(&key) {
            return None;
        }
        let mut pos = self.pos + 1;
        let value = varint_at(self.buf, &mut pos)?;
        self.pos = pos;
        Some(value)
    }

    /// Whether every byte of the message has been read.
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// The next (field number, value, file offset of the value), or None at the end of the message.
    #[inline]
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>, usize)>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = (key >> 3) as u32;
        if field == 0 || key >> 3 > u32::MAX as u64 {
            return Err(self.err("invalid field number"));
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let b = self.take(8, "truncated fixed64")?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().unwrap()))
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| self.err("length prefix too large"))?;
                let start = self.offset();
                let b = self.take(len, "length prefix runs past the end of the data")?;
                return Ok(Some((field, Value::Bytes(b), start)));
            }
            5 => {
                let b = self.take(4, "truncated fixed32")?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().unwrap()))
            }
            _ => return Err(self.err("unsupported wire type (groups are not used by XPlane)")),
        };
        Ok(Some((field, value, self.offset())))
    }
}

/// The varint at `*pos`, moving past it, when 8 bytes are there and it ends within them.
#[inline(always)]
fn varint_from_word(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let word = u64::from_le_bytes(buf.get(*pos..*pos + 8)?.try_into().unwrap());
    let (value, len) = varint_in_word(word)?;
    *pos += len;
    Some(value)
}

/// The varint that starts the 8 little-endian bytes of `word`, and its length in bytes, when
/// it ends within them (a value below 2^56); None when all 8 bytes have their high bit set.
#[inline(always)]
fn varint_in_word(word: u64) -> Option<(u64, usize)> {
    let ends = !word & 0x8080_8080_8080_8080;
    if ends == 0 {
        return None;
    }
    // Bits up to the first byte without a high bit: the varint's bytes (their high bits are
    // the continuation flags, dropped below).
    let bits = word & (ends ^ (ends - 1));
    let len = (ends.trailing_zeros() as usize + 1) / 8;
    // Squeeze out the high bit of every byte: 7-bit groups into 14-, 28-, then 56-bit ones.
    let x = (bits & 0x007f_007f_007f_007f) | ((bits & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
    Some((x, len))
}

/// Reads the varint at `*pos`, moving past it; None when it is truncated or over-long (the
/// caller then re-reads with [`Fields`] to report where).
#[inline(always)]
pub fn varint_at(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let &byte = buf.get(*pos)?;
    if byte < 0x80 {
        *pos += 1;
        return Some(byte as u64);
    }
    // Offsets and durations (2 to 8 bytes) are read in place; only the rare rest (fewer than
    // 8 bytes left, 9 or 10 bytes, malformed) takes the call.
    if let Some(value) = varint_from_word(buf, pos) {
        return Some(value);
    }
    long_varint_at(buf, pos)
}

#[inline(never)]
fn long_varint_at(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut f = Fields { buf, pos: *pos, base: 0 };
    let v = f.long_varint().ok()?;
    *pos = f.pos;
    Some(v)
}

/// The varint that is all of `buf[from..]`, as a message's last field is (a stat's value):
/// None when those bytes are not exactly one varint. Fewer than 8 bytes are left there, so
/// it is read a byte at a time, without the 8-byte read of [`varint_at`] or its fallback.
#[inline]
pub fn last_varint(buf: &[u8], from: usize) -> Option<u64> {
    let bytes = buf.get(from..)?;
    let mut value = 0u64;
    for (k, &byte) in bytes.iter().enumerate() {
        if k == 9 && byte > 1 {
            return None;
        }
        value |= ((byte & 0x7f) as u64) << (7 * k);
        if byte < 0x80 {
            return (k + 1 == bytes.len()).then_some(value);
        }
        if k == 9 {
            return None;
        }
    }
    None
}

/// The value of field 1 when a message starts with it as a varint (how every producer
/// writes an XStat's metadata id), read without checking the rest of the message; `pos`
/// is left after it.
#[inline]
pub fn leading_field1_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    if buf.first() != Some(&0x08) {
        return None;
    }
    *pos = 1;
    varint_at(buf, pos)
}

/// Reads a packed or unpacked repeated varint field value into `out`.
pub fn push_varints(value: Value<'_>, out: &mut Vec<i64>) -> Result<(), WireError> {
    match value {
        Value::Bytes(b) => {
            let mut f = Fields::new(b);
            while f.pos < b.len() {
                out.push(f.varint()? as i64);
            }
            Ok(())
        }
        v => {
            out.push(v.as_i64());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_varints_and_lengths() {
        // field 1 varint 300, field 2 bytes "hi"
        let buf = [0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i'];
        let mut f = Fields::new(&buf);
        let (n, v, _) = f.next_field().unwrap().unwrap();
        assert_eq!((n, v.as_u64()), (1, 300));
        let (n, v, _) = f.next_field().unwrap().unwrap();
        assert_eq!((n, v.as_bytes()), (2, &b"hi"[..]));
        assert!(f.next_field().unwrap().is_none());
    }

    #[test]
    fn keyed_bytes_read_like_next_field_or_not_at_all() {
        let buf = [0x22, 0x02, b'h', b'i', 0x22, 0x00, 0x08, 0x01, 0x22, 0x80, 0x01, 0x00];
        for end in 0..=buf.len() {
            let (mut keyed, mut general) = (Fields::with_base(&buf[..end], 7), Fields::with_base(&buf[..end], 7));
            while let Some(got) = keyed.next_bytes_keyed(0x22) {
                let (field, value, off) = general.next_field().unwrap().unwrap();
                assert_eq!((field, value.as_bytes(), off), (4, got.0, got.1));
            }
            // Where it stops, the general reader finds another field, the end or an error.
            let (before, next) = (keyed.offset(), keyed.next_field());
            assert!(!matches!(next, Ok(Some((4, Value::Bytes(_), _)))), "{end}: {next:?}");
            assert_eq!(before, general.offset());
        }
    }

    #[test]
    fn absurd_length_prefix_is_an_error_not_an_allocation() {
        // field 2, length 2^62
        let buf = [0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40];
        let err = Fields::new(&buf).next_field().unwrap_err();
        assert!(err.what.contains("length prefix"), "{err}");
    }

    #[test]
    fn varints_of_every_length_read_back_with_and_without_bytes_after_them() {
        let mut values: Vec<u64> = (0..64).flat_map(|b| [1u64 << b, (1u64 << b) - 1, (1u64 << b) | 0x55]).collect();
        values.extend([u64::MAX, 123_456_789_012, (-5i64) as u64]);
        for v in values {
            let mut encoded = Vec::new();
            prost::encoding::encode_varint(v, &mut encoded);
            // Followed by enough bytes or not for the 8-byte read, with and without high bits.
            for (padding, fill) in [(0, 0xffu8), (3, 0xff), (9, 0xff), (9, 0x00), (9, 0x7f)] {
                let mut buf = encoded.clone();
                buf.extend(std::iter::repeat_n(fill, padding));
                let mut pos = 0;
                assert_eq!(varint_at(&buf, &mut pos), Some(v), "{v} + {padding} bytes {fill:#x}");
                assert_eq!(pos, encoded.len());
            }
            assert_eq!(varint_at(&encoded[..encoded.len() - 1], &mut 0), None, "{v} truncated");
        }
    }

    #[test]
    fn a_last_varint_reads_like_varint_at_to_the_end() {
        let mut cases: Vec<Vec<u8>> = (0..64)
            .map(|b| 1u64 << b)
            .chain([0, 127, 300, u64::MAX])
            .map(|v| {
                let mut encoded = vec![0x38];
                prost::encoding::encode_varint(v, &mut encoded);
                encoded
            })
            .collect();
        cases.extend([vec![0x38], vec![0x38, 0x80], vec![0x38, 5, 6], vec![0x38, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]]);
        cases.push([&[0x38][..], &[0xff; 10], &[0x01]].concat());
        for bytes in cases {
            let mut pos = 1;
            let whole = varint_at(&bytes, &mut pos).filter(|_| pos == bytes.len());
            assert_eq!(last_varint(&bytes, 1), whole, "{bytes:?}");
        }
    }

    #[test]
    fn truncated_varint_is_an_error() {
        let buf = [0x08, 0xff];
        assert!(Fields::new(&buf).next_field().is_err());
    }
}
