//! Naming rules that both the decoders and the tables read off a line's, an event's or an
//! instruction's name: which lines hold device ops, which lines hold async spans, the step a
//! PyTorch step marker names, and the name XLA gives an instruction's GPU kernel. The SQL functions of the same names call
//! these ([`crate::engine::functions`]).

/// Device-op lines: TPU `XLA Ops` / `Async XLA Ops`, GPU `Stream #N(...)`, Kineto `stream N`.
pub fn is_device_op_line(name: &str) -> bool {
    name == "XLA Ops" || name == "Async XLA Ops" || name.starts_with("Stream #") || name.to_ascii_lowercase().starts_with("stream ")
}

/// Lines of async spans (TPU `Async XLA Ops`): an async op's span runs from its start to its
/// done while other ops execute, so it is not device time of its own.
pub fn is_async_line(name: &str) -> bool {
    name.starts_with("Async")
}

/// The name XLA gives an instruction's GPU kernel when it differs from the instruction's: `.`
/// spelled `_` (`gemm_fusion_dot.11` runs as `gemm_fusion_dot_11`).
pub fn kernel_alias(instruction: &str) -> Option<String> {
    instruction.contains('.').then(|| instruction.replace('.', "_"))
}

/// The step PyTorch's profiler marks: `ProfilerStep#<N>` (what `prof.step()` records, and
/// the NVTX range it opens).
pub fn profiler_step(name: &str) -> Option<i64> {
    name.strip_prefix("ProfilerStep#")?.parse().ok()
}

/// The step a range marks (an NVTX range of Nsight Systems): PyTorch's `ProfilerStep#N`, or a range named `step N`
/// (`step_N`, `Step #N`, any case), as training loops annotate their steps.
pub fn step_marked(name: &str) -> Option<i64> {
    if let Some(step) = profiler_step(name) {
        return Some(step);
    }
    let rest = name.trim().strip_prefix(|c| c == 's' || c == 'S')?;
    let rest = rest.get(..3).filter(|t| t.eq_ignore_ascii_case("tep")).map(|_| &rest[3..])?;
    rest.trim_start_matches([' ', '_', '#']).parse().ok().filter(|_| rest.starts_with([' ', '_', '#']))
}
