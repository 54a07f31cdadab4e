//! A store in a bucket: the same layout and promises as a local store (`store`), kept with
//! object-storage operations instead of renames and file locks.
//!
//! A run is written locally first (a staging directory in the cache, by the same writer as a
//! local store), then, holding the store's lock object:
//! 1. its part files are uploaded under `<prefix>/.staging/<writer>/`;
//! 2. they are copied into place table by table (`<table>/run_id=<id>/part-<k>.parquet`);
//! 3. its `runs` part is put last with create-if-absent: the commit point. A reader sees
//!    the run only once that object exists;
//! 4. the staging objects are deleted.
//!
//! The lock is `<prefix>/.lock`, created if absent and holding who took it and until when.
//! A lock past its expiry (`PROFQ_LOCK_TTL_S`, default 30 min), or taken on this host by a
//! process that is gone, is stale and taken over. With the lock held, a writer removes what
//! killed writers left: every staging object, and the partitions of runs never committed.

use super::{commit_key, partition_key, Staged, PART_FILE};
use crate::remote::{block_on, describe, ObjectUrl};
use crate::tables::schema;
use crate::timing::now_ns;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload, WriteMultipart};
use serde_json::json;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Part files up to this size are uploaded in one request; larger ones in parts of this size.
const SINGLE_PUT_BYTES: u64 = 32 << 20;
/// Uploads, copies and deletes in flight at once.
const REQUESTS_IN_FLIGHT: usize = 8;
/// How long a lock is good for unless `PROFQ_LOCK_TTL_S` says otherwise.
const DEFAULT_LOCK_TTL_S: u64 = 30 * 60;
/// How long a writer waits for another's lock unless `PROFQ_LOCK_WAIT_S` says otherwise.
const DEFAULT_LOCK_WAIT_S: u64 = 60 * 60;

#[derive(Clone)]
pub struct RemoteStore {
    pub url: ObjectUrl,
    store: Arc<dyn ObjectStore>,
}

fn seconds_from_env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

impl RemoteStore {
    pub fn open(url: &ObjectUrl) -> Result<RemoteStore, String> {
        Ok(RemoteStore { url: url.clone(), store: url.store()? })
    }

    fn failed(&self, key: &ObjectPath, e: object_store::Error) -> String {
        format!("{}: {}", self.url.url_of(key), describe(&e))
    }

    pub async fn run_exists(&self, id: &str) -> Result<bool, String> {
        let key = commit_key(&self.url, id);
        match self.store.head(&key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.failed(&key, e)),
        }
    }

    /// Run ids with a partition in `table` (for `runs`: the committed runs), sorted.
    async fn partitions(&self, table: &str) -> Result<Vec<String>, String> {
        let dir = self.url.key_of(table);
        let listed = self.store.list_with_delimiter(Some(&dir)).await.map_err(|e| self.failed(&dir, e))?;
        let mut ids: Vec<String> = listed.common_prefixes.iter().filter_map(|p| p.filename()?.strip_prefix("run_id=").map(str::to_string)).collect();
        ids.sort();
        Ok(ids)
    }

    pub async fn run_ids(&self) -> Result<Vec<String>, String> {
        self.partitions("runs").await
    }

    pub async fn tables_missing(&self, id: &str) -> Result<Vec<&'static str>, String> {
        let listed = futures::stream::iter(schema::TABLES.iter())
            .map(|t| async move {
                let key = partition_key(&self.url, t.name, id);
                let first = self.store.list(Some(&key)).next().await;
                match first {
                    Some(Err(e)) => Err(self.failed(&key, e)),
                    found => Ok((t.name, found.is_some())),
                }
            })
            .buffered(REQUESTS_IN_FLIGHT)
            .try_collect::<Vec<_>>()
            .await?;
        Ok(listed.into_iter().filter(|(_, found)| !found).map(|(t, _)| t).collect())
    }

    /// Deletes every object under `prefix`.
    async fn delete_under(&self, prefix: &ObjectPath) -> Result<(), String> {
        let keys = self.store.list(Some(prefix)).map_ok(|m| m.location).boxed();
        self.store.delete_stream(keys).try_collect::<Vec<_>>().await.map_err(|e| self.failed(prefix, e))?;
        Ok(())
    }

    /// Deletes a committed run, its `runs` partition first so that it disappears at once.
    pub async fn remove_run(&self, id: &str) -> Result<(), String> {
        self.delete_under(&partition_key(&self.url, "runs", id)).await?;
        for t in schema::TABLES.iter().filter(|t| t.name != "runs") {
            self.delete_under(&partition_key(&self.url, t.name, id)).await?;
        }
        Ok(())
    }

    /// Removes what killed writers left: staging objects, and partitions of runs never
    /// committed. Lock held.
    pub async fn clean_up(&self) -> Result<(), String> {
        self.delete_under(&self.url.key_of(".staging")).await?;
        let committed = self.run_ids().await?;
        for t in schema::TABLES.iter().filter(|t| t.name != "runs") {
            for id in self.partitions(t.name).await? {
                if committed.binary_search(&id).is_err() {
                    self.delete_under(&partition_key(&self.url, t.name, &id)).await?;
                }
            }
        }
        Ok(())
    }

    /// Uploads a run staged locally and commits it under `run_id` (see the module's steps).
    /// Lock held. On failure the run is not visible; what was uploaded is left for the next
    /// writer's clean-up when it cannot be deleted now.
    pub async fn commit(&self, staged: &Staged, run_id: &str) -> Result<(), String> {
        let writer = staged.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "writer".into());
        let staging = self.url.key_of(&format!(".staging/{writer}"));
        let files = staged_files(staged)?;
        let committed = self.upload_and_place(&files, &staging, run_id).await;
        let removed = self.delete_under(&staging).await;
        if committed.is_err() && self.run_exists(run_id).await == Ok(false) {
            let _ = self.remove_partitions(run_id).await;
        }
        committed.and(removed)
    }

    async fn upload_and_place(&self, files: &[(String, PathBuf)], staging: &ObjectPath, run_id: &str) -> Result<(), String> {
        let staging_key = |table: &str, path: &Path| ObjectPath::from(format!("{staging}/{table}/{}", file_name(path)));
        futures::stream::iter(files)
            .map(|(table, path)| self.upload(path, staging_key(table, path)))
            .buffer_unordered(REQUESTS_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        let place = |table: &str, path: &Path| partition_key(&self.url, table, run_id).join(file_name(path).as_str());
        // Every table but `runs`, then the `runs` parts but the one that commits.
        let ordered: Vec<&(String, PathBuf)> =
            files.iter().filter(|(t, _)| t != "runs").chain(files.iter().filter(|(t, p)| t == "runs" && file_name(p) != PART_FILE)).collect();
        for table in schema::TABLES.iter().map(|t| t.name) {
            futures::stream::iter(ordered.iter().filter(|(t, _)| t == table))
                .map(|(t, p)| async move {
                    let (from, to) = (staging_key(t, p), place(t, p));
                    self.store.copy(&from, &to).await.map_err(|e| self.failed(&to, e))
                })
                .buffer_unordered(REQUESTS_IN_FLIGHT)
                .try_collect::<Vec<()>>()
                .await?;
        }
        let (_, runs_part) = files.iter().find(|(t, p)| t == "runs" && file_name(p) == PART_FILE).ok_or("the staged run has no runs part")?;
        let bytes = std::fs::read(runs_part).map_err(|e| format!("{}: {e}", runs_part.display()))?;
        let key = commit_key(&self.url, run_id);
        match self.store.put_opts(&key, PutPayload::from(bytes), PutMode::Create.into()).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => Err(format!("run {run_id:?} was committed to {} by another writer meanwhile", self.url)),
            Err(e) => Err(self.failed(&key, e)),
        }
    }

    /// Deletes the partitions of an uncommitted run (its `runs` partition does not exist).
    async fn remove_partitions(&self, run_id: &str) -> Result<(), String> {
        for t in schema::TABLES.iter().filter(|t| t.name != "runs") {
            self.delete_under(&partition_key(&self.url, t.name, run_id)).await?;
        }
        Ok(())
    }

    /// Uploads one local file: whole when small, in parts otherwise (a part in memory at a time).
    async fn upload(&self, path: &Path, key: ObjectPath) -> Result<(), String> {
        let local_err = |e: std::io::Error| format!("{}: {e}", path.display());
        let size = std::fs::metadata(path).map_err(local_err)?.len();
        if size <= SINGLE_PUT_BYTES {
            let bytes = std::fs::read(path).map_err(local_err)?;
            self.store.put(&key, PutPayload::from(bytes)).await.map_err(|e| self.failed(&key, e))?;
            return Ok(());
        }
        let upload = self.store.put_multipart(&key).await.map_err(|e| self.failed(&key, e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, SINGLE_PUT_BYTES as usize);
        let mut file = std::fs::File::open(path).map_err(local_err)?;
        let mut chunk = vec![0u8; SINGLE_PUT_BYTES as usize];
        loop {
            let n = file.read(&mut chunk).map_err(local_err)?;
            if n == 0 {
                break;
            }
            if let Err(e) = writer.wait_for_capacity(REQUESTS_IN_FLIGHT / 2).await {
                return Err(self.failed(&key, e));
            }
            writer.write(&chunk[..n]);
        }
        writer.finish().await.map_err(|e| self.failed(&key, e))?;
        Ok(())
    }

    /// Takes the store's lock object, waiting while another live writer holds it.
    pub fn lock(&self) -> Result<RemoteLock, String> {
        block_on(self.take_lock())
    }

    async fn take_lock(&self) -> Result<RemoteLock, String> {
        let key = self.url.key_of(".lock");
        let ttl = seconds_from_env("PROFQ_LOCK_TTL_S", DEFAULT_LOCK_TTL_S);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds_from_env("PROFQ_LOCK_WAIT_S", DEFAULT_LOCK_WAIT_S));
        let mut pause = std::time::Duration::from_millis(100);
        loop {
            let started = now_ns();
            let body = json!({"host": host_name(), "pid": std::process::id(), "started_ns": started, "expires_ns": started + (ttl as i64) * 1_000_000_000})
                .to_string();
            match self.store.put_opts(&key, PutPayload::from(body.clone().into_bytes()), PutMode::Create.into()).await {
                Ok(_) => return Ok(RemoteLock { store: self.clone(), key, body }),
                Err(object_store::Error::AlreadyExists { .. }) | Err(object_store::Error::Precondition { .. }) => {}
                Err(e) => return Err(format!("cannot lock {}: {}", self.url, describe(&e))),
            }
            let holder = match self.store.get(&key).await {
                Ok(got) => got.bytes().await.ok().and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok()),
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(format!("cannot read the lock of {}: {}", self.url, describe(&e))),
            };
            if holder.as_ref().is_none_or(is_stale) {
                // Stale, or unreadable (a writer killed while creating it): take it over.
                let _ = self.store.delete(&key).await;
                continue;
            }
            if std::time::Instant::now() >= deadline {
                let who = holder.map(|h| format!("{} pid {}", h["host"].as_str().unwrap_or("?"), h["pid"])).unwrap_or_default();
                return Err(format!("{} is locked by another writer ({who}); gave up waiting", self.url));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_secs(2));
        }
    }
}

/// Whether a lock's holder is gone: past its expiry, or a process of this host that has ended.
fn is_stale(holder: &serde_json::Value) -> bool {
    let expired = holder["expires_ns"].as_i64().is_none_or(|t| t <= now_ns());
    let here = holder["host"].as_str() == Some(host_name().as_str());
    let gone = holder["pid"].as_u64().is_some_and(|pid| u32::try_from(pid).map_or(true, crate::process::process_gone));
    expired || (here && gone)
}

/// The store's lock, released when dropped (the lock object is deleted if it is still ours).
pub struct RemoteLock {
    store: RemoteStore,
    key: ObjectPath,
    body: String,
}

impl Drop for RemoteLock {
    fn drop(&mut self) {
        let (store, key) = (&self.store.store, &self.key);
        block_on(async {
            if let Ok(got) = store.get(key).await {
                if got.bytes().await.is_ok_and(|b| b.as_ref() == self.body.as_bytes()) {
                    let _ = store.delete(key).await;
                }
            }
        });
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The part files of a run staged locally, by table, in name order.
fn staged_files(staged: &Staged) -> Result<Vec<(String, PathBuf)>, String> {
    let mut files = Vec::new();
    for t in schema::TABLES {
        let dir = staged.partition(t.name);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut parts: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "parquet")).collect();
        parts.sort();
        files.extend(parts.into_iter().map(|p| (t.name.to_string(), p)));
    }
    if files.is_empty() {
        return Err(format!("nothing staged in {}", staged.dir.display()));
    }
    Ok(files)
}

/// The same steps on object_store's in-memory store: the code path of every bucket, GCS's
/// writes included (its emulator takes no XML-API uploads).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn in_memory() -> RemoteStore {
        RemoteStore { url: ObjectUrl::parse("gs://bucket/team/profq").unwrap(), store: Arc::new(object_store::memory::InMemory::new()) }
    }

    /// A staged run whose every table has one part file of `bytes`.
    fn staged(root: &Path, provisional: &str, bytes: &[u8]) -> Staged {
        let staged = Store::open(root).new_staging(provisional).unwrap();
        for t in schema::TABLES {
            let dir = staged.partition(t.name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(PART_FILE), bytes).unwrap();
        }
        staged
    }

    fn keys(remote: &RemoteStore) -> Vec<String> {
        let mut keys: Vec<String> = block_on(remote.store.list(None).map_ok(|m| m.location.to_string()).try_collect::<Vec<_>>()).unwrap();
        keys.sort();
        keys
    }

    #[test]
    fn commits_cleans_up_and_refuses_a_second_commit_of_a_run() {
        let remote = in_memory();
        let scratch = std::env::temp_dir().join(format!("profq-remote-unit-{}", std::process::id()));
        let lock = remote.lock().unwrap();
        block_on(remote.commit(&staged(&scratch, "prov", b"one"), "r1")).unwrap();
        let committed = keys(&remote);
        assert_eq!(committed.len(), schema::TABLES.len() + 1, "{committed:?}");
        assert!(committed.iter().all(|k| k == "team/profq/.lock" || k.contains("/run_id=r1/part-0.parquet")), "{committed:?}");
        assert_eq!(block_on(remote.run_ids()).unwrap(), vec!["r1".to_string()]);
        assert!(block_on(remote.tables_missing("r1")).unwrap().is_empty());
        // The commit point is create-if-absent: a second writer of r1 fails, and leaves r1 whole.
        let again = block_on(remote.commit(&staged(&scratch, "prov2", b"two"), "r1"));
        assert!(again.unwrap_err().contains("by another writer"));
        assert_eq!(keys(&remote), committed);
        // What a killed writer leaves goes at the next clean-up.
        for junk in ["team/profq/.staging/1-2-x/events/part-0.parquet", "team/profq/events/run_id=ghost/part-0.parquet"] {
            block_on(remote.store.put(&ObjectPath::from(junk), PutPayload::from_static(b"x"))).unwrap();
        }
        block_on(remote.clean_up()).unwrap();
        assert_eq!(keys(&remote), committed);
        drop(lock);
        assert!(!keys(&remote).iter().any(|k| k.ends_with(".lock")), "the lock is released");
        block_on(remote.remove_run("r1")).unwrap();
        assert!(keys(&remote).is_empty());
        let _ = std::fs::remove_dir_all(scratch);
    }

    #[test]
    fn a_lock_is_stale_once_expired_or_its_local_holder_is_gone() {
        let now = now_ns();
        let live = json!({"host": host_name(), "pid": std::process::id(), "expires_ns": now + 60_000_000_000i64});
        assert!(!is_stale(&live));
        assert!(is_stale(&json!({"host": host_name(), "pid": std::process::id(), "expires_ns": now - 1})));
        assert!(is_stale(&json!({"host": host_name(), "pid": u32::MAX, "expires_ns": now + 60_000_000_000i64})));
        assert!(!is_stale(&json!({"host": "another-host", "pid": u32::MAX, "expires_ns": now + 60_000_000_000i64})));
        // A dead local holder's lock is taken over at once.
        let remote = in_memory();
        let dead = json!({"host": host_name(), "pid": u32::MAX, "started_ns": now, "expires_ns": now + 60_000_000_000i64}).to_string();
        block_on(remote.store.put(&remote.url.key_of(".lock"), PutPayload::from(dead.into_bytes()))).unwrap();
        let lock = remote.lock().unwrap();
        assert!(lock.body.contains(&format!("\"pid\":{}", std::process::id())));
    }
}
