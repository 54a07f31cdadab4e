-- HTA's GPU kernel breakdown by kernel type, overlaps apart: how long the GPUs of all ranks
-- ran computation, communication and memory kernels, alone and together, by HTA 0.5.0's
-- definitions (get_gpu_kernel_breakdown's first table).
--
-- Answers: how is GPU time split between computation, communication and memory work, and
-- how much of it runs at once ("COMPUTATION overlapping COMMUNICATION")?
-- Per rank, each type's GPU events are merged (include/hta_merged.sql); a sweep over the
-- merged intervals labels each stretch of time by the types running in it. OTHER events are
-- not counted. Rows sum the ranks. GPU events and window are include/hta_kernels.sql's.
-- Reads every event: an INPUT is opened with all its events for it (source::open_whole).
--
-- Parameters:
--   run_id             TEXT         run to analyse
--   include_last_step  INT    = 0   1 keeps the last ProfilerStep (HTA's include_last_profiler_step)
--
-- Columns:
--   kernel_type  COMPUTATION, COMMUNICATION, MEMORY, or `A overlapping B` (HTA's labels)
--   total_ns     time of the stretches with exactly those types running, all ranks summed
--   share_pct    total_ns / the sum of total_ns, in %, rounded to 1 decimal
-- Rows only from: events
WITH k AS ({{include hta_kernels}}),
grouped AS (SELECT rank, kernel_type AS grp, start_us, end_us FROM k WHERE kernel_type IN ('COMPUTATION', 'COMMUNICATION', 'MEMORY')),
merged AS ({{include hta_merged}}),
-- Each merged interval's start (+bit) and end (-bit), merged read once.
points AS (
  SELECT m.rank, CASE WHEN p.side = 1 THEN m.start_us ELSE m.end_us END AS t,
         p.side * CASE m.grp WHEN 'COMPUTATION' THEN 1 WHEN 'COMMUNICATION' THEN 2 ELSE 4 END AS delta
  FROM merged m CROSS JOIN (VALUES (1), (-1)) AS p(side)
),
swept AS (
  SELECT rank, t,
         sum(delta) OVER (PARTITION BY rank ORDER BY t, delta ROWS UNBOUNDED PRECEDING) AS running,
         lead(t) OVER (PARTITION BY rank ORDER BY t, delta) AS next_t
  FROM points
),
labelled AS (
  SELECT concat_ws(' overlapping ', CASE WHEN running & 1 <> 0 THEN 'COMPUTATION' END, CASE WHEN running & 2 <> 0 THEN 'COMMUNICATION' END,
                   CASE WHEN running & 4 <> 0 THEN 'MEMORY' END) AS kernel_type,
         next_t - t AS dur_us
  FROM swept WHERE running > 0 AND next_t IS NOT NULL
),
totals AS (SELECT kernel_type, sum(dur_us) * 1000 AS total_ns FROM labelled GROUP BY kernel_type)
SELECT kernel_type, total_ns, round(100.0 * total_ns / nullif(sum(total_ns) OVER (), 0), 1) AS share_pct
FROM totals
ORDER BY total_ns DESC, kernel_type
