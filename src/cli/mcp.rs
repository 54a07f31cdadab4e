//! `profq mcp`: profq's analyses as MCP tools over stdio (rmcp, the official Rust SDK), for
//! coding agents.
//!
//! A tool is the command of its name: its arguments become that command's arguments, parsed
//! by the command line's own grammar (`args`) and run by the same function
//! (`commands::run`), with `--format json` where the command has it. So a tool's result is
//! the text the command prints, byte for byte, and the two cannot drift. A failure is a tool
//! error (`isError`) carrying the command's one-line message, and the server serves the next
//! call: each call runs on a thread of its own, so even a panic ends only that call.
//!
//! A result over the byte budget (`--max-result-bytes`, 1 MB) is written to a file in the
//! spill directory, and the tool returns an envelope instead: the file's path, its size, and
//! its first rows. Logs go to stderr; stdout carries the protocol alone.

use super::args::Cli;
use super::commands;
use clap::Parser;
use profq::error::Error;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Rows a spilled result's envelope shows.
const FIRST_ROWS: usize = 20;

/// Serves the tools on stdin/stdout until the client closes the connection.
pub fn serve(max_result_bytes: usize, spill_dir: Option<PathBuf>) -> Result<(), Error> {
    let spill_dir = spill_dir.unwrap_or_else(|| std::env::temp_dir().join("profq-mcp"));
    let server = Server { max_result_bytes, spill_dir, calls: AtomicU64::new(0) };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| Error::store(format!("runtime: {e}")))?;
    runtime.block_on(async {
        let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| Error::usage(format!("mcp: {e}")))?;
        running.waiting().await.map_err(|e| Error::store(format!("mcp: {e}")))?;
        Ok(())
    })
}

struct Server {
    max_result_bytes: usize,
    spill_dir: PathBuf,
    /// Calls served, numbering the files results spill to.
    calls: AtomicU64,
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("profq", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + Send + '_ {
        let tools = TOOLS.iter().map(|t| Tool::new(t.name, t.description, Arc::new(schema(t)))).collect();
        std::future::ready(Ok(ListToolsResult::with_all_items(tools)))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        let Some(tool) = TOOLS.iter().find(|t| t.name == request.name) else {
            return Ok(failure(format!("no tool {:?}; tools: {}", request.name, TOOLS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "))));
        };
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let arguments = request.arguments.unwrap_or_default();
        let argv = match (tool.argv)(&Args(&arguments), &self.spill_dir, call) {
            Ok(argv) => argv,
            Err(message) => return Ok(failure(message)),
        };
        let (done, ran) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = done.send(run(argv));
        });
        Ok(match ran.await {
            Ok(Ok(text)) => self.answer(tool.name, call, text),
            Ok(Err(message)) => failure(message),
            Err(_) => failure("internal error: the call stopped without an answer (a bug in profq: please report it)".into()),
        })
    }
}

/// Runs a command line as the CLI would, returning its stdout or its one-line failure.
fn run(argv: Vec<String>) -> Result<String, String> {
    let cli = Cli::try_parse_from(std::iter::once("profq".to_string()).chain(argv)).map_err(|e| {
        let rendered = e.to_string();
        rendered.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ").to_string()
    })?;
    commands::run(cli.command).map_err(|e| if e.message.is_empty() { e.output } else { e.message })
}

impl Server {
    /// A command's output as the tool's result, or, over the budget, the envelope of the file
    /// it is written to.
    fn answer(&self, tool: &str, call: u64, text: String) -> CallToolResponse {
        if text.len() <= self.max_result_bytes {
            return CallToolResult::success(vec![ContentBlock::text(text)]).into();
        }
        let json = serde_json::from_str::<Value>(&text).ok();
        let path = self.spill_dir.join(format!("{tool}-{}-{call}.{}", std::process::id(), if json.is_some() { "json" } else { "txt" }));
        let written = std::fs::create_dir_all(&self.spill_dir).and_then(|()| std::fs::write(&path, &text));
        if let Err(e) = written {
            return failure(format!("the result ({} bytes) is over the budget and cannot be written to {}: {e}", text.len(), path.display()));
        }
        let first_rows = match json {
            Some(Value::Array(rows)) => Value::Array(rows.into_iter().take(FIRST_ROWS).collect()),
            Some(Value::Object(fields)) => Value::Object(fields.into_iter().map(|(k, v)| (k, first_of(v))).collect()),
            _ => Value::Array(text.lines().take(FIRST_ROWS).map(|l| Value::String(l.to_string())).collect()),
        };
        let envelope = json!({
            "over_budget": true,
            "path": path.display().to_string(),
            "bytes": text.len(),
            "max_result_bytes": self.max_result_bytes,
            "first_rows": first_rows,
        });
        CallToolResult::success(vec![ContentBlock::text(profq::render::json_text(&envelope))]).into()
    }
}

/// A field of a spilled document as its envelope shows it: lists cut to their first rows.
fn first_of(value: Value) -> Value {
    match value {
        Value::Array(rows) => Value::Array(rows.into_iter().take(FIRST_ROWS).collect()),
        other => other,
    }
}

fn failure(message: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}

const INSTRUCTIONS: &str = "profq answers questions about ML training profiles (XPlane, PyTorch/Perfetto trace JSON, Nsight Systems SQLite exports). \
Give a profile as `input` (a log dir, session dir, file, or s3:// / gs:// URL), or a stored run as `run` (with `store`). \
Start with `summarize` or `query` (\"what are the top ops?\", \"is communication dominating?\", \"what should I try next?\"); \
`list_queries` and `run_query` give the named analyses, `sql` any read-only SQL over a store, `compare` two runs, \
`report` a markdown root-cause report, `export_trace` a Perfetto trace file. Results over the byte budget come back as a file path with the first rows.";

/// A tool: its name, what it does, its arguments, and the command line they make.
struct ToolSpec {
    name: &'static str,
    description: &'static str,
    /// (name, JSON type, what it is, required).
    args: &'static [(&'static str, &'static str, &'static str, bool)],
    /// The command line (after `profq`) of a call; the spill dir and the call's number name
    /// the files a call writes where it is not told where.
    argv: fn(&Args, &std::path::Path, u64) -> Result<Vec<String>, String>,
}

const INPUT: (&str, &str, &str, bool) =
    ("input", "string", "A profile: log dir, session dir, .xplane.pb, trace JSON, Nsight Systems .sqlite, or an s3:// / gs:// URL.", false);
const RUN: (&str, &str, &str, bool) = ("run", "string", "A run id of the store (instead of input).", false);
const STORE: (&str, &str, &str, bool) = ("store", "string", "The store: a directory or s3:// / gs:// URL [default: $PROFQ_STORE, else ./profq-store].", false);

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "summarize",
        description: "The profile_summary.v1 JSON of a run: steps, time breakdown, hot ops, collectives, idle, regions, findings.",
        args: &[INPUT, RUN, STORE, ("warmup_steps", "integer", "Steps with a smaller number are warm-up [5].", false), ("hot_op_limit", "integer", "Hot ops listed [25].", false)],
        argv: |a, _, _| Ok([vec!["summarize".into()], a.source()?, a.flag("warmup_steps", "--warmup-steps")?, a.flag("hot_op_limit", "--hot-op-limit")?].concat()),
    },
    ToolSpec {
        name: "query",
        description: "Answer a question about a run in plain words (top ops, comm vs compute, stragglers, idle, regions, recompilation, transfers, what to try next).",
        args: &[("question", "string", "The question.", true), INPUT, RUN, STORE, ("top_k", "integer", "Rows per list [10].", false)],
        argv: |a, _, _| Ok([vec!["query".into(), a.text("question")?], a.source()?, a.flag("top_k", "--top-k")?, vec!["--format".into(), "json".into()]].concat()),
    },
    ToolSpec {
        name: "run_query",
        description: "Run a named analysis (see list_queries) on a run; its rows as JSON.",
        args: &[("name", "string", "The analysis (list_queries names them).", true), ("params", "object", "Its parameters, NAME: VALUE.", false), INPUT, RUN, STORE],
        argv: |a, _, _| Ok([vec!["run".into(), a.text("name")?], a.source()?, a.params()?, vec!["--format".into(), "json".into()]].concat()),
    },
    ToolSpec {
        name: "sql",
        description: "Read-only SQL over every table of every run of a store (DDL, DML, COPY and SET are refused); rows as JSON.",
        args: &[("query", "string", "A SELECT statement.", true), STORE],
        argv: |a, _, _| Ok([vec!["sql".into(), a.text("query")?], a.flag("store", "--store")?, vec!["--format".into(), "json".into()]].concat()),
    },
    ToolSpec {
        name: "compare",
        description: "Compare two runs (each a store run id, a profile, or a summary file): ops and regions per step, appeared/disappeared ops, a noise verdict on step times.",
        args: &[("before", "string", "The baseline run.", true), ("after", "string", "The run to compare.", true), STORE],
        argv: |a, _, _| {
            let pair = vec!["compare".into(), "--before".into(), a.text("before")?, "--after".into(), a.text("after")?];
            Ok([pair, a.flag("store", "--store")?, vec!["--format".into(), "json".into()]].concat())
        },
    },
    ToolSpec {
        name: "list_queries",
        description: "The named analyses: each with its description, parameters and SQL.",
        args: &[],
        argv: |_, _, _| Ok(vec!["queries".into(), "--format".into(), "json".into()]),
    },
    ToolSpec {
        name: "list_runs",
        description: "The runs of a store (the runs table), by run id.",
        args: &[STORE],
        argv: |a, _, _| Ok([vec!["sql".into(), "SELECT * FROM runs ORDER BY run_id".into()], a.flag("store", "--store")?, vec!["--format".into(), "json".into()]].concat()),
    },
    ToolSpec {
        name: "report",
        description: "A deterministic markdown root-cause report of a run.",
        args: &[INPUT, RUN, STORE, ("top_k", "integer", "Rows per list [10].", false)],
        argv: |a, _, _| Ok([vec!["report".into()], a.source()?, a.flag("top_k", "--top-k")?, vec!["--format".into(), "md".into()]].concat()),
    },
    ToolSpec {
        name: "export_trace",
        description: "Write a window of a run (default: the representative step) as a Perfetto trace for ui.perfetto.dev; returns the file's path.",
        args: &[
            INPUT,
            RUN,
            STORE,
            ("output", "string", "The trace file (.pftrace or .json) [a new file in the spill dir].", false),
            ("step", "integer", "The step to export.", false),
        ],
        argv: |a, spill, call| {
            let output = match a.0.get("output") {
                Some(_) => a.text("output")?,
                None => spill.join(format!("trace-{}-{call}.pftrace", std::process::id())).display().to_string(),
            };
            Ok([vec!["export-trace".into()], a.source()?, vec!["--output".into(), output], a.flag("step", "--step")?].concat())
        },
    },
];

/// The JSON schema of a tool's arguments.
fn schema(tool: &ToolSpec) -> JsonObject {
    let properties: serde_json::Map<String, Value> =
        tool.args.iter().map(|(name, kind, doc, _)| (name.to_string(), json!({"type": kind, "description": doc}))).collect();
    let required: Vec<&str> = tool.args.iter().filter(|a| a.3).map(|a| a.0).collect();
    let schema = json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    match schema {
        Value::Object(map) => map,
        _ => unreachable!("an object"),
    }
}

/// A call's arguments.
struct Args<'a>(&'a JsonObject);

impl Args<'_> {
    /// A string argument that must be given.
    fn text(&self, name: &str) -> Result<String, String> {
        match self.0.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{name}: expected a string")),
            None => Err(format!("{name} is required")),
        }
    }

    /// `flag VALUE` where the argument is given (a string or a number), else nothing.
    fn flag(&self, name: &str, flag: &str) -> Result<Vec<String>, String> {
        Ok(match self.0.get(name) {
            None | Some(Value::Null) => vec![],
            Some(Value::String(s)) => vec![flag.into(), s.clone()],
            Some(Value::Number(n)) => vec![flag.into(), n.to_string()],
            Some(_) => return Err(format!("{name}: expected a string or a number")),
        })
    }

    /// The run to read: `input`, or `run` (with `store`).
    fn source(&self) -> Result<Vec<String>, String> {
        let input = match self.0.get("input") {
            None | Some(Value::Null) => vec![],
            Some(_) => vec![self.text("input")?],
        };
        Ok([input, self.flag("run", "--run")?, self.flag("store", "--store")?].concat())
    }

    /// `params` as `--param NAME=VALUE`, in name order.
    fn params(&self) -> Result<Vec<String>, String> {
        let Some(params) = self.0.get("params").filter(|p| !p.is_null()) else { return Ok(vec![]) };
        let Value::Object(params) = params else { return Err("params: expected an object of NAME: VALUE".into()) };
        let mut out = Vec::new();
        let mut names: Vec<&String> = params.keys().collect();
        names.sort();
        for name in names {
            let value = match &params[name] {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(format!("params.{name}: expected a string or a number")),
            };
            out.extend(["--param".to_string(), format!("{name}={value}")]);
        }
        Ok(out)
    }
}
