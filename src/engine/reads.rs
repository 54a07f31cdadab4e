//! The columns of the contract that SQL statements may read ([`ColumnsRead`]), found from
//! their text before any table exists, so that an in-memory analysis builds only those.
//!
//! The rule is conservative: a statement reads a column of a table it names when the
//! column's name is a word anywhere in the statement, and every column of a table that a
//! `SELECT *` (or `t.*`) selects from or a `NATURAL` join joins. A statement that does not
//! parse reads every column. Over-counting costs only memory; missing a column would give
//! wrong answers, which is why [`crate::engine::Engine::plan`] refuses a statement that
//! reads a column its tables were built without.

use crate::tables::columns_read::ColumnsRead;
use crate::tables::schema;
use datafusion::sql::sqlparser::ast::{visit_relations, ObjectName, Select, SelectItem, Visit, Visitor};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// The columns `statements` may read, together.
pub fn columns_read<'a>(statements: impl IntoIterator<Item = &'a str>) -> ColumnsRead {
    let mut read = ColumnsRead::none();
    for sql in statements {
        read.add_all(&statement_reads(sql));
    }
    read
}

/// The columns one SQL text (one or more statements) may read.
fn statement_reads(sql: &str) -> ColumnsRead {
    let dialect = GenericDialect {};
    let (Ok(tokens), Ok(statements)) = (Tokenizer::new(&dialect, sql).tokenize(), Parser::parse_sql(&dialect, sql)) else {
        return ColumnsRead::every();
    };
    let mut words = BTreeSet::new();
    let mut natural = false;
    for token in &tokens {
        if let Token::Word(w) = token {
            natural |= w.keyword == Keyword::NATURAL;
            words.insert(w.value.to_lowercase());
        }
    }
    let mut tables = BTreeSet::new();
    let _ = visit_relations(&statements, |name| {
        tables.extend(contract_table(name));
        ControlFlow::<()>::Continue(())
    });
    let mut whole = Wildcards::default();
    let _ = statements.visit(&mut whole);
    let mut read = ColumnsRead::none();
    for table in tables {
        if natural || whole.tables.contains(table) {
            read.add(table, None);
        } else {
            words.iter().for_each(|w| read.add(table, Some(w)));
        }
    }
    read
}

/// The contract table a relation names, if any (a CTE or alias names none).
fn contract_table(name: &ObjectName) -> Option<&'static str> {
    let last = name.0.last()?.as_ident()?.value.to_lowercase();
    schema::table(&last).map(|t| t.name)
}

/// The contract tables that some `SELECT *` or `SELECT t.*` selects from.
#[derive(Default)]
struct Wildcards {
    tables: BTreeSet<&'static str>,
}

impl Visitor for Wildcards {
    type Break = ();
    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        if select.projection.iter().any(|item| matches!(item, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..))) {
            let _ = visit_relations(&select.from, |name| {
                self.tables.extend(contract_table(name));
                ControlFlow::<()>::Continue(())
            });
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> ColumnsRead {
        columns_read([sql])
    }

    #[test]
    fn a_column_is_read_where_its_table_and_its_name_appear() {
        let r = read("SELECT host, sum(o.dur_ns) FROM ops o JOIN steps s USING (step) GROUP BY host");
        for (t, c) in [("ops", "host"), ("ops", "dur_ns"), ("ops", "step"), ("steps", "host"), ("steps", "step"), ("steps", "dur_ns")] {
            assert!(r.reads(t, c), "{t}.{c}");
        }
        assert!(!r.reads("ops", "self_ns") && !r.reads("gaps", "host"));
        // count(*) reads rows, not columns.
        let r = read("SELECT count(*) FROM gaps");
        assert!(!r.reads("gaps", "gap_ns"));
    }

    #[test]
    fn wildcards_natural_joins_and_unparsable_sql_read_whole_tables() {
        assert!(read("SELECT * FROM ops").reads("ops", "flops"));
        assert!(read("SELECT o.* FROM ops o").reads("ops", "flops"));
        assert!(read("SELECT host FROM ops NATURAL JOIN gaps").reads("gaps", "payload_op"));
        assert!(read("SELEC host FROM ops").reads("events", "args"));
        // A star over a CTE reads only what the CTE selects.
        let r = read("WITH x AS (SELECT host, step FROM ops) SELECT * FROM x");
        assert!(r.reads("ops", "step") && !r.reads("ops", "flops"));
        // Any contract column read: words that name no column add nothing.
        let r = read("SELECT 'flops' AS label, dur_ns * 2 AS twice FROM ops");
        assert!(r.reads("ops", "dur_ns") && !r.reads("ops", "flops"));
    }

    #[test]
    fn every_named_query_parses_so_that_analyses_build_only_what_they_read() {
        use crate::engine::queries::{ParamKind, QUERIES};
        for q in QUERIES {
            let value = |kind| if kind == ParamKind::Text { "x" } else { "1" };
            let values = q.params().into_iter().filter(|p| p.default.is_none()).map(|p| (p.name, value(p.kind).to_string())).collect();
            let sql = q.bind(&values).unwrap_or_else(|e| panic!("{}: {e}", q.name));
            assert!(!read(&sql).is_every(), "{} does not parse as generic SQL: its analyses would build every column", q.name);
        }
    }
}
