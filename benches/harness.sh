#!/usr/bin/env bash
# The benchmark harness of the issues: compare.sh on three inputs made from one large XPlane
# (benches/make_large_xplane.sh): the file itself (~40 MB, ~1 M events), the file tiled ten
# times (~400 MB, ~10 M events: an XSpace's planes are a repeated field, so concatenating
# XSpace bytes yields one XSpace with every plane repeated), and an 8-host session (8 copies
# named host0..host7), plus the capture's trace JSON (perfetto_trace.json.gz next to the
# XPlane; profq only). Prints one set of tables per input; every measurement goes to
# benches/results/<date>-<commit>.csv (compare.sh), the current table to docs/benchmarking.md.
#
#   benches/harness.sh XPLANE [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
XPLANE="$(realpath "$1")"
RUNS="${2:-1}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for i in $(seq 10); do cat "$XPLANE"; done > "$WORK/tiled10.xplane.pb"
mkdir -p "$WORK/hosts8"
for h in $(seq 0 7); do cp "$XPLANE" "$WORK/hosts8/host$h.xplane.pb"; done
JSON="$(dirname "$XPLANE")/perfetto_trace.json.gz"
[ -f "$JSON" ] || JSON=""
for input in "$XPLANE" "$WORK/tiled10.xplane.pb" "$WORK/hosts8" $JSON; do
  benches/compare.sh "$input" "$RUNS"
  echo
done
