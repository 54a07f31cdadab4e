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
grouped AS (
  SELECT rank, 'ALL' AS grp, start_us, end_us FROM k
  UNION ALL SELECT rank, kernel_type, start_us, end_us FROM k WHERE kernel_type = 'COMPUTATION'
),
merged AS ({{include hta_merged}}),
per_grp AS (SELECT rank, grp, sum(end_us - start_us) AS busy_us, min(start_us) AS first_us, max(merged_no) AS last_no FROM merged GROUP BY rank, grp),
span AS (
  SELECT p.rank, m.end_us - p.first_us AS span_us, p.busy_us
  FROM per_grp p JOIN merged m ON m.rank = p.rank AND m.grp = p.grp AND m.merged_no = p.last_no
  WHERE p.grp = 'ALL'
),
t AS (
  SELECT s.rank, s.span_us, s.span_us - s.busy_us AS idle_us, coalesce(c.busy_us, 0) AS compute_us
  FROM span s LEFT JOIN per_grp c ON c.rank = s.rank AND c.grp = 'COMPUTATION'
)
SELECT rank, idle_us * 1000 AS idle_ns, compute_us * 1000 AS compute_ns, (span_us - compute_us - idle_us) * 1000 AS non_compute_ns,
       span_us * 1000 AS kernel_span_ns,
       CASE WHEN span_us > 0 THEN round(100.0 * idle_us / span_us, 2) END AS idle_pct,
       CASE WHEN span_us > 0 THEN round(100.0 * compute_us / span_us, 2) END AS compute_pct,
       CASE WHEN span_us > 0 THEN round(100.0 * (span_us - compute_us - idle_us) / span_us, 2) END AS non_compute_pct
FROM t
ORDER BY rank
