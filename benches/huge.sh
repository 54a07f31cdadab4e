#!/usr/bin/env bash
# Bounded-memory ingest of an XPlane larger than protobuf's 2 GiB message limit: makes one
# from a real XPlane (benches/make_huge_xplane.py repeats its device planes under new
# ordinals), ingests it, and prints wall time, CPU time, peak RSS and RSS as a share of the
# file. Ingest decodes, derives and writes a group of whole planes at a time
# (PROFQ_PART_BYTES, default 32 MiB), so peak RSS follows the part size, not the file size.
#
# With --one-plane the XPlane's plane with the most line bytes is grown past MIN_BYTES
# itself instead (its lines repeated inside it, later in time): one plane larger than
# memory should hold, streamed in time windows (PROFQ_WINDOW_EVENTS, default 1 M events).
#
#   benches/huge.sh XPLANE [MIN_BYTES] [--one-plane]      (default MIN_BYTES 2300000000)
set -euo pipefail
cd "$(dirname "$0")/.."
XPLANE="$(realpath "$1")"
MIN_BYTES="${2:-2300000000}"
ONE_PLANE="${3:-}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 benches/make_huge_xplane.py "$XPLANE" "$WORK/huge.xplane.pb" --min-bytes "$MIN_BYTES" $ONE_PLANE
BYTES=$(stat -c %s "$WORK/huge.xplane.pb")
/usr/bin/time -f "%e %U %S %M" -o "$WORK/t" "$PROFQ" ingest "$WORK/huge.xplane.pb" --store "$WORK/store" --run-id huge
read -r wall user sys rss < "$WORK/t"
awk -v b="$BYTES" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN {
  printf "| input | wall s | cpu s | peak RSS MB | RSS / file | MB/s |\n|---|---|---|---|---|---|\n"
  printf "| %.2f GB XPlane | %.1f | %.1f | %d | %.2f | %.0f |\n", b / 1e9, w, u + s, r / 1024, r * 1024 / b, b / 1e6 / w
}'
"$PROFQ" sql "SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM ops) AS ops, (SELECT num_devices FROM runs) AS devices" --store "$WORK/store"
