#!/usr/bin/env bash
# Instructions profq executes to summarize INPUT, counted by callgrind: unlike wall time on
# a shared VM (±30 % between runs of the same command), the count moves little between runs,
# so it tells whether a change made the work smaller. Prints the total and the functions
# with the most instructions of their own (of the last run).
#
#   benches/instructions.sh INPUT [PROFQ_BINARY] [TOP] [RUNS]
#
# What moves is how many of the summary's statements the idle planner has planned when the
# tables are built: one in flight then is planned again by the caller. That is ~0.3 % of a
# 40 MB file's count but up to ~10 % of a 100 KB capture's, so give small inputs RUNS of 5
# or more and compare the medians (default 1).
#
# Needs valgrind (callgrind_annotate). Under valgrind the CPU's SHA extensions are hidden,
# so the file hash runs sha2's portable code, about ten times the instructions it takes
# natively: it is counted apart. Nothing here is a timing: compare.sh measures speed.
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT="$(realpath "$1")"
PROFQ="${2:-}"
TOP="${3:-25}"
RUNS="${4:-1}"
if [ -z "$PROFQ" ]; then
  cargo build --release --quiet
  PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
counts=()
for _ in $(seq "$RUNS"); do
  valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" "$PROFQ" summarize "$INPUT" > /dev/null 2> "$OUT/valgrind.log"
  callgrind_annotate "$OUT/callgrind.out" > "$OUT/annotated.txt" 2> /dev/null
  total=$(grep -m1 "PROGRAM TOTALS" "$OUT/annotated.txt" | awk '{gsub(",", "", $1); printf "%.0f", $1}')
  sha=$(grep "sha2::sha256" "$OUT/annotated.txt" | awk '{gsub(",", "", $1); s += $1} END {printf "%.0f", s}')
  counts+=("$(( (total - sha) / 1000000 ))")
done
median=$(printf '%s\n' "${counts[@]}" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
echo "instructions: $median M, median of ${RUNS} (${counts[*]}) (file hash, portable sha2 under valgrind: $(( sha / 1000000 )) M more)"
echo
echo "most instructions of their own:"
sed -n '/file:function/,$p' "$OUT/annotated.txt" | grep -v "sha2::sha256" | grep -E "^ *[0-9]" | head -n "$TOP" |
  sed -E 's/ \[[^]]*\]$//; s/\?\?\?://; s/\.\/[^:]*:(__)?/libc /' | cut -c1-150
