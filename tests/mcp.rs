//! `profq mcp` driven by the official Python MCP client (`tests/agents/mcp_client.py`), as an
//! agent would drive it: the tool listing, each tool once (its result is what the command
//! prints with `--format json`, byte for byte), failures as tool errors after which the server
//! goes on serving, and a result over the byte budget written to a file.

mod common;

use common::*;
use serde_json::{json, Value};

const TOOLS: [&str; 9] = ["compare", "export_trace", "list_queries", "list_runs", "query", "report", "run_query", "sql", "summarize"];

fn cli(args: &[&str]) -> String {
    let o = profq(args);
    assert!(o.status.success(), "profq {args:?}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn an_agent_gets_what_the_commands_print() {
    if !has_mcp_client() {
        return;
    }
    let dir = temp_dir("mcp");
    let (before, after) = (repo().join("tests/data/jax_cpu/mlp_before"), repo().join("tests/data/jax_cpu/mlp_after"));
    let (before, after) = (before.to_str().unwrap(), after.to_str().unwrap());
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    let o = profq(&["ingest", before, "--store", store, "--run-id", "before"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = dir.join("step.pftrace");
    let spill = dir.join("spill");
    let calls = json!([
        ["summarize", {"input": before}],
        ["query", {"question": "what are the top ops?", "input": before, "top_k": 5}],
        ["run_query", {"name": "step_times", "params": {"warmup_steps": 1}, "input": before}],
        ["sql", {"query": "SELECT run_id, count(*) AS ops FROM ops GROUP BY run_id ORDER BY run_id", "store": store}],
        ["compare", {"before": before, "after": after}],
        ["list_queries", {}],
        ["list_runs", {"store": store}],
        ["report", {"run": "before", "store": store}],
        ["export_trace", {"input": before, "output": trace.to_str().unwrap()}],
        // Failures, each followed by a call that must still be served.
        ["summarize", {"input": dir.join("no-such-profile").to_str().unwrap()}],
        ["sql", {"query": "DROP TABLE runs", "store": store}],
        ["run_query", {"name": "no_such_analysis", "input": before}],
        ["no_such_tool", {}],
        ["summarize", {}],
        ["list_runs", {"store": store}],
    ]);
    let plan = json!({"servers": [
        {"args": [], "calls": calls},
        {"args": ["--max-result-bytes", "2000", "--spill-dir", spill.to_str().unwrap()], "calls": [["summarize", {"input": before}], ["list_runs", {"store": store}]]},
    ]});
    let servers = drive_mcp(&plan, &[]);
    let names: Vec<&str> = servers[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, TOOLS, "the listing");
    let query_schema = &servers[0]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "query").unwrap()["schema"];
    assert_eq!(query_schema["required"], json!(["question"]));

    let results = servers[0]["results"].as_array().unwrap();
    let text = |k: usize| {
        assert_eq!(results[k]["is_error"], false, "{}: {}", results[k]["tool"], results[k]["text"]);
        results[k]["text"].as_str().unwrap().to_string()
    };
    assert_eq!(text(0), cli(&["summarize", before]), "summarize");
    assert_eq!(text(1), cli(&["query", "what are the top ops?", before, "--top-k", "5", "--format", "json"]), "query");
    assert_eq!(text(2), cli(&["run", "step_times", before, "--param", "warmup_steps=1", "--format", "json"]), "run_query");
    let sql = "SELECT run_id, count(*) AS ops FROM ops GROUP BY run_id ORDER BY run_id";
    assert_eq!(text(3), cli(&["sql", sql, "--store", store, "--format", "json"]), "sql");
    assert_eq!(text(4), cli(&["compare", "--before", before, "--after", after, "--format", "json"]), "compare");
    assert_eq!(text(5), cli(&["queries", "--format", "json"]), "list_queries");
    let runs: Value = serde_json::from_str(&text(6)).unwrap();
    assert_eq!(runs[0]["run_id"], "before", "list_runs");
    assert_eq!(text(7), cli(&["report", "--run", "before", "--store", store, "--format", "md"]), "report");
    assert!(text(8).contains(trace.to_str().unwrap()) && trace.exists(), "export_trace: {}", text(8));

    for (k, says) in [(9, "cannot open"), (10, "read-only"), (11, "no_such_analysis"), (12, "no tool"), (13, "give")] {
        assert_eq!(results[k]["is_error"], true, "call {k} fails: {}", results[k]["text"]);
        let message = results[k]["text"].as_str().unwrap();
        assert!(message.contains(says), "call {k}: {message}");
        assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    }
    assert_eq!(text(14), text(6), "served after the failures");

    // Over the budget: the result is in a file, the envelope says where, how big, and its first rows.
    let spilled = servers[1]["results"].as_array().unwrap();
    assert_eq!(spilled[0]["is_error"], false);
    let envelope: Value = serde_json::from_str(spilled[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["over_budget"], true, "{envelope}");
    let path = envelope["path"].as_str().unwrap();
    let whole = std::fs::read_to_string(path).unwrap();
    assert_eq!(whole, text(0), "the spilled file is the whole result");
    assert_eq!(envelope["bytes"], whole.len());
    assert!(envelope["first_rows"]["hot_ops"].as_array().is_some_and(|rows| !rows.is_empty()), "{envelope}");
    assert_eq!(spilled[1]["text"], results[6]["text"], "a small result stays inline");
}
