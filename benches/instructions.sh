#!/usr/bin/env bash
# Instructions profq executes to summarize INPUT, counted by callgrind: unlike wall time on
# a shared VM (±30 % between runs of the same command), the count is the same on every run,
# so it tells whether a change made the work smaller. Prints the total and the functions
# with the most instructions of their own.
#
#   benches/instructions.sh INPUT [PROFQ_BINARY] [TOP]
#
# Needs valgrind (callgrind_annotate). Under valgrind the CPU's SHA extensions are hidden,
# so the file hash runs sha2's portable code, about ten times the instructions it takes
# natively: it is counted apart. Nothing here is a timing: compare.sh measures speed.
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT="$(realpath "$1")"
PROFQ="${2:-}"
TOP="${3:-25}"
if [ -z "$PROFQ" ]; then
  cargo build --release --quiet
  PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" "$PROFQ" summarize "$INPUT" > /dev/null 2> "$OUT/valgrind.log"
callgrind_annotate "$OUT/callgrind.out" > "$OUT/annotated.txt" 2> /dev/null
total=$(grep -m1 "PROGRAM TOTALS" "$OUT/annotated.txt" | awk '{gsub(",", "", $1); printf "%.0f", $1}')
sha=$(grep "sha2::sha256" "$OUT/annotated.txt" | awk '{gsub(",", "", $1); s += $1} END {printf "%.0f", s}')
echo "instructions: $(( (total - sha) / 1000000 )) M (file hash, portable sha2 under valgrind: $(( sha / 1000000 )) M more)"
echo
echo "most instructions of their own:"
sed -n '/file:function/,$p' "$OUT/annotated.txt" | grep -v "sha2::sha256" | grep -E "^ *[0-9]" | head -n "$TOP" |
  sed -E 's/ \[[^]]*\]$//; s/\?\?\?://; s/\.\/[^:]*:(__)?/libc /' | cut -c1-150
