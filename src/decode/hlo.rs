//! HLO module decoding (the subset in `proto/hlo.proto`), for opcodes, scope paths and shapes.
//!
//! The structs below are what prost-build generates from `proto/hlo.proto`, written out so
//! that building profq needs no protoc. On CPU captures the HloProto is the only source of
//! named-scope paths (`metadata.op_name`) and of the opcode that tells `psum.7` is an all-reduce.

use crate::model::{HloIndex, HloInstr, StringPool};
use prost::Message;
use std::fmt::Write;

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

#[derive(Clone, PartialEq, Message)]
pub struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
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

/// Renders a shape like `f32[8,128]` and returns its size in bytes when known.
pub fn render_shape(shape: &ShapeProto, out: &mut String) -> Option<f64> {
    let (name, elem_bytes) = element_type(shape.element_type);
    if shape.element_type == 13 {
        out.push('(');
        let mut total = Some(0.0);
        for (i, s) in shape.tuple_shapes.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let b = render_shape(s, out);
            total = match (total, b) {
                (Some(t), Some(b)) => Some(t + b),
                _ => None,
            };
        }
        out.push(')');
        return total;
    }
    out.push_str(name);
    out.push('[');
    let mut elements: f64 = 1.0;
    for (i, d) in shape.dimensions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{d}");
        elements *= (*d).max(0) as f64;
    }
    out.push(']');
    elem_bytes.map(|b| (b * elements).ceil())
}

/// The entry of a stack-frame table numbered `id`: those tables number their entries from 1,
/// and 0 (or an id out of range) names none.
fn by_one_based_id<T>(entries: &[T], id: i32) -> Option<&T> {
    entries.get((id as usize).wrapping_sub(1))
}

/// (file, line) of each stack frame's own location, by frame id - 1: the innermost frame of an
/// op's call stack is where its line of user code is (the file XProf shows for the op).
fn frame_sources(index: Option<&StackFrameIndexProto>, pool: &mut StringPool) -> Vec<(u32, i32)> {
    let Some(index) = index else { return Vec::new() };
    let files: Vec<u32> = index.file_names.iter().map(|f| pool.intern(f)).collect();
    index
        .stack_frames
        .iter()
        .map(|frame| match by_one_based_id(&index.file_locations, frame.file_location_id) {
            Some(loc) => (by_one_based_id(&files, loc.file_name_id).copied().unwrap_or(crate::model::NO_STR), loc.line),
            None => (crate::model::NO_STR, 0),
        })
        .collect()
}

/// Decodes one serialized HloProto and adds its instructions to `index` under
/// `program_id` (when known) and under the module name.
pub fn index_hlo_proto(bytes: &[u8], program_id: Option<i64>, pool: &mut StringPool, index: &mut HloIndex) -> Result<(), String> {
    let proto = HloProto::decode(bytes).map_err(|e| format!("undecodable HloProto: {e}"))?;
    let Some(module) = proto.hlo_module else {
        return Ok(());
    };
    let module_id = pool.intern(&module.name);
    if let Some(pid) = program_id {
        let programs = index.modules.entry(module_id).or_default();
        if !programs.contains(&pid) {
            programs.push(pid);
        }
    }
    let frame_sources = frame_sources(module.stack_frame_index.as_ref(), pool);
    let mut shape_text = String::new();
    let mut aliases = Vec::new();
    for comp in &module.computations {
        for instr in &comp.instructions {
            shape_text.clear();
            let shape_bytes = instr.shape.as_ref().and_then(|s| render_shape(s, &mut shape_text));
            let meta = instr.metadata.as_ref();
            let (source_file, source_line) = match meta {
                Some(m) if !m.source_file.is_empty() => (pool.intern(&m.source_file), m.source_line),
                Some(m) => by_one_based_id(&frame_sources, m.stack_frame_id).copied().unwrap_or((crate::model::NO_STR, 0)),
                None => (crate::model::NO_STR, 0),
            };
            let info = HloInstr {
                opcode: pool.intern(&instr.opcode),
                op_name: meta.filter(|m| !m.op_name.is_empty()).map_or(crate::model::NO_STR, |m| pool.intern(&m.op_name)),
                source_file,
                source_line,
                shape: if shape_text.is_empty() { crate::model::NO_STR } else { pool.intern(&shape_text) },
                shape_bytes: shape_bytes.map(|b| b as i64),
            };
            let name_id = pool.intern(&instr.name);
            if let Some(pid) = program_id {
                index.by_program.insert((pid, name_id), info.clone());
            }
            // GPU kernels are named after their instruction with `.` spelled `_` (`gemm_fusion_dot.11`
            // runs as `gemm_fusion_dot_11`); the spelling is an alias that never hides a real name.
            if instr.name.contains('.') {
                aliases.push((instr.name.replace('.', "_"), info.clone()));
            }
            // First module wins for name lookups; program ids disambiguate the rest.
            index.by_module.entry((module_id, name_id)).or_insert(info);
        }
    }
    for (alias, info) in aliases {
        let alias_id = pool.intern(&alias);
        if let Some(pid) = program_id {
            index.by_program.entry((pid, alias_id)).or_insert_with(|| info.clone());
        }
        index.by_module.entry((module_id, alias_id)).or_insert(info);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instruction(name: &str, stack_frame_id: i32, source_file: &str) -> HloInstructionProto {
        let metadata = OpMetadata { op_name: format!("jit(f)/{name}"), source_file: source_file.into(), source_line: 7, stack_frame_id, ..Default::default() };
        HloInstructionProto { name: name.into(), opcode: "add".into(), shape: None, metadata: Some(metadata) }
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
            computations: vec![HloComputationProto { name: "main".into(), instructions }],
            stack_frame_index: Some(frames),
            ..Default::default()
        };
        let bytes = HloProto { hlo_module: Some(module) }.encode_to_vec();
        let (mut pool, mut index) = (StringPool::default(), HloIndex::default());
        index_hlo_proto(&bytes, Some(5), &mut pool, &mut index).unwrap();
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
}
