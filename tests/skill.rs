//! The agent skill (`skills/profq/`): every `profq` command it shows runs as written on a real
//! profile pair, so the skill cannot drift from the CLI; `profq skills install` copies it and
//! never overwrites a file already there.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn skill() -> String {
    std::fs::read_to_string(repo().join("skills/profq/SKILL.md")).unwrap()
}

/// The `profq …` lines of the skill's bash blocks, in order.
fn commands(text: &str) -> Vec<String> {
    let mut in_bash = false;
    let mut out = Vec::new();
    for line in text.lines() {
        match line.trim() {
            "```bash" => in_bash = true,
            "```" => in_bash = false,
            l if in_bash && l.starts_with("profq ") => out.push(l.to_string()),
            _ => {}
        }
    }
    out
}

#[test]
fn every_command_of_the_skill_runs() {
    let text = skill();
    let front = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---\n")).map(|(f, _)| f).expect("front matter");
    assert!(front.lines().any(|l| l.starts_with("name: profq")), "{front}");
    assert!(front.lines().any(|l| l.starts_with("description: ") && l.len() > 80), "{front}");

    let dir = temp_dir("skill");
    let bin = Path::new(env!("CARGO_BIN_EXE_profq")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let commands = commands(&text);
    assert!(commands.len() >= 15, "{commands:?}");
    for command in &commands {
        let o = Command::new("bash")
            .args(["-c", command])
            .current_dir(repo())
            .env("PATH", &path)
            .env("PROFILE", repo().join("tests/data/jax_cpu/mlp_before"))
            .env("AFTER", repo().join("tests/data/jax_cpu/mlp_after"))
            .env("STORE", dir.join("store"))
            .env("OUT", &out)
            .env_remove("PROFQ_STORE")
            .env_remove("WANDB_API_KEY")
            .output()
            .unwrap();
        assert!(o.status.success(), "{command}: {}", stderr(&o));
    }
}

#[test]
fn the_skill_installs_without_overwriting() {
    let dir = temp_dir("skill-install");
    let o = profq(&["skills", "install", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let installed = dir.join("profq/SKILL.md");
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), skill());
    assert!(dir.join("profq/reference/tables.md").exists());
    std::fs::write(&installed, "my own notes").unwrap();
    let o = profq(&["skills", "install", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("kept"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), "my own notes", "a file already there is kept");
}
