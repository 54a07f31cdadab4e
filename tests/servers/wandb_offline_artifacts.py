"""Prints, as JSON, the artifacts an offline W&B run recorded: [{"name", "type", "aliases", "files"}].

Usage: wandb_offline_artifacts.py WANDB_DIR
Reads the run's transaction log (`wandb/offline-run-*/run-*.wandb`): a 7-byte header
(":W&B", magic 0xBEE1, version 0), then LevelDB log records in 32 KiB blocks (checksum 4,
length 2, type 1: full, first, middle, last), each record a `wandb_internal_pb2.Record`
protobuf, parsed with W&B's own message definitions.
"""
import glob
import json
import sys

from wandb.proto import wandb_internal_pb2

BLOCK = 32768


def records(path):
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", f"{path}: not a W&B transaction log"
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            yield chunk
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            yield pending + chunk
        elif kind == 0 and length == 0:
            pos += left - 7


found = []
for path in sorted(glob.glob(f"{sys.argv[1]}/wandb/offline-run-*/run-*.wandb")):
    for data in records(path):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        if record.WhichOneof("record_type") == "artifact":
            a = record.artifact
            found.append({"name": a.name, "type": a.type, "aliases": list(a.aliases),
                          "files": sorted(e.path for e in a.manifest.contents)})
print(json.dumps(found))
