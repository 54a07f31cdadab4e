//! HLO module decoding (the subset in `proto/hlo.proto`), for opcodes, scope paths, shapes and
//! the order each computation's instructions run in (its schedule).
//!
//! On CPU captures the HloProto is the only source of named-scope paths (`metadata.op_name`)
//! and of the opcode that tells `psum.7` is an all-reduce. The index is built from the
//! serialized bytes with the zero-copy wire reader ([`super::wire`]): a module of a real
//! training step is ~2 MB and ~15 K instructions, read before any event can be derived, and
//! materialising it as messages (a String per field) took most of that time. The structs
//! below are what prost-build generates from `proto/hlo.proto`, written out so that building
//! profq needs no protoc: they document the subset read, and tests build HloProtos with them.

use super::wire::{push_varints, Fields, Value, WireError};
use crate::model::names::kernel_alias;
use crate::model::{HloIndex, HloInstr, ModuleSchedule, StringPool};
use prost::Message;
use rustc_hash::{FxHashMap, FxHashSet};
use std::hash::BuildHasher;

#[derive(Clone, PartialEq, Message)]
pub struct HloProto {
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct HloModuleProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub entry_computation_name: String,
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
    #[prost(message, optional, tag = "7")]
    pub schedule: Option<HloScheduleProto>,
    #[prost(message, optional, tag = "17")]
    pub stack_frame_index: Option<StackFrameIndexProto>,
}

/// The module's call stacks, shared by its instructions (`OpMetadata.stack_frame_id`); every
/// id is 1-based, 0 meaning none. Current JAX writes source locations only here.
#[derive(Clone, PartialEq, Message)]
pub struct StackFrameIndexProto {
    #[prost(string, repeated, tag = "1")]
    pub file_names: Vec<String>,
    #[prost(message, repeated, tag = "3")]
    pub file_locations: Vec<FileLocation>,
    #[prost(message, repeated, tag = "4")]
    pub stack_frames: Vec<StackFrame>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FileLocation {
    #[prost(int32, tag = "1")]
    pub file_name_id: i32,
    #[prost(int32, tag = "3")]
    pub line: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct StackFrame {
    #[prost(int32, tag = "1")]
    pub file_location_id: i32,
}

/// The order in which each computation's instructions run: computation id -> instruction ids.
#[derive(Clone, PartialEq, Message)]
pub struct HloScheduleProto {
    #[prost(map = "int64, message", tag = "1")]
    pub sequences: std::collections::HashMap<i64, InstructionSequence>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InstructionSequence {
    #[prost(int64, repeated, tag = "1")]
    pub instruction_ids: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
    #[prost(int64, tag = "6")]
    pub root_id: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub opcode: String,
    #[prost(message, optional, tag = "3")]
    pub shape: Option<ShapeProto>,
    #[prost(message, optional, tag = "7")]
    pub metadata: Option<OpMetadata>,
    #[prost(int64, tag = "35")]
    pub id: i64,
    #[prost(int64, repeated, tag = "38")]
    pub called_computation_ids: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct OpMetadata {
    #[prost(string, tag = "1")]
    pub op_type: String,
    #[prost(string, tag = "2")]
    pub op_name: String,
    #[prost(string, tag = "3")]
    pub source_file: String,
    #[prost(int32, tag = "4")]
    pub source_line: i32,
    #[prost(int32, tag = "15")]
    pub stack_frame_id: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct ShapeProto {
    #[prost(int32, tag = "2")]
    pub element_type: i32,
    #[prost(int64, repeated, tag = "3")]
    pub dimensions: Vec<i64>,
    #[prost(message, repeated, tag = "4")]
    pub tuple_shapes: Vec<ShapeProto>,
}

/// (name, bytes per element) of xla.PrimitiveType; bits for sub-byte types are rounded up.
fn element_type(t: i32) -> (&'static str, Option<f64>) {
    match t {
        1 => ("pred", Some(1.0)),
        2 => ("s8", Some(1.0)),
        3 => ("s16", Some(2.0)),
        4 => ("s32", Some(4.0)),
        5 => ("s64", Some(8.0)),
        6 => ("u8", Some(1.0)),
        7 => ("u16", Some(2.0)),
        8 => ("u32", Some(4.0)),
        9 => ("u64", Some(8.0)),
        10 => ("f16", Some(2.0)),
        11 => ("f32", Some(4.0)),
        12 => ("f64", Some(8.0)),
        13 => ("tuple", None),
        14 => ("opaque", Some(0.0)),
        15 => ("c64", Some(8.0)),
        16 => ("bf16", Some(2.0)),
        17 => ("token", Some(0.0)),
        18 => ("c128", Some(16.0)),
        19 => ("f8e5m2", Some(1.0)),
        20 => ("f8e4m3fn", Some(1.0)),
        21 => ("s4", Some(0.5)),
        22 => ("u4", Some(0.5)),
        23 => ("f8e4m3b11fnuz", Some(1.0)),
        24 => ("f8e5m2fnuz", Some(1.0)),
        25 => ("f8e4m3fnuz", Some(1.0)),
        _ => ("unknown", None),
    }
}

/// `name[d0,d1,...]`.
fn render_array(name: &str, dimensions: &[i64], out: &mut String) {
    out.push_str(name);
    out.push('[');
    for (i, d) in dimensions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(itoa::Buffer::new().format(*d));
    }
    out.push(']');
}

/// Elements of an array of these dimensions (a negative one counts as none).
fn elements(dimensions: &[i64]) -> f64 {
    dimensions.iter().map(|d| (*d).max(0) as f64).product()
}

/// The entry of a stack-frame table numbered `id`: those tables number their entries from 1,
/// and 0 (or an id out of range) names none.
fn by_one_based_id<T>(entries: &[T], id: i32) -> Option<&T> {
    entries.get((id as usize).wrapping_sub(1))
}

/// A length-delimited field's bytes; any other wire type is malformed for it.
fn bytes_of<'a>(value: Value<'a>, offset: usize) -> Result<&'a [u8], WireError> {
    match value {
        Value::Bytes(b) => Ok(b),
        _ => Err(WireError { offset, what: "a message or string field with another wire type" }),
    }
}

/// A string field's text: UTF-8, as protobuf requires of `string`.
fn text_of(value: Value<'_>, offset: usize) -> Result<&str, WireError> {
    std::str::from_utf8(bytes_of(value, offset)?).map_err(|_| WireError { offset, what: "a string field that is not UTF-8" })
}

/// An `int32` (or enum) field: a varint, its low 32 bits as protobuf reads them.
fn int32_of(value: Value<'_>, offset: usize) -> Result<i32, WireError> {
    match value {
        Value::Varint(v) => Ok(v as i32),
        _ => Err(WireError { offset, what: "an integer field with another wire type" }),
    }
}

/// How deep tuple shapes may nest (protobuf decoders stop at 100 levels of messages).
const MAX_SHAPE_DEPTH: usize = 64;

/// Renders a serialized ShapeProto like `f32[8,128]` (a tuple as `(f32[8], s32[])`) and
/// returns its size in bytes when the element types are known.
fn render_shape_bytes(bytes: &[u8], base: usize, depth: usize, out: &mut String) -> Result<Option<f64>, WireError> {
    if depth > MAX_SHAPE_DEPTH {
        return Err(WireError { offset: base, what: "tuple shapes nested too deep" });
    }
    let mut ty = 0;
    let mut dimensions = Vec::new();
    let mut tuple_shapes = Vec::new();
    let mut f = Fields::with_base(bytes, base);
    while let Some((field, value, off)) = f.next_field()? {
        match field {
            2 => ty = int32_of(value, off)?,
            3 => push_varints(value, &mut dimensions)?,
            4 => tuple_shapes.push((bytes_of(value, off)?, off)),
            _ => {}
        }
    }
    let (name, elem_bytes) = element_type(ty);
    if ty == 13 {
        out.push('(');
        let mut total = Some(0.0);
        for (i, (shape, off)) in tuple_shapes.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let b = render_shape_bytes(shape, off, depth + 1, out)?;
            total = match (total, b) {
                (Some(t), Some(b)) => Some(t + b),
                _ => None,
            };
        }
        out.push(')');
        return Ok(total);
    }
    render_array(name, &dimensions, out);
    Ok(elem_bytes.map(|b| (b * elements(&dimensions)).ceil()))
}

/// (file, line) of each stack frame's own location, by frame id - 1: the innermost frame of an
/// op's call stack is where its line of user code is (the file XProf shows for the op).
fn frame_sources(index: Option<(&[u8], usize)>, pool: &mut StringPool) -> Result<Vec<(u32, i32)>, WireError> {
    let Some((bytes, base)) = index else { return Ok(Vec::new()) };
    let (mut files, mut locations, mut frames) = (Vec::new(), Vec::new(), Vec::new());
    let mut f = Fields::with_base(bytes, base);
    while let Some((field, value, off)) = f.next_field()? {
        match field {
            1 => files.push(pool.intern(text_of(value, off)?)),
            3 => {
                let (mut file_name_id, mut line) = (0, 0);
                let mut lf = Fields::with_base(bytes_of(value, off)?, off);
                while let Some((field, value, off)) = lf.next_field()? {
                    match field {
                        1 => file_name_id = int32_of(value, off)?,
                        3 => line = int32_of(value, off)?,
                        _ => {}
                    }
                }
                locations.push((file_name_id, line));
            }
            4 => {
                let mut file_location_id = 0;
                let mut ff = Fields::with_base(bytes_of(value, off)?, off);
                while let Some((field, value, off)) = ff.next_field()? {
                    if field == 1 {
                        file_location_id = int32_of(value, off)?;
                    }
                }
                frames.push(file_location_id);
            }
            _ => {}
        }
    }
    Ok(frames
        .into_iter()
        .map(|location| match by_one_based_id(&locations, location) {
            Some(&(file, line)) => (by_one_based_id(&files, file).copied().unwrap_or(crate::model::NO_STR), line),
            None => (crate::model::NO_STR, 0),
        })
        .collect())
}

/// The fields of an HloInstructionProto the index reads, borrowed from its bytes.
#[derive(Default)]
struct InstructionFields<'a> {
    id: i64,
    name: &'a str,
    opcode: &'a str,
    shape: Option<(&'a [u8], usize)>,
    op_name: &'a str,
    source_file: &'a str,
    source_line: i32,
    stack_frame_id: i32,
    has_metadata: bool,
    /// The first of `called_computation_ids` (packed or not), read only where needed.
    called: Option<Value<'a>>,
}

impl<'a> InstructionFields<'a> {
    fn read(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut instr = InstructionFields::default();
        let mut f = Fields::with_base(bytes, base);
        while let Some((field, value, off)) = f.next_field()? {
            match field {
                1 => instr.name = text_of(value, off)?,
                2 => instr.opcode = text_of(value, off)?,
                3 => instr.shape = Some((bytes_of(value, off)?, off)),
                7 => {
                    instr.has_metadata = true;
                    let mut mf = Fields::with_base(bytes_of(value, off)?, off);
                    while let Some((field, value, off)) = mf.next_field()? {
                        match field {
                            2 => instr.op_name = text_of(value, off)?,
                            3 => instr.source_file = text_of(value, off)?,
                            4 => instr.source_line = int32_of(value, off)?,
                            15 => instr.stack_frame_id = int32_of(value, off)?,
                            _ => {}
                        }
                    }
                }
                35 => instr.id = value.as_i64(),
                38 if instr.called.is_none() => instr.called = Some(value),
                _ => {}
            }
        }
        Ok(instr)
    }
}

/// Decodes one serialized HloProto and adds its instructions to `index` under
/// `program_id` (when known) and under the module name.
///
/// The same bytes under the same program id are indexed once: each host of a multi-host
/// session carries the modules of every program it ran. Indexing such a copy again would only
/// repeat what the first index wrote (its strings are pooled), unless another module under the
/// same program id came in between (docs/semantics.md, Ops), so the check is a 64-bit hash of the bytes with their length, not
/// a comparison of them.
pub fn index_hlo_proto(bytes: &[u8], program_id: Option<i64>, pool: &mut StringPool, index: &mut HloIndex) -> Result<(), String> {
    let seen = (program_id, bytes.len(), rustc_hash::FxBuildHasher.hash_one(bytes));
    if index.indexed.contains(&seen) {
        return Ok(());
    }
    index_module(bytes, program_id, pool, index).map_err(|e| format!("undecodable HloProto: {e}"))?;
    index.indexed.insert(seen);
    Ok(())
}

fn index_module(bytes: &[u8], program_id: Option<i64>, pool: &mut StringPool, index: &mut HloIndex) -> Result<(), WireError> {
    let mut module = None;
    let mut f = Fields::new(bytes);
    while let Some((field, value, off)) = f.next_field()? {
        if field == 1 {
            module = Some((bytes_of(value, off)?, off));
        }
    }
    let Some((module, base)) = module else { return Ok(()) };
    let (mut name, mut computations, mut stack_frame_index) = ("", Vec::new(), None);
    let mut schedule = None;
    let mut f = Fields::with_base(module, base);
    while let Some((field, value, off)) = f.next_field()? {
        match field {
            1 => name = text_of(value, off)?,
            3 => computations.push((bytes_of(value, off)?, off)),
            7 => schedule = Some((bytes_of(value, off)?, off)),
            17 => stack_frame_index = Some((bytes_of(value, off)?, off)),
            _ => {}
        }
    }
    let module_id = pool.intern(name);
    let frame_sources = frame_sources(stack_frame_index, pool)?;
    let sequences = match schedule {
        Some((bytes, base)) => schedule_sequences(bytes, base)?,
        None => Vec::new(),
    };
    let fused = fused_computations(&computations, &sequences)?;
    // The instructions are read whole before any goes into the index: a module that turns out
    // malformed part way adds nothing (its strings may stay in the pool, unused).
    let mut instructions = Vec::new();
    let mut shape_text = String::new();
    let mut aliases = Vec::new();
    // Each computation's ids, and each async-start's (name id, called computation id), for the
    // schedule.
    let mut computation_ids: Vec<ComputationIds> = Vec::new();
    let mut async_starts: Vec<(u32, i64)> = Vec::new();
    for ((computation, base), fused) in computations.into_iter().zip(fused) {
        if fused {
            continue;
        }
        let (mut computation_id, mut root_id, mut instruction_ids) = (0, 0, Vec::new());
        let mut f = Fields::with_base(computation, base);
        while let Some((field, value, off)) = f.next_field()? {
            match field {
                5 => computation_id = value.as_i64(),
                6 => root_id = value.as_i64(),
                _ => {}
            }
            if field != 2 {
                continue;
            }
            let instr = InstructionFields::read(bytes_of(value, off)?, off)?;
            shape_text.clear();
            let shape_bytes = match instr.shape {
                Some((shape, off)) => render_shape_bytes(shape, off, 0, &mut shape_text)?,
                None => None,
            };
            let (source_file, source_line) = if !instr.has_metadata {
                (crate::model::NO_STR, 0)
            } else if !instr.source_file.is_empty() {
                (pool.intern(instr.source_file), instr.source_line)
            } else {
                by_one_based_id(&frame_sources, instr.stack_frame_id).copied().unwrap_or((crate::model::NO_STR, 0))
            };
            let info = HloInstr {
                opcode: pool.intern(instr.opcode),
                op_name: if instr.op_name.is_empty() { crate::model::NO_STR } else { pool.intern(instr.op_name) },
                source_file,
                source_line,
                shape: if shape_text.is_empty() { crate::model::NO_STR } else { pool.intern(&shape_text) },
                shape_bytes: shape_bytes.map(|b| b as i64),
            };
            // The kernel spelling is an alias that never hides a real name.
            if let Some(alias) = kernel_alias(instr.name) {
                aliases.push((alias, info.clone()));
            }
            let name_id = pool.intern(instr.name);
            if instr.opcode == "async-start" {
                if let Some(called) = instr.called.map(first_varint).transpose()?.flatten() {
                    async_starts.push((name_id, called));
                }
            }
            instruction_ids.push((instr.id, name_id));
            instructions.push((name_id, info));
        }
        computation_ids.push(ComputationIds { id: computation_id, root: root_id, instructions: instruction_ids });
    }
    let schedule = ModuleSchedule {
        sequences: computation_ids.iter().filter_map(|c| scheduled(c.id, &c.instructions, &sequences)).collect(),
        started: started(&async_starts, &computation_ids),
    };
    add_module(module_id, program_id, instructions, aliases, schedule, pool, index);
    Ok(())
}

/// Which of a module's `computations` hold fused instructions: those only `fusion`
/// instructions call, and that the schedule (`sequences`) does not order.
///
/// No event names a fused instruction: a fusion runs as one op (one thunk, kernel or TPU op)
/// named after the fusion instruction, which the computation that calls it holds. Fused
/// instructions are most of a module (89 % of the 40.5 MB bench file's 16.9 K), so they are
/// left out of the index (docs/semantics.md, Ops). Only their opcode and called computations
/// are read here; a computation that anything else calls (a `call`, a `while` body, an
/// async-start's computation) or that the schedule orders is indexed.
fn fused_computations(computations: &[(&[u8], usize)], sequences: &[(i64, Vec<i64>)]) -> Result<Vec<bool>, WireError> {
    let mut ids = Vec::with_capacity(computations.len());
    let (mut by_fusion, mut by_other) = (FxHashSet::default(), FxHashSet::default());
    let mut called = Vec::new();
    for &(computation, base) in computations {
        let mut id = 0;
        let mut f = Fields::with_base(computation, base);
        while let Some((field, value, off)) = f.next_field()? {
            match field {
                2 => {
                    let (mut fusion, mut instruction) = (false, Fields::with_base(bytes_of(value, off)?, off));
                    called.clear();
                    while let Some((field, value, off)) = instruction.next_field()? {
                        match field {
                            2 => fusion = bytes_of(value, off)? == b"fusion",
                            38 => push_varints(value, &mut called)?,
                            _ => {}
                        }
                    }
                    (if fusion { &mut by_fusion } else { &mut by_other }).extend(called.iter().copied());
                }
                5 => id = value.as_i64(),
                _ => {}
            }
        }
        ids.push(id);
    }
    if by_fusion.is_empty() {
        return Ok(vec![false; ids.len()]);
    }
    let scheduled: FxHashSet<i64> = sequences.iter().map(|(c, _)| *c).collect();
    Ok(ids.into_iter().map(|id| by_fusion.contains(&id) && !by_other.contains(&id) && !scheduled.contains(&id)).collect())
}

/// A computation's id, its root instruction's id and its instructions' (id, name id).
struct ComputationIds {
    id: i64,
    root: i64,
    instructions: Vec<(i64, u32)>,
}

/// The first integer of a repeated integer field's value, packed or not.
fn first_varint(value: Value<'_>) -> Result<Option<i64>, WireError> {
    let mut ids = Vec::new();
    push_varints(value, &mut ids)?;
    Ok(ids.first().copied())
}

/// Each async-start (name id) of `async_starts` (name id, called computation id) → the name id
/// of the root instruction of the computation it calls, among `computations`; starts whose
/// computation or root is not there are left out.
fn started(async_starts: &[(u32, i64)], computations: &[ComputationIds]) -> FxHashMap<u32, u32> {
    if async_starts.is_empty() {
        return FxHashMap::default();
    }
    // Each computation's root found once: many starts may call one large computation.
    let root_of: FxHashMap<i64, Option<u32>> =
        computations.iter().map(|c| (c.id, c.instructions.iter().find(|(id, _)| *id == c.root).map(|&(_, name)| name))).collect();
    async_starts.iter().filter_map(|&(start, called)| Some((start, (*root_of.get(&called)?)?))).collect()
}

/// The (computation id, instruction ids) sequences of a serialized HloScheduleProto.
fn schedule_sequences(bytes: &[u8], base: usize) -> Result<Vec<(i64, Vec<i64>)>, WireError> {
    let mut sequences = Vec::new();
    let mut f = Fields::with_base(bytes, base);
    while let Some((field, value, off)) = f.next_field()? {
        if field != 1 {
            continue;
        }
        let (mut computation, mut ids) = (0, Vec::new());
        let mut entry = Fields::with_base(bytes_of(value, off)?, off);
        while let Some((field, value, off)) = entry.next_field()? {
            match field {
                1 => computation = value.as_i64(),
                2 => {
                    let mut sequence = Fields::with_base(bytes_of(value, off)?, off);
                    while let Some((field, value, _)) = sequence.next_field()? {
                        if field == 1 {
                            push_varints(value, &mut ids)?;
                        }
                    }
                }
                _ => {}
            }
        }
        sequences.push((computation, ids));
    }
    Ok(sequences)
}

/// A computation's instructions (name ids) in their scheduled order: the sequence of
/// `computation` among the schedule's `sequences`, its instruction ids named by `instructions`
/// (id, name id). None without a sequence for it, or with one naming an instruction it lacks.
fn scheduled(computation: i64, instructions: &[(i64, u32)], sequences: &[(i64, Vec<i64>)]) -> Option<Vec<u32>> {
    let (_, ids) = sequences.iter().find(|(c, _)| *c == computation)?;
    let mut names = std::collections::HashMap::with_capacity(instructions.len());
    for &(id, name) in instructions {
        names.entry(id).or_insert(name);
    }
    // Ids that repeat (a proto written without them) order nothing.
    if names.len() != instructions.len() {
        return None;
    }
    ids.iter().map(|id| names.get(id).copied()).collect()
}

/// Adds a module's instructions (name id, what is known of it) and their `_`-spelled aliases
/// to `index`, once all of them were read.
fn add_module(
    module_id: u32,
    program_id: Option<i64>,
    instructions: Vec<(u32, HloInstr)>,
    aliases: Vec<(String, HloInstr)>,
    schedule: ModuleSchedule,
    pool: &mut StringPool,
    index: &mut HloIndex,
) {
    if let Some(pid) = program_id {
        let programs = index.modules.entry(module_id).or_default();
        if !programs.contains(&pid) {
            programs.push(pid);
        }
    }
    if !schedule.sequences.is_empty() {
        let schedule = std::sync::Arc::new(schedule);
        if let Some(pid) = program_id {
            index.schedule_by_program.insert(pid, schedule.clone());
        }
        index.schedule_by_module.entry(module_id).or_insert(schedule);
    }
    // Room made once for the module's entries: a training step's module has tens of
    // thousands, and growing the tables entry by entry rehashed them into fresh pages.
    let entries = instructions.len() + aliases.len();
    if program_id.is_some() {
        index.by_program.reserve(entries);
    }
    index.by_module.reserve(entries);
    for (name_id, info) in instructions {
        if let Some(pid) = program_id {
            index.by_program.insert((pid, name_id), info.clone());
        }
        // First module wins for name lookups; program ids disambiguate the rest.
        index.by_module.entry((module_id, name_id)).or_insert(info);
    }
    for (alias, info) in aliases {
        let alias_id = pool.intern(&alias);
        if let Some(pid) = program_id {
            index.by_program.entry((pid, alias_id)).or_insert_with(|| info.clone());
        }
        index.by_module.entry((module_id, alias_id)).or_insert(info);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NO_STR;

    /// What the index was built from before the wire reader: the module decoded as prost
    /// messages (then added as the wire reader's are). The two must index the same
    /// instructions with the same strings, in the same pool order, for every module prost
    /// decodes.
    fn reference_index(bytes: &[u8], program_id: Option<i64>, pool: &mut StringPool, index: &mut HloIndex) -> Result<(), String> {
        fn render_shape(shape: &ShapeProto, out: &mut String) -> Option<f64> {
            let (name, elem_bytes) = element_type(shape.element_type);
            if shape.element_type == 13 {
                out.push('(');
                let mut total = Some(0.0);
                for (i, s) in shape.tuple_shapes.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    total = match (total, render_shape(s, out)) {
                        (Some(t), Some(b)) => Some(t + b),
                        _ => None,
                    };
                }
                out.push(')');
                return total;
            }
            render_array(name, &shape.dimensions, out);
            elem_bytes.map(|b| (b * elements(&shape.dimensions)).ceil())
        }
        let proto = HloProto::decode(bytes).map_err(|e| format!("undecodable HloProto: {e}"))?;
        let Some(module) = proto.hlo_module else { return Ok(()) };
        let module_id = pool.intern(&module.name);
        let frame_sources: Vec<(u32, i32)> = match &module.stack_frame_index {
            None => Vec::new(),
            Some(frames) => {
                let files: Vec<u32> = frames.file_names.iter().map(|f| pool.intern(f)).collect();
                let location = |frame: &StackFrame| by_one_based_id(&frames.file_locations, frame.file_location_id);
                let source = |loc: &FileLocation| (by_one_based_id(&files, loc.file_name_id).copied().unwrap_or(NO_STR), loc.line);
                frames.stack_frames.iter().map(|frame| location(frame).map_or((NO_STR, 0), source)).collect()
            }
        };
        // Fused computations: called by fusions alone, and not scheduled.
        let calls = |fusion: bool| -> std::collections::HashSet<i64> {
            let callers = module.computations.iter().flat_map(|c| &c.instructions).filter(|i| (i.opcode == "fusion") == fusion);
            callers.flat_map(|i| i.called_computation_ids.iter().copied()).collect()
        };
        let (by_fusion, by_other) = (calls(true), calls(false));
        let scheduled = |id: i64| module.schedule.as_ref().is_some_and(|s| s.sequences.contains_key(&id));
        let computations: Vec<&HloComputationProto> =
            module.computations.iter().filter(|c| !by_fusion.contains(&c.id) || by_other.contains(&c.id) || scheduled(c.id)).collect();
        let (mut shape_text, mut instructions, mut aliases) = (String::new(), Vec::new(), Vec::new());
        for instr in computations.iter().flat_map(|c| &c.instructions) {
            shape_text.clear();
            let shape_bytes = instr.shape.as_ref().and_then(|s| render_shape(s, &mut shape_text));
            let meta = instr.metadata.as_ref();
            let (source_file, source_line) = match meta {
                Some(m) if !m.source_file.is_empty() => (pool.intern(&m.source_file), m.source_line),
                Some(m) => by_one_based_id(&frame_sources, m.stack_frame_id).copied().unwrap_or((NO_STR, 0)),
                None => (NO_STR, 0),
            };
            let info = HloInstr {
                opcode: pool.intern(&instr.opcode),
                op_name: meta.filter(|m| !m.op_name.is_empty()).map_or(NO_STR, |m| pool.intern(&m.op_name)),
                source_file,
                source_line,
                shape: if shape_text.is_empty() { NO_STR } else { pool.intern(&shape_text) },
                shape_bytes: shape_bytes.map(|b| b as i64),
            };
            if let Some(alias) = kernel_alias(&instr.name) {
                aliases.push((alias, info.clone()));
            }
            instructions.push((pool.intern(&instr.name), info));
        }
        let sequences = computations
            .iter()
            .filter_map(|c| {
                let mut names = std::collections::HashMap::new();
                for i in &c.instructions {
                    names.entry(i.id).or_insert_with(|| pool.lookup(&i.name).unwrap());
                }
                if names.len() != c.instructions.len() {
                    return None;
                }
                let sequence = module.schedule.as_ref()?.sequences.get(&c.id)?;
                sequence.instruction_ids.iter().map(|id| names.get(id).copied()).collect::<Option<Vec<u32>>>()
            })
            .collect();
        let root_of = |called: i64| {
            let computation = computations.iter().rev().find(|c| c.id == called)?;
            computation.instructions.iter().find(|i| i.id == computation.root_id).map(|i| pool.lookup(&i.name).unwrap())
        };
        let started = computations
            .iter()
            .flat_map(|c| &c.instructions)
            .filter(|i| i.opcode == "async-start")
            .filter_map(|i| Some((pool.lookup(&i.name).unwrap(), root_of(*i.called_computation_ids.first()?)?)))
            .collect();
        add_module(module_id, program_id, instructions, aliases, ModuleSchedule { sequences, started }, pool, index);
        Ok(())
    }

    /// The bytes-valued stats of the `/host:metadata` plane's event metadata in every committed
    /// XPlane capture: the serialized HloProto of each module the capture ran.
    fn committed_hlo_protos() -> Vec<(String, Vec<u8>)> {
        fn bytes_fields(buf: &[u8], field: u32) -> Vec<&[u8]> {
            let mut out = Vec::new();
            let mut f = Fields::new(buf);
            while let Some((n, v, _)) = f.next_field().unwrap() {
                if n == field {
                    if let Value::Bytes(b) = v {
                        out.push(b);
                    }
                }
            }
            out
        }
        let mut files = Vec::new();
        let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.to_string_lossy().ends_with(".xplane.pb") {
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut protos = Vec::new();
        for path in files {
            let space = std::fs::read(&path).unwrap();
            for plane in bytes_fields(&space, 1) {
                if bytes_fields(plane, 2).first() != Some(&&b"/host:metadata"[..]) {
                    continue;
                }
                for entry in bytes_fields(plane, 4) {
                    for metadata in bytes_fields(entry, 2) {
                        for stat in bytes_fields(metadata, 5) {
                            for value in bytes_fields(stat, 6) {
                                protos.push((path.display().to_string(), value.to_vec()));
                            }
                        }
                    }
                }
            }
        }
        protos
    }

    /// Every module of every committed capture: the same pool and index as prost's messages give.
    #[test]
    fn wire_index_equals_the_prost_decoded_one_on_every_committed_module() {
        let protos = committed_hlo_protos();
        assert!(protos.len() >= 20, "HLO protos found in tests/data: {}", protos.len());
        let (mut pool, mut index) = (StringPool::default(), HloIndex::default());
        let (mut reference_pool, mut reference) = (StringPool::default(), HloIndex::default());
        for (k, (path, bytes)) in protos.iter().enumerate() {
            let program_id = (k % 3 != 0).then_some(k as i64 / 2);
            let expected = reference_index(bytes, program_id, &mut reference_pool, &mut reference);
            assert_eq!(index_hlo_proto(bytes, program_id, &mut pool, &mut index).is_ok(), expected.is_ok(), "{path}");
            assert_eq!(format!("{pool:?}"), format!("{reference_pool:?}"), "{path}");
            assert_eq!(index, reference, "{path}");
        }
        assert!(index.by_module.len() > 5_000, "{}", index.by_module.len());
    }

    /// A module met again (another host's copy) adds nothing; under another program id it is
    /// indexed for that program too.
    #[test]
    fn a_module_met_again_is_indexed_once_per_program() {
        let (_, bytes) = committed_hlo_protos().into_iter().max_by_key(|(_, b)| b.len()).unwrap();
        let (mut pool, mut once) = (StringPool::default(), HloIndex::default());
        index_hlo_proto(&bytes, Some(7), &mut pool, &mut once).unwrap();
        let (mut pool_twice, mut twice) = (StringPool::default(), HloIndex::default());
        for _ in 0..2 {
            index_hlo_proto(&bytes, Some(7), &mut pool_twice, &mut twice).unwrap();
        }
        assert_eq!(twice, once);
        assert_eq!(format!("{pool_twice:?}"), format!("{pool:?}"));
        index_hlo_proto(&bytes, Some(8), &mut pool, &mut once).unwrap();
        assert_eq!(once.indexed.len(), 2);
        let some_name = once.by_program.keys().find(|(p, _)| *p == 7).unwrap().1;
        assert_eq!(once.by_program.get(&(8, some_name)), once.by_program.get(&(7, some_name)));
    }

    /// A module cut short anywhere, or with a byte changed, is an error or a smaller index, never a
    /// panic; a module that fails adds no instruction.
    #[test]
    fn truncated_or_flipped_modules_fail_without_indexing_part_of_them() {
        let (_, bytes) = committed_hlo_protos().into_iter().min_by_key(|(_, b)| b.len()).unwrap();
        let step = (bytes.len() / 400).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            for damaged in [bytes[..cut].to_vec(), {
                let mut b = bytes.clone();
                b[cut] ^= 0xa5;
                b
            }] {
                let (mut pool, mut index) = (StringPool::default(), HloIndex::default());
                if index_hlo_proto(&damaged, Some(1), &mut pool, &mut index).is_err() {
                    assert_eq!(index, HloIndex::default(), "cut at {cut}");
                }
            }
        }
    }

    /// Tuple shapes nested past any real one are an error, not a deep recursion.
    #[test]
    fn deeply_nested_tuple_shapes_are_an_error() {
        let mut shape = ShapeProto { element_type: 11, dimensions: vec![2], tuple_shapes: vec![] };
        for _ in 0..200 {
            shape = ShapeProto { element_type: 13, dimensions: vec![], tuple_shapes: vec![shape] };
        }
        let instr = HloInstructionProto { name: "t".into(), opcode: "tuple".into(), shape: Some(shape), ..Default::default() };
        let module = HloModuleProto {
            name: "m".into(),
            computations: vec![HloComputationProto { name: "c".into(), instructions: vec![instr], ..Default::default() }],
            ..Default::default()
        };
        let bytes = HloProto { hlo_module: Some(module) }.encode_to_vec();
        let (mut pool, mut index) = (StringPool::default(), HloIndex::default());
        let err = index_hlo_proto(&bytes, Some(1), &mut pool, &mut index).unwrap_err();
        assert!(err.contains("nested too deep"), "{err}");
    }

    /// `module` indexed under program id 5, checked against the prost-decoded reference.
    fn indexed_as_program_5(module: HloModuleProto) -> (StringPool, HloIndex) {
        let bytes = HloProto { hlo_module: Some(module) }.encode_to_vec();
        let (mut pool, mut index) = (StringPool::default(), HloIndex::default());
        index_hlo_proto(&bytes, Some(5), &mut pool, &mut index).unwrap();
        let (mut reference_pool, mut reference) = (StringPool::default(), HloIndex::default());
        reference_index(&bytes, Some(5), &mut reference_pool, &mut reference).unwrap();
        assert_eq!(index, reference);
        (pool, index)
    }

    fn instruction(name: &str, stack_frame_id: i32, source_file: &str) -> HloInstructionProto {
        let metadata = OpMetadata { op_name: format!("jit(f)/{name}"), source_file: source_file.into(), source_line: 7, stack_frame_id, ..Default::default() };
        HloInstructionProto { name: name.into(), opcode: "add".into(), metadata: Some(metadata), ..Default::default() }
    }

    /// Source comes from `source_file`, else from the innermost frame of the op's call stack; ids
    /// are 1-based and one that points nowhere (0, negative, past the end) gives no source.
    #[test]
    fn source_is_the_innermost_stack_frame_unless_metadata_names_a_file() {
        let frames = StackFrameIndexProto {
            file_names: vec!["train.py".into(), "model.py".into()],
            file_locations: vec![
                FileLocation { file_name_id: 1, line: 12 },
                FileLocation { file_name_id: 2, line: 50 },
                FileLocation { file_name_id: 9, line: 3 },
            ],
            stack_frames: vec![StackFrame { file_location_id: 1 }, StackFrame { file_location_id: 2 }, StackFrame { file_location_id: 3 }],
        };
        let instructions = vec![
            instruction("in_model", 2, ""),
            instruction("in_train", 1, ""),
            instruction("named_file", 2, "legacy.py"),
            instruction("no_frame", 0, ""),
            instruction("negative_frame", -4, ""),
            instruction("past_the_end", 4, ""),
            instruction("unknown_file", 3, ""),
        ];
        let module = HloModuleProto {
            name: "jit_f".into(),
            computations: vec![HloComputationProto { name: "main".into(), instructions, ..Default::default() }],
            stack_frame_index: Some(frames),
            ..Default::default()
        };
        let (pool, index) = indexed_as_program_5(module);
        let source = |name: &str| {
            let instr = index.find(5, crate::model::NO_STR, pool.lookup(name).unwrap()).unwrap();
            (pool.get(instr.source_file).map(str::to_string), instr.source_line)
        };
        assert_eq!(source("in_model"), (Some("model.py".into()), 50));
        assert_eq!(source("in_train"), (Some("train.py".into()), 12));
        assert_eq!(source("named_file"), (Some("legacy.py".into()), 7));
        for name in ["no_frame", "negative_frame", "past_the_end", "unknown_file"] {
            assert_eq!(source(name).0, None, "{name}");
        }
    }

    /// Instructions of a computation that only fusions call are not indexed (nested fusions'
    /// too); a computation that anything else calls, or that the schedule orders, is.
    #[test]
    fn fused_instructions_are_left_out_unless_something_else_calls_or_schedules_them() {
        let instr = |name: &str, opcode: &str, id: i64, called: &[i64]| HloInstructionProto {
            name: name.into(),
            opcode: opcode.into(),
            id,
            called_computation_ids: called.to_vec(),
            ..Default::default()
        };
        let computation = |name: &str, id: i64, instructions: Vec<HloInstructionProto>| HloComputationProto { name: name.into(), id, instructions, root_id: 0 };
        let module = HloModuleProto {
            name: "jit_f".into(),
            computations: vec![
                computation("nested", 5, vec![instr("n.add", "add", 1, &[])]),
                computation("fused", 2, vec![instr("f.add", "add", 2, &[]), instr("f.fusion", "fusion", 3, &[5])]),
                computation("shared", 3, vec![instr("s.mul", "multiply", 4, &[])]),
                computation("fused_scheduled", 4, vec![instr("fs.sub", "subtract", 5, &[])]),
                computation(
                    "main",
                    9,
                    vec![
                        instr("fusion.1", "fusion", 6, &[2]),
                        instr("fusion.2", "fusion", 7, &[3]),
                        instr("call.1", "call", 8, &[3]),
                        instr("fusion.3", "fusion", 9, &[4]),
                    ],
                ),
            ],
            schedule: Some(HloScheduleProto {
                sequences: [(9, InstructionSequence { instruction_ids: vec![6, 7, 8, 9] }), (4, InstructionSequence { instruction_ids: vec![5] })]
                    .into_iter()
                    .collect(),
            }),
            ..Default::default()
        };
        let (pool, index) = indexed_as_program_5(module);
        let indexed = |name: &str| pool.lookup(name).is_some_and(|id| index.find(5, crate::model::NO_STR, id).is_some());
        for name in ["fusion.1", "fusion.2", "call.1", "fusion.3", "s.mul", "fs.sub", "fusion_1"] {
            assert!(indexed(name), "{name}");
        }
        for name in ["f.add", "f.fusion", "n.add", "f_add"] {
            assert!(!indexed(name), "{name}");
        }
    }

    /// Each scheduled computation's instructions come out in the schedule's order (not the
    /// computation's), in the module's order of computations; a computation the schedule skips,
    /// or whose instruction ids repeat, orders nothing. An async-start is known with the root of
    /// the computation it calls.
    #[test]
    fn schedules_list_each_computation_in_its_scheduled_order() {
        let instr = |name: &str, id: i64| HloInstructionProto { name: name.into(), opcode: "add".into(), id, ..Default::default() };
        let computation = |name: &str, id: i64, instructions: Vec<HloInstructionProto>| HloComputationProto { name: name.into(), id, instructions, root_id: 0 };
        let start =
            |name: &str, id: i64, called: i64| HloInstructionProto { opcode: "async-start".into(), called_computation_ids: vec![called], ..instr(name, id) };
        let sequence = |ids: &[i64]| InstructionSequence { instruction_ids: ids.to_vec() };
        let module = HloModuleProto {
            name: "jit_f".into(),
            computations: vec![
                computation("body", 3, vec![instr("b.1", 10), instr("b.2", 11)]),
                computation("unscheduled", 4, vec![instr("u", 12)]),
                computation("repeated_ids", 5, vec![instr("r.1", 0), instr("r.2", 0)]),
                HloComputationProto { root_id: 31, ..computation("async_computation", 8, vec![instr("p", 30), instr("slice_fusion.2", 31)]) },
                computation("main", 7, vec![instr("a", 20), instr("c", 21), instr("b", 22), start("fusion-start", 23, 8), start("orphan-start", 24, 99)]),
            ],
            schedule: Some(HloScheduleProto {
                sequences: [(3, sequence(&[11, 10])), (5, sequence(&[0, 0])), (7, sequence(&[20, 23, 22, 21, 24])), (8, sequence(&[30, 31]))]
                    .into_iter()
                    .collect(),
            }),
            ..Default::default()
        };
        let (pool, index) = indexed_as_program_5(module);
        let names = |s: &Vec<u32>| s.iter().map(|&n| pool.get(n).unwrap().to_string()).collect::<Vec<_>>();
        let schedules = index.schedule(5, crate::model::NO_STR).unwrap();
        assert_eq!(
            schedules.sequences.iter().map(names).collect::<Vec<_>>(),
            [vec!["b.2", "b.1"], vec!["p", "slice_fusion.2"], vec!["a", "fusion-start", "b", "c", "orphan-start"]]
        );
        let id = |name: &str| pool.lookup(name).unwrap();
        assert_eq!(schedules.started, [(id("fusion-start"), id("slice_fusion.2"))].into_iter().collect());
        assert!(std::sync::Arc::ptr_eq(schedules, index.schedule(crate::model::NULL_I64, pool.lookup("jit_f").unwrap()).unwrap()));
    }
}
