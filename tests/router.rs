//! `profq query`'s router on a corpus of engineers' questions (tests/data/router/
//! questions.tsv, kept as data): every question goes to its analysis, whatever words it
//! uses for the thing (kernel/op, self/exclusive time, bubble/idle/gap, iteration/step,
//! comm/collective/NCCL/ICI).

mod common;

use profq::summary::query::route;

#[test]
fn every_question_of_the_corpus_reaches_its_analysis() {
    let corpus = std::fs::read_to_string(common::repo().join("tests/data/router/questions.tsv")).unwrap();
    let cases: Vec<(&str, &str)> =
        corpus.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(|l| l.split_once('\t').expect("question<TAB>query_type")).collect();
    assert!(cases.len() >= 100, "{} questions", cases.len());
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(q, want)| {
            let got = route(q).map_or("unrecognized", |i| i.query_type);
            (got != *want).then(|| format!("{q:?}: {got}, not {want}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{} of {} questions misrouted:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

/// "Which run is the slowest?" over a store names the run with the longest steady median
/// step, with its top op.
#[test]
fn the_slowest_run_of_a_store_is_named() {
    let store = common::temp_dir("router-runs");
    common::ingest(&store, &common::jax_cpu("mlp_before"), "before");
    common::ingest(&store, &common::jax_cpu("mlp_after"), "after");
    let o = common::profq(&["query", "Which run is the slowest?", "--store", store.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let answer: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let rows = answer["results"].as_array().unwrap();
    let slowest = rows.iter().max_by(|a, b| a["steady_median_ns"].as_f64().unwrap().total_cmp(&b["steady_median_ns"].as_f64().unwrap())).unwrap();
    assert_eq!(answer["slowest_run"]["run_id"], slowest["run_id"]);
    assert_eq!(answer["slowest_run"]["top_op"], slowest["top_op"]);
    assert_ne!(answer["fastest_run"]["run_id"], answer["slowest_run"]["run_id"]);
}

/// "Which runs regressed?" over a store judges each run against the one ingested before it
/// with compare's noise test on their steady steps: mlp_after improves on mlp_before, a
/// repeat of a run is within noise, and mlp_before after mlp_after regresses.
#[test]
fn each_run_of_a_store_gets_a_verdict_against_the_run_before() {
    let verdicts = |runs: &[&str]| -> Vec<(String, String, String)> {
        let store = common::temp_dir("router-verdicts");
        for capture in runs {
            common::ingest(&store, &common::jax_cpu(capture), capture);
        }
        let o = common::profq(&["query", "which runs regressed?", "--store", store.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let answer: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        answer["run_verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["previous_run"].as_str().unwrap().to_string(), v["run_id"].as_str().unwrap().to_string(), v["verdict"].as_str().unwrap().to_string()))
            .collect()
    };
    let pairs = |v: &[(&str, &str, &str)]| v.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect::<Vec<_>>();
    let got = verdicts(&["mlp_before", "mlp_after", "mlp_train", "mlp_train_repeat"]);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], pairs(&[("mlp_before", "mlp_after", "improved")])[0]);
    assert_eq!(got[2], pairs(&[("mlp_train", "mlp_train_repeat", "within noise")])[0]);
    assert_eq!(verdicts(&["mlp_after", "mlp_before"]), pairs(&[("mlp_after", "mlp_before", "regressed")]));
}
