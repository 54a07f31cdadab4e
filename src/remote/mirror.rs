//! The input mirror: a remote INPUT's profile files copied into the local cache, where the
//! mmap decode reads them as it reads any local file (no GB-sized profile is held in RAM).
//!
//! An INPUT URL means what a local path means (`decode::input`): one object, or a prefix
//! whose newest profile session is chosen by the same rule ([`choose_session`]) from one
//! listing. Only that session's profile files (and HLO side files) are fetched.
//!
//! The cache (`PROFQ_CACHE_DIR`, default `~/.cache/profq`) holds each object at
//! `objects/<scheme>/<bucket>/<key>`, so a mirrored session keeps its log dir's path and
//! the run its name. A file is fetched in ranged GETs run in parallel into a `.partial`
//! file (`partial/<pid>-…`), renamed into place once whole; the GETs are conditional on the listed ETag, so an
//! object replaced mid-copy fails the copy instead of mixing versions. A file whose size
//! and ETag match the listing is not fetched again. Past `PROFQ_CACHE_BYTES` (default
//! 20 GiB) the least recently used files are evicted, never those of the current INPUT.

use super::{describe, ObjectUrl};
use crate::decode::{choose_session, is_hlo_side_file, is_profiler_file, kind_of_file, SourceKind, NO_PROFILE, SESSION_DEPTH};
use crate::process::{process_gone, writer_name, writer_pid};
use crate::timing::now_ns;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes per ranged GET: the top of the 8–16 MB S3 recommends for parallel ranged GETs, so
/// that a request's fixed cost stays small against its transfer while a large file is
/// still fetched over many connections.
const PART_BYTES: u64 = 16 << 20;
/// Ranged GETs in flight at once, over all the files of an INPUT.
const GETS_IN_FLIGHT: usize = 16;
/// The default cache budget.
const DEFAULT_BUDGET: u64 = 20 << 30;

/// A remote INPUT, mirrored.
pub struct Mirrored {
    /// The local copy that stands for the INPUT: the session directory or the one file.
    pub local: PathBuf,
    pub notes: Vec<String>,
}

/// Mirrors the profile `text` (`s3://…` or `gs://…`) names into the cache. An error says
/// what went wrong, for the caller to put after the INPUT.
pub fn mirror_input(text: &str) -> Result<Mirrored, String> {
    let url = ObjectUrl::parse(text)?;
    super::block_on(async {
        let store = url.store()?;
        let cache = Cache::open()?;
        let chosen = choose(&store, &url).await?;
        cache.fetch(&store, &url, &chosen.files).await?;
        Ok(Mirrored { local: cache.local_path(&url, &chosen.stands_for), notes: chosen.notes })
    })
}

/// The objects an INPUT URL names, and the key whose copy stands for it.
struct Chosen {
    files: Vec<ObjectMeta>,
    stands_for: ObjectPath,
    notes: Vec<String>,
}

/// What the INPUT URL names: the object itself (with its HLO side files when it is an
/// XPlane), else the newest session under the prefix.
async fn choose(store: &Arc<dyn ObjectStore>, url: &ObjectUrl) -> Result<Chosen, String> {
    let key = url.key_of("");
    if !url.key.is_empty() {
        match store.head(&key).await {
            Ok(meta) => {
                let mut files = vec![meta];
                if kind_of_file(Path::new(key.as_ref())) == Some(SourceKind::XPlane) {
                    let parent: ObjectPath = key.as_ref().rsplit_once('/').map(|(dir, _)| ObjectPath::from(dir)).unwrap_or_default();
                    let listed = store.list_with_delimiter(Some(&parent)).await.map_err(|e| describe(&e))?;
                    files.extend(listed.objects.into_iter().filter(|m| is_hlo_side_file(Path::new(m.location.as_ref()))));
                }
                return Ok(Chosen { files, stands_for: key, notes: vec![] });
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(describe(&e)),
        }
    }
    let prefix = (!url.key.is_empty()).then_some(&key);
    let listed: Vec<ObjectMeta> = store.list(prefix).try_collect().await.map_err(|e| describe(&e))?;
    if listed.is_empty() {
        return Err("no such object or prefix".into());
    }
    let base_depth = if url.key.is_empty() { 0 } else { key.parts().count() };
    let mut by_dir: BTreeMap<PathBuf, Vec<ObjectMeta>> = BTreeMap::new();
    for meta in listed {
        let path = PathBuf::from(meta.location.as_ref());
        let Some(dir) = path.parent() else { continue };
        let below = dir.components().count().saturating_sub(base_depth);
        let hidden = dir.components().skip(base_depth).any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
        if below <= SESSION_DEPTH && !hidden {
            by_dir.entry(dir.to_path_buf()).or_default().push(meta);
        }
    }
    let is_profile = |m: &ObjectMeta| is_profiler_file(Path::new(m.location.as_ref()));
    let sessions: Vec<PathBuf> = by_dir.iter().filter(|(_, files)| files.iter().any(is_profile)).map(|(dir, _)| dir.clone()).collect();
    let has_xplane = |dir: &Path| by_dir[dir].iter().any(|m| kind_of_file(Path::new(m.location.as_ref())) == Some(SourceKind::XPlane));
    let chosen = choose_session(&sessions, has_xplane).ok_or_else(|| NO_PROFILE.to_string())?;
    let session = chosen.session.clone();
    let notes = chosen.note.into_iter().collect();
    let files = by_dir.remove(&session).unwrap_or_default().into_iter().filter(|m| is_profile(m) || is_hlo_side_file(Path::new(m.location.as_ref()))).collect();
    Ok(Chosen { files, stands_for: ObjectPath::from(session.to_string_lossy().as_ref()), notes })
}

/// The local cache directory: `PROFQ_CACHE_DIR`, else `$XDG_CACHE_HOME/profq`, else
/// `~/.cache/profq`, else the temp dir's `profq-cache`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PROFQ_CACHE_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join("profq");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("profq"),
        None => std::env::temp_dir().join("profq-cache"),
    }
}

/// The cache's byte budget: `PROFQ_CACHE_BYTES`, else 20 GiB.
fn budget() -> u64 {
    std::env::var("PROFQ_CACHE_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_BUDGET)
}

struct Cache {
    root: PathBuf,
}

/// What the cache knows of one mirrored object (`index/<hash of its URL>.json`).
struct Entry {
    url: String,
    /// The copy, relative to the cache root.
    file: String,
    size: u64,
    etag: Option<String>,
    used_ns: i64,
}

impl Entry {
    fn to_json(&self) -> Value {
        json!({"url": self.url, "file": self.file, "size": self.size, "etag": self.etag, "used_ns": self.used_ns})
    }

    fn from_json(v: &Value) -> Option<Entry> {
        Some(Entry {
            url: v.get("url")?.as_str()?.to_string(),
            file: v.get("file")?.as_str()?.to_string(),
            size: v.get("size")?.as_u64()?,
            etag: v.get("etag").and_then(Value::as_str).map(str::to_string),
            used_ns: v.get("used_ns")?.as_i64()?,
        })
    }
}

impl Cache {
    fn open() -> Result<Cache, String> {
        let root = cache_dir();
        for dir in ["objects", "index", "partial"] {
            std::fs::create_dir_all(root.join(dir)).map_err(|e| format!("cache {}: {e}", root.join(dir).display()))?;
        }
        let cache = Cache { root };
        cache.remove_partials_of_gone_writers();
        Ok(cache)
    }

    /// Removes the `.partial` copies that writers killed mid-download left (named by pid).
    fn remove_partials_of_gone_writers(&self) {
        let Ok(rd) = std::fs::read_dir(self.root.join("partial")) else { return };
        for entry in rd.flatten() {
            if writer_pid(&entry.file_name().to_string_lossy()).is_some_and(process_gone) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn relative(url: &ObjectUrl, key: &ObjectPath) -> String {
        format!("objects/{}/{}/{}", url.scheme, url.bucket, key)
    }

    fn local_path(&self, url: &ObjectUrl, key: &ObjectPath) -> PathBuf {
        self.root.join(Cache::relative(url, key))
    }

    fn index_path(&self, object_url: &str) -> PathBuf {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(object_url.as_bytes());
        let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        self.root.join("index").join(format!("{name}.json"))
    }

    fn read_entry(&self, path: &Path) -> Option<Entry> {
        Entry::from_json(&serde_json::from_slice(&std::fs::read(path).ok()?).ok()?)
    }

    /// Writes an index entry whole or not at all (a temp file renamed).
    fn write_entry(&self, entry: &Entry) -> Result<(), String> {
        let path = self.index_path(&entry.url);
        let tmp = path.with_extension(format!("json.{}", writer_name()));
        std::fs::write(&tmp, entry.to_json().to_string()).and_then(|_| std::fs::rename(&tmp, &path)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cache {}: {e}", path.display())
        })
    }

    /// Makes sure every one of `files` has a current copy, fetching those that have not, then
    /// keeps the cache within its budget.
    async fn fetch(&self, store: &Arc<dyn ObjectStore>, url: &ObjectUrl, files: &[ObjectMeta]) -> Result<(), String> {
        let mut wanted = Vec::new();
        for meta in files {
            let object_url = url.url_of(&meta.location);
            let local = self.local_path(url, &meta.location);
            let fresh = self.read_entry(&self.index_path(&object_url)).is_some_and(|e| e.size == meta.size && e.etag == meta.e_tag)
                && std::fs::metadata(&local).is_ok_and(|m| m.len() == meta.size);
            if !fresh {
                wanted.push((meta, local));
            }
        }
        self.download(store, url, &wanted).await?;
        // Every file of the INPUT counts as used now, fetched or not.
        let now = now_ns();
        for meta in files {
            let entry =
                Entry { url: url.url_of(&meta.location), file: Cache::relative(url, &meta.location), size: meta.size, etag: meta.e_tag.clone(), used_ns: now };
            self.write_entry(&entry)?;
        }
        let in_use: BTreeSet<String> = files.iter().map(|m| Cache::relative(url, &m.location)).collect();
        self.evict(&in_use);
        Ok(())
    }

    /// Fetches `wanted` in ranged GETs, all files' ranges in flight together; each file goes
    /// into a `.partial` copy (under `partial/`, named by this process) renamed into place
    /// when whole. On failure no partial copy stays; a killed writer's are removed by the next.
    async fn download(&self, store: &Arc<dyn ObjectStore>, url: &ObjectUrl, wanted: &[(&ObjectMeta, PathBuf)]) -> Result<(), String> {
        if wanted.is_empty() {
            return Ok(());
        }
        let suffix = writer_name();
        let mut partials = Vec::new();
        for (k, (meta, local)) in wanted.iter().enumerate() {
            let partial = self.root.join("partial").join(format!("{suffix}-{k}.partial"));
            let created = std::fs::create_dir_all(local.parent().expect("cached files live in a directory"))
                .and_then(|_| std::fs::File::create(&partial))
                .and_then(|f| f.set_len(meta.size).map(|_| f));
            match created {
                Ok(file) => partials.push((Arc::new(file), partial)),
                Err(e) => {
                    partials.iter().for_each(|(_, p)| drop(std::fs::remove_file(p)));
                    return Err(format!("cache {}: {e}", partial.display()));
                }
            }
        }
        let total: u64 = wanted.iter().map(|(m, _)| m.size).sum();
        let done = Arc::new(AtomicU64::new(0));
        let ranges = wanted
            .iter()
            .enumerate()
            .flat_map(|(k, (meta, _))| (0..meta.size).step_by(PART_BYTES as usize).map(move |start| (k, start..(start + PART_BYTES).min(meta.size))));
        let fetched = futures::stream::iter(ranges)
            .map(|(k, range)| {
                let (meta, file) = (wanted[k].0, partials[k].0.clone());
                let (store, done) = (store.clone(), done.clone());
                async move {
                    let options = GetOptions { range: Some(range.clone().into()), if_match: meta.e_tag.clone(), ..Default::default() };
                    // Written as it arrives, so memory holds a few network buffers, not the part.
                    let mut body = store.get_opts(&meta.location, options).await.map_err(|e| (k, describe(&e)))?.into_stream();
                    let mut at = range.start;
                    while let Some(chunk) = body.next().await {
                        let chunk = chunk.map_err(|e| (k, describe(&e)))?;
                        if at + chunk.len() as u64 > range.end {
                            return Err((k, format!("the server sent more than the {} bytes asked at {}", range.end - range.start, range.start)));
                        }
                        file.write_all_at(&chunk, at).map_err(|e| (k, format!("cache: {e}")))?;
                        at += chunk.len() as u64;
                        progress(done.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64, total);
                    }
                    if at != range.end {
                        return Err((k, format!("short read: {} of {} bytes at {}", at - range.start, range.end - range.start, range.start)));
                    }
                    Ok::<(), (usize, String)>(())
                }
            })
            .buffer_unordered(GETS_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await;
        progress_done();
        if let Err((k, what)) = fetched {
            partials.iter().for_each(|(_, p)| drop(std::fs::remove_file(p)));
            return Err(format!("download of {} failed: {what}", url.url_of(&wanted[k].0.location)));
        }
        for ((_, local), (_, partial)) in wanted.iter().zip(&partials) {
            if let Err(e) = std::fs::rename(partial, local) {
                partials.iter().for_each(|(_, p)| drop(std::fs::remove_file(p)));
                return Err(format!("cache {}: {e}", local.display()));
            }
        }
        Ok(())
    }

    /// Removes the least recently used copies until the cache fits its budget, sparing `in_use`.
    fn evict(&self, in_use: &BTreeSet<String>) {
        let Ok(rd) = std::fs::read_dir(self.root.join("index")) else { return };
        let mut entries: Vec<(Entry, PathBuf)> =
            rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).filter_map(|p| Some((self.read_entry(&p)?, p))).collect();
        let mut total: u64 = entries.iter().map(|(e, _)| e.size).sum();
        let budget = budget();
        entries.sort_by(|a, b| (a.0.used_ns, &a.0.url).cmp(&(b.0.used_ns, &b.0.url)));
        for (entry, index) in entries {
            if total <= budget {
                break;
            }
            if in_use.contains(&entry.file) {
                continue;
            }
            let _ = std::fs::remove_file(self.root.join(&entry.file));
            let _ = std::fs::remove_file(index);
            total -= entry.size;
        }
    }
}

/// Download progress on a terminal: bytes so far of all.
fn progress(done: u64, total: u64) {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2Kprofq: downloading {:.1} of {:.1} MB", done as f64 / 1e6, total as f64 / 1e6);
    }
}

fn progress_done() {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K\r");
    }
}
