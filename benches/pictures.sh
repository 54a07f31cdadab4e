#!/usr/bin/env bash
# The pictures on one profile (speed is measured here, never in tests), each in the same run
# as what it builds on:
#   report:  `profq report INPUT --format html` (the page: summary, timeline, charts)  vs
#            `profq summarize INPUT` and `profq report INPUT` (markdown); the page's size.
#   export:  `profq export-trace INPUT` of the whole run cut at MAX_EVENTS (default 1 M)
#            events, as Perfetto protobuf: bytes per event, MB/s written, events/s, peak
#            RSS; against `profq summarize` of the same INPUT.
# Prints the medians and appends every measurement to benches/results/<date>-<commit>.csv
# (the columns compare.sh writes; RESULTS overrides).
#
#   benches/pictures.sh INPUT [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT="$(realpath "$1")"
RUNS="${2:-3}"
MAX_EVENTS="${MAX_EVENTS:-1000000}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
BYTES=$(cat "$INPUT" | wc -c)

. benches/measure.sh

for i in $(seq "$RUNS"); do
  ROUND=$i
  measure report profq_summarize "$PROFQ" summarize "$INPUT"
  measure report profq_report_md "$PROFQ" report "$INPUT"
  measure report profq_report_html "$PROFQ" report "$INPUT" --format html --output "$SCRATCH/report.html"
  measure export profq_export_trace "$PROFQ" export-trace "$INPUT" --from-ns 0 --to-ns 9223372036854775807 --max-events "$MAX_EVENTS" --output "$SCRATCH/window.pftrace"
  cp "$SCRATCH/out" "$SCRATCH/export.line"
done

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
python3 benches/record.py "$RESULTS" "$COMMIT" "$(basename "$INPUT")" "$BYTES" 1 < "$SCRATCH/results"
python3 - "$SCRATCH/results" "$RESULTS" "$(wc -c < "$SCRATCH/report.html")" "$(cat "$SCRATCH/export.line")" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
results, page_bytes, line = sys.argv[2], int(sys.argv[3]), sys.argv[4]
words = line.replace(',', '').split()
events = int(words[words.index('events') - 1])
trace_bytes = int(words[words.index('bytes') - 1])
med = lambda tool: st.median(float(r[2]) for r in rows if r[1] == tool)
rss = lambda tool: max(int(r[4]) for r in rows if r[1] == tool)
for tool in dict.fromkeys(r[1] for r in rows):
    print(f'{tool:22s} {med(tool):7.3f} s  peak {rss(tool) / 1024:6.0f} MB')
print(f'HTML report: {page_bytes / 1e6:.2f} MB page, {med("profq_report_html") / med("profq_summarize"):.2f}x summarize, {med("profq_report_html") / med("profq_report_md"):.2f}x the markdown report')
t = med('profq_export_trace')
print(f'export: {events} events, {trace_bytes / 1e6:.1f} MB = {trace_bytes / events:.1f} B/event; {trace_bytes / 1e6 / t:.1f} MB/s, {events / t / 1e6:.2f} M events/s; {t / med("profq_summarize"):.2f}x summarize')
print(f'appended to {results}')
PY
