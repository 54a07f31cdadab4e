//! Committing a staged run into a store, a directory or a bucket: the steps an ingest takes
//! under the writer lock, one method each, whichever place the store is in.

use super::location::Location;
use super::remote::{RemoteLock, RemoteStore};
use super::{Staged, Store};
use crate::remote::block_on;

/// The store a run is committed into.
pub enum Committer {
    Local(Store),
    Remote(RemoteStore),
}

/// A held writer lock, released when dropped.
pub enum Lock {
    Local(#[allow(dead_code)] std::fs::File),
    Remote(#[allow(dead_code)] RemoteLock),
}

impl Committer {
    pub fn open(location: &Location) -> Result<Committer, String> {
        match location {
            Location::Local(root) => Ok(Committer::Local(Store::open(root))),
            Location::Remote(url) => RemoteStore::open(url).map(Committer::Remote),
        }
    }

    /// Where a run is staged before it is committed: inside a local store (renames into
    /// place stay on one file system), in the cache for a bucket's. The cache's staging
    /// directories of writers that are gone are removed first.
    pub fn staging_store(&self) -> Store {
        match self {
            Committer::Local(store) => Store::open(&store.root),
            Committer::Remote(_) => {
                let scratch = Store::open(&crate::remote::mirror::cache_dir().join("staging"));
                scratch.clean_up();
                scratch
            }
        }
    }

    pub fn lock(&self) -> Result<Lock, String> {
        match self {
            Committer::Local(store) => store.lock().map(Lock::Local).map_err(|e| format!("{}: {e}", store.root.display())),
            Committer::Remote(remote) => remote.lock().map(Lock::Remote),
        }
    }

    /// Removes what killed writers left. Lock held.
    pub fn clean_up(&self) -> Result<(), String> {
        match self {
            Committer::Local(store) => {
                store.clean_up();
                Ok(())
            }
            Committer::Remote(remote) => block_on(remote.clean_up()),
        }
    }

    pub fn run_exists(&self, id: &str) -> Result<bool, String> {
        match self {
            Committer::Local(store) => Ok(store.run_exists(id)),
            Committer::Remote(remote) => block_on(remote.run_exists(id)),
        }
    }

    /// Deletes a committed run. Lock held.
    pub fn remove_run(&self, id: &str) -> Result<(), String> {
        match self {
            Committer::Local(store) => store.remove_run(id).map_err(|e| format!("{}: {e}", store.root.display())),
            Committer::Remote(remote) => block_on(remote.remove_run(id)),
        }
    }

    /// Makes a staged run visible under `run_id`, `runs` last; the staging copy is gone
    /// afterwards, committed or not. Lock held.
    pub fn commit(&self, staged: Staged, run_id: &str) -> Result<(), String> {
        let committed = match self {
            Committer::Local(store) => {
                let committed = store.commit(&staged, run_id);
                if committed.is_err() {
                    let _ = store.remove_run(run_id);
                }
                committed
            }
            Committer::Remote(remote) => block_on(remote.commit(&staged, run_id)),
        };
        staged.discard();
        committed
    }
}
