#!/usr/bin/env bash
# What a profq binary answers on every committed and shared-fixture profile, written as
# files with exit codes, so that two builds can be diffed byte for byte: run it once with
# the build before a change and once with the build after, then `diff -r OUT_A OUT_B`.
# A refactor must leave the two trees identical.
#
#   tools/identity.sh PROFQ_BINARY OUT_DIR
#
# Per input: summarize (JSON, both breakdown modes), the markdown and HTML reports, query
# answers, an export of the representative step, the ingested store's Parquet bytes and
# every named query over the stored run. Then compare of two related captures, and the
# exit codes of a few refused commands. PROFQ_FIXTURES: the shared fixtures (default
# ../shared/fixtures).
set -uo pipefail
cd "$(dirname "$0")/.."
PROFQ="$(realpath "$1")"
OUT="$(realpath -m "$2")"
FIXTURES="${PROFQ_FIXTURES:-../shared/fixtures}"
rm -rf "$OUT"; mkdir -p "$OUT"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
export PROFQ_CACHE_DIR="$SCRATCH/cache"

# run NAME ARGS...: stdout to NAME.out, the exit code to NAME.rc (stderr is dropped: it
# carries progress and timings).
run() {
  local name=$1; shift
  "$PROFQ" "$@" > "$OUT/$name.out" 2> /dev/null
  echo $? > "$OUT/$name.rc"
}

inputs=()
for d in tests/data/jax_cpu/* tests/data/jax_gpu/*; do [ -d "$d" ] && inputs+=("$d"); done
inputs+=(tests/data/kineto/*.json.gz)
for p in jax_cpu/shape_churn jax_cpu/transformer_lm public/openxla-xprof/tpu_v6e_jax_inference \
  public/TraceLens/mi300x_jax08_conv public/TraceLens/mi300x_jax08_elementwise public/TraceLens/mi300x_jax08_gemm \
  public/TraceLens/mi300x_jax_conv_minimal_legacy public/TraceLens/kineto/h100_bert-small-uncased.json.gz \
  public/TraceLens/kineto/mi300_bert-small-uncased.json.gz \
  public/HolisticTraceAnalysis/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz \
  public/HolisticTraceAnalysis/critical_path public/HolisticTraceAnalysis/nccl_parser_config/nccl_data.json.gz; do
  [ -e "$FIXTURES/$p" ] && inputs+=("$FIXTURES/$p")
done

queries=$("$PROFQ" queries 2> /dev/null | awk '{print $1}')
for input in "${inputs[@]}"; do
  tag=$(echo "$input" | sed 's|.*fixtures/||; s|^tests/data/||; s|[/.]|_|g')
  echo "$tag" >&2
  run "$tag.summary" summarize "$input"
  run "$tag.summary_global" summarize "$input" --breakdown-mode exclusive_global
  run "$tag.report" report "$input"
  run "$tag.report_html" report "$input" --format html
  run "$tag.query_hot" query "what are the hottest ops?" "$input" --format json
  run "$tag.query_regions" query "show hierarchical regions" "$input" --format json
  run "$tag.export" export-trace "$input" --representative --format json --output "$SCRATCH/trace.json"
  [ -f "$SCRATCH/trace.json" ] && mv "$SCRATCH/trace.json" "$OUT/$tag.trace.json"
  store="$SCRATCH/store-$tag"
  run "$tag.ingest" ingest "$input" --store "$store" --run-id r
  # Every table's files byte for byte, but `runs`, whose `ingested_at_ns` is the wall clock:
  # its other columns as text.
  (cd "$store" && find . -name '*.parquet' -not -path './runs/*' | sort | xargs -r sha256sum) > "$OUT/$tag.store.sha256"
  run "$tag.store_runs" sql "SELECT * EXCLUDE (ingested_at_ns) FROM runs" --store "$store" --format json
  for q in $queries; do
    run "$tag.run_$q" run "$q" --run r --store "$store" --format json
  done
  rm -rf "$store"
done

# Two sides, and commands that must be refused with their documented codes.
run compare_mlp compare --before tests/data/jax_cpu/mlp_before --after tests/data/jax_cpu/mlp_after --format json
run compare_mlp_md compare --before tests/data/jax_cpu/mlp_before --after tests/data/jax_cpu/mlp_after --format md
run bundle_mlp bundle --before tests/data/jax_cpu/mlp_before --after tests/data/jax_cpu/mlp_after --output-dir "$SCRATCH/bundle"
for f in "$SCRATCH"/bundle/*; do cp "$f" "$OUT/bundle_mlp.$(basename "$f")"; done
run refused_missing summarize "$SCRATCH/no-such-profile"
run refused_both summarize tests/data/jax_cpu/mlp_train --run x
run refused_neither summarize
run refused_query run no_such_query --run r --store "$SCRATCH/empty-store"
run refused_sql sql "DROP TABLE runs" --store "$SCRATCH/empty-store"
# The scratch folder's name differs per run: written as SCRATCH; a track record's time is
# the wall clock's.
sed -i "s|$SCRATCH|SCRATCH|g" "$OUT"/*.out
sed -i 's|"recorded_at_utc": "[^"]*"|"recorded_at_utc": "WALL CLOCK"|' "$OUT"/bundle_mlp.*
echo "wrote $(ls "$OUT" | wc -l) files to $OUT" >&2
