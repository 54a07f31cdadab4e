//! Where a store lives, a local directory or a bucket prefix, and what readers ask of it:
//! which runs are committed, which tables a run has, and the URL of each table's files.
//!
//! A run is committed once its `runs` partition exists, in either place. In a bucket a
//! partition exists only while it holds objects (there are no empty directories), and the
//! `runs` partition is written by one create-if-absent put, so a listed `runs` partition is
//! a committed run.

use super::remote::RemoteStore;
use super::Store;
use crate::remote::{describe, is_url, ObjectUrl};
use crate::tables::schema;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Local(PathBuf),
    Remote(ObjectUrl),
}

impl Location {
    /// A store named on the command line or in `PROFQ_STORE`: `s3://…` or `gs://…`, else a
    /// directory.
    pub fn parse(text: &str) -> Result<Location, String> {
        if is_url(text) {
            return ObjectUrl::parse(text).map(Location::Remote).map_err(|e| format!("{text}: {e}"));
        }
        Ok(Location::Local(PathBuf::from(text)))
    }

    /// The default store: `$PROFQ_STORE`, else `./profq-store`.
    pub fn default_store() -> Result<Location, String> {
        match std::env::var("PROFQ_STORE") {
            Ok(text) if !text.is_empty() => Location::parse(&text).map_err(|e| format!("PROFQ_STORE: {e}")),
            _ => Ok(Location::Local(PathBuf::from("profq-store"))),
        }
    }

    /// Whether run `id` is committed.
    pub async fn run_exists(&self, id: &str) -> Result<bool, String> {
        match self {
            Location::Local(root) => Ok(Store::open(root).run_exists(id)),
            Location::Remote(url) => RemoteStore::open(url)?.run_exists(id).await,
        }
    }

    /// The committed run ids, sorted.
    pub async fn run_ids(&self) -> Result<Vec<String>, String> {
        match self {
            Location::Local(root) => Ok(Store::open(root).run_ids()),
            Location::Remote(url) => RemoteStore::open(url)?.run_ids().await,
        }
    }

    /// Tables of the contract that run `id` has no partition of: `runs` when it is not
    /// committed (see [`Store::tables_missing`]).
    pub async fn tables_missing(&self, id: &str) -> Result<Vec<&'static str>, String> {
        match self {
            Location::Local(root) => Ok(Store::open(root).tables_missing(id)),
            Location::Remote(url) => RemoteStore::open(url)?.tables_missing(id).await,
        }
    }

    /// The URL of each table that has files (`…/<table>/`), for a listing table over it.
    pub async fn table_urls(&self) -> Result<BTreeMap<&'static str, String>, String> {
        let mut urls = BTreeMap::new();
        match self {
            Location::Local(root) => {
                for t in schema::TABLES {
                    let dir = root.join(t.name);
                    if std::fs::read_dir(&dir).is_ok_and(|mut rd| rd.next().is_some()) {
                        let abs = std::fs::canonicalize(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                        urls.insert(t.name, format!("{}/", abs.display()));
                    }
                }
            }
            Location::Remote(url) => {
                let store = url.store()?;
                let root = url.key_of("");
                let prefix = (!url.key.is_empty()).then_some(&root);
                let listed = store.list_with_delimiter(prefix).await.map_err(|e| format!("{url}: {}", describe(&e)))?;
                for dir in listed.common_prefixes {
                    if let Some(t) = dir.filename().and_then(|name| schema::TABLES.iter().find(|t| t.name == name)) {
                        urls.insert(t.name, format!("{}/", url.url_of(&dir)));
                    }
                }
            }
        }
        Ok(urls)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Local(root) => write!(f, "{}", root.display()),
            Location::Remote(url) => write!(f, "{url}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_directories_and_buckets() {
        assert_eq!(Location::parse("some/dir").unwrap(), Location::Local(PathBuf::from("some/dir")));
        assert!(matches!(Location::parse("s3://b/p").unwrap(), Location::Remote(u) if u.key == "p"));
        assert!(Location::parse("ftp://host/x").unwrap_err().contains("unsupported scheme"));
        assert_eq!(Location::parse("gs://b/x/").unwrap().to_string(), "gs://b/x");
    }
}
