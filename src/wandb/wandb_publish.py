"""Publishes a profile summary (and its report) as a W&B artifact of type `profile_summary`.

profq runs this with the Python that has W&B's official client (`wandb`): W&B has no Rust
SDK, and its upload protocol is the client's to speak. The spec comes as JSON on stdin:
entity, project, artifact_name, artifact_type, aliases, summary_path, report_path, metadata.
Prints one JSON line: {"artifact_version": …, "run_path": …}. Exit 3 when wandb is missing.
"""
import json
import os
import sys

spec = json.load(sys.stdin)
try:
    import wandb
except ImportError:
    print("profq publish: the wandb package is not installed in this Python (pip install wandb)", file=sys.stderr)
    sys.exit(3)

run = wandb.init(
    entity=spec["entity"],
    project=spec["project"],
    job_type="profile-summary-publish",
    name="publish-" + spec["artifact_name"],
)
artifact = wandb.Artifact(spec["artifact_name"], type=spec["artifact_type"], metadata=spec["metadata"])
artifact.add_file(spec["summary_path"], name=os.path.basename(spec["summary_path"]))
if spec.get("report_path"):
    artifact.add_file(spec["report_path"], name=os.path.basename(spec["report_path"]))
logged = run.log_artifact(artifact, aliases=spec["aliases"])
version = None
if not run.settings._offline:
    logged.wait()
    version = logged.version
run_path = "/".join(p for p in (run.entity, run.project, run.id) if p)
run.finish()
print(json.dumps({"artifact_version": version, "run_path": run_path}))
