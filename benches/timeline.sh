#!/usr/bin/env bash
# Where the cores sit idle during one `profq summarize INPUT`: samples every CPU at 4 kHz
# (`perf record -a`) and prints, per 10 ms, how many samples were profq's threads (80 = both
# cores of a 2-core machine busy), with the end of each `PROFQ_TIMING` stage marked. A
# stage whose rows fall well below the machine's full count is one to spread over the
# cores; a run that is full throughout is bound by its CPU time, and only less work helps.
# Perf's own overhead stretches the run by ~30 %: read the shape, not the times.
#
#   benches/timeline.sh INPUT [PROFQ_BINARY]
#
# Needs perf with permission to sample system-wide (root, or kernel.perf_event_paranoid <= 0).
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT="$(realpath "$1")"
PROFQ="${2:-${CARGO_TARGET_DIR:-$PWD/target}/release/profq}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
perf record -q -a -F 4000 -o "$OUT/perf.data" -- env PROFQ_TIMING=1 "$PROFQ" summarize "$INPUT" --output "$OUT/summary.json" 2> "$OUT/timing.txt" > /dev/null
perf script -i "$OUT/perf.data" -F comm,time 2> /dev/null > "$OUT/samples.txt"
python3 - "$OUT/samples.txt" "$OUT/timing.txt" "$(nproc)" <<'PY'
import collections, re, sys
samples, timing, cores = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = []
for line in open(samples):
    m = re.match(r"\s*(\S.*?)\s+([\d.]+):", line)
    if m:
        rows.append((m.group(1), float(m.group(2))))
# The kernel's idle task and perf itself are not profq; every other thread of the run is.
ours = lambda comm: comm not in ("swapper", "perf", "perf-exec") and not comm.startswith(("kworker", "kdamond", "ksoftirqd"))
times = [t for comm, t in rows if ours(comm)]
start, end = min(times), max(times)
buckets = collections.Counter(int((t - start) / 0.01) for comm, t in rows if ours(comm) and start <= t <= end)
# Stage ends: the second-level stages of PROFQ_TIMING (two leading spaces), in order.
ends, at = [], 0.0
for line in open(timing):
    m = re.search(r"timing: (  \S.*?): ([\d.]+) s", line)
    if m:
        at += float(m.group(2))
        ends.append((at, m.group(1).strip()))
full = cores * 40
print(f"samples per 10 ms (profq's threads; {full} = all {cores} cores busy)")
for k in range(int((end - start) / 0.01) + 1):
    marks = [name for t, name in ends if k * 0.01 <= t < (k + 1) * 0.01]
    bar = "#" * round(20 * buckets[k] / full)
    print(f"{k * 10:5d} ms {buckets[k]:4d} {bar:<20s}{'  <- end of ' + ', '.join(marks) if marks else ''}")
print(f"span under perf: {end - start:.3f} s")
PY
