//! The HLO index: each program's instructions (opcode, shape, scope, source) by program id
//! and by module name, and each computation's schedule.

use super::{HashMap, NO_STR, NULL_I64};

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
/// all but the fused ones, which no event names ([`crate::decode::hlo`], docs/semantics.md, Ops).
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
