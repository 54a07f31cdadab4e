#!/usr/bin/env python3
"""Rebuilds fuzz/seeds/ from the committed captures: small but well-formed inputs, so that the
fuzzers spend their executions mutating real structure instead of parsing megabytes.

  xplane/      each capture's XSpace with at most 12 events per line, only the event
               metadata those use, and /host:metadata without HLO (or with its smallest module)
  trace_json/  each perfetto_trace.json.gz (and the Kineto trace) cut to its metadata
               events plus the first 150 others
  hlo/         small serialized HloProtos taken from the captures' /host:metadata planes

usage (from the repo root, with a Python that has `protobuf`):
  python3 fuzz/make_seeds.py
It reads ../shared/fixtures/gen/xplane_schema.py for the XPlane classes.
"""
import glob
import gzip
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "..", "shared", "fixtures", "gen"))
from xplane_schema import load_xspace  # noqa: E402

OUT = os.path.join(ROOT, "fuzz", "seeds")
CAPTURES = sorted(glob.glob(os.path.join(ROOT, "tests/data/jax_*/*/plugins/profile/*/*.xplane.pb")))


def capture_name(path):
    parts = os.path.relpath(path, os.path.join(ROOT, "tests/data")).split(os.sep)
    return f"{parts[0]}_{parts[1]}"


def xplane_seeds():
    for f in CAPTURES:
        for keep_hlo in (False, True):
            space = load_xspace(f)
            for plane in space.planes:
                for line in plane.lines:
                    del line.events[12:]
                used = {e.metadata_id for line in plane.lines for e in line.events}
                if plane.name == "/host:metadata":
                    smallest = min(plane.event_metadata.items(), key=lambda kv: kv[1].ByteSize(), default=None)
                    for k in [k for k in plane.event_metadata if not keep_hlo or smallest is None or k != smallest[0]]:
                        del plane.event_metadata[k]
                else:
                    for k in [k for k in plane.event_metadata if k not in used]:
                        del plane.event_metadata[k]
            suffix = "_hlo" if keep_hlo else ""
            with open(os.path.join(OUT, "xplane", f"{capture_name(f)}{suffix}.xplane.pb"), "wb") as out:
                out.write(space.SerializeToString())


def trace_json_seeds():
    files = [os.path.join(os.path.dirname(f), "perfetto_trace.json.gz") for f in CAPTURES]
    files.append(os.path.join(ROOT, "tests/data/kineto/torch_mlp_h100.pt.trace.json.gz"))
    for f in files:
        doc = json.load(gzip.open(f))
        events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
        kept = [e for e in events if e.get("ph") == "M"] + [e for e in events if e.get("ph") != "M"][:150]
        if isinstance(doc, dict):
            doc["traceEvents"] = kept
        else:
            doc = kept
        name = capture_name(f) if "jax_" in f else "kineto_torch_h100"
        with open(os.path.join(OUT, "trace_json", f"{name}.json"), "w") as out:
            json.dump(doc, out)


def hlo_seeds():
    for f in CAPTURES:
        for plane in load_xspace(f).planes:
            if plane.name != "/host:metadata":
                continue
            names = {k: v.name for k, v in plane.stat_metadata.items()}
            blobs = sorted((s.bytes_value for em in plane.event_metadata.values() for s in em.stats
                            if names.get(s.metadata_id) == "Hlo Proto"), key=len)
            for b in blobs[:2] + blobs[len(blobs) // 2:len(blobs) // 2 + 1]:
                if len(b) < 60000:
                    with open(os.path.join(OUT, "hlo", f"{capture_name(f)}_{len(b)}.hlo_proto.pb"), "wb") as out:
                        out.write(b)


if __name__ == "__main__":
    for d in ("xplane", "trace_json", "hlo"):
        os.makedirs(os.path.join(OUT, d), exist_ok=True)
    xplane_seeds()
    trace_json_seeds()
    hlo_seeds()
