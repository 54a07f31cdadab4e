# Sourced by the benchmark scripts. `measure GROUP LABEL COMMAND...` runs COMMAND under
# /usr/bin/time (its stdout kept in $SCRATCH/out, its stderr in $SCRATCH/err) and appends
# "GROUP LABEL wall_s cpu_s peak_rss_kb $ROUND $MEASURE_INPUT" to $SCRATCH/results, the
# lines benches/record.py writes to the results CSV. A failing command ends the script with
# its stderr.
measure() {
  local group=$1 label=$2; shift 2
  if ! /usr/bin/time -f "%e %U %S %M" -o "$SCRATCH/t" "$@" > "$SCRATCH/out" 2> "$SCRATCH/err"; then
    echo "$label failed:" >&2; cat "$SCRATCH/err" >&2; exit 1
  fi
  local wall user sys rss
  read -r wall user sys rss < <(tail -1 "$SCRATCH/t")
  echo "$group $label $wall $(awk "BEGIN{print $user + $sys}") $rss $ROUND ${MEASURE_INPUT:-}" >> "$SCRATCH/results"
}
