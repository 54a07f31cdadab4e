"""A stand-in for W&B's GraphQL API on 127.0.0.1, for the tests of W&B runs and artifacts.

Usage: wandb_api.py PORT API_KEY RUNS_JSON
RUNS_JSON maps "entity/project/run_id" to {"config": {...}, "summaryMetrics": {...}}, and
"__artifacts__" to {"entity/project/name:alias": {"digest": HEX, "dir": LOCAL_DIR}}.

It answers `POST /graphql` the way api.wandb.ai answers the `Run` query of W&B's Python
client (wandb/apis/public/runs.py, `Run.load`): HTTP basic auth with user "api" and the API
key (401 otherwise), and `{"data": {"project": {"run": {...}}}}` where `config` and
`summaryMetrics` are JSON *texts*, each config key wrapped as {"value": v, "desc": null};
an unknown run is `"run": null`.

Artifacts are answered as W&B answers the `ArtifactByName` query of its client
(wandb/apis/public/artifacts.py): `{"data": {"project": {"artifact": {"id", "digest",
"state": "COMMITTED", "files": {"pageInfo": {"hasNextPage", "endCursor"}, "edges": [{"node":
{"name", "directUrl", "sizeBytes"}}]}}}}}`, two files a page (so that paging is exercised),
`"artifact": null` for an unknown one. `directUrl` points at `GET /files/<n>/<path>` here,
which serves the file (no auth: a signed URL). `GET /downloads` says how many files were
served, for the tests of the cache.
"""
import os
import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port, api_key, runs_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(runs_file) as f:
    RUNS = json.load(f)
ARTIFACTS = RUNS.pop("__artifacts__", {})
DOWNLOADS = [0]
PAGE = 2


def artifact_files(spec):
    root = spec["dir"]
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def artifact_answer(v):
    key = f'{v.get("entityName")}/{v.get("projectName")}/{v.get("name")}'
    spec = ARTIFACTS.get(key)
    if spec is None:
        return None
    names = artifact_files(spec)
    start = int(v.get("after") or 0)
    page = names[start:start + PAGE]
    index = list(ARTIFACTS).index(key)
    edges = [{"node": {"name": n, "directUrl": f"http://127.0.0.1:{port}/files/{index}/{n}",
                       "sizeBytes": os.path.getsize(os.path.join(spec["dir"], n))}} for n in page]
    more = start + PAGE < len(names)
    return {"id": "QXJ0aWZhY3Q6MQ==", "digest": spec["digest"], "state": "COMMITTED",
            "files": {"pageInfo": {"hasNextPage": more, "endCursor": str(start + PAGE) if more else None}, "edges": edges}}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/downloads":
            return self.reply(json.dumps({"downloads": DOWNLOADS[0]}).encode())
        parts = self.path.split("/", 3)
        if len(parts) == 4 and parts[1] == "files":
            spec = list(ARTIFACTS.values())[int(parts[2])]
            with open(os.path.join(spec["dir"], parts[3]), "rb") as f:
                DOWNLOADS[0] += 1
                return self.reply(f.read())
        self.send_response(404)
        self.end_headers()

    def reply(self, data):
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        want = "Basic " + base64.b64encode(f"api:{api_key}".encode()).decode()
        if self.path != "/graphql" or self.headers.get("Authorization") != want:
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"errors":[{"message":"user is not logged in"}]}')
            return
        v = body.get("variables", {})
        if "ArtifactByName" in body.get("query", ""):
            data = json.dumps({"data": {"project": {"artifact": artifact_answer(v)}}}).encode()
            return self.reply(data)
        run = RUNS.get(f'{v.get("entity")}/{v.get("project")}/{v.get("name")}')
        if run is not None:
            config = {k: {"value": val, "desc": None} for k, val in run.get("config", {}).items()}
            run = {"id": "UnVuOnYx", "name": v["name"], "displayName": v["name"],
                   "config": json.dumps(config), "summaryMetrics": json.dumps(run.get("summaryMetrics", {}))}
        data = json.dumps({"data": {"project": {"run": run}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
