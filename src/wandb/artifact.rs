//! W&B artifacts as INPUTs: `wandb-artifact://ENTITY/PROJECT/NAME:ALIAS` (or `:vN`), a
//! profile logged as an artifact, as trainers log their profiler directories.
//!
//! The artifact and its files are read through W&B's GraphQL API as W&B's client reads them
//! (`project.artifact(name: "NAME:ALIAS")`, its `digest` and its `files` connection, page by
//! page), and each file is fetched by its `directUrl` into profq's cache, under the
//! artifact's digest: `<cache>/wandb-artifacts/ENTITY/PROJECT/<digest>/NAME/`. The digest is
//! the hash of the artifact's contents, so a directory already complete for it is read
//! again without fetching anything; another version is another digest. The directory is
//! then read like a local profile dir.

use super::api;
use serde_json::{json, Value};
use std::path::{Component, Path, PathBuf};

/// An artifact, by its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactRef {
    pub entity: String,
    pub project: String,
    /// `NAME:ALIAS` or `NAME:vN`.
    pub name: String,
}

impl ArtifactRef {
    pub fn path(&self) -> String {
        format!("{}/{}/{}", self.entity, self.project, self.name)
    }
}

/// The artifact an INPUT names, when it names one; any other INPUT is None.
pub fn of_input(input: &str) -> Option<Result<ArtifactRef, String>> {
    let path = input.strip_prefix("wandb-artifact://")?;
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    Some(match parts.as_slice() {
        [entity, project, name] if name.contains(':') => Ok(ArtifactRef { entity: entity.to_string(), project: project.to_string(), name: name.to_string() }),
        _ => Err(format!("{input:?}: a W&B artifact INPUT is wandb-artifact://ENTITY/PROJECT/NAME:ALIAS (or :vN)")),
    })
}

/// The query W&B's client sends for an artifact by name, reduced to what is read here.
const ARTIFACT_QUERY: &str = "query ArtifactByName($entityName: String!, $projectName: String!, $name: String!, $after: String) { project(name: $projectName, entityName: $entityName) { artifact(name: $name) { id digest state files(after: $after, first: 1000) { pageInfo { hasNextPage endCursor } edges { node { name directUrl sizeBytes } } } } } }";

/// A file of the artifact: its path inside it, where to fetch it, its size.
struct ArtifactFile {
    name: String,
    url: String,
    size: u64,
}

/// Fetches the artifact into the cache (what is already there for its digest is kept) and
/// returns the directory that holds its files.
pub fn fetch(artifact: &ArtifactRef, cache: &Path) -> Result<PathBuf, String> {
    let (digest, files) = list(artifact)?;
    let name = artifact.name.split(':').next().unwrap_or(&artifact.name);
    // Named last by the artifact's name: the run a profile dir is read as is named by it.
    let dir = cache.join("wandb-artifacts").join(&artifact.entity).join(&artifact.project).join(&digest).join(name);
    let complete = dir.join(".complete");
    if complete.exists() {
        return Ok(dir);
    }
    for file in &files {
        let path = dir.join(inside(&file.name).ok_or_else(|| format!("W&B artifact {}: a file named {:?} leaves its directory", artifact.path(), file.name))?);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == file.size) {
            continue;
        }
        download(&file.url, &path).map_err(|e| format!("W&B artifact {}: {}: {e}", artifact.path(), file.name))?;
    }
    std::fs::write(&complete, b"").map_err(|e| format!("{}: {e}", complete.display()))?;
    Ok(dir)
}

/// The artifact's digest and files, page by page.
fn list(artifact: &ArtifactRef) -> Result<(String, Vec<ArtifactFile>), String> {
    let mut files = Vec::new();
    let mut after = Value::Null;
    loop {
        let variables = json!({"entityName": artifact.entity, "projectName": artifact.project, "name": artifact.name, "after": after});
        let answer = api::graphql(ARTIFACT_QUERY, variables, "read W&B artifacts")?;
        if let Some(messages) = api::errors(&answer) {
            return Err(format!("W&B artifact {}: {messages}", artifact.path()));
        }
        let found = &answer["data"]["project"]["artifact"];
        if !found.is_object() {
            return Err(format!("W&B artifact {}: no such artifact", artifact.path()));
        }
        let digest = found["digest"]
            .as_str()
            .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_alphanumeric()))
            .ok_or_else(|| format!("W&B artifact {}: no digest", artifact.path()))?;
        for edge in found["files"]["edges"].as_array().into_iter().flatten() {
            let node = &edge["node"];
            let (Some(name), Some(url)) = (node["name"].as_str(), node["directUrl"].as_str()) else { continue };
            let size = node["sizeBytes"].as_u64().unwrap_or(u64::MAX);
            files.push(ArtifactFile { name: name.to_string(), url: url.to_string(), size });
        }
        let page = &found["files"]["pageInfo"];
        if page["hasNextPage"].as_bool() != Some(true) {
            return Ok((digest.to_string(), files));
        }
        after = page["endCursor"].clone();
    }
}

/// A file name as a path inside the artifact's directory (None if it would leave it).
fn inside(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    path.components().all(|c| matches!(c, Component::Normal(_))).then(|| path.to_path_buf())
}

/// Fetches `url` to `path`, through a temporary file renamed into place.
fn download(url: &str, path: &Path) -> Result<(), String> {
    let bytes = crate::remote::block_on(async {
        let response = reqwest::get(url).await.map_err(|e| crate::remote::one_line(&e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        response.bytes().await.map_err(|e| crate::remote::one_line(&e.to_string()))
    })?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, &bytes).map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::{inside, of_input, ArtifactRef};

    #[test]
    fn artifact_inputs() {
        let want = ArtifactRef { entity: "e".into(), project: "p".into(), name: "profile:v3".into() };
        assert_eq!(of_input("wandb-artifact://e/p/profile:v3"), Some(Ok(want)));
        assert!(of_input("wandb-artifact://e/p/profile").is_some_and(|r| r.is_err()));
        assert!(of_input("wandb-artifact://e/profile:latest").is_some_and(|r| r.is_err()));
        assert_eq!(of_input("s3://b/k"), None);
        assert!(inside("plugins/profile/1/h.xplane.pb").is_some());
        assert!(inside("../x").is_none() && inside("/etc/x").is_none());
    }
}
