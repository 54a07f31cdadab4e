-- HTA's temporal breakdown of each rank's GPU time: idle, compute and non-compute within the
-- span from the first GPU event's start to the last one's end, by HTA 0.5.0's definitions.
--
-- Answers: how much of the GPU span do kernels keep the GPU busy, and how much of that is
-- computation, in the terms PyTorch engineers know from HTA's get_temporal_breakdown.
-- profq's own breakdowns (time_breakdown, time_breakdown_global) split step time by op
-- category instead; docs/semantics.md says how the two differ.
-- kernel_span is the last merged interval's end minus the first's start; idle is the span
-- less the merged GPU events; compute the merged COMPUTATION kernels; non-compute the rest
-- (communication, memory and other events not under computation). The GPU events and
-- window are include/hta_kernels.sql's: by default the last ProfilerStep is left out.
-- Reads every event: an INPUT is opened with all its events for it (source::open_whole).
--
-- Parameters:
--   run_id             TEXT         run to analyse
--   include_last_step  INT    = 0   1 keeps the last ProfilerStep (HTA's include_last_profiler_step)
--
-- Columns:
--   rank             rank (hosts.rank)
--   idle_ns          kernel_span_ns less the merged GPU events
--   compute_ns       merged COMPUTATION events
--   non_compute_ns   kernel_span_ns - compute_ns - idle_ns
--   kernel_span_ns   last merged end - first merged start
--   idle_pct         idle_ns / kernel_span_ns, in %, rounded to 2 decimals
--   compute_pct      compute_ns / kernel_span_ns, in %, rounded to 2 decimals
--   non_compute_pct  non_compute_ns / kernel_span_ns, in %, rounded to 2 decimals
-- Rows only from: events
WITH k AS ({{include hta_kernels}}),
-- Every GPU event in ALL, and the computation kernels again in COMPUTATION (k read once).
grouped AS (
  SELECT k.rank, v.grp, k.start_us, k.end_us
  FROM k CROSS JOIN (VALUES ('ALL'), ('COMPUTATION')) AS v(grp)
  WHERE v.grp = 'ALL' OR k.kernel_type = v.grp
),
merged AS ({{include hta_merged}}),
per_grp AS (
  SELECT rank, grp, sum(end_us - start_us) AS busy_us, min(start_us) AS first_us, last_value(end_us ORDER BY merged_no) AS last_end_us
  FROM merged GROUP BY rank, grp
),
t AS (
  SELECT rank, max(CASE WHEN grp = 'ALL' THEN last_end_us - first_us END) AS span_us,
         max(CASE WHEN grp = 'ALL' THEN last_end_us - first_us - busy_us END) AS idle_us,
         coalesce(max(CASE WHEN grp = 'COMPUTATION' THEN busy_us END), 0) AS compute_us
  FROM per_grp GROUP BY rank
)
SELECT rank, idle_us * 1000 AS idle_ns, compute_us * 1000 AS compute_ns, (span_us - compute_us - idle_us) * 1000 AS non_compute_ns,
       span_us * 1000 AS kernel_span_ns,
       CASE WHEN span_us > 0 THEN round(100.0 * idle_us / span_us, 2) END AS idle_pct,
       CASE WHEN span_us > 0 THEN round(100.0 * compute_us / span_us, 2) END AS compute_pct,
       CASE WHEN span_us > 0 THEN round(100.0 * (span_us - compute_us - idle_us) / span_us, 2) END AS non_compute_pct
FROM t
ORDER BY rank
