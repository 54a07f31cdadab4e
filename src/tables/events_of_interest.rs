//! The events analyses read one by one rather than through `event_totals`: compile events
//! (the `recompilation` query), host↔device transfers (`transfers`), the allocators'
//! memory events (`memory_profile`) and collective kernels, whose args name their process
//! group (`collective_skew`, `straggler_ranks`).
//!
//! The rules are defined here once. The named queries call them as SQL functions
//! (`is_compile_event`, `is_transfer_event`; `engine::functions`), and an analysis of an INPUT
//! in memory keeps exactly these events, with every arg, as its `events` table: so it decodes
//! the INPUT once, and its queries see the same rows a stored run gives them.

use super::derive::{chunk_bases, DecidedOnce};
use crate::model::{Capture, NO_STR};
use arrow::record_batch::RecordBatch;

/// Names that are copies run by a compiler object (`PjRtCApiCompiler::BufferFromHostBuffer`),
/// which `transfers` counts rather than `recompilation`.
const COPIES_NAMED_LIKE_COMPILES: [&str; 3] = ["bufferfromhost", "copytohost", "transfer"];

/// Substrings of a lowercased name that make it a transfer (besides `transfer[_](to|from)[_]device`).
const TRANSFER_WORDS: [&str; 16] = [
    "memcpy",
    "device_put",
    "transferliteral",
    "transfertoinfeed",
    "host_to_device",
    "device_to_host",
    "htod",
    "dtoh",
    "dtod",
    "h2d",
    "d2h",
    "to_host",
    "from_host",
    "bufferfromhost",
    "copytohost",
    "device_get",
];

/// The word a compile event's lowercased name holds.
const COMPILE_WORD: &str = "compile";
/// The word a `transfer[_](to|from)[_]device` name starts from.
const TRANSFER_WORD: &str = "transfer";

/// Kineto's category of memory copies (2021-era traces' `Memcpy` is read as it).
const COPY_CATEGORY: &str = "gpu_memcpy";

/// Kineto's categories of host API calls (`cudaMemcpyAsync`, `hipMemcpyWithStream`,
/// `cudaLaunchKernel`): launches, whose time includes waiting for the device, never the
/// copies themselves.
const HOST_API_CATEGORIES: [&str; 2] = ["cuda_runtime", "cuda_driver"];

/// A compile event: its lowercased name (a Python frame's: its function's) contains
/// `compile`, not as `compiled`
/// (backend_compile_and_load, PjRtCpuClient::Compile, XlaCompile, CpuCompiler, Dynamo's and
/// Inductor's `_compile.compile_inner`, `compile_fx_inner`, python `compile` frames, …), and it is
/// not a copy that a compiler object runs. A compiled function running
/// (`CompiledFunctionBackward`, `Torch-Compiled Region`) is not compiling.
pub fn is_compile_event(name: &str) -> bool {
    is_compile_lowercased(&name.to_lowercase())
}

fn is_compile_lowercased(lower: &str) -> bool {
    // A Python frame (`torch/_dynamo/convert_frame.py(1021): _compile`) compiles when its
    // function does, wherever its file lives (`torch/compiler/__init__.py(367): is_compiling`).
    let subject = lower.find(".py(").and_then(|at| lower[at..].find("): ").map(|end| &lower[at + end + 3..])).unwrap_or(lower);
    let compiling = subject.match_indices(COMPILE_WORD).any(|(at, word)| !subject[at + word.len()..].starts_with('d'));
    compiling && !COPIES_NAMED_LIKE_COMPILES.iter().any(|w| lower.contains(w))
}

/// A host↔device or peer copy ([`transfer_direction`] says which).
pub fn is_transfer_event(name: &str, category: Option<&str>) -> bool {
    transfer_direction(name, category).is_some()
}

/// The direction of a transfer: `host_to_device`, `device_to_host`, `peer` (between
/// devices) or `unknown`; None for what is no transfer. A transfer is a copy: Kineto's copy
/// category, or a name that says so (memcpy HtoD/DtoH/PtoP, device_put, TransferToDevice,
/// TransferLiteral…). A copy within one device's memory (DtoD) is memory work, not a
/// transfer; a host API call (Kineto's runtime and driver categories) is a launch.
pub fn transfer_direction(name: &str, category: Option<&str>) -> Option<&'static str> {
    transfer_direction_lowercased(&name.to_lowercase(), category)
}

fn transfer_direction_lowercased(lower: &str, category: Option<&str>) -> Option<&'static str> {
    if category.is_some_and(|c| HOST_API_CATEGORIES.contains(&c)) {
        return None;
    }
    if category != Some(COPY_CATEGORY) && !is_transfer_lowercased(lower) {
        return None;
    }
    // Underscores are optional between words (`host_to_device`, `hosttodevice`).
    let joined = lower.replace('_', "");
    let says = |words: &[&str]| words.iter().any(|w| joined.contains(w));
    if says(&["htod", "h2d", "hosttodevice", "deviceput", "transfertodevice", "bufferfromhost", "fromhost", "transfertoinfeed"]) {
        Some("host_to_device")
    } else if says(&["dtoh", "d2h", "devicetohost", "transferfromdevice", "tohost", "copytohost", "deviceget", "transferliteral"]) {
        Some("device_to_host")
    } else if says(&["ptop", "p2p", "peer"]) {
        Some("peer")
    } else if says(&["dtod", "d2d"]) {
        None
    } else {
        Some("unknown")
    }
}

/// A collective kernel (NCCL's and RCCL's `nccl…Kernel…`, HTA's communication type): its
/// args name the collective and its process group, which matching instances across ranks
/// reads.
pub fn is_collective_kernel(name: &str) -> bool {
    super::hta::hta_kernel_type(name) == "COMMUNICATION"
}

fn is_transfer_lowercased(lower: &str) -> bool {
    TRANSFER_WORDS.iter().any(|w| lower.contains(w)) || transfer_to_or_from_device(lower)
}

/// `transfer`, an optional `_`, `to` or `from`, an optional `_`, `device`.
fn transfer_to_or_from_device(lower: &str) -> bool {
    lower.match_indices(TRANSFER_WORD).any(|(at, word)| {
        let rest = &lower[at + word.len()..];
        let rest = rest.strip_prefix('_').unwrap_or(rest);
        let Some(rest) = rest.strip_prefix("to").or_else(|| rest.strip_prefix("from")) else { return false };
        rest.strip_prefix('_').unwrap_or(rest).starts_with("device")
    })
}

/// The names of an allocator's events, each stating its bytes in use: XLA's (XPlane host
/// planes) and PyTorch's (Kineto, with `profile_memory=True`).
pub const MEMORY_EVENTS: [&str; 3] = ["MemoryAllocation", "MemoryDeallocation", "[memory]"];

/// Whether an event is one of those: the rows an in-memory `events` table keeps.
pub fn is_of_interest(name: &str, category: Option<&str>) -> bool {
    if category == Some(COPY_CATEGORY) || MEMORY_EVENTS.contains(&name) || is_collective_kernel(name) {
        return true;
    }
    if !may_be_of_interest(name) {
        return false;
    }
    // Lowercased once for both rules.
    let lower = name.to_lowercase();
    is_compile_lowercased(&lower) || transfer_direction_lowercased(&lower, category).is_some()
}

/// Whether `name` holds a word one of the rules needs ([`rule_words`]), ASCII case ignored:
/// no for most names, in one pass over the name's bytes.
/// Every metadata name of every part comes here, and lowercasing each and searching it word
/// by word took ~4,000 instructions a name (~1 % of a summary's). A name that is not ASCII
/// is let through to the rules: some letters lowercase to ASCII ones.
fn may_be_of_interest(name: &str) -> bool {
    const fn starts_a_word() -> [bool; 256] {
        let mut table = [false; 256];
        let mut k = 0;
        while k < TRANSFER_WORDS.len() {
            table[TRANSFER_WORDS[k].as_bytes()[0] as usize] = true;
            k += 1;
        }
        table[COMPILE_WORD.as_bytes()[0] as usize] = true;
        table[TRANSFER_WORD.as_bytes()[0] as usize] = true;
        table
    }
    const STARTS_A_WORD: [bool; 256] = starts_a_word();
    let bytes = name.as_bytes();
    if !bytes.is_ascii() {
        return true;
    }
    let holds = |at: usize, word: &str| bytes[at..].get(..word.len()).is_some_and(|b| b.eq_ignore_ascii_case(word.as_bytes()));
    (0..bytes.len()).any(|at| STARTS_A_WORD[bytes[at].to_ascii_lowercase() as usize] && rule_words().any(|w| holds(at, w)))
}

/// Every word one of the rules needs in a lowercased name: a name without any passes neither.
fn rule_words() -> impl Iterator<Item = &'static str> {
    TRANSFER_WORDS.into_iter().chain([COMPILE_WORD, TRANSFER_WORD])
}

/// For a decoder that keeps only some args: events named so keep every arg. (XPlane events,
/// the only ones decoded that way, have no category.)
pub fn keeps_every_arg(name: &str) -> bool {
    is_of_interest(name, None)
}

/// The `events` rows of the part now in `capture.chunks` that are of interest, numbered from
/// `first_event_id` as the whole table numbers them. Names are classified once each.
pub fn events_batches(capture: &Capture, first_event_id: i64) -> super::Result<Vec<RecordBatch>> {
    // A category of its own makes a transfer whatever the name.
    let copy_category = capture.strings.lookup(COPY_CATEGORY).unwrap_or(NO_STR);
    let mut by_name = DecidedOnce::new(&capture.strings);
    let mut verdict = |name: u32, category: u32| -> bool {
        if category == copy_category && category != NO_STR {
            return true;
        }
        by_name.get(name, || capture.str(name).is_some_and(|text| is_of_interest(text, None)))
    };
    let mut batches = Vec::new();
    for (chunk, base) in capture.chunks.iter().zip(chunk_bases(capture, first_event_id)) {
        let rows: Vec<u32> = (0..chunk.len()).filter(|&i| verdict(chunk.name[i], chunk.category.get(i))).map(|i| i as u32).collect();
        if !rows.is_empty() {
            batches.push(super::picked_events_batch(capture, chunk, first_event_id, base, &rows)?);
        }
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_and_transfer_names() {
        for name in ["backend_compile_and_load", "PjRtCpuClient::Compile", "XlaCompile", "CpuCompiler::RunBackend compile"] {
            assert!(is_compile_event(name), "{name}");
        }
        for name in
            ["_compile.compile_inner (dynamo_timed)", "compile_fx_inner", "OutputGraph.call_user_compiler", "torch/_dynamo/convert_frame.py(1021): _compile"]
        {
            assert!(is_compile_event(name), "{name}");
        }
        for name in [
            "PjRtCApiCompiler::BufferFromHostBuffer(f32[])",
            "compile transfer",
            "fusion.3",
            "autograd::engine::evaluate_function: CompiledFunctionBackward",
            "Torch-Compiled Region: 0/0",
            "torch/compiler/__init__.py(367): is_compiling",
            "torch/cuda/__init__.py(107): _is_compiled",
        ] {
            assert!(!is_compile_event(name), "{name}");
        }
        for name in
            ["Memcpy HtoD (Pageable -> Device)", "TransferToDevice", "transfer_from_device", "transfer_to_Device", "device_put", "TransferLiteralToDevice"]
        {
            assert!(is_transfer_event(name, None), "{name}");
        }
        for name in ["transfer__to_device", "transferdevice", "transfer_todev", "copy.3", "fusion"] {
            assert!(!is_transfer_event(name, None), "{name}");
        }
        assert!(is_transfer_event("anything", Some("gpu_memcpy")));
    }

    #[test]
    fn a_transfer_is_a_copy_with_its_direction() {
        let d = |name: &str, category: Option<&str>| transfer_direction(name, category);
        assert_eq!(d("Memcpy HtoD (Pageable -> Device)", Some("gpu_memcpy")), Some("host_to_device"));
        assert_eq!(d("Memcpy DtoH (Device -> Pinned)", Some("gpu_memcpy")), Some("device_to_host"));
        assert_eq!(d("Memcpy PtoP (Device -> Device)", Some("gpu_memcpy")), Some("peer"));
        // Within one device's memory: memory work, not a transfer.
        assert_eq!(d("Memcpy DtoD (Device -> Device)", Some("gpu_memcpy")), None);
        // The host's API call is a launch, whatever its name.
        assert_eq!(d("cudaMemcpyAsync", Some("cuda_runtime")), None);
        assert_eq!(d("hipMemcpyWithStream", Some("cuda_runtime")), None);
        assert_eq!(d("TransferToDevice", None), Some("host_to_device"));
        assert_eq!(d("memcpy", None), Some("unknown"));
    }

    #[test]
    fn the_word_filter_lets_through_every_name_a_rule_keeps() {
        let names = [
            "XlaCompile",
            "BACKEND_COMPILE_AND_LOAD",
            "PjRtCApiCompiler::BufferFromHostBuffer(f32[])",
            "Memcpy HtoD (Pageable -> Device)",
            "TRANSFER_TO_DEVICE",
            "transfer__to_device",
            "D2H",
            "copy.3",
            "fusion.3",
            "ThunkExecutor::Execute",
            "",
            // Not ASCII: the Kelvin sign lowercases to `k`, the dotted capital I to `i` and a dot.
            "COMP\u{130}LE",
            "\u{212A}ernel compile",
            "Memcpy DtoD \u{2192} peer",
        ];
        for name in names {
            assert_eq!(is_of_interest(name, None), is_compile_event(name) || is_transfer_event(name, None) || is_collective_kernel(name), "{name}");
        }
        assert!(!may_be_of_interest("fusion.3") && !may_be_of_interest("ThunkExecutor::Execute"));
        assert!(may_be_of_interest("XLACOMPILE") && may_be_of_interest("a TransferLiteral") && may_be_of_interest("\u{212A}"));
        for word in rule_words() {
            assert!(may_be_of_interest(&format!("x{}y", word.to_uppercase())), "{word}");
        }
    }
}
