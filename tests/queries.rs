//! The named queries' headers are their contract, as Perfetto's standard library types its
//! tables: every query, run on a real capture, returns exactly the columns its `Columns:`
//! block documents, in that order.

mod common;
use common::*;
use profq::engine::queries::{ParamKind, QUERIES};
use profq::engine::{Engine, Spread};
use std::collections::BTreeMap;

#[tokio::test]
async fn every_named_query_returns_the_columns_its_header_documents() {
    let tables = profq::ingest::load_tables(&jax_cpu("transformer_lm"), "input", &[]).unwrap();
    let engine = Engine::from_tables(&tables, "input", Spread::Wide).unwrap();
    for q in QUERIES {
        // Every run parameter names the one run; other text parameters get a name to look for.
        let values: BTreeMap<String, String> = q
            .params()
            .into_iter()
            .filter(|p| p.default.is_none())
            .map(|p| {
                let value = match (p.kind, p.name.ends_with("run") || p.name == "run_id") {
                    (ParamKind::Text, true) => "input",
                    (ParamKind::Text, false) => "dot",
                    _ => "1",
                };
                (p.name, value.to_string())
            })
            .collect();
        let sql = q.bind(&values).unwrap();
        engine.sql(&sql).await.unwrap_or_else(|e| panic!("{}: {e}", q.name));
        let planned = engine.ctx.sql(&sql).await.unwrap();
        let returned: Vec<&str> = planned.schema().fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(returned, q.columns(), "{}: its Columns: block documents other columns than it returns", q.name);
    }
}
