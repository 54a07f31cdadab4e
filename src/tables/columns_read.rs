//! Which columns of the contract an in-memory analysis reads, so that its largest tables
//! (`ops`, `gaps`) are built with those columns only.
//!
//! A summary of an INPUT reads 6 of the columns of `ops` and none of `gaps`; building the
//! others would cost time and, on large inputs, a good part of the peak memory
//! (docs/architecture.md, Column pruning). The engine finds the columns from the analysis' SQL before
//! the decode starts ([`crate::engine::reads`]), and refuses any later statement that would
//! read a column left out, so that no statement can compute on a column that was not built.

use super::schema;
use std::collections::{BTreeMap, BTreeSet};

/// Per table of the contract, the columns some statement may read (an upper bound: a
/// builder may build more).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnsRead {
    /// None: every column of every table.
    only: Option<BTreeMap<&'static str, BTreeSet<&'static str>>>,
}

impl ColumnsRead {
    /// Every column of every table (an analysis whose statements are not known ahead).
    pub fn every() -> ColumnsRead {
        ColumnsRead { only: None }
    }

    /// No column of any table; [`ColumnsRead::add`] adds them.
    pub fn none() -> ColumnsRead {
        ColumnsRead { only: Some(BTreeMap::new()) }
    }

    pub fn is_every(&self) -> bool {
        self.only.is_none()
    }

    /// Adds `column` of `table` (every column of it for `None`); names outside the contract
    /// are ignored (they are columns of other tables, aliases or words of the SQL).
    pub fn add(&mut self, table: &str, column: Option<&str>) {
        let (Some(only), Some(t)) = (&mut self.only, schema::table(table)) else { return };
        let read = only.entry(t.name).or_default();
        read.extend(t.columns.iter().map(|c| c.name).filter(|&c| column.is_none_or(|wanted| wanted == c)));
    }

    /// Adds every column `other` reads.
    pub fn add_all(&mut self, other: &ColumnsRead) {
        match &other.only {
            None => self.only = None,
            Some(tables) => {
                for (table, columns) in tables {
                    columns.iter().for_each(|c| self.add(table, Some(c)));
                }
            }
        }
    }

    pub fn reads(&self, table: &str, column: &str) -> bool {
        match &self.only {
            None => true,
            Some(tables) => tables.get(table).is_some_and(|columns| columns.contains(column)),
        }
    }

    /// Whether some statement may read a column of `table`.
    pub fn reads_any(&self, table: &str) -> bool {
        match &self.only {
            None => true,
            Some(tables) => tables.get(table).is_some_and(|columns| !columns.is_empty()),
        }
    }

    /// The first column (table, column), in the contract's order, that `needed` reads and
    /// this does not.
    pub fn first_missing(&self, needed: &ColumnsRead) -> Option<(&'static str, &'static str)> {
        let mut columns = schema::TABLES.iter().flat_map(|t| t.columns.iter().map(move |c| (t.name, c.name)));
        columns.find(|&(t, c)| needed.reads(t, c) && !self.reads(t, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_contract_columns_are_added_and_every_covers_all() {
        let mut read = ColumnsRead::none();
        read.add("ops", Some("dur_ns"));
        read.add("ops", Some("busy_ns")); // a column of steps, not of ops
        read.add("nosuch", Some("dur_ns"));
        assert!(read.reads("ops", "dur_ns"));
        assert!(!read.reads("ops", "busy_ns") && !read.reads("steps", "dur_ns"));
        let mut gaps = ColumnsRead::none();
        gaps.add("gaps", None);
        assert_eq!(read.first_missing(&gaps), Some(("gaps", "host")));
        read.add_all(&gaps);
        assert_eq!(read.first_missing(&gaps), None);
        assert_eq!(read.first_missing(&ColumnsRead::every()), Some(("runs", "source_path")));
        assert_eq!(ColumnsRead::every().first_missing(&ColumnsRead::every()), None);
    }
}
