-- Hot ops by exclusive (self) time, over every op execution of the run.
--
-- Answers: which device ops cost the most time, not counting time of ops nested in them.
-- Ops are grouped by exact name (`fusion.1` and `fusion.2` stay apart).
--
-- Parameters:
--   run_id  TEXT           run to analyse
--   top_k   INT   = 25     rows to return
--
-- Columns:
--   hlo_op          op name (HLO instruction, or kernel name without HLO)
--   canonical_name  name without a leading `%` and one trailing `.N`
--   category        compute | communication | stall
--   count           executions
--   total_ns        sum of durations (inclusive)
--   self_ns         sum of exclusive time
--   avg_ns          total_ns / count
--   shape           most common result shape (ties: smallest text)
--   scope_path      most common framework scope path (tf_op)
--   source          most common source location
--   devices         distinct devices that ran it
WITH o AS (
  SELECT CAST(hlo_op AS VARCHAR) AS hlo_op, CAST(category AS VARCHAR) AS category, dur_ns, self_ns,
         CAST(shape AS VARCHAR) AS shape, CAST(tf_op AS VARCHAR) AS tf_op, CAST(source AS VARCHAR) AS source,
         CAST(device AS VARCHAR) AS device
  FROM ops WHERE run_id = {{run_id}}
),
per_op AS (
  SELECT hlo_op, min(category) AS category, count(*) AS count, sum(dur_ns) AS total_ns,
         sum(self_ns) AS self_ns, count(DISTINCT device) AS devices
  FROM o GROUP BY hlo_op
),
shape_counts AS (SELECT hlo_op, shape, count(*) AS n FROM o WHERE shape IS NOT NULL GROUP BY hlo_op, shape),
shapes AS (SELECT hlo_op, shape, row_number() OVER (PARTITION BY hlo_op ORDER BY n DESC, shape) AS rk FROM shape_counts),
scope_counts AS (SELECT hlo_op, tf_op, count(*) AS n FROM o WHERE tf_op IS NOT NULL GROUP BY hlo_op, tf_op),
scopes AS (SELECT hlo_op, tf_op, row_number() OVER (PARTITION BY hlo_op ORDER BY n DESC, tf_op) AS rk FROM scope_counts),
source_counts AS (SELECT hlo_op, source, count(*) AS n FROM o WHERE source IS NOT NULL GROUP BY hlo_op, source),
sources AS (SELECT hlo_op, source, row_number() OVER (PARTITION BY hlo_op ORDER BY n DESC, source) AS rk FROM source_counts)
SELECT p.hlo_op,
       regexp_replace(regexp_replace(p.hlo_op, '^%', ''), '\.[0-9]+$', '') AS canonical_name,
       p.category, p.count, p.total_ns, p.self_ns,
       CAST(p.total_ns AS DOUBLE) / p.count AS avg_ns,
       s.shape, sc.tf_op AS scope_path, src.source, p.devices
FROM per_op p
LEFT JOIN shapes s ON s.hlo_op = p.hlo_op AND s.rk = 1
LEFT JOIN scopes sc ON sc.hlo_op = p.hlo_op AND sc.rk = 1
LEFT JOIN sources src ON src.hlo_op = p.hlo_op AND src.rk = 1
ORDER BY p.self_ns DESC, p.total_ns DESC, p.hlo_op
LIMIT {{top_k}}
