//! Local files for the engine: object_store's `LocalFileSystem`, with ranged reads done on
//! the calling thread.
//!
//! `LocalFileSystem` hands every read to tokio's blocking pool: a thread wake-up and a hand
//! back per request. A query over a store of many runs reads two ranges of each of
//! thousands of small files (the footer, then the column chunks), where those hand-offs
//! cost more than the reads (a `pread` of a page-cached file). Ranged reads are therefore
//! served here with `pread`; everything else (listing, whole-object gets, writes) is
//! `LocalFileSystem`'s.

use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};
use std::ops::Range;
use std::os::unix::fs::FileExt;

#[derive(Debug, Default)]
pub struct LocalReads {
    inner: LocalFileSystem,
}

impl LocalReads {
    fn file(&self, location: &Path) -> Result<(std::fs::File, std::path::PathBuf)> {
        let path = self.inner.path_to_filesystem(location)?;
        let file = std::fs::File::open(&path).map_err(|e| generic(&path, e))?;
        Ok((file, path))
    }
}

fn generic(path: &std::path::Path, e: std::io::Error) -> object_store::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        return object_store::Error::NotFound { path: path.display().to_string(), source: e.into() };
    }
    object_store::Error::Generic { store: "LocalReads", source: format!("{}: {e}", path.display()).into() }
}

fn read_range(file: &std::fs::File, path: &std::path::Path, range: Range<u64>) -> Result<Bytes> {
    let mut buf = vec![0u8; (range.end - range.start) as usize];
    file.read_exact_at(&mut buf, range.start).map_err(|e| generic(path, e))?;
    Ok(buf.into())
}

impl std::fmt::Display for LocalReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LocalReads({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for LocalReads {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        // Every option named, so that one object_store adds fails to compile here rather than
        // being ignored; conditions, versions and heads are LocalFileSystem's to answer.
        let GetOptions { if_match, if_none_match, if_modified_since, if_unmodified_since, range, version, head, extensions: _ } = &options;
        let plain = if_match.is_none() && if_none_match.is_none() && if_modified_since.is_none() && if_unmodified_since.is_none() && version.is_none() && !head;
        let Some(range) = range.clone().filter(|_| plain) else {
            return self.inner.get_opts(location, options).await;
        };
        let (file, path) = self.file(location)?;
        let metadata = file.metadata().map_err(|e| generic(&path, e))?;
        let range = range.as_range(metadata.len()).map_err(|e| object_store::Error::Generic { store: "LocalReads", source: e.into() })?;
        let bytes = read_range(&file, &path, range.clone())?;
        let meta = ObjectMeta {
            location: location.clone(),
            last_modified: metadata.modified().map(Into::into).unwrap_or_default(),
            size: metadata.len(),
            e_tag: None,
            version: None,
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(Box::pin(futures::stream::once(async move { Ok(bytes) }))),
            meta,
            range,
            attributes: Default::default(),
        })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let (file, path) = self.file(location)?;
        ranges.iter().map(|r| read_range(&file, &path, r.clone())).collect()
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::{GetRange, ObjectStoreExt};

    /// Ranged reads answer as `LocalFileSystem`'s: bounded, offset and suffix ranges, several
    /// ranges at once, a missing file as NotFound; other requests are its own.
    #[tokio::test]
    async fn ranged_reads_answer_as_local_file_system() {
        let dir = std::env::temp_dir().join(format!("profq-local-reads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        std::fs::write(dir.join("part.parquet"), &text).unwrap();
        let ours = LocalReads::default();
        let theirs = LocalFileSystem::new();
        let at = Path::from_filesystem_path(dir.join("part.parquet")).unwrap();
        for range in [GetRange::Bounded(10..20), GetRange::Offset(9_990), GetRange::Suffix(512), GetRange::Bounded(0..10_000)] {
            let options = GetOptions { range: Some(range.clone()), ..Default::default() };
            let a = ours.get_opts(&at, options.clone()).await.unwrap();
            let b = theirs.get_opts(&at, options).await.unwrap();
            assert_eq!((a.range.clone(), a.meta.size), (b.range.clone(), b.meta.size), "{range:?}");
            assert_eq!(a.bytes().await.unwrap(), b.bytes().await.unwrap(), "{range:?}");
        }
        let ranges = [0..3, 100..4_000, 9_999..10_000];
        assert_eq!(ours.get_ranges(&at, &ranges).await.unwrap(), theirs.get_ranges(&at, &ranges).await.unwrap());
        assert_eq!(ours.get(&at).await.unwrap().bytes().await.unwrap(), Bytes::from(text));
        assert_eq!(ours.head(&at).await.unwrap().size, 10_000);
        let missing = Path::from_absolute_path(dir.join("gone.parquet")).unwrap();
        assert!(matches!(ours.get_range(&missing, 0..4).await, Err(object_store::Error::NotFound { .. })));
        assert!(matches!(ours.get_ranges(&missing, &[0..4, 8..12]).await, Err(object_store::Error::NotFound { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
