//! Scope paths and passes: a framework scope (`jit(f)/transpose(jvp(forward))/layer_0/…`)
//! becomes a region path without transforms and runtime plumbing, and the pass it ran in.

/// Splits a scope path at '/' outside parentheses.
pub(super) fn split_scope(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, ch) in path.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '/' if depth == 0 => {
                out.push(&path[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&path[start..]);
    out
}

pub(super) const TRANSFORMS: &[&str] =
    &["jvp", "transpose", "vmap", "remat", "checkpoint", "pmap", "xmap", "custom_jvp_call", "custom_vjp_call", "named", "named_call", "jit", "pjit"];

/// Scope components that are runtime plumbing, not user scopes (the reference's blacklist).
pub(super) fn is_plumbing(component: &str) -> bool {
    let mut norm = String::with_capacity(component.len());
    for ch in component.to_ascii_lowercase().chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            norm.push(ch);
        } else if !norm.ends_with('_') {
            norm.push('_');
        }
    }
    let norm = norm.trim_matches('_');
    norm.is_empty()
        || matches!(
            norm,
            "xla"
                | "xla_ops"
                | "xla_modules"
                | "xla_traceme"
                | "xla_trace_me"
                | "pallas_call"
                | "shard_map"
                | "call"
                | "closed_call"
                | "execute"
                | "launch"
                | "tpu_launch"
                | "command_buffer"
        )
        || ["pjrt", "xla_", "tpu_", "stream_executor"].iter().any(|p| norm.starts_with(p))
        || ["launch", "execute", "thunk", "runtime"].iter().any(|p| norm.contains(p))
}

/// A PyTorch autograd node (`AddmmBackward0`, `NativeLayerNormBackward0`): a backward scope.
pub(super) fn is_autograd_node(name: &str) -> bool {
    name.trim_end_matches(|c: char| c.is_ascii_digit()).ends_with("Backward")
}

/// Unwraps `transpose(jvp(forward))` into ("forward", ["transpose", "jvp"]).
pub(super) fn unwrap_transforms(mut comp: &str) -> (&str, Vec<&str>) {
    let mut applied = Vec::new();
    while let Some(open) = comp.find('(') {
        if !comp.ends_with(')') {
            break;
        }
        let head = &comp[..open];
        if !TRANSFORMS.contains(&head) {
            break;
        }
        applied.push(head);
        comp = &comp[open + 1..comp.len() - 1];
    }
    (comp, applied)
}

/// (region path, pass) of a framework scope path such as
/// `jit(train_step)/transpose(jvp(forward))/layer_0/attention/qkv/dot_general`
/// → (`train_step/forward/layer_0/attention/qkv/dot_general`, backward): transforms
/// unwrapped, runtime plumbing (shard_map, pallas_call, ...) removed. The primitive stays the
/// leaf, as in the reference, so a scope's exclusive time is what runs directly in it.
pub fn scope_of(tf_op: &str) -> (Option<String>, &'static str) {
    let tf_op = tf_op.trim().trim_end_matches(':');
    let comps = split_scope(tf_op);
    let mut names = Vec::new();
    let (mut transposed, mut jvp, mut remat, mut optimizer, mut fwd_name, mut bwd_name) = (false, false, false, false, false, false);
    for comp in comps {
        let comp = comp.trim().trim_matches(':');
        // `dynamic_donated[1][0][0].model.params...` names a donated argument: keep the path.
        let comp = match comp.strip_prefix("dynamic_donated") {
            Some(rest) => rest.split_once('.').map_or("", |(_, tail)| tail),
            None => comp,
        };
        let (inner, applied) = unwrap_transforms(comp);
        transposed |= applied.contains(&"transpose");
        jvp |= applied.contains(&"jvp");
        remat |= applied.iter().any(|a| *a == "remat" || *a == "checkpoint");
        let lower = inner.to_ascii_lowercase();
        // The recomputed forward is `rematted_computation`; a bare `checkpoint` scope (the
        // checkpoint primitive) holds the original forward under jvp and the backward under
        // transpose, so it marks no pass of its own.
        remat |= lower == "remat" || lower.starts_with("rematted_computation");
        optimizer |= lower.contains("optimizer") || ["adam", "adamw", "sgd", "optax", "apply_updates", "opt_update"].contains(&lower.as_str());
        fwd_name |= lower == "forward" || lower == "fwd";
        bwd_name |= lower == "backward" || lower == "bwd" || is_autograd_node(inner);
        if !is_plumbing(inner) && !TRANSFORMS.contains(&inner) {
            names.push(inner);
        }
    }
    let pass = if remat {
        "remat"
    } else if transposed || bwd_name {
        "backward"
    } else if optimizer {
        "optimizer"
    } else if jvp || fwd_name {
        "forward"
    } else {
        "other"
    };
    let path = if names.is_empty() { None } else { Some(names.join("/")) };
    (path, pass)
}

#[cfg(test)]
mod tests {
    use super::super::*;

    #[test]
    fn scope_paths_and_passes() {
        assert_eq!(
            scope_of("jit(train_step)/jvp(forward)/layer_0/attention/qkv/dot_general"),
            (Some("train_step/forward/layer_0/attention/qkv/dot_general".into()), "forward")
        );
        assert_eq!(
            scope_of("jit(train_step)/backward/transpose(jvp(forward))/layer_0/attention/context/dot_general"),
            (Some("train_step/backward/forward/layer_0/attention/context/dot_general".into()), "backward")
        );
        assert_eq!(scope_of("jit(train_step)/optimizer/mul").1, "optimizer");
        assert_eq!(scope_of("jit(f)/jit(main)/add:"), (Some("f/main/add".into()), "other"));
        assert_eq!(scope_of("shard_map"), (None, "other"));
        assert_eq!(scope_of("jit(f)/remat(block)/mlp/dot_general").1, "remat");
        // jax.checkpoint inside a scanned layer stack (JAX 0.10): only the recomputation is remat.
        let scanned = "jit(train_step)/transpose(jvp(forward))/while/body/closed_call/checkpoint";
        assert_eq!(scope_of(&format!("{scanned}/rematted_computation/layer/mlp/dot_general")).1, "remat");
        assert_eq!(scope_of(&format!("{scanned}/layer/mlp/dot_general")), (Some("train_step/forward/while/body/layer/mlp/dot_general".into()), "backward"));
        assert_eq!(scope_of("jit(train_step)/jvp(forward)/while/body/closed_call/checkpoint/layer/mlp/dot_general").1, "forward");
        assert_eq!(scope_of("jit(_train_step)/shard_map/apply_rotary_embedding/pallas_call").0, Some("_train_step/apply_rotary_embedding".into()));
        assert_eq!(scope_of("jit(train_step)/shard_map/halo_exchange/ppermute").0, Some("train_step/halo_exchange/ppermute".into()));
        assert_eq!(scope_of("dynamic_donated[1][0][0].model.params.blocks[0].attn.w_k:").0, Some("model.params.blocks[0].attn.w_k".into()));
    }
}
