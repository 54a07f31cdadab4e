//! `profq export-trace`: windows of committed captures written as Perfetto traces, decoded
//! back with profq's own structs and checked against Perfetto's import rules
//! (`export::perfetto::check`), decoded with Perfetto's own schema (the `perfetto` Python
//! package) with zero unknown fields, and written as Chrome JSON; bad windows end with a
//! one-line error and exit 2.

mod common;

use common::*;
use profq::export::perfetto::check::{check, Checked};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Exports with `args` to `out`; the line profq printed.
fn export(input: &Path, out: &Path, args: &[&str]) -> String {
    let mut all = vec!["export-trace", input.to_str().unwrap(), "--output", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = profq(&all);
    assert!(o.status.success(), "export-trace {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// A number the printed line holds before `word` ("1603 events").
fn printed(line: &str, word: &str) -> usize {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| w.trim_end_matches(',') == word).unwrap_or_else(|| panic!("{word} in {line}"));
    words[at - 1].parse().unwrap()
}

fn checked(path: &Path) -> Checked {
    check(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn windows_of_captures_follow_perfettos_import_rules() {
    let dir = temp_dir("perfetto");
    let cases: [(&str, PathBuf, &[&str]); 4] = [
        ("cpu", jax_cpu("transformer_lm"), &[]),
        ("dp", jax_cpu("multi_device_dp"), &["--steps", "5..7"]),
        ("gpu", jax_gpu("transformer_lm"), &["--representative"]),
        ("kineto", repo().join("tests/data/kineto/torch_mlp_h100.pt.trace.json.gz"), &["--step", "3"]),
    ];
    for (name, input, args) in cases {
        let out = dir.join(format!("{name}.pftrace"));
        let line = export(&input, &out, args);
        let c = checked(&out);
        assert_eq!(c.slices + c.instants, printed(&line, "slices"), "{name}: every slice written");
        assert_eq!(c.tracks, printed(&line, "tracks"), "{name}: {line}");
        assert_eq!(c.flows, printed(&line, "flows"), "{name}: {line}");
        assert_eq!(c.slices_by_track.get("profq"), Some(&1), "{name}: the window slice");
        for track in ["profq · steps", "profq · regions (pass)", "profq · gaps"] {
            assert!(c.slices_by_track.get(track).is_some_and(|&n| n > 0), "{name}: slices on {track}: {:?}", c.slices_by_track);
        }
        // The steps of the window, by name.
        let steps: Vec<&String> = c.names.iter().filter(|n| n.starts_with("step ")).collect();
        match name {
            "dp" => {
                for s in ["step 5", "step 6", "step 7"] {
                    assert!(steps.iter().any(|n| n.as_str() == s), "{name}: {s} in {steps:?}");
                }
            }
            "kineto" => assert!(steps.iter().any(|n| n.as_str() == "step 3"), "{name}: {steps:?}"),
            _ => assert!(!steps.is_empty()),
        }
        if name == "dp" {
            assert!(c.slices_by_track.get("profq · collectives").is_some_and(|&n| n > 0), "{name}: collectives");
        }
        if name == "gpu" || name == "kineto" {
            assert!(c.flows > 0, "{name}: flows from host launches to device work");
        }
    }
}

#[test]
fn gzip_json_truncation_and_determinism() {
    let dir = temp_dir("perfetto-forms");
    let input = jax_cpu("transformer_lm");
    let (a, b, gz) = (dir.join("a.pftrace"), dir.join("b.pftrace"), dir.join("c.pftrace.gz"));
    export(&input, &a, &["--step", "6"]);
    export(&input, &b, &["--step", "6"]);
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "the same window gives the same bytes");
    export(&input, &gz, &["--step", "6"]);
    assert_eq!(&std::fs::read(&gz).unwrap()[..2], &[0x1f, 0x8b], "gzip");
    let (plain, packed) = (checked(&a), checked(&gz));
    assert_eq!((plain.packets, plain.slices, plain.names), (packed.packets, packed.slices, packed.names));

    let json = dir.join("a.json");
    let line = export(&input, &json, &["--step", "6", "--format", "json"]);
    let doc = read_json(&json);
    let events = doc["traceEvents"].as_array().unwrap();
    let count = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count();
    assert_eq!(count("X") + count("i"), printed(&line, "slices"));
    assert!(count("M") > 0, "process and thread names");
    assert!(events.iter().filter(|e| e["ph"] == "X").all(|e| e["ts"].as_f64().unwrap() >= 0.0), "timestamps rebased to the window");

    let cut = dir.join("cut.pftrace");
    let line = export(&input, &cut, &["--step", "6", "--max-events", "100"]);
    assert!(line.contains("truncated"), "{line}");
    assert_eq!(printed(&line, "events"), 100);
    assert!(checked(&cut).names.iter().any(|n| n.starts_with("truncated")), "a truncated instant on profq's track");
}

#[test]
fn bad_windows_are_one_line_errors() {
    let dir = temp_dir("perfetto-bad");
    let input = jax_cpu("transformer_lm");
    let out = dir.join("x.pftrace");
    let cases: [(&[&str], &str); 6] = [
        (&["--step", "99"], "no step 99"),
        (&["--steps", "7..3"], "before the first"),
        (&["--from-ns", "5", "--to-ns", "4"], "is not after"),
        (&["--from-ns", "0", "--to-ns", "1"], "holds no events"),
        (&["--step", "6", "--hosts", "nope"], "no host \"nope\""),
        (&["--steps", "x"], "expected A..B"),
    ];
    for (args, message) in cases {
        let mut all = vec!["export-trace", input.to_str().unwrap(), "--output", out.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = profq(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(message) && err.trim().lines().count() == 1, "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: no file is written");
    }
    // A profile without steady steps asks for a step or a range.
    let o = profq(&["export-trace", repo().join("tests/data/kineto/torch_mlp_h100.pt.trace.json.gz").to_str().unwrap(), "--output", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no steady step"), "{}", stderr(&o));
}

/// Perfetto's own schema (v59.1, from the `perfetto` package) decodes every message of the
/// export with no unknown field: field numbers and wire types are Perfetto's.
#[test]
fn perfettos_schema_reads_every_field() {
    let python = common::servers::python();
    let has = Command::new(&python).args(["-c", "import perfetto.protos.perfetto.trace.perfetto_trace_pb2"]).output().is_ok_and(|o| o.status.success());
    if !has {
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "the perfetto package is missing from the test venv (.ci/run installs it)");
        eprintln!("skipping: no python with the perfetto package (set PROFQ_PYTHON)");
        return;
    }
    let dir = temp_dir("perfetto-schema");
    let out = dir.join("gpu.pftrace.gz");
    export(&jax_gpu("transformer_lm"), &out, &[]);
    let script = r#"
import gzip, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from google.protobuf.unknown_fields import UnknownFieldSet
trace = pb.Trace.FromString(gzip.decompress(open(sys.argv[1], "rb").read()))
unknown = messages = 0
def walk(m):
    global unknown, messages
    messages += 1
    unknown += len(UnknownFieldSet(m))
    for field, value in m.ListFields():
        if field.message_type is not None:
            for x in (value if field.is_repeated else [value]):
                walk(x)
walk(trace)
flows = sum(len(p.track_event.flow_ids) for p in trace.packet)
print(len(trace.packet), messages, unknown, flows)
"#;
    let o = Command::new(&python).args(["-c", script, out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let nums: Vec<usize> = stdout(&o).split_whitespace().map(|n| n.parse().unwrap()).collect();
    let c = checked(&out);
    assert_eq!(nums[0], c.packets, "Perfetto reads every packet");
    assert_eq!(nums[2], 0, "no unknown fields in {} messages", nums[1]);
    assert_eq!(nums[3], c.flows, "flow ids as Perfetto reads them (fixed64)");
}

/// The exposed-communication track and `collectives.exposed_ns` follow one rule
/// (`tables::derive::exposed_parts`): over a whole run their times are equal, on a capture
/// whose async spans (TPU `Async XLA Ops`) run compute beside its collectives, which must
/// hide nothing, and on one whose collectives overlap compute.
#[test]
fn the_exposed_track_is_the_collectives_tables_exposed_time() {
    let dir = temp_dir("exposed");
    let mut cases = vec![("dp", jax_cpu("multi_device_dp"))];
    cases.extend(shared("public/openxla-xprof/tpu_v6e_jax_inference").map(|p| ("tpu", p)));
    for (name, input) in cases {
        let store = dir.join(format!("store-{name}"));
        ingest(&store, &input, name);
        let table = sql(&store, &format!("SELECT CAST(sum(exposed_ns) AS BIGINT) AS exposed, count(*) AS n FROM collectives WHERE run_id = '{name}'"));
        let (exposed, n) = (as_i64(&table[0]["exposed"]), as_i64(&table[0]["n"]));
        assert!(n > 0, "{name}: collectives");
        let out = dir.join(format!("{name}.pftrace"));
        let whole = ["--run", name, "--store", store.to_str().unwrap(), "--from-ns", "0", "--to-ns", "9000000000000000000", "--max-events", "100000000"];
        let o = profq(&[&["export-trace", "--output", out.to_str().unwrap()][..], &whole[..]].concat());
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let track = checked(&out).time_by_track.get("profq · exposed communication").copied().unwrap_or(0);
        assert_eq!(track as i64, exposed, "{name}: the track's exposed time and the table's");
    }
    let tpu_async = shared("public/openxla-xprof/tpu_v6e_jax_inference").map(|_| {
        let store = dir.join("store-tpu");
        as_i64(&sql(&store, "SELECT count(*) AS n FROM ops WHERE is_async_line(line) AND category = 'compute'")[0]["n"])
    });
    assert!(tpu_async.is_none_or(|n| n > 0), "the TPU capture has compute in async spans");
}
