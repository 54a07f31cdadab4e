"""Seeds and lists buckets on the test emulators (moto's S3, fake-gcs-server's GCS).

Usage: objects.py s3|gcs ENDPOINT COMMAND ARGS...
  mkbucket BUCKET
  upload BUCKET PREFIX PATH   (a file, or a directory's files, keeping their relative paths)
  list BUCKET PREFIX          (prints one key per line, sorted)
S3 is reached with boto3 and the static test credentials of the environment; GCS with its
JSON API (fake-gcs-server refuses the XML uploads object_store sends, so seeding uses JSON).
"""
import json
import os
import sys
import urllib.parse
import urllib.request


def files_of(path):
    if os.path.isfile(path):
        return [(os.path.basename(path), path)]
    out = []
    for root, _, names in os.walk(path):
        for n in names:
            full = os.path.join(root, n)
            out.append((os.path.relpath(full, path), full))
    return sorted(out)


def s3(endpoint):
    import boto3
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
                        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"))


def main():
    kind, endpoint, cmd, *args = sys.argv[1:]
    if kind == "s3":
        c = s3(endpoint)
        if cmd == "mkbucket":
            c.create_bucket(Bucket=args[0])
        elif cmd == "upload":
            bucket, prefix, path = args
            for rel, full in files_of(path):
                c.upload_file(full, bucket, f"{prefix}/{rel}".lstrip("/"))
        elif cmd == "list":
            bucket, prefix = args
            keys = []
            for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                keys += [o["Key"] for o in page.get("Contents", [])]
            print("\n".join(sorted(keys)))
    else:
        if cmd == "mkbucket":
            req = urllib.request.Request(f"{endpoint}/storage/v1/b", data=json.dumps({"name": args[0]}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
            urllib.request.urlopen(req).read()
        elif cmd == "upload":
            bucket, prefix, path = args
            for rel, full in files_of(path):
                name = urllib.parse.quote(f"{prefix}/{rel}".lstrip("/"), safe="")
                with open(full, "rb") as f:
                    req = urllib.request.Request(f"{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}",
                                                 data=f.read(), headers={"Content-Type": "application/octet-stream"}, method="POST")
                urllib.request.urlopen(req).read()
        elif cmd == "list":
            bucket, prefix = args
            q = urllib.parse.urlencode({"prefix": prefix})
            items = json.load(urllib.request.urlopen(f"{endpoint}/storage/v1/b/{bucket}/o?{q}")).get("items", [])
            print("\n".join(sorted(i["name"] for i in items)))


if __name__ == "__main__":
    main()
