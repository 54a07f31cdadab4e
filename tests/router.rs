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
