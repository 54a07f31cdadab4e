//! `profq skills install [DIR]`: the agent skill in `skills/` (built into the binary), copied
//! into an agent's skills directory. A file already there is kept, never overwritten: it may
//! be the user's own edit.

use profq::error::Error;
use std::path::{Path, PathBuf};

/// The skill's files: (path under the skills directory, text).
const FILES: [(&str, &str); 2] =
    [("profq/SKILL.md", include_str!("../../skills/profq/SKILL.md")), ("profq/reference/tables.md", include_str!("../../skills/profq/reference/tables.md"))];

/// Where agents look for user skills: `~/.claude/skills`.
fn default_dir() -> Result<PathBuf, Error> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).ok_or_else(|| Error::usage("HOME is not set: give the skills directory"))?;
    Ok(PathBuf::from(home).join(".claude").join("skills"))
}

/// Installs the skill into `dir` (default: [`default_dir`]); a line per file says whether it
/// was installed or kept.
pub fn install(dir: Option<&Path>) -> Result<String, Error> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => default_dir()?,
    };
    let mut out = String::new();
    for (rel, text) in FILES {
        let path = dir.join(rel);
        if path.exists() {
            out.push_str(&format!("kept {} (already there)\n", path.display()));
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::store(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(&path, text).map_err(|e| Error::store(format!("{}: {e}", path.display())))?;
        out.push_str(&format!("installed {}\n", path.display()));
    }
    Ok(out)
}
