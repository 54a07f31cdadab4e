//! Stat values: a stat's wire value read into its typed column or its arg text.

use super::{last_varint, varint_at, EventChunk, Fields, IdMap, Result, Role, StatInfo, StatValue, StringPool, Value, NO_STR};

/// Parses a map<int64, Message> entry: key = 1, value = 2.
pub(super) fn map_entry(entry: &[u8], off: usize) -> Result<(i64, (&[u8], usize))> {
    let mut id = 0;
    let mut msg: (&[u8], usize) = (&[], off);
    let mut f = Fields::with_base(entry, off);
    while let Some((field, value, voff)) = f.next_field()? {
        match field {
            1 => id = value.as_i64(),
            2 => msg = (value.as_bytes(), voff),
            _ => {}
        }
    }
    Ok((id, msg))
}

/// Reads one XStat. Unknown stat metadata ids yield `None` (the stat is dropped).
#[inline]
pub(super) fn read_stat<'a>(bytes: &'a [u8], off: usize, stats: &IdMap<StatInfo>) -> Result<(Option<StatInfo>, StatValue<'a>)> {
    let (id, value) = stat_id_and_value(bytes, off, |r| stats.get(r).map_or(NO_STR, |target| target.name))?;
    Ok((stats.get(id).copied(), value))
}

/// An XStat's metadata id and value; a ref value (a stat-metadata id whose name is the
/// value) becomes the pool id `ref_name` gives for it.
#[inline]
pub(super) fn stat_id_and_value<'a>(bytes: &'a [u8], off: usize, ref_name: impl Fn(i64) -> u32) -> Result<(i64, StatValue<'a>)> {
    match usual_stat(bytes, &ref_name) {
        Some(stat) => Ok(stat),
        None => stat_fields(bytes, off, ref_name),
    }
}

/// [`stat_id_and_value`] for any layout, field by field.
pub(super) fn stat_fields<'a>(bytes: &'a [u8], off: usize, ref_name: impl Fn(i64) -> u32) -> Result<(i64, StatValue<'a>)> {
    let mut f = Fields::with_base(bytes, off);
    let mut id = 0i64;
    let mut value = StatValue::Int(0);
    while let Some((field, v, _)) = f.next_field()? {
        value = match (field, v) {
            (1, v) => {
                id = v.as_i64();
                continue;
            }
            (2, v) => StatValue::Double(v.as_f64()),
            (3, v) => StatValue::UInt(v.as_u64()),
            (4, v) => StatValue::Int(v.as_i64()),
            (5, Value::Bytes(b)) => match std::str::from_utf8(b) {
                Ok(s) => StatValue::Str(s),
                Err(_) => StatValue::Bytes(b),
            },
            (6, Value::Bytes(b)) => StatValue::Bytes(b),
            (7, v) => StatValue::Pooled(ref_name(v.as_i64())),
            _ => continue,
        };
    }
    Ok((id, value))
}

/// An XStat written the usual way (the metadata id first, then one value, each behind a
/// one-byte key), read without the general field loop: stats are read millions of times a
/// file. None for any other layout, which [`stat_id_and_value`] then reads field by field.
#[inline]
pub(super) fn usual_stat<'a>(b: &'a [u8], ref_name: &impl Fn(i64) -> u32) -> Option<(i64, StatValue<'a>)> {
    if b.first() != Some(&0x08) {
        return None;
    }
    let mut pos = 1;
    let id = varint_at(b, &mut pos)? as i64;
    let key = *b.get(pos)?;
    pos += 1;
    let value = match key {
        0x11 => {
            let bits = b.get(pos..pos + 8)?;
            pos += 8;
            StatValue::Double(f64::from_le_bytes(bits.try_into().ok()?))
        }
        0x18 => StatValue::UInt(varint_at(b, &mut pos)?),
        0x20 => StatValue::Int(varint_at(b, &mut pos)? as i64),
        0x38 => StatValue::Pooled(ref_name(varint_at(b, &mut pos)? as i64)),
        0x2a | 0x32 => {
            let n = usize::try_from(varint_at(b, &mut pos)?).ok().filter(|&n| n <= b.len() - pos)?;
            let bytes = &b[pos..pos + n];
            pos += n;
            match (key, std::str::from_utf8(bytes)) {
                (0x2a, Ok(s)) => StatValue::Str(s),
                _ => StatValue::Bytes(bytes),
            }
        }
        _ => return None,
    };
    (pos == b.len()).then_some((id, value))
}

/// The value of an XStat written the usual way when it is a varint (uint64 = 3, int64 = 4,
/// ref = 7), `pos` being where the value's key is: the key byte and the raw bits. None for
/// any other layout.
#[inline]
pub(super) fn usual_varint_value(b: &[u8], pos: usize) -> Option<(u8, u64)> {
    let key = *b.get(pos)?;
    if !matches!(key, 0x18 | 0x20 | 0x38) {
        return None;
    }
    Some((key, last_varint(b, pos + 1)?))
}

/// Sets event `i`'s typed column of `role` from a varint value as [`apply_stat`] would: a
/// string column from a ref (the referenced stat metadata's name), an integer column from
/// an int64 or uint64. False for any other pairing, which [`apply_stat`] then takes.
#[inline]
pub(super) fn set_typed_column(chunk: &mut EventChunk, i: usize, role: Role, key: u8, raw: u64, stats: &IdMap<StatInfo>) -> bool {
    match (role, key) {
        (Role::HloOp | Role::HloModule | Role::TfOp | Role::Src, 0x38) => {
            set_string_column(chunk, i, role, stats.get(raw as i64).map_or(NO_STR, |target| target.name));
            true
        }
        (Role::ProgramId | Role::Step | Role::CorrelationId | Role::DeviceOrdinal, 0x18 | 0x20) => {
            set_int_column(chunk, i, role, raw as i64);
            true
        }
        _ => false,
    }
}

/// Adds a varint-valued stat of the `Arg` role as [`apply_stat`] would, its text written
/// straight into the chunk's arg bytes: a CPU capture's flow ids (`_p`, `_c`, ...) are most
/// of its stats. False for any other role, which the caller then takes.
#[inline]
pub(super) fn push_varint_arg(chunk: &mut EventChunk, info: StatInfo, key: u8, raw: u64, stats: &IdMap<StatInfo>, pool: &StringPool) -> bool {
    if info.role != Role::Arg {
        return false;
    }
    match key {
        0x18 => chunk.push_arg(info.name, itoa::Buffer::new().format(raw)),
        0x20 => chunk.push_arg(info.name, itoa::Buffer::new().format(raw as i64)),
        _ => chunk.push_arg(info.name, pool.get(stats.get(raw as i64).map_or(NO_STR, |target| target.name)).unwrap_or("")),
    }
    true
}

/// Sets event `i`'s column of a string role (hlo_op, hlo_module, _src, tf_op).
#[inline]
pub(super) fn set_string_column(chunk: &mut EventChunk, i: usize, role: Role, id: u32) {
    let capacity = chunk.capacity();
    let col = match role {
        Role::HloOp => &mut chunk.hlo_op,
        Role::HloModule => &mut chunk.hlo_module,
        Role::Src => &mut chunk.src,
        _ => &mut chunk.tf_op,
    };
    col.set(i, capacity, id);
}

/// Sets event `i`'s column of an integer role (program_id, step, correlation_id, device_ordinal).
#[inline]
pub(super) fn set_int_column(chunk: &mut EventChunk, i: usize, role: Role, v: i64) {
    let capacity = chunk.capacity();
    let col = match role {
        Role::ProgramId => &mut chunk.program_id,
        Role::Step => &mut chunk.step,
        Role::CorrelationId => &mut chunk.correlation_id,
        _ => &mut chunk.device_ordinal,
    };
    col.set(i, capacity, v);
}

pub(super) fn value_f64(v: StatValue) -> Option<f64> {
    match v {
        StatValue::Int(x) => Some(x as f64),
        StatValue::UInt(x) => Some(x as f64),
        StatValue::Double(x) => Some(x),
        StatValue::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn value_i64(v: StatValue) -> Option<i64> {
    match v {
        StatValue::Int(x) => Some(x),
        StatValue::UInt(x) => Some(x as i64),
        StatValue::Double(x) if x.is_finite() => Some(x as i64),
        StatValue::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn bytes_text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::with_capacity(2 + b.len() * 2);
            out.push_str("0x");
            for byte in b {
                out.push_str(&format!("{byte:02x}"));
            }
            out
        }
    }
}

pub(super) fn value_text(v: StatValue, pool: &StringPool) -> String {
    let mut out = String::new();
    write_value(v, pool, &mut out);
    out
}

pub(super) fn write_value(v: StatValue, pool: &StringPool, out: &mut String) {
    match v {
        StatValue::Int(x) => out.push_str(itoa::Buffer::new().format(x)),
        StatValue::UInt(x) => out.push_str(itoa::Buffer::new().format(x)),
        StatValue::Double(x) => {
            if x.is_finite() {
                out.push_str(ryu::Buffer::new().format(x))
            } else {
                out.push_str(&x.to_string())
            }
        }
        StatValue::Str(s) => out.push_str(s),
        StatValue::Pooled(id) => out.push_str(pool.get(id).unwrap_or("")),
        StatValue::Bytes(b) => out.push_str(&bytes_text(b)),
    }
}
