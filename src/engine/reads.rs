//! The columns of the contract that SQL statements may read ([`ColumnsRead`]), found from
//! their words before any table exists, so that an in-memory analysis builds only those.
//!
//! The rule is conservative and needs the statement's words only (parsing a summary's
//! statements took ~4 ms before its decode could start; their words, [`plain_words`], a
//! small fraction of that):
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
use std::borrow::Cow;
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
    plain_words(sql).or_else(|| tokenized_words(sql)).map_or_else(ColumnsRead::every, Words::reads)
}

/// A statement's words (lowercased, outside strings and comments) and whether it reads
/// whole tables: a projection's `*`, or `NATURAL`.
struct Words<'a> {
    words: Vec<Cow<'a, str>>,
    whole: bool,
}

impl Words<'_> {
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
fn tokenized_words(sql: &str) -> Option<Words<'static>> {
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    let mut out = Words { words: Vec::new(), whole: false };
    let mut previous: Option<&Token> = None;
    for token in tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_))) {
        match token {
            Token::Word(w) => {
                out.whole |= w.keyword == Keyword::NATURAL;
                out.words.push(Cow::Owned(w.value.to_lowercase()));
            }
            Token::Mul => out.whole |= previous.is_some_and(starts_a_projection),
            _ => {}
        }
        previous = Some(token);
    }
    Some(out)
}

/// [`Words`] by a scan of the bytes, for text that keeps to what profq's own statements
/// use: ASCII outside strings, `--` comments, plain `'…'` strings and `"…"` identifiers.
/// None at anything whose tokens the scan could place differently from sqlparser's
/// (`/*` comments, `$` and backtick quoting, prefixed strings such as `E'…'`, `@`, `#` and
/// `?`, non-ASCII words, numbers running into letters); [`tokenized_words`] reads those.
///
/// It finds every word sqlparser's tokenizer finds (a few more: the digits of a number
/// such as `1.5`), and a whole-table read wherever sqlparser's tokens show one (a few
/// more: `(*)`), without allocating a token: the tokenizer's scans of a summary's statements
/// were ~7 % of a small capture's summary (session 47).
fn plain_words(sql: &str) -> Option<Words<'_>> {
    let bytes = sql.as_bytes();
    let mut out = Words { words: Vec::new(), whole: false };
    // Whether a `*` here would be a projection's: after SELECT, DISTINCT, ALL, `,` or `.`.
    let mut star_projects = false;
    let mut i = 0;
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' => i += 1,
            b'-' if bytes.get(i + 1) == Some(&b'-') => i = bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| i + n),
            quote @ (b'\'' | b'"') => {
                if i > 0 && (word_byte(bytes[i - 1]) || bytes[i - 1] == b'&') {
                    return None;
                }
                let end = i + 1 + bytes[i + 1..].iter().position(|&b| b == quote)?;
                if quote == b'"' {
                    out.words.push(Cow::Owned(sql[i + 1..end].to_lowercase()));
                }
                star_projects = false;
                i = end + 1;
            }
            b if word_byte(b) => {
                let end = bytes[i..].iter().position(|&b| !word_byte(b)).map_or(bytes.len(), |n| i + n);
                let word = &sql[i..end];
                if b.is_ascii_digit() && !word.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let is = |keyword: &str| word.eq_ignore_ascii_case(keyword);
                out.whole |= is("natural");
                star_projects = is("select") || is("distinct") || is("all");
                out.words.push(if word.bytes().any(|b| b.is_ascii_uppercase()) { Cow::Owned(word.to_ascii_lowercase()) } else { Cow::Borrowed(word) });
                i = end;
            }
            b'*' => {
                out.whole |= star_projects;
                star_projects = false;
                i += 1;
            }
            b',' | b'.' => {
                star_projects = true;
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => return None,
            // Quoting, and marks that sqlparser joins with the next character (`@-`, `#'`,
            // `?-`), so that a `--` or a quote after them may not start what it seems to.
            b'$' | b'`' | b'@' | b'#' | b'?' => return None,
            b if !b.is_ascii() => return None,
            // Other operators and brackets: a `*` after them is taken as a projection's if it
            // would have been before them (reading more, never less, than the tokens say).
            _ => i += 1,
        }
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

    /// The columns read as sqlparser's tokens show them.
    fn tokenized(sql: &str) -> ColumnsRead {
        tokenized_words(sql).map_or_else(ColumnsRead::every, Words::reads)
    }

    #[test]
    fn the_byte_scan_reads_what_the_tokens_read_or_more_or_leaves_the_text_to_them() {
        let texts = [
            "SELECT host FROM ops WHERE name = 'it''s -- not a comment' -- a comment: dur_ns\n AND step > 1.5",
            "SELECT \"Dur_NS\", x.* FROM ops x",
            "SELECT count(*), 2 * 3, sum(dur_ns)*2 FROM ops",
            "SELECT a#b, DISTINCT * FROM gaps NATURAL JOIN ops",
            "SELECT E'it\\'s' AS dur_ns, self_ns FROM ops",
            "SELECT q'[it's]' AS a, self_ns FROM ops",
            "SELECT $$it's$$ AS a, self_ns FROM ops",
            "SELECT `it's` AS a, self_ns FROM ops",
            "SELECT /* it's */ self_ns FROM ops",
            "SELECT 1self_ns, 0x1Fdur_ns FROM ops",
            "SELECT \u{212A}, self_ns FROM ops",
            "SELECT 1.*2 FROM ops",
        ];
        for sql in texts {
            let (scanned, tokens) = (statement_reads(sql), tokenized(sql));
            assert_eq!(scanned.first_missing(&tokens), None, "{sql}");
        }
        assert!(plain_words(texts[0]).is_some() && plain_words(texts[1]).is_some());
        assert!(texts[4..11].iter().all(|sql| plain_words(sql).is_none()));
        // `@-` is one word to sqlparser: the `--` after it starts no comment.
        assert!(plain_words("SELECT @--x\n").is_none());
        assert_eq!(statement_reads(texts[0]), tokenized(texts[0]));
        assert!(statement_reads(texts[1]).reads("ops", "flops") && statement_reads(texts[3]).reads("gaps", "payload_op"));
    }

    /// Texts made at random from SQL's pieces, quoting and comments among them: the byte
    /// scan never reads less than the tokens do (2.1 M texts of three seeds in session 47).
    #[test]
    fn on_random_texts_the_byte_scan_reads_at_least_what_the_tokens_read() {
        const PLAIN: [&str; 45] = [
            "SELECT", "select", "DISTINCT", "ALL", "NATURAL", "FROM", "ops", "gaps", "steps", "dur_ns", "self_ns", "host", "flops", "Gap_NS", "x", "1", "1.5",
            "*", ",", ".", "(", ")", "'", "''", "\"", "--", "\n", "*/", "&", "E", "q", "\\", "~", "!", "|", "<", "=", "%", "\x0c", "\t", "\r", "/", "[", "]",
            "U&",
        ];
        // Each of these makes the scan leave the text to the tokenizer.
        const RARE: [&str; 10] = ["/*", "$", "$$", "`", "#", "@", "?", "é", "0x1F", "2e5"];
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut scanned = 0;
        for _ in 0..20_000 {
            let len = 1 + next() % 24;
            let mut sql = String::new();
            for _ in 0..len {
                let (pieces, k): (&[&str], u64) = if next().is_multiple_of(40) { (&RARE, RARE.len() as u64) } else { (&PLAIN, PLAIN.len() as u64) };
                sql.push_str(pieces[(next() % k) as usize]);
                if !next().is_multiple_of(3) {
                    sql.push(' ');
                }
            }
            scanned += plain_words(&sql).is_some() as usize;
            assert_eq!(statement_reads(&sql).first_missing(&tokenized(&sql)), None, "{sql:?}");
        }
        assert!(scanned > 8_000, "only {scanned} texts took the byte scan");
    }

    #[test]
    fn every_named_query_tokenizes_and_a_summary_reads_few_columns_of_ops_and_gaps() {
        use crate::engine::queries::{ParamKind, QUERIES};
        for q in QUERIES {
            let value = |kind| if kind == ParamKind::Text { "x" } else { "1" };
            let values = q.params().into_iter().filter(|p| p.default.is_none()).map(|p| (p.name, value(p.kind).to_string())).collect();
            let sql = q.bind(&values).unwrap_or_else(|e| panic!("{}: {e}", q.name));
            assert!(!read(&sql).is_every(), "{} does not tokenize: its analyses would build every column", q.name);
            // profq's own statements take the byte scan, and it reads what the tokens read.
            assert!(plain_words(&sql).is_some(), "{}: the byte scan leaves it to the tokenizer", q.name);
            assert_eq!(read(&sql), tokenized(&sql), "{}", q.name);
        }
        // A `SELECT *` in a summary statement naming ops or gaps would build them whole.
        let statements = crate::summary::statements(&Default::default(), "input");
        let read = columns_read(statements.iter().map(|s| s.sql.as_str()));
        let columns = |t: &str| -> Vec<&str> { schema::table(t).unwrap().columns.iter().map(|c| c.name).filter(|c| read.reads(t, c)).collect() };
        assert_eq!(columns("ops"), ["host", "device", "line", "step", "dur_ns", "self_ns"]);
        assert!(columns("gaps").is_empty(), "{:?}", columns("gaps"));
    }
}
