//! `profq query "<question>"`: a question → the analysis that answers it, as structured JSON.
//!
//! Questions are matched on whole words (so "stop" never reads as "top" and "copy" never
//! as "op"), in a fixed order; the first intent whose words all appear wins. Answers come
//! from a `profile_summary.v1` document (computed, or read with `--summary`), or, where a
//! summary does not hold the analysis, from rows ([`rows_answer`]; `super::ask` chooses).

use super::doc::{json_of, GapBeforeOp, GapRegionContext, Summary};
use serde_json::{json, Map, Value};

/// One intent: its query_type, the word groups that must all match (any word of a group),
/// the named queries behind it, and an example question.
pub struct Intent {
    pub query_type: &'static str,
    pub all_of: &'static [&'static [&'static str]],
    pub queries: &'static [&'static str],
    pub example: &'static str,
}

const OPS: &[&str] = &["op", "ops", "operation", "operations", "kernel", "kernels", "hlo", "fusion", "fusions"];
/// Communication, as people name it: the word, the libraries and links (NCCL, RCCL, ICI,
/// DCN) and the collectives (hyphenated names also match joined: `all-reduce` → `allreduce`).
const COMM: &[&str] = &[
    "comm",
    "communication",
    "collective",
    "collectives",
    "allreduce",
    "allreduces",
    "allgather",
    "reducescatter",
    "alltoall",
    "psum",
    "nccl",
    "rccl",
    "ici",
    "dcn",
];

/// In matching order.
pub const INTENTS: &[Intent] = &[
    Intent {
        query_type: "trend",
        all_of: &[&["run", "runs"], &["slowest", "fastest", "regressed", "regression", "regressions", "worst", "best"]],
        queries: &["trends"],
        example: "Which run is the slowest?",
    },
    Intent {
        query_type: "trend",
        all_of: &[
            &["change", "changed", "changes", "trend", "trends", "evolve", "evolved", "moved", "move"],
            &["runs", "across", "over", "history", "captures"],
        ],
        queries: &["trends", "op_trend"],
        example: "How did fusion.3 change across runs?",
    },
    Intent {
        query_type: "pre_op_gap",
        all_of: &[&["gap", "gaps", "idle", "waiting", "wait", "waits", "bubble", "bubbles"], &["before"]],
        queries: &["pre_op_gaps", "gap_contexts"],
        example: "What is the gap before fusion.3?",
    },
    Intent {
        query_type: "top_ops",
        all_of: &[&["top", "hot", "hottest", "slowest", "expensive", "costliest", "heaviest", "most", "longest", "dominate", "breakdown"], OPS],
        queries: &["hot_ops"],
        example: "What are the top 10 ops by exclusive time?",
    },
    Intent {
        query_type: "compute_vs_communication",
        all_of: &[COMM, &["compute", "computation", "overlap", "dominating", "dominant", "dominates", "dominate", "worst", "vs", "versus"]],
        queries: &["time_breakdown", "collectives_by_kind"],
        example: "Is comm or compute dominating? Which collective is worst?",
    },
    Intent {
        query_type: "gap_region_context",
        all_of: &[&["context", "contexts", "contextualize"], &["gap", "gaps", "op", "copy", "ops"]],
        queries: &["gap_contexts"],
        example: "Show context for op copy.1",
    },
    Intent { query_type: "collective_breakdown", all_of: &[COMM], queries: &["collectives_by_kind"], example: "Break down the collectives" },
    Intent {
        query_type: "recompilation",
        all_of: &[&[
            "recompile",
            "recompiles",
            "recompilation",
            "recompilations",
            "recompiling",
            "compile",
            "compiles",
            "compiling",
            "compilation",
            "retrace",
            "retracing",
            "churn",
        ]],
        queries: &["recompilation", "shape_churn"],
        example: "Is anything recompiling during training?",
    },
    Intent {
        query_type: "transfers",
        all_of: &[&["transfer", "transfers", "memcpy", "h2d", "d2h", "device_put", "copies", "infeed", "outfeed"]],
        queries: &["transfers"],
        example: "How much time goes to host-device transfers?",
    },
    Intent {
        query_type: "tiny_kernels",
        all_of: &[
            &["tiny", "small", "launch", "dispatch", "launches"],
            &["kernel", "kernels", "ops", "op", "launch", "launches", "dispatch", "bound", "overhead"],
        ],
        queries: &["tiny_kernels"],
        example: "Are steps launch-bound with many tiny kernels?",
    },
    Intent {
        query_type: "rank_stragglers",
        all_of: &[
            &["rank", "ranks", "worker", "workers"],
            &["straggler", "stragglers", "skew", "slowest", "slower", "lagging", "lag", "late", "last", "holds"],
        ],
        queries: &["straggler_ranks"],
        example: "Which rank is the straggler?",
    },
    Intent {
        query_type: "stragglers",
        all_of: &[&["straggler", "stragglers", "skew", "imbalance", "slowest", "slower", "lagging", "lag"]],
        queries: &["step_skew"],
        example: "Which device is the straggler?",
    },
    Intent {
        query_type: "step_jitter",
        all_of: &[&["jitter", "jittery", "variance", "variation", "outlier", "outliers", "classes", "heavy", "light", "periodic", "periodicity", "spiky"]],
        queries: &["step_durations", "step_times"],
        example: "Is step time jittery? Are there heavy steps?",
    },
    Intent {
        query_type: "device_idle",
        all_of: &[&["idle", "starved", "starving", "utilization", "utilisation", "busy", "underutilized", "bubble", "bubbles"]],
        queries: &["device_idle", "pre_op_gaps"],
        example: "How idle is the device?",
    },
    Intent {
        query_type: "comparison_hint",
        all_of: &[&["improve", "improved", "regress", "regressed", "regression", "compare", "comparison", "diff", "changed", "before", "after"]],
        queries: &[],
        example: "Did this change improve anything?",
    },
    Intent {
        query_type: "step_time",
        all_of: &[&["step", "steps", "iteration", "iterations", "throughput"]],
        queries: &["step_times", "step_durations"],
        example: "How long is a step?",
    },
    Intent {
        query_type: "hierarchical_regions",
        all_of: &[&["region", "regions", "hierarchy", "hierarchical", "scope", "scopes", "layer", "layers", "forward", "backward"]],
        queries: &["hierarchical_regions", "regions"],
        example: "Show hierarchical regions",
    },
    Intent {
        query_type: "bound_analysis",
        all_of: &[&["memory", "compute", "roofline"], &["bound", "roofline", "bandwidth"]],
        queries: &["roofline"],
        example: "Is it memory-bound or compute-bound?",
    },
    Intent {
        query_type: "memory_profile",
        all_of: &[
            &["memory", "hbm", "oom"],
            &["peak", "usage", "use", "used", "much", "profile", "footprint", "allocated", "allocation", "allocations", "full", "oom", "fit", "fits"],
        ],
        queries: &["memory_profile"],
        example: "How much device memory is used at peak?",
    },
    Intent {
        query_type: "optimization_candidates",
        all_of: &[&[
            "next",
            "try",
            "suggest",
            "suggestions",
            "recommend",
            "recommendations",
            "optimize",
            "optimise",
            "improve",
            "faster",
            "bottleneck",
            "bottlenecks",
            "fix",
            "fixes",
        ]],
        queries: &[],
        example: "What should we try next?",
    },
];

/// The words of a question, lowercased; a hyphenated word also counts joined
/// (`all-reduce` gives `all`, `reduce` and `allreduce`).
fn words(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out: Vec<String> = lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_string).collect();
    for token in lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).filter(|t| t.contains('-')) {
        out.push(token.replace('-', ""));
    }
    out
}

/// The intent a question maps to, if any.
pub fn route(question: &str) -> Option<&'static Intent> {
    let w = words(question);
    INTENTS.iter().find(|i| i.all_of.iter().all(|group| group.iter().any(|g| w.iter().any(|x| x == g))))
}

/// The text after a word (whole-word, case-insensitive), trimmed of quotes and punctuation,
/// without a leading `op `/`operation `.
pub fn target_after(question: &str, word: &str) -> Option<String> {
    let lower = question.to_lowercase();
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(k) = lower[from..].find(word) {
        let start = from + k;
        let end = start + word.len();
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let after_ok = end >= bytes.len() || !bytes[end].is_ascii_alphanumeric();
        if before_ok && after_ok {
            let mut t = question[end..].trim().trim_matches(|c: char| c.is_whitespace() || "`\"'?.!,".contains(c)).to_string();
            for prefix in ["op ", "operation ", "the op ", "the "] {
                if t.to_lowercase().starts_with(prefix) {
                    t = t[prefix.len()..].trim().to_string();
                }
            }
            return (!t.is_empty()).then_some(t);
        }
        from = end;
    }
    None
}

/// What a trend question asks about: the text between "did"/"has"/"of" and "change"/"evolve"…
/// (`how did fusion.3 change across runs` → `fusion.3`); None means the run-level metrics.
pub fn trend_target(question: &str) -> Option<String> {
    let lower = question.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let end = words.iter().position(|w| {
        ["change", "changed", "changes", "trend", "evolve", "evolved", "moved", "move"].contains(&w.trim_matches(|c: char| !c.is_alphanumeric()))
    })?;
    let start = words[..end].iter().rposition(|w| ["did", "has", "have", "does", "of", "is"].contains(w)).map_or(0, |k| k + 1);
    let target: Vec<&str> = words[start..end].iter().copied().filter(|w| !["the", "op", "ops", "time", "self"].contains(w)).collect();
    let target = target.join(" ").trim_matches(|c: char| "`\"'?.!,".contains(c)).to_string();
    let metric = ["", "step", "steps", "step time", "metric", "metrics", "it", "things", "performance", "everything"];
    // A share or ratio (`the all-reduce share`) is a run-level metric, not an op.
    let share = target.split_whitespace().any(|w| ["share", "shares", "ratio", "fraction"].contains(&w));
    (!metric.contains(&target.as_str()) && !share).then_some(target)
}

/// Of `trends` rows, the run with the longest steady median step (`slowest`) or the
/// shortest (ties: run id), with what explains it: its top op and the time split. Null
/// when no run has steady steps.
pub fn extreme_run(rows: &[Map<String, Value>], slowest: bool) -> Value {
    let median = |r: &Map<String, Value>| r.get("steady_median_ns").and_then(Value::as_f64);
    let run = |r: &Map<String, Value>| r.get("run_id").and_then(Value::as_str).unwrap_or("").to_string();
    let picked = rows.iter().filter_map(|r| Some((median(r)?, r))).min_by(|(x, a), (y, b)| {
        let by_median = if slowest { y.total_cmp(x) } else { x.total_cmp(y) };
        by_median.then_with(|| run(a).cmp(&run(b)))
    });
    let Some((_, row)) = picked else { return Value::Null };
    let keep = ["run_id", "ingest_order", "steady_median_ns", "top_op", "top_op_self_ns", "communication_share", "compute_share"];
    Value::Object(keep.iter().filter_map(|k| Some((k.to_string(), row.get(*k)?.clone()))).collect())
}

/// Each run of `trends` rows (in their ingest order) judged against the run before it by
/// compare's noise test on their steady steps (`steady_steps` rows): `{run_id, previous_run,
/// verdict, median_delta_pct, mann_whitney_p}`, the first run having none. A run is
/// `regressed` or `improved` only when the test finds the change significant.
pub fn run_verdicts(trends: &[Map<String, Value>], steps: &[Map<String, Value>]) -> Value {
    let text = |r: &Map<String, Value>, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut by_run: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for s in steps {
        if let Some(d) = s.get("dur_ns").and_then(Value::as_f64) {
            by_run.entry(text(s, "run_id")).or_default().push(d);
        }
    }
    let runs: Vec<String> = trends.iter().map(|r| text(r, "run_id")).collect();
    let none = Vec::new();
    let verdicts: Vec<Value> = runs
        .windows(2)
        .map(|pair| {
            let (before, after) = (by_run.get(&pair[0]).unwrap_or(&none), by_run.get(&pair[1]).unwrap_or(&none));
            let v = crate::stats::step_verdict(before, after);
            json!({"run_id": pair[1], "previous_run": pair[0], "verdict": v["verdict"], "median_delta_pct": v.get("median_delta_pct").cloned().unwrap_or(Value::Null), "mann_whitney_p": v.get("mann_whitney_p").cloned().unwrap_or(Value::Null)})
        })
        .collect();
    json!(verdicts)
}

/// The first op-like token (`name.N`) of a question.
fn op_token(question: &str) -> Option<String> {
    question
        .split(|c: char| c.is_whitespace() || "`\"'?,!()".contains(c))
        .map(|t| t.trim_end_matches('.'))
        .find(|t| {
            let Some(dot) = t.rfind('.') else { return false };
            let (head, tail) = (&t[..dot], &t[dot + 1..]);
            !head.is_empty()
                && head.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '%')
                && !tail.is_empty()
                && tail.bytes().all(|b| b.is_ascii_digit())
        })
        .map(str::to_string)
}

/// The first `k` entries of a list, as JSON.
fn take<T: serde::Serialize>(items: &[T], k: usize) -> Value {
    json_of(&items[..k.min(items.len())])
}

/// The entries one of whose `names` is `target` (case-insensitive), else those one of whose
/// names contains it.
fn find_entries<'a, T>(items: &'a [T], names: fn(&T) -> Vec<Option<&str>>, target: &str) -> Vec<&'a T> {
    let t = target.to_lowercase();
    let matching = |exact: bool| -> Vec<&'a T> {
        let hit = |n: &str| if exact { n.to_lowercase() == t } else { n.to_lowercase().contains(&t) };
        items.iter().filter(|e| names(e).into_iter().flatten().any(hit)).collect()
    };
    let exact = matching(true);
    if exact.is_empty() {
        matching(false)
    } else {
        exact
    }
}

/// The names a question's target may match: a gap's payload (listed as `name` too) and marker.
fn gap_names(g: &GapBeforeOp) -> Vec<Option<&str>> {
    vec![g.name.as_deref(), g.payload_op.as_deref(), g.marker_op.as_deref()]
}

fn context_names(c: &GapRegionContext) -> Vec<Option<&str>> {
    vec![c.op_name.as_deref()]
}

/// Every question profq answers, for an unrecognised one.
pub fn supported_questions() -> Vec<Value> {
    INTENTS.iter().map(|i| json!({"query_type": i.query_type, "example": i.example})).collect()
}

const BOUND_NEEDS: &str = "Deciding memory- vs compute-bound needs hardware counters or a roofline (FLOPs and bytes per op with the device's peaks); a timeline alone cannot tell. ops.flops and ops.bytes_accessed hold the cost model where the profile has it (TPU), runs.peak_flops_per_s and runs.peak_hbm_bytes_per_s the peaks.";

/// An answer built from the rows of its intent's named query: (question, rows, top_k).
pub type RowsAnswer = fn(&str, &[Map<String, Value>], usize) -> Value;

/// How a question is answered when its intent reads rows a summary does not hold, from a
/// profile or stored run; None for an intent answered from a summary.
pub fn rows_answer(query_type: &str) -> Option<RowsAnswer> {
    match query_type {
        "bound_analysis" => Some(bound_answer),
        "memory_profile" => Some(memory_answer),
        _ => None,
    }
}

/// The keys every answer starts with.
fn answer_head(query_type: &str, question: &str) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("query_type".into(), json!(query_type));
    out.insert("question".into(), json!(question));
    out
}

/// "How much memory at peak?" from the `memory_profile` rows (one per allocator): the
/// allocator that came closest to full, by its peak's share of its capacity, then (where the
/// events state no capacity: Kineto) by its peak bytes; ties: host, memory id. And every allocator.
fn memory_answer(question: &str, rows: &[Map<String, Value>], top_k: usize) -> Value {
    let mut out = answer_head("memory_profile", question);
    let fullness = |r: &Map<String, Value>| (r["peak_share"].as_f64().unwrap_or(0.0), r["peak_in_use_bytes"].as_i64().unwrap_or(0));
    // Rows come ordered by (host, memory_id): the first of equals is kept.
    let fullest = rows.iter().fold(None, |best: Option<&Map<String, Value>>, r| match best {
        Some(b) if fullness(b) >= fullness(r) => Some(b),
        _ => Some(r),
    });
    match fullest {
        Some(f) => {
            out.insert("fullest".into(), Value::Object(f.clone()));
            out.insert("results".into(), Value::Array(rows.iter().take(top_k).cloned().map(Value::Object).collect()));
        }
        None => {
            out.insert("result".into(), json!("no_memory_events"));
            out.insert("explanation".into(), json!(NO_MEMORY_EVENTS));
        }
    }
    Value::Object(out)
}

const NO_MEMORY_EVENTS_IN_SUMMARY: &str = "Memory is read from the allocators' events, which a summary does not hold.";

const NO_MEMORY_EVENTS: &str = "Memory is read from the allocators' events (XLA's MemoryAllocation / MemoryDeallocation on XPlane host planes of TPU and GPU captures, PyTorch's [memory] with profile_memory=True); this run has none.";

/// Answers "is it memory- or compute-bound?" from the rows of the `roofline` query (every
/// op with a cost model, in its order): each bound's share of their exclusive time, the bound
/// of the largest share, and the first `top_k` ops. Without a cost model or peaks the answer
/// stays the summary's (`unsupported_from_trace_only`) and says which is missing.
fn bound_answer(question: &str, roofline: &[Map<String, Value>], top_k: usize) -> Value {
    let mut out = answer_head("bound_analysis", question);
    let mut by_bound: std::collections::BTreeMap<&str, (i64, usize)> = Default::default();
    for row in roofline {
        let entry = by_bound.entry(row["bound_by"].as_str().unwrap_or("unknown")).or_default();
        entry.0 += row["self_ns"].as_i64().unwrap_or(0);
        entry.1 += 1;
    }
    let total: i64 = by_bound.values().map(|(ns, _)| ns).sum();
    let known = by_bound.iter().filter(|(bound, _)| **bound != "unknown");
    // Ties: the name, so the verdict is stable.
    let verdict = known.max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.0.cmp(a.0))).map(|(bound, _)| *bound);
    let Some(verdict) = verdict else {
        let missing = if roofline.is_empty() {
            "The ops of this run carry no cost model (FLOPs, bytes)."
        } else {
            "The run records no device peaks (FLOP rate, HBM bandwidth): the profile states none, or a profq that did not record them ingested it (ingest it again)."
        };
        out.insert("result".into(), json!("unsupported_from_trace_only"));
        out.insert("explanation".into(), json!(format!("{missing} {BOUND_NEEDS}")));
        return Value::Object(out);
    };
    out.insert("result".into(), json!("roofline"));
    out.insert("bound_by".into(), json!(verdict));
    let shares: Vec<Value> = by_bound
        .iter()
        .map(|(bound, (ns, ops))| json!({"bound_by": bound, "ops": ops, "self_ns": ns, "share_of_self": if total > 0 { *ns as f64 / total as f64 } else { 0.0 }}))
        .collect();
    out.insert("by_bound".into(), Value::Array(shares));
    out.insert("results".into(), Value::Array(roofline.iter().take(top_k).cloned().map(Value::Object).collect()));
    out.insert(
        "explanation".into(),
        json!("Ops with a cost model, placed on the roofline of the device's stated peaks: memory-bound below the ridge point (peak FLOP rate / peak HBM bandwidth), compute-bound at or above it. Shares are of their exclusive time; async ops (is_async) count the time spent waiting for their transfer."),
    );
    Value::Object(out)
}

/// Answers a question from a summary. None when no intent matches.
pub fn answer(summary: &Summary, question: &str, top_k: usize) -> Value {
    let Some(intent) = route(question) else {
        return json!({
            "query_type": "unrecognized",
            "question": question,
            "message": "profq cannot map this question to an analysis; ask one of the supported questions",
            "supported_questions": supported_questions(),
        });
    };
    let s = summary;
    let k = top_k;
    let mut out = answer_head(intent.query_type, question);
    let share = |cat: &str| s.time_breakdown.category(cat).map_or(0.0, |c| c.share_of_total);
    match intent.query_type {
        "top_ops" => {
            // "top 3 ops" asks for 3, whatever --top-k says.
            let w = words(question);
            let asked = w.windows(2).find(|p| p[0] == "top").and_then(|p| p[1].parse::<usize>().ok());
            out.insert("results".into(), take(&s.hot_ops, asked.unwrap_or(k)));
        }
        "compute_vs_communication" => {
            let (comm, comp) = (share("communication"), share("compute"));
            out.insert("dominant".into(), json!(if comm > comp { "communication" } else { "compute" }));
            out.insert("compute_share".into(), json!(comp));
            out.insert("communication_share".into(), json!(comm));
            out.insert("communication_breakdown".into(), take(&s.communication_ops, k));
            out.insert("worst_collective".into(), json_of(&s.communication_ops.first()));
            out.insert("overlap".into(), take(&s.profq_collectives, k));
        }
        "collective_breakdown" => {
            out.insert("results".into(), take(&s.communication_ops, k));
            out.insert("overlap".into(), take(&s.profq_collectives, k));
        }
        "pre_op_gap" => {
            let target = target_after(question, "before");
            out.insert("top_gaps".into(), take(&s.gap_before_ops, k));
            if let Some(t) = &target {
                let m = find_entries(&s.gap_before_ops, gap_names, t);
                out.insert("match".into(), json_of(&m.first()));
                let op = m.first().and_then(|e| e.payload_op.clone()).unwrap_or_else(|| t.clone());
                let context: Vec<_> = find_entries(&s.gap_region_contexts, context_names, &op).into_iter().take(k).collect();
                out.insert("context".into(), json_of(&context));
            }
            out.insert("target".into(), json!(target));
        }
        "gap_region_context" => {
            let target = ["for", "of", "op"].iter().find_map(|w| target_after(question, w)).or_else(|| op_token(question));
            let results: Vec<&GapRegionContext> = match &target {
                Some(t) => find_entries(&s.gap_region_contexts, context_names, t).into_iter().take(k).collect(),
                None => s.gap_region_contexts.iter().take(k).collect(),
            };
            out.insert("target".into(), json!(target));
            out.insert("results".into(), json_of(&results));
        }
        "hierarchical_regions" => {
            let regions = &s.hierarchical_regions;
            let results: Vec<Value> = regions
                .iter()
                .take(k)
                .map(|r| {
                    let mut e = json_of(r);
                    let total = super::region_root_total(regions, &r.path);
                    let sh = |d: Option<f64>| if total > 0.0 { d.unwrap_or(0.0) / total } else { 0.0 };
                    e["inclusive_share_of_total"] = json!(sh(r.inclusive_duration));
                    e["exclusive_share_of_total"] = json!(sh(r.exclusive_duration));
                    e
                })
                .collect();
            out.insert("results".into(), Value::Array(results));
            out.insert("by_pass".into(), take(&s.profq_regions_by_pass, k));
        }
        "bound_analysis" => {
            out.insert("result".into(), json!("unsupported_from_trace_only"));
            out.insert("explanation".into(), json!(format!("{BOUND_NEEDS} A summary alone does not hold them: ask with the profile or a stored run.")));
        }
        "memory_profile" => {
            out.insert("result".into(), json!("needs_profile"));
            out.insert("explanation".into(), json!(format!("{NO_MEMORY_EVENTS_IN_SUMMARY} Ask with the profile or a stored run.")));
        }
        "trend" => {
            out.insert("hint".into(), json!("Trends read every run of a store: ask with --store (and no INPUT/--summary)."));
        }
        "comparison_hint" => {
            out.insert("hint".into(), json!("Use `profq compare --before X --after Y` to compare two runs, profiles or summaries."));
        }
        "recompilation" => {
            out.insert("results".into(), json_of(&s.profq_recompilation));
        }
        "transfers" => {
            out.insert("results".into(), take(&s.profq_transfers, k));
        }
        "tiny_kernels" => {
            out.insert("results".into(), json_of(&s.profq_tiny_kernels));
        }
        "rank_stragglers" => {
            out.insert("results".into(), take(&s.profq_straggler_ranks, k));
            if s.profq_straggler_ranks.is_empty() {
                out.insert("explanation".into(), json!("No collective ran on two or more ranks of this run: a straggler is told among the ranks of one job (a directory of per-rank traces, or a multi-host profile)."));
            }
        }
        "stragglers" => {
            out.insert("results".into(), take(&s.profq_per_device, k));
        }
        "step_jitter" => {
            let st = &s.step_time.steady_state_steps;
            let ratio = match (st.p90, st.median) {
                (Some(p), Some(m)) if m > 0.0 => json!(p / m),
                _ => Value::Null,
            };
            out.insert("p90_over_median".into(), ratio);
            out.insert("steady_state_steps".into(), json_of(st));
            out.insert("classes".into(), json_of(&s.step_time.classes));
        }
        "device_idle" => {
            out.insert("results".into(), json_of(&s.profq_device_idle));
            out.insert("top_gaps".into(), take(&s.gap_before_ops, k));
        }
        "step_time" => {
            out.insert("results".into(), json_of(&s.step_time));
        }
        _ => {
            out.insert("results".into(), json_of(&s.optimization_candidates));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qt(q: &str) -> &'static str {
        route(q).map_or("unrecognized", |i| i.query_type)
    }

    #[test]
    fn reference_questions_route_as_documented() {
        assert_eq!(qt("What are the top 3 ops by exclusive time?"), "top_ops");
        assert_eq!(qt("Is comm or compute dominating? Which collective is worst?"), "compute_vs_communication");
        assert_eq!(qt("show hierarchical regions"), "hierarchical_regions");
        assert_eq!(qt("show context for op copy.1"), "gap_region_context");
        assert_eq!(qt("what is the gap before X?"), "pre_op_gap");
        assert_eq!(qt("What should we try next?"), "optimization_candidates");
    }

    #[test]
    fn words_not_substrings() {
        // "stop" is not "top", "copy" is not "op".
        assert_eq!(qt("when does the loop stop copying"), "unrecognized");
        assert_eq!(qt("hello there"), "unrecognized");
        assert_eq!(qt("is anything recompiling?"), "recompilation");
        assert_eq!(qt("which device is the straggler"), "stragglers");
        assert_eq!(qt("which rank is the straggler?"), "rank_stragglers");
        assert_eq!(qt("which rank is slowest?"), "rank_stragglers");
        assert_eq!(qt("how did the step time change across runs?"), "trend");
        assert_eq!(qt("is it memory-bound?"), "bound_analysis");
        assert_eq!(qt("how much HBM is used at peak?"), "memory_profile");
        assert_eq!(qt("will it OOM?"), "memory_profile");
        let summary: Summary = serde_json::from_value(json!({"hot_ops": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]})).unwrap();
        assert_eq!(answer(&summary, "What are the top 3 ops?", 10)["results"].as_array().unwrap().len(), 3);
        assert_eq!(answer(&summary, "What are the top ops?", 2)["results"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn targets() {
        assert_eq!(target_after("what is the gap before `iota.296`?", "before").as_deref(), Some("iota.296"));
        assert_eq!(target_after("show context for op copy.1", "for").as_deref(), Some("copy.1"));
        assert_eq!(op_token("why is copy.1 slow"), Some("copy.1".into()));
        assert_eq!(trend_target("How did fusion.3 change across runs?").as_deref(), Some("fusion.3"));
        assert_eq!(trend_target("how did step time change across runs"), None);
    }
}
