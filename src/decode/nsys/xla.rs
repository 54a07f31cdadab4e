//! XLA's NVTX ranges in an Nsight Systems export, and the kernels they place.
//!
//! JAX on GPU (XLA's GPU runtime, with NVTX on as under `nsys profile`) names its ranges in
//! TraceMe's encoding, `Name:#key=value,…#`:
//! * `XlaModule:#prefix=P,hlo_module=M,program_id=N#` around one execution of a module (`P`,
//!   the op_name prefix every op of the module shares, and `program_id` may be absent);
//! * `Thunk:#name=S,hlo_op=OP#` around the launches of one HLO op, where `S` is the op's
//!   op_name less the module's prefix (absent when the op has none);
//! * a step annotation (`jax.profiler.StepTraceAnnotation`), `train:#step_num=N,…#`.
//!
//! A kernel launched inside a `Thunk` range is that HLO op, of the module around it, with the
//! op's op_name as its scope path: what a device event carries in an XPlane.

use crate::model::{EventChunk, Nullable, SparseColumn, NO_PARENT, NO_STR, NULL_I64};
use rustc_hash::FxHashMap as HashMap;

/// What one of XLA's ranges says.
#[derive(Debug, Default, PartialEq)]
pub struct XlaRange<'t> {
    /// The name the range is shown by: the module, the HLO op, or the step annotation's name.
    pub name: &'t str,
    pub hlo_module: Option<&'t str>,
    pub program_id: Option<i64>,
    /// The module's op_name prefix.
    pub prefix: Option<&'t str>,
    pub hlo_op: Option<&'t str>,
    /// The op's op_name less the module's prefix (empty: the prefix alone).
    pub op_name: Option<&'t str>,
    pub step: Option<i64>,
}

/// The range `text` names, when it is one of XLA's (see the module).
pub fn xla_range(text: &str) -> Option<XlaRange<'_>> {
    let (kind, body) = text.split_once(":#")?;
    let mut body = body.strip_suffix('#')?;
    let mut range = XlaRange::default();
    match kind {
        // Fields are taken from the end: the op_name and prefix before them may hold `,` and `=`.
        "XlaModule" => {
            range.program_id = last_field(&mut body, "program_id").and_then(|v| v.parse().ok());
            range.hlo_module = Some(last_field(&mut body, "hlo_module")?);
            range.prefix = last_field(&mut body, "prefix").filter(|p| !p.is_empty());
            range.name = range.hlo_module?;
        }
        "Thunk" => {
            range.hlo_op = Some(last_field(&mut body, "hlo_op")?);
            range.op_name = last_field(&mut body, "name");
            range.name = range.hlo_op?;
        }
        _ => {
            let step = body.split(',').find_map(|kv| kv.strip_prefix("step_num="))?;
            range.step = Some(step.parse().ok()?);
            range.name = kind;
        }
    }
    Some(range)
}

/// The value of `key`, the last field of `body`, which is cut before it.
fn last_field<'t>(body: &mut &'t str, key: &str) -> Option<&'t str> {
    let b = *body;
    let (rest, value) = match b.rfind(&format!(",{key}=")) {
        Some(at) => (&b[..at], &b[at + key.len() + 2..]),
        None => ("", b.strip_prefix(key)?.strip_prefix('=')?),
    };
    *body = rest;
    Some(value)
}

/// The op_name of an op in a module from the `name` XLA gave its `Thunk` range: the module's
/// prefix, then what follows it. (XLA writes an op_name whole when it does not start with the
/// prefix; it always does, the prefix being the one all the module's op_names share.)
pub fn full_op_name(prefix: Option<&str>, name: &str) -> String {
    match prefix {
        Some(p) if name.is_empty() => p.to_string(),
        Some(p) => format!("{p}/{name}"),
        None => name.to_string(),
    }
}

/// Gives every kernel (and copy) whose launch ran inside a `Thunk` range that range's HLO op
/// and op_name (`tf_op`), and the module and program id of the `XlaModule` range around it.
/// `runtime`: the category of launches; the chunk is sorted and nested.
pub fn place_kernels(chunk: &mut EventChunk, runtime: u32) {
    // Per launch (by correlation id): hlo_op, scope (tf_op), module, program id.
    let mut placed: HashMap<i64, (u32, u32, u32, i64)> = HashMap::default();
    for i in 0..chunk.len() {
        let correlation = chunk.correlation_id.get(i);
        if chunk.category.get(i) != runtime || correlation == NULL_I64 {
            continue;
        }
        let (mut op, mut module) = (None, None);
        let mut parent = chunk.parent[i];
        while parent != NO_PARENT && module.is_none() {
            let j = parent as usize;
            if op.is_none() && chunk.hlo_op.get(j) != NO_STR {
                op = Some(j);
            }
            if chunk.hlo_module.get(j) != NO_STR {
                module = Some(j);
            }
            parent = chunk.parent[j];
        }
        let Some(op) = op else { continue };
        let (hlo_module, program_id) = module.map_or((NO_STR, NULL_I64), |m| (chunk.hlo_module.get(m), chunk.program_id.get(m)));
        placed.insert(correlation, (chunk.hlo_op.get(op), chunk.tf_op.get(op), hlo_module, program_id));
    }
    if placed.is_empty() {
        return;
    }
    // What each device event gets; the columns are rebuilt, as they take values in event order.
    let got: Vec<Option<(u32, u32, u32, i64)>> =
        (0..chunk.len()).map(|i| placed.get(&chunk.correlation_id.get(i)).filter(|_| chunk.category.get(i) != runtime).copied()).collect();
    let capacity = chunk.capacity();
    overlay(&mut chunk.hlo_op, capacity, got.iter().map(|g| g.map(|g| g.0)));
    overlay(&mut chunk.tf_op, capacity, got.iter().map(|g| g.map(|g| g.1)));
    overlay(&mut chunk.hlo_module, capacity, got.iter().map(|g| g.map(|g| g.2)));
    overlay(&mut chunk.program_id, capacity, got.iter().map(|g| g.map(|g| g.3)));
}

/// `column` with each event's value replaced by the one `new` gives it, where that is a value.
fn overlay<T: Nullable>(column: &mut SparseColumn<T>, capacity: usize, new: impl Iterator<Item = Option<T>>) {
    let mut rebuilt = SparseColumn::default();
    for (i, new) in new.enumerate() {
        let value = new.filter(|v| *v != T::NULL).unwrap_or_else(|| column.get(i));
        rebuilt.set(i, capacity, value);
    }
    *column = rebuilt;
}

#[cfg(test)]
mod tests {
    use super::{full_op_name, xla_range, XlaRange};

    #[test]
    fn xla_ranges() {
        assert_eq!(
            xla_range("XlaModule:#prefix=jit(train_step),hlo_module=jit_train_step,program_id=5#"),
            Some(XlaRange {
                name: "jit_train_step",
                hlo_module: Some("jit_train_step"),
                program_id: Some(5),
                prefix: Some("jit(train_step)"),
                ..Default::default()
            })
        );
        assert_eq!(xla_range("XlaModule:#hlo_module=jit_f#"), Some(XlaRange { name: "jit_f", hlo_module: Some("jit_f"), ..Default::default() }));
        // An op_name holding `,` and `=` stays whole.
        assert_eq!(
            xla_range("Thunk:#name=transpose(jvp(mlp))/dot_general[dims=(1,0)],hlo_op=fusion.3#"),
            Some(XlaRange { name: "fusion.3", hlo_op: Some("fusion.3"), op_name: Some("transpose(jvp(mlp))/dot_general[dims=(1,0)]"), ..Default::default() })
        );
        assert_eq!(xla_range("Thunk:#hlo_op=copy.1#").map(|r| (r.hlo_op, r.op_name)), Some((Some("copy.1"), None)));
        assert_eq!(xla_range("train:#step_num=12,_r=1#").map(|r| (r.name, r.step)), Some(("train", Some(12))));
        for other in ["aten::mul", "train_step", "Thunk:#name=x#", "a:#b=c#", "XlaModule:#prefix=p#"] {
            assert_eq!(xla_range(other), None, "{other}");
        }
    }

    #[test]
    fn op_names_are_completed_by_the_module_prefix() {
        assert_eq!(full_op_name(Some("jit(step)"), "mlp/dot_general"), "jit(step)/mlp/dot_general");
        assert_eq!(full_op_name(Some("jit(step)"), ""), "jit(step)");
        assert_eq!(full_op_name(None, "x"), "x");
    }
}
