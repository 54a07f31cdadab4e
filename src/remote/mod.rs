//! Remote: profiles and stores in object storage (`s3://bucket/prefix`, `gs://bucket/prefix`).
//!
//! This module is the one place that builds object stores. A store is made from its URL's
//! scheme and bucket with object_store's `from_env` builders, so credentials come only from
//! the environment (`AWS_*`, `GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_APPLICATION_CREDENTIALS`, …) and
//! never appear in SQL, logs or errors. Each bucket's store is built once per process and
//! shared: by the input mirror ([`mirror`]), by the store writer (`store::remote`) and, through
//! [`registry`], by every DataFusion session profq builds (which also reads local files, through
//! [`local_reads`]). Its network IO runs on one runtime of its own ([`io_runtime`]), so any
//! caller's runtime, or none, can use it.

pub mod local_reads;
pub mod mirror;

use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::aws::AmazonS3Builder;
use object_store::client::SpawnedReqwestConnector;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, RetryConfig};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use url::Url;

/// The schemes profq reads and writes.
const SCHEMES: [&str; 2] = ["s3", "gs"];

/// Whether `text` is a URL (`scheme://…`) rather than a path: remote, or of a scheme profq
/// does not read (which [`ObjectUrl::parse`] then refuses by name).
pub fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
}

/// A location in a bucket: `scheme://bucket/key`, the key without leading or trailing `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectUrl {
    pub scheme: String,
    pub bucket: String,
    pub key: String,
}

impl ObjectUrl {
    /// Parses `s3://bucket/prefix` or `gs://bucket/prefix`; any other scheme is refused (the
    /// error says why, for the caller to put after the text).
    pub fn parse(text: &str) -> Result<ObjectUrl, String> {
        let (scheme, rest) = text.split_once("://").ok_or("not a URL")?;
        if !SCHEMES.contains(&scheme) {
            return Err(format!("unsupported scheme {scheme:?} (profq reads s3:// and gs://)"));
        }
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err("no bucket named".into());
        }
        let key = key.trim_matches('/');
        // Object keys are paths of non-empty parts, none of them `.` or `..`.
        ObjectPath::parse(key).map_err(|e| format!("invalid object key: {e}"))?;
        Ok(ObjectUrl { scheme: scheme.into(), bucket: bucket.into(), key: key.into() })
    }

    /// The key below this location: `rel` joined with `/` (empty `rel` is the location).
    pub fn key_of(&self, rel: &str) -> ObjectPath {
        match (self.key.is_empty(), rel.is_empty()) {
            (_, true) => ObjectPath::from(self.key.as_str()),
            (true, false) => ObjectPath::from(rel),
            (false, false) => ObjectPath::from(format!("{}/{rel}", self.key)),
        }
    }

    /// The URL of the object or prefix `key` in this bucket.
    pub fn url_of(&self, key: &ObjectPath) -> String {
        format!("{}://{}/{}", self.scheme, self.bucket, key)
    }

    /// The bucket's own URL (`scheme://bucket`), by which DataFusion finds its store.
    pub fn bucket_url(&self) -> Url {
        Url::parse(&format!("{}://{}", self.scheme, self.bucket)).expect("scheme and bucket form a URL")
    }

    /// The store of this location's bucket.
    pub fn store(&self) -> Result<Arc<dyn ObjectStore>, String> {
        store_for(&self.scheme, &self.bucket)
    }
}

impl std::fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}://{}", self.scheme, self.bucket)
        } else {
            write!(f, "{}://{}/{}", self.scheme, self.bucket, self.key)
        }
    }
}

/// The runtime every object store's requests run on: two threads, for the life of the process.
pub fn io_runtime() -> &'static tokio::runtime::Runtime {
    static IO: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    IO.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("profq-io")
            .enable_all()
            .on_thread_start(crate::process::block_sigpipe_in_this_thread)
            .build()
            .expect("io runtime")
    })
}

/// Runs `work` to completion from synchronous code, on this thread, inside the IO runtime's
/// context (its requests and the timers of its retries run there). Callable from any thread,
/// in a runtime or not: it blocks the thread, never a runtime it does not own.
pub fn block_on<T>(work: impl std::future::Future<Output = T>) -> T {
    let _io = io_runtime().enter();
    futures::executor::block_on(work)
}

/// How often a failed request is retried: `PROFQ_REMOTE_RETRIES` times (default 10, as
/// object_store's), for at most `PROFQ_REMOTE_RETRY_S` seconds (default 180).
fn retry_config() -> RetryConfig {
    let mut retry = RetryConfig::default();
    if let Some(n) = std::env::var("PROFQ_REMOTE_RETRIES").ok().and_then(|v| v.parse().ok()) {
        retry.max_retries = n;
    }
    if let Some(s) = std::env::var("PROFQ_REMOTE_RETRY_S").ok().and_then(|v| v.parse().ok()) {
        retry.retry_timeout = std::time::Duration::from_secs(s);
    }
    retry
}

/// The store of `scheme://bucket`, built on first use from the environment and kept.
pub fn store_for(scheme: &str, bucket: &str) -> Result<Arc<dyn ObjectStore>, String> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let key = format!("{scheme}://{bucket}");
    let mut stores = STORES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(store) = stores.get(&key) {
        return Ok(store.clone());
    }
    let connector = SpawnedReqwestConnector::new(io_runtime().handle().clone());
    let built: Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
        "s3" => AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_http_connector(connector)
            .with_retry(retry_config())
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
        "gs" => GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(bucket)
            .with_http_connector(connector)
            .with_retry(retry_config())
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
        other => return Err(format!("{key}: unsupported scheme {other:?} (profq reads s3:// and gs://)")),
    };
    let store = built.map_err(|e| format!("{key}: cannot set up the client: {}", describe(&e)))?;
    stores.insert(key, store.clone());
    Ok(store)
}

/// One line for a failed request: what went wrong, without the request's headers or
/// credentials (object_store's messages name the URL and the service's answer only).
pub fn describe(e: &object_store::Error) -> String {
    use object_store::Error as E;
    let what = match e {
        E::NotFound { .. } => "not found".to_string(),
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => format!("access denied ({})", chain(e)),
        _ => chain(e),
    };
    one_line(&what)
}

/// `e` and its sources, joined.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

/// Whitespace runs folded into one space, and at most 400 characters.
pub(crate) fn one_line(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(400) {
        Some((cut, _)) => format!("{}…", &folded[..cut]),
        None => folded,
    }
}

/// The object-store registry of every DataFusion session profq builds: local files through
/// [`local_reads`] (one store for every `file://` URL), buckets through [`store_for`].
pub fn registry() -> Arc<dyn ObjectStoreRegistry> {
    static REGISTRY: OnceLock<Arc<dyn ObjectStoreRegistry>> = OnceLock::new();
    REGISTRY.get_or_init(|| Arc::new(Registry::default())).clone()
}

#[derive(Debug, Default)]
struct Registry {
    local: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for Registry {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.local.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        self.local.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        if SCHEMES.contains(&url.scheme()) {
            let bucket = url.host_str().unwrap_or_default();
            return store_for(url.scheme(), bucket).map_err(|e| datafusion::error::DataFusionError::External(e.into()));
        }
        if url.scheme() == "file" {
            static LOCAL: OnceLock<Arc<dyn ObjectStore>> = OnceLock::new();
            return Ok(LOCAL.get_or_init(|| Arc::new(local_reads::LocalReads::default())).clone());
        }
        self.local.get_store(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_urls() {
        let u = ObjectUrl::parse("s3://bucket/logs/run/").unwrap();
        assert_eq!((u.scheme.as_str(), u.bucket.as_str(), u.key.as_str()), ("s3", "bucket", "logs/run"));
        assert_eq!(u.to_string(), "s3://bucket/logs/run");
        assert_eq!(u.key_of("runs").as_ref(), "logs/run/runs");
        assert_eq!(ObjectUrl::parse("gs://b").unwrap().key_of("runs").as_ref(), "runs");
        assert!(ObjectUrl::parse("az://b/x").unwrap_err().contains("unsupported scheme"));
        assert!(ObjectUrl::parse("s3:///x").unwrap_err().contains("no bucket"));
        assert!(is_url("gs://b") && is_url("az://b/x") && !is_url("./gs:/x") && !is_url("profq-store") && !is_url("a b://x"));
    }

    #[test]
    fn errors_are_one_short_line() {
        let long = format!("a\n  b {}", "x".repeat(1000));
        let line = one_line(&long);
        assert!(!line.contains('\n') && line.starts_with("a b ") && line.chars().count() == 401);
    }
}
