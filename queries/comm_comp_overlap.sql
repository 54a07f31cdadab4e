-- HTA's communication-computation overlap per rank: the share of communication kernel time
-- during which computation kernels run too, by HTA 0.5.0's definitions (get_comm_comp_overlap).
--
-- Answers: does each rank hide its collectives behind computation? A low share on one rank
-- among many is a rank whose communication is exposed.
-- Per rank, COMMUNICATION and COMPUTATION GPU events are each merged
-- (include/hta_merged.sql); the overlap is the time both run, over the merged communication
-- time. GPU events and window are include/hta_kernels.sql's.
-- Reads every event: an INPUT is opened with all its events for it (source::open_whole).
--
-- Parameters:
--   run_id             TEXT         run to analyse
--   include_last_step  INT    = 0   1 keeps the last ProfilerStep (HTA's include_last_profiler_step)
--
-- Columns:
--   rank         rank (hosts.rank); every host of the run has a row
--   overlap_pct  overlap / communication time, in %, rounded to 2 decimals; null without communication
WITH k AS ({{include hta_kernels}}),
grouped AS (SELECT rank, kernel_type AS grp, start_us, end_us FROM k WHERE kernel_type IN ('COMPUTATION', 'COMMUNICATION')),
merged AS ({{include hta_merged}}),
-- Each merged interval's start (+1 communication, +2 computation) and end (the same, negative),
-- merged read once: the start point of a communication interval carries its length.
points AS (
  SELECT m.rank, CASE WHEN p.side = 1 THEN m.start_us ELSE m.end_us END AS t,
         p.side * CASE m.grp WHEN 'COMMUNICATION' THEN 1 ELSE 2 END AS delta,
         CASE WHEN p.side = 1 AND m.grp = 'COMMUNICATION' THEN m.end_us - m.start_us ELSE 0 END AS comm_len
  FROM merged m CROSS JOIN (VALUES (1), (-1)) AS p(side)
),
swept AS (
  SELECT rank, t, comm_len,
         sum(delta) OVER (PARTITION BY rank ORDER BY t, delta ROWS UNBOUNDED PRECEDING) AS running,
         lead(t) OVER (PARTITION BY rank ORDER BY t, delta) AS next_t
  FROM points
),
per AS (
  SELECT rank, sum(CASE WHEN running = 3 AND next_t IS NOT NULL THEN next_t - t ELSE 0 END) AS overlap_us,
         sum(comm_len) AS comm_us
  FROM swept GROUP BY rank
),
ranks AS (SELECT DISTINCT rank FROM hosts WHERE run_id = {{run_id}})
SELECT r.rank, CASE WHEN p.comm_us <> 0 THEN round(100.0 * p.overlap_us / p.comm_us, 2) END AS overlap_pct
FROM ranks r LEFT JOIN per p ON p.rank = r.rank
ORDER BY r.rank
