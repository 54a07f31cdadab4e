"""A stand-in for W&B's GraphQL API on 127.0.0.1, for the tests of `--run-target`.

Usage: wandb_api.py PORT API_KEY RUNS_JSON
RUNS_JSON maps "entity/project/run_id" to {"config": {...}, "summaryMetrics": {...}}.

It answers `POST /graphql` the way api.wandb.ai answers the `Run` query of W&B's Python
client (wandb/apis/public/runs.py, `Run.load`): HTTP basic auth with user "api" and the API
key (401 otherwise), and `{"data": {"project": {"run": {...}}}}` where `config` and
`summaryMetrics` are JSON *texts*, each config key wrapped as {"value": v, "desc": null};
an unknown run is `"run": null`.
"""
import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port, api_key, runs_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(runs_file) as f:
    RUNS = json.load(f)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        want = "Basic " + base64.b64encode(f"api:{api_key}".encode()).decode()
        if self.path != "/graphql" or self.headers.get("Authorization") != want:
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"errors":[{"message":"user is not logged in"}]}')
            return
        v = body.get("variables", {})
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
