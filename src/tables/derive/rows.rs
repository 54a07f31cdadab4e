//! The rows derivation makes: ops, steps, collectives, regions and gaps, held in pool ids
//! and small labels so that passes over millions of them read few bytes.

use super::FxHashMap;

/// A text out of the fixed set ops are labelled with (category, pass, collective kind), held
/// as one byte: the op rows are ~180 K on a 40 MB capture and every pass over them reads
/// whole rows, so three 16-byte `&'static str`s were a fifth of each.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Label(u8);

/// Every text a [`Label`] can hold, in the order of their ids ([`Label::id`]).
pub static LABEL_TEXTS: [&str; 14] = [
    "compute",
    "communication",
    "stall",
    "remat",
    "backward",
    "optimizer",
    "forward",
    "other",
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "send-recv",
];

impl Label {
    /// The label of `text`, one of [`LABEL_TEXTS`] (ops are labelled only with those).
    pub fn of(text: &'static str) -> Label {
        Label(LABEL_TEXTS.iter().position(|t| *t == text).expect("ops are labelled only with the texts of LABEL_TEXTS") as u8)
    }
    pub fn as_str(self) -> &'static str {
        LABEL_TEXTS[self.0 as usize]
    }
    /// Its place in [`LABEL_TEXTS`].
    pub fn id(self) -> u32 {
        self.0 as u32
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One device-op execution (a row of the `ops` table, in pool ids).
#[derive(Clone, Debug, Default)]
pub struct Op {
    pub event_id: i64,
    pub chunk: u32,
    pub index: u32,
    pub host: u32,
    pub device: u32,
    pub line: u32,
    /// Index of the line in `Capture.lines` (the op's track).
    pub line_index: u32,
    pub name: u32,
    pub hlo_op: u32,
    pub hlo_module: u32,
    pub program_id: i64,
    pub opcode: u32,
    pub category: Label,
    pub hlo_category: u32,
    pub collective_kind: Option<Label>,
    pub tf_op: u32,
    /// Index into [`Derived::strings`], or NO_STR.
    pub region_path: u32,
    pub pass: Label,
    pub step: i64,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub self_ns: i64,
    pub dur_ps: i64,
    pub shape: u32,
    /// NULL_I64 when the HLO gives no shape.
    pub shape_bytes: i64,
    /// Index into [`Derived::strings`], or NO_STR.
    pub source: u32,
    pub flops: OptionalF64,
    pub bytes_accessed: OptionalF64,
    pub is_async: bool,
    /// On an `Async XLA Ops` line: an in-flight async span, not device occupancy.
    pub async_span: bool,
}

/// An `Option<f64>` in 8 bytes instead of 16 (a large profile holds millions of [`Op`]s, and
/// every pass over them reads their bytes): `None` is a NaN that parsing text never yields.
#[derive(Clone, Copy, Debug)]
pub struct OptionalF64(u64);

impl OptionalF64 {
    /// A signalling NaN: parsing `nan` yields the quiet one, which `new` keeps.
    const NONE_BITS: u64 = 0x7ff4_0000_0000_0001;
    pub const NONE: OptionalF64 = OptionalF64(Self::NONE_BITS);

    pub fn new(value: Option<f64>) -> Self {
        match value {
            Some(v) if v.to_bits() == Self::NONE_BITS => OptionalF64(f64::NAN.to_bits()),
            Some(v) => OptionalF64(v.to_bits()),
            None => Self::NONE,
        }
    }

    pub fn get(self) -> Option<f64> {
        (self.0 != Self::NONE_BITS).then(|| f64::from_bits(self.0))
    }
}

impl Default for OptionalF64 {
    fn default() -> Self {
        Self::NONE
    }
}

impl Op {
    pub fn end_ns(&self) -> i64 {
        self.start_ns.saturating_add(self.dur_ns)
    }
}

#[derive(Clone, Debug)]
pub struct Step {
    pub host: u32,
    pub device: u32,
    pub step: i64,
    pub name: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub source: &'static str,
    pub busy_ns: i64,
    pub compute_ns: i64,
    pub communication_ns: i64,
    pub op_count: i64,
}

/// A collective op, with the time compute ops of its device overlapped it.
#[derive(Clone, Debug)]
pub struct Collective {
    pub op: Op,
    pub overlapped_ns: i64,
}

#[derive(Clone, Debug, Default)]
pub struct Region {
    pub op_count: i64,
    pub inclusive_ns: i64,
    pub exclusive_ns: i64,
    pub devices: Vec<u32>,
}

impl Region {
    pub(super) fn add_devices(&mut self, devices: &[u32]) {
        for d in devices {
            if !self.devices.contains(d) {
                self.devices.push(*d);
            }
        }
    }
}

/// An idle gap on a device-op line before an op (the marker), attributed to the op that
/// does the real work after it (the payload).
#[derive(Clone, Debug)]
pub struct Gap {
    pub marker: usize,
    pub payload: usize,
    pub gap_start_ns: i64,
    pub gap_ns: i64,
}

/// Strings made by the derivation (region paths, `file:line` sources), by index.
#[derive(Default)]
pub struct LocalStrings {
    pub values: Vec<String>,
    pub(super) index: FxHashMap<String, u32>,
}

impl LocalStrings {
    pub(super) fn intern(&mut self, s: String) -> u32 {
        if let Some(&id) = self.index.get(&s) {
            return id;
        }
        let id = self.values.len() as u32;
        self.index.insert(s.clone(), id);
        self.values.push(s);
        id
    }
    pub fn get(&self, id: u32) -> Option<&str> {
        self.values.get(id as usize).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_optional_f64_keeps_every_value_and_none() {
        for v in [0.0, -0.0, 1.5e300, f64::INFINITY, f64::MIN_POSITIVE] {
            assert_eq!(OptionalF64::new(Some(v)).get().map(f64::to_bits), Some(v.to_bits()));
        }
        assert!(OptionalF64::new("nan".parse().ok()).get().is_some_and(f64::is_nan));
        assert!(OptionalF64::new(Some(f64::from_bits(OptionalF64::NONE_BITS))).get().is_some_and(f64::is_nan));
        assert_eq!(OptionalF64::new(None).get(), None);
        assert_eq!(OptionalF64::default().get(), None);
        // What the field types save: every pass over a large profile's ops reads their bytes.
        assert!(std::mem::size_of::<Op>() <= 152, "{}", std::mem::size_of::<Op>());
    }
}
