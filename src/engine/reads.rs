//! The columns of the contract that SQL statements may read ([`ColumnsRead`]), found from
//! their words before any table exists, so that an in-memory analysis builds only those.
//!
//! The rule is conservative and needs only the statement's tokens, from sqlparser's own
//! tokenizer (not a parse, which would cost more than the decode it lets start):
//! a statement reads the contract tables whose names are words of it, and of those the
//! columns whose names are words of it; every column of them where it selects `*` or `t.*`
//! anywhere (even from a CTE: write a CTE's columns out), joins `NATURAL`, or does not
//! tokenize. Over-counting costs only memory; missing a column would give wrong answers,
//! which is why [`crate::engine::Engine::plan`] refuses a statement that reads a column its
//! tables were built without (it takes the statements they were built from as read).

use crate::tables::columns_read::ColumnsRead;
use crate::tables::schema;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use std::collections::HashSet;

/// What an analysis's tables are built to answer: the columns they hold, and the statements
/// known ahead whose reads those columns were found from ([`Declared::of`]). The engine's
/// guard ([`Declared::first_missing`]) scans only statements not among them.
#[derive(Clone, Debug)]
pub struct Declared {
    pub columns: ColumnsRead,
    statements: HashSet<String>,
}

impl Declared {
    /// Tables built with the columns `statements` read.
    pub fn of(statements: impl IntoIterator<Item = String>) -> Declared {
        let statements: HashSet<String> = statements.into_iter().collect();
        Declared { columns: columns_read(statements.iter().map(String::as_str)), statements }
    }

    /// Tables built with `columns`, no statement known ahead.
    pub fn columns(columns: ColumnsRead) -> Declared {
        Declared { columns, statements: HashSet::new() }
    }

    /// The first column (table, column) `sql` may read that the tables were built without.
    pub fn first_missing(&self, sql: &str) -> Option<(&'static str, &'static str)> {
        if self.columns.is_every() || self.statements.contains(sql) {
            return None;
        }
        self.columns.first_missing(&columns_read([sql]))
    }
}

/// The columns `statements` may read, together.
pub fn columns_read<'a>(statements: impl IntoIterator<Item = &'a str>) -> ColumnsRead {
    let mut read = ColumnsRead::none();
    for sql in statements {
        read.add_all(&statement_reads(sql));
    }
    read
}

/// The columns one SQL text may read.
fn statement_reads(sql: &str) -> ColumnsRead {
    tokenized_words(sql).map_or_else(ColumnsRead::every, Words::reads)
}

/// A statement's words (lowercased, outside strings and comments) and whether it reads
/// whole tables: a projection's `*`, or `NATURAL`.
struct Words {
    words: Vec<String>,
    whole: bool,
}

impl Words {
    /// The columns of the contract a statement with these words may read.
    fn reads(self) -> ColumnsRead {
        let Words { mut words, whole } = self;
        words.sort_unstable();
        words.dedup();
        let mut read = ColumnsRead::none();
        for table in words.iter().filter_map(|w| schema::table(w)) {
            if whole {
                read.add(table.name, None);
            } else {
                words.iter().for_each(|w| read.add(table.name, Some(w)));
            }
        }
        read
    }
}

/// [`Words`] from sqlparser's tokens; None where the text does not tokenize.
fn tokenized_words(sql: &str) -> Option<Words> {
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    let mut out = Words { words: Vec::new(), whole: false };
    let mut previous: Option<&Token> = None;
    for token in tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_))) {
        match token {
            Token::Word(w) => {
                out.whole |= w.keyword == Keyword::NATURAL;
                out.words.push(w.value.to_lowercase());
            }
            Token::Mul => out.whole |= previous.is_some_and(starts_a_projection),
            _ => {}
        }
        previous = Some(token);
    }
    Some(out)
}

/// Whether a `*` after `token` is a projection's wildcard (`SELECT *`, `, *`, `t.*`), not a
/// product or `count(*)`.
fn starts_a_projection(token: &Token) -> bool {
    match token {
        Token::Word(w) => matches!(w.keyword, Keyword::SELECT | Keyword::DISTINCT | Keyword::ALL),
        Token::Comma | Token::Period => true,
        _ => false,
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
        assert!(read("SELECT host FROM ops WHERE name = 'unterminated").reads("events", "args"));
        // A star anywhere reads the tables named whole, even over a CTE.
        assert!(read("WITH x AS (SELECT host, step FROM ops) SELECT * FROM x").reads("ops", "flops"));
        // Products and count(*) are not stars of a projection.
        let r = read("SELECT count(*), sum(dur_ns * 2), 3*4 FROM ops");
        assert!(r.reads("ops", "dur_ns") && !r.reads("ops", "flops"));
        // Any contract column read: words that name no column add nothing.
        let r = read("SELECT 'flops' AS label, dur_ns * 2 AS twice FROM ops");
        assert!(r.reads("ops", "dur_ns") && !r.reads("ops", "flops"));
    }

    #[test]
    fn every_named_query_tokenizes_and_a_summary_reads_few_columns_of_ops_and_gaps() {
        use crate::engine::queries::{ParamKind, QUERIES};
        for q in QUERIES {
            let value = |kind| if kind == ParamKind::Text { "x" } else { "1" };
            let values = q.params().into_iter().filter(|p| p.default.is_none()).map(|p| (p.name, value(p.kind).to_string())).collect();
            let sql = q.bind(&values).unwrap_or_else(|e| panic!("{}: {e}", q.name));
            assert!(!read(&sql).is_every(), "{} does not tokenize: its analyses would build every column", q.name);
        }
        // A `SELECT *` in a summary statement naming ops or gaps would build them whole.
        let statements = crate::summary::statements(&Default::default(), "input");
        let read = columns_read(statements.iter().map(|s| s.sql.as_str()));
        let columns = |t: &str| -> Vec<&str> { schema::table(t).unwrap().columns.iter().map(|c| c.name).filter(|c| read.reads(t, c)).collect() };
        assert_eq!(columns("ops"), ["host", "device", "line", "step", "dur_ns", "self_ns"]);
        assert!(columns("gaps").is_empty(), "{:?}", columns("gaps"));
    }
}
