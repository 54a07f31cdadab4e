//! The house rules a reader of `src/` relies on, checked on the source text itself:
//! * the modules form layers in the order of the pipeline, and every import points down
//!   or sideways within a stage, never up, and never round a circle;
//! * no function outside tests is longer than a screen ([`MAX_FUNCTION_LINES`]);
//! * every `src/` path that a doc or the README cites exists;
//! * every `PROFQ_*` environment variable profq reads is in the one table of them
//!   (`docs/environment.md`), and that table lists no variable profq does not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's top-level modules, lowest first: each may import only from those before
/// it (and from itself). Process plumbing and the shared rules come first, then the
/// stages of the pipeline in the order a profile goes through them.
const LAYERS: &[&str] = &[
    "timing",
    "work_queue",
    "intervals",
    "stats",
    "process",
    "model",
    "decode",
    "tables",
    "remote",
    "store",
    "engine",
    "ingest",
    "source",
    "error",
    "summary",
    "compare",
    "export",
    "render",
    "wandb",
];

/// The longest a function outside tests may be, in lines.
const MAX_FUNCTION_LINES: usize = 150;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `text` with comments, string and char literals blanked (newlines kept, so line numbers
/// hold), leaving only the code's own tokens and braces.
fn code_only(text: &str) -> String {
    let s = text.as_bytes();
    let mut out = Vec::with_capacity(s.len());
    let blank = |out: &mut Vec<u8>, part: &[u8]| out.extend(part.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    let mut i = 0;
    while i < s.len() {
        let starts_word = i == 0 || !(s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_');
        if s[i..].starts_with(b"//") {
            let end = s[i..].iter().position(|&c| c == b'\n').map_or(s.len(), |p| i + p);
            blank(&mut out, &s[i..end]);
            i = end;
        } else if s[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < s.len() {
                if s[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if s[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &s[i..j]);
            i = j;
        } else if let Some((open, hashes)) = starts_word.then(|| raw_string_open(&s[i..])).flatten() {
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = (i + open..s.len()).find(|&j| s[j..].starts_with(&close)).unwrap() + close.len();
            blank(&mut out, &s[i..end]);
            i = end;
        } else if s[i] == b'"' {
            let mut j = i + 1;
            while s[j] != b'"' {
                j += if s[j] == b'\\' { 2 } else { 1 };
            }
            out.push(b'"');
            blank(&mut out, &s[i + 1..j]);
            out.push(b'"');
            i = j + 1;
        } else if s[i] == b'\'' {
            match char_literal_len(&s[i..]) {
                Some(n) => {
                    blank(&mut out, &s[i..i + n]);
                    i += n;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A raw string's opening at the start of `s` (`r"`, `r#"`, `br##"`): its length and its
/// number of `#`s.
fn raw_string_open(s: &[u8]) -> Option<(usize, usize)> {
    let after_b = usize::from(s.first() == Some(&b'b'));
    if s.get(after_b) != Some(&b'r') {
        return None;
    }
    let hashes = s[after_b + 1..].iter().take_while(|&&c| c == b'#').count();
    (s.get(after_b + 1 + hashes) == Some(&b'"')).then_some((after_b + 2 + hashes, hashes))
}

/// The length of a char literal at the start of `s` (`'x'`, `'\n'`, `'\''`, `'\u{1F600}'`),
/// or None for a lifetime.
fn char_literal_len(s: &[u8]) -> Option<usize> {
    if s.get(1) == Some(&b'\\') {
        // The escaped character itself may be a quote: the closing one comes after it.
        let close = s.iter().skip(3).position(|&c| c == b'\'')? + 3;
        return (close <= 11).then_some(close + 1);
    }
    let len = (1..=4).find(|&n| s.len() > n && std::str::from_utf8(&s[1..1 + n]).is_ok())?;
    (s.get(1 + len) == Some(&b'\'')).then_some(len + 2)
}

/// Byte ranges of `#[cfg(test)]` modules written inline.
fn test_modules(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        let rest = code[at + 12..].trim_start();
        let rest = rest.strip_prefix("pub ").unwrap_or(rest).trim_start();
        if rest.starts_with("mod ") {
            let open = code[at..].find(['{', ';']).map(|q| at + q).unwrap();
            if code.as_bytes()[open] == b'{' {
                out.push((at, matching_brace(code, open) + 1));
            }
        }
        from = at + 12;
    }
    out
}

/// The position of the brace that closes the one at `open`.
fn matching_brace(code: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in code.bytes().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces")
}

/// A library source file: its module path (`summary::ask` for `src/summary/ask.rs`,
/// `summary` for `src/summary/mod.rs`) and its code outside test modules.
struct Module {
    path: Vec<String>,
    code: String,
}

/// The library's modules: `src/` less the binary (`main.rs`, `cli/`) and test-only files.
fn library_modules() -> Vec<Module> {
    let src = root().join("src");
    rust_files(&src)
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&src).unwrap().with_extension("");
            let mut path: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if path[0] == "main" || path[0] == "cli" || path.last().is_some_and(|l| l == "tests") {
                return None;
            }
            if path.last().is_some_and(|l| l == "mod" || l == "lib") {
                path.pop();
            }
            let mut code = code_only(&std::fs::read_to_string(&file).unwrap());
            for (from, to) in test_modules(&code).into_iter().rev() {
                code.replace_range(from..to, "");
            }
            Some(Module { path, code })
        })
        .collect()
}

/// Every path that `code` names from `crate::` or `super::`, as segments (a `use` group is
/// expanded: `crate::a::{b, c::d}` names `a::b` and `a::c::d`), with `super` resolved
/// against module `at` (a file module: `super` is its parent).
fn referenced_paths(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(p) = code[from..].find(start) {
            let i = from + p;
            from = i + start.len();
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':') {
                continue;
            }
            let mut base: Vec<String> = if start == "crate::" { Vec::new() } else { at[..at.len().saturating_sub(1)].to_vec() };
            let mut j = from;
            // Further `super::`s climb on.
            while code[j..].starts_with("super::") {
                base.pop();
                j += 7;
            }
            use_tree(code, j, base, &mut out);
        }
    }
    out
}

/// Reads the path (or `{…}` group) at `at` below `prefix`, adding each path it names.
fn use_tree(code: &str, mut at: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let bytes = code.as_bytes();
    loop {
        while bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if bytes[at] == b'{' {
            at += 1;
            loop {
                while bytes[at].is_ascii_whitespace() || bytes[at] == b',' {
                    at += 1;
                }
                if bytes[at] == b'}' {
                    return at + 1;
                }
                // A token no path starts with (`*`) is stepped over.
                at = use_tree(code, at, prefix.clone(), out).max(at + 1);
            }
        }
        let end = at + code[at..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(code.len() - at);
        let word = &code[at..end];
        if !word.is_empty() && word != "self" {
            prefix.push(word.to_string());
        }
        at = end;
        if code[at..].starts_with("::") {
            at += 2;
            continue;
        }
        out.push(prefix);
        return at;
    }
}

/// The import graph between library modules: module → modules it names (through the
/// longest module path each reference starts with), leaving out a module's ancestors and
/// descendants (a folder's façade and its files are one stage).
fn import_graph(modules: &[Module]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<&Vec<String>> = modules.iter().map(|m| &m.path).collect();
    let related = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    modules
        .iter()
        .map(|m| {
            let targets = referenced_paths(&m.code, &m.path)
                .into_iter()
                .filter_map(|p| (1..=p.len()).rev().map(|k| p[..k].to_vec()).find(|prefix| known.contains(prefix)))
                .filter(|t| !related(t, &m.path))
                .collect();
            (m.path.clone(), targets)
        })
        .collect()
}

fn layer(path: &[String]) -> Option<usize> {
    LAYERS.iter().position(|l| path.first().is_some_and(|p| p == l))
}

#[test]
fn every_library_module_has_a_layer() {
    let unplaced: BTreeSet<String> = library_modules().iter().filter(|m| !m.path.is_empty() && layer(&m.path).is_none()).map(|m| m.path[0].clone()).collect();
    assert!(unplaced.is_empty(), "top-level modules missing from LAYERS: {unplaced:?}");
}

#[test]
fn imports_point_down_the_pipeline() {
    let modules = library_modules();
    let mut upward = Vec::new();
    for (from, targets) in import_graph(&modules) {
        for to in targets {
            if let (Some(a), Some(b)) = (layer(&from), layer(&to)) {
                if b > a {
                    upward.push(format!("{} -> {}", from.join("::"), to.join("::")));
                }
            }
        }
    }
    assert!(upward.is_empty(), "imports from a lower layer up to a higher one:\n{}", upward.join("\n"));
}

#[test]
fn no_import_circles() {
    let graph = import_graph(&library_modules());
    // Tarjan's strongly connected components; a component of more than one module is a circle.
    struct Walk<'g> {
        graph: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, (usize, usize)>,
        stack: Vec<&'g Vec<String>>,
        circles: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g Vec<String>) -> usize {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            let mut low = n;
            for w in self.graph.get(v).into_iter().flatten() {
                low = match self.index.get(w) {
                    None => low.min(self.visit(w)),
                    Some(&(i, _)) if self.stack.contains(&w) => low.min(i),
                    Some(_) => low,
                };
            }
            self.index.insert(v, (n, low));
            if low == n {
                let at = self.stack.iter().position(|x| *x == v).unwrap();
                let component: Vec<String> = self.stack.drain(at..).map(|m| m.join("::")).collect();
                if component.len() > 1 {
                    self.circles.push(component);
                }
            }
            low
        }
    }
    let mut walk = Walk { graph: &graph, index: BTreeMap::new(), stack: Vec::new(), circles: Vec::new() };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    assert!(walk.circles.is_empty(), "import circles: {:?}", walk.circles);
}

#[test]
fn the_import_reader_expands_groups_and_resolves_super() {
    let at = vec!["summary".to_string(), "ask".to_string()];
    let paths = referenced_paths(&code_only("use crate::a::{b, c::{d, self}};\nuse super::super::x::y;\nlet s = \"crate::no\";"), &at);
    let got: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(got, ["a::b", "a::c::d", "a::c", "x::y"]);
    assert!(code_only("let s = \"crate::no\"; // crate::no\nlet c = '{';").find("crate").is_none());
    assert_eq!(code_only("fn f<'a>(x: &'a str) -> char { '}' }").matches('}').count(), 1);
}

/// Functions of `code` (outside test modules) longer than `max` lines, as (lines, name, line).
fn long_functions(code: &str, max: usize) -> Vec<(usize, String, usize)> {
    let tests = test_modules(code);
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("fn ") {
        let at = from + p;
        from = at + 3;
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') || tests.iter().any(|&(a, b)| (a..b).contains(&at)) {
            continue;
        }
        let name: String = code[at + 3..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let Some(open) = code[at..].find(['{', ';']).map(|q| at + q) else { continue };
        if name.is_empty() || bytes[open] == b';' {
            continue;
        }
        let close = matching_brace(code, open);
        let lines = code[at..=close].matches('\n').count() + 1;
        if lines > max {
            out.push((lines, name, code[..at].matches('\n').count() + 1));
        }
    }
    out
}

#[test]
fn functions_fit_one_screen() {
    let mut long = Vec::new();
    for file in rust_files(&root().join("src")) {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        for (lines, name, line) in long_functions(&code, MAX_FUNCTION_LINES) {
            long.push(format!("{}:{line} {name}: {lines} lines", file.strip_prefix(root()).unwrap().display()));
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines:\n{}", long.join("\n"));
}

/// The docs a reader follows: README, CONTRIBUTING-style pages under `docs/`, the queries'
/// and benches' own notes.
fn docs() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    for dir in ["docs", "benches", "tests/data", "skills"] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The source paths a text cites: every `src/…` path, and every path in backticks that starts
/// at a folder of the repo's code or a module of `src/` (the docs write them relative to the
/// repo or to `src/`: `queries/hot_ops.sql`, `decode/xplane/events.rs`, `store/part_file/`).
fn cited_source_paths(text: &str) -> Vec<String> {
    let src = root().join("src");
    let starts_at_code = |path: &str| {
        let first = path.split('/').next().unwrap_or("");
        !first.is_empty()
            && (["src", "queries", "tests", "benches", "docs", "tools", "proto", "fuzz"].contains(&first)
                || src.join(first).is_dir()
                || src.join(format!("{first}.rs")).is_file())
    };
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = text[from..].find("src/") {
        let at = from + p;
        from = at + 4;
        let before = text[..at].chars().next_back();
        if before.is_some_and(path_char) {
            continue;
        }
        let path: String = text[at..].chars().take_while(|&c| path_char(c)).collect();
        out.push(path.trim_end_matches(['.', ',']).to_string());
    }
    for (i, quoted) in text.split('`').enumerate() {
        let code_file = [".rs", ".sql", ".sh", ".py"].iter().any(|x| quoted.ends_with(x));
        let folder = quoted.ends_with('/') && quoted.contains(|c: char| c.is_ascii_lowercase());
        if i % 2 == 1 && (code_file || folder) && quoted.contains('/') && quoted.chars().all(path_char) && starts_at_code(quoted) {
            out.push(quoted.to_string());
        }
    }
    out
}

#[test]
fn docs_cite_source_paths_that_exist() {
    let mut missing = Vec::new();
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for path in cited_source_paths(&text) {
            if !root().join(&path).exists() && !root().join("src").join(&path).exists() {
                missing.push(format!("{}: {path}", doc.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "docs cite source paths that do not exist:\n{}", missing.join("\n"));
}

/// The `PROFQ_*` names in `text`.
fn profq_variables(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut from = 0;
    while let Some(p) = text[from..].find("PROFQ_") {
        let at = from + p;
        from = at + 6;
        let name: String = text[at..].chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
        if name.len() > 6 && !name.ends_with('_') {
            out.insert(name);
        }
    }
    out
}

#[test]
fn every_environment_variable_is_in_the_one_table() {
    let mut read = BTreeSet::new();
    for file in rust_files(&root().join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        // Only what the code reads: names in string literals of `src/`, outside test modules.
        let mut code = text.clone();
        for (from, to) in test_modules(&code_only(&text)).into_iter().rev() {
            code.replace_range(from..to, "");
        }
        for name in profq_variables(&code) {
            if code.contains(&format!("\"{name}\"")) {
                read.insert(name);
            }
        }
    }
    let table = std::fs::read_to_string(root().join("docs/environment.md")).unwrap();
    let listed: BTreeSet<String> = table.lines().filter(|l| l.starts_with("| `PROFQ_")).flat_map(profq_variables).collect();
    let unlisted: Vec<_> = read.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&read).collect();
    assert!(unlisted.is_empty(), "PROFQ_ variables read in src/ but not in docs/environment.md: {unlisted:?}");
    assert!(stale.is_empty(), "docs/environment.md lists variables src/ never reads: {stale:?}");
}
