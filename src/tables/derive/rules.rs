//! The naming rules of ops: an op's collective kind (from its opcode, or
//! from whole words of its name), stall words, canonical names and set-up ops. The SQL
//! functions of the same names call these ([`crate::engine::functions`]).

/// Kineto categories that are device work (others on stream lines are annotations).
pub(super) fn is_device_work_category(cat: Option<&str>) -> bool {
    match cat {
        None => true,
        Some(c) => ["kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"].iter().any(|w| c.eq_ignore_ascii_case(w)),
    }
}

/// Collective kind from an HLO opcode.
pub fn collective_kind_of_opcode(opcode: &str) -> Option<&'static str> {
    let base = opcode.trim_end_matches("-start").trim_end_matches("-done").trim_end_matches("-update");
    Some(match base {
        "all-reduce" => "all-reduce",
        "all-gather" => "all-gather",
        "reduce-scatter" => "reduce-scatter",
        "all-to-all" | "ragged-all-to-all" => "all-to-all",
        "collective-permute" => "collective-permute",
        "send" | "recv" => "send-recv",
        "collective-broadcast" => "other",
        _ => return None,
    })
}

/// Splits a name into lower-case alphanumeric words, also at camelCase boundaries
/// (`ncclDevKernel_AllReduce_RING_LL` → nccl dev kernel all reduce ring ll).
pub(super) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            if ch.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
            cur.push(ch.to_ascii_lowercase());
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Collective kind from a name when no opcode is known (kernel names, JAX primitive names).
/// Matches whole words, so `stop` never reads as `top` and `sendfile` needs `send` alone.
pub fn collective_kind_of_name(name: &str) -> Option<&'static str> {
    let w = words(name);
    let has = |a: &str| w.iter().any(|x| x == a);
    let pair = |a: &str, b: &str| w.windows(2).any(|p| p[0] == a && p[1] == b);
    if has("allreduce") || pair("all", "reduce") || has("psum") {
        Some("all-reduce")
    } else if has("allgather") || pair("all", "gather") {
        Some("all-gather")
    } else if has("reducescatter") || pair("reduce", "scatter") {
        Some("reduce-scatter")
    } else if has("alltoall") || w.windows(3).any(|p| p[0] == "all" && p[1] == "to" && p[2] == "all") {
        Some("all-to-all")
    } else if has("ppermute") || pair("collective", "permute") {
        Some("collective-permute")
    } else if has("sendrecv") || has("send") || has("recv") {
        Some("send-recv")
    } else if has("nccl") || has("rccl") || has("broadcast") && (has("nccl") || has("rccl")) {
        Some("other")
    } else {
        None
    }
}

/// Words that name waiting: a host thread's `Await`, a GPU stream's `WaitEvent`, a
/// semaphore's `Acquire`.
pub(super) const STALL_WORDS: &[&str] = &["wait", "await", "barrier", "semaphore", "acquire", "idle", "blocked", "sleep"];

pub fn is_stall_name(name: &str) -> bool {
    words(name).iter().any(|w| STALL_WORDS.contains(&w.as_str()))
}

/// Canonical op name: leading `%` and one trailing `.<digits>` removed (`fusion.12` → `fusion`).
pub fn canonical_name(name: &str) -> &str {
    let name = name.trim_start_matches('%');
    match name.rfind('.') {
        Some(k) if k > 0 && k + 1 < name.len() && name[k + 1..].bytes().all(|b| b.is_ascii_digit()) => &name[..k],
        _ => name,
    }
}

/// Ops that only set up data (the reference's marker set): a gap before them is attributed
/// to the op they feed.
pub fn is_setup_op(name: &str) -> bool {
    // Case-insensitive without a lowercased copy: it runs once per gap.
    let c = canonical_name(name).as_bytes();
    let starts = |prefix: &str| c.len() >= prefix.len() && c[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes());
    ["iota", "constant", "bitcast", "get-tuple-element", "parameter", "tuple", "after-all"].iter().any(|w| c.eq_ignore_ascii_case(w.as_bytes()))
        || starts("copy-start")
        || starts("copy-done")
}

#[cfg(test)]
mod tests {
    use super::super::*;

    #[test]
    fn every_label_an_op_can_get_is_a_label_text() {
        let opcodes =
            ["all-reduce-start", "all-gather", "reduce-scatter", "ragged-all-to-all", "collective-permute-done", "send", "recv", "collective-broadcast"];
        let names = ["psum.1", "ncclDevKernel_AllGather", "reduce_scatter", "all_to_all", "ppermute", "sendrecv", "ncclKernel"];
        let kinds = opcodes.iter().map(|o| collective_kind_of_opcode(o)).chain(names.iter().map(|n| collective_kind_of_name(n)));
        let scopes = ["jit(f)/remat(b)/x", "jit(f)/transpose(jvp(g))/x", "jit(f)/optimizer/x", "jit(f)/jvp(g)/x", "jit(f)/x"];
        let texts: Vec<&str> =
            kinds.map(|k| k.expect("a collective")).chain(scopes.iter().map(|s| scope_of(s).1)).chain(["compute", "communication", "stall"]).collect();
        for text in &texts {
            assert_eq!(Label::of(text).as_str(), *text);
        }
        // And no text is listed that no op can get.
        assert!(LABEL_TEXTS.iter().all(|t| texts.contains(t)));
    }

    #[test]
    fn collective_names_match_words_not_substrings() {
        assert_eq!(collective_kind_of_name("ncclDevKernel_AllGather_RING_LL"), Some("all-gather"));
        assert_eq!(collective_kind_of_name("ncclDevKernel_ReduceScatter_RING_LL"), Some("reduce-scatter"));
        assert_eq!(collective_kind_of_name("psum.1"), Some("all-reduce"));
        assert_eq!(collective_kind_of_name("all-reduce.3"), Some("all-reduce"));
        assert_eq!(collective_kind_of_name("ppermute.3"), Some("collective-permute"));
        assert_eq!(collective_kind_of_name("fusion.12"), None);
        assert_eq!(collective_kind_of_name("sendfile_fusion"), None);
        assert_eq!(collective_kind_of_opcode("all-gather-start"), Some("all-gather"));
    }

    /// The name rules as a table: one line a case, whole words only.
    #[test]
    fn names_by_rule() {
        let collective: [(&str, Option<&str>); 16] = [
            ("ncclDevKernel_AllReduce_RING_LL", Some("all-reduce")),
            ("all_reduce.1", Some("all-reduce")),
            ("psum", Some("all-reduce")),
            ("AllGather", Some("all-gather")),
            ("reduce-scatter.2", Some("reduce-scatter")),
            ("ncclKernel_AllToAll", Some("all-to-all")),
            ("all-to-all", Some("all-to-all")),
            ("jit(f)/ppermute", Some("collective-permute")),
            ("collective-permute-start", Some("collective-permute")),
            ("SendRecv", Some("send-recv")),
            ("recv.3", Some("send-recv")),
            ("ncclDevKernel_Broadcast", Some("other")),
            ("sendfile", None),
            ("permute_dims", None),
            ("collective_matmul_fusion", None),
            ("topk", None),
        ];
        for (name, kind) in collective {
            assert_eq!(collective_kind_of_name(name), kind, "{name}");
        }
        let stall = [
            ("dependency-wait", true),
            ("ThreadpoolListener::Wait", true),
            ("barrier.1", true),
            ("SemaphoreAcquire", true),
            ("idle", true),
            ("sleep_for", true),
            ("SlinkyThreadPool::Await", true),
            ("cudaStreamWaitEvent", true),
            ("awaiting_input", false),
            ("waitress", false),
            ("sleeper", false),
            ("fusion.1", false),
        ];
        for (name, is) in stall {
            assert_eq!(is_stall_name(name), is, "{name}");
        }
    }

    #[test]
    fn canonical_names() {
        assert_eq!(canonical_name("%fusion.12"), "fusion");
        assert_eq!(canonical_name("fusion.1.2"), "fusion.1");
        assert_eq!(canonical_name("copy-start"), "copy-start");
        for (name, canonical) in [("%%x.3", "x"), (".5", ".5"), ("a.", "a."), ("a.b3", "a.b3"), ("", "")] {
            assert_eq!(canonical_name(name), canonical, "{name:?}");
        }
        assert!(is_setup_op("iota.296") && is_setup_op("copy-done.4") && !is_setup_op("dot.1"));
    }
}
