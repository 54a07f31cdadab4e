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
-- Reads op_totals (executions already summed per distinct op of a device). The most common
-- shape/scope/source of an op is an ordered first_value over its (op, value) sums: an
-- aggregate, not a window, because a window function pays for every op's partition.
WITH o AS (
  SELECT CAST(hlo_op AS VARCHAR) AS hlo_op, CAST(category AS VARCHAR) AS category, CAST(shape AS VARCHAR) AS shape,
         CAST(tf_op AS VARCHAR) AS tf_op, CAST(source AS VARCHAR) AS source, device, count, dur_ns, self_ns
  FROM op_totals WHERE run_id = {{run_id}}
),
per_op AS (
  SELECT hlo_op, min(category) AS category, sum(count) AS count, sum(dur_ns) AS total_ns, sum(self_ns) AS self_ns,
         count(DISTINCT device) AS devices
  FROM o GROUP BY hlo_op
),
shapes AS (
  SELECT hlo_op, first_value(shape ORDER BY shape IS NULL, n DESC, shape) AS shape
  FROM (SELECT hlo_op, shape, sum(count) AS n FROM o GROUP BY hlo_op, shape) s GROUP BY hlo_op
),
scopes AS (
  SELECT hlo_op, first_value(tf_op ORDER BY tf_op IS NULL, n DESC, tf_op) AS scope_path
  FROM (SELECT hlo_op, tf_op, sum(count) AS n FROM o GROUP BY hlo_op, tf_op) s GROUP BY hlo_op
),
sources AS (
  SELECT hlo_op, first_value(source ORDER BY source IS NULL, n DESC, source) AS source
  FROM (SELECT hlo_op, source, sum(count) AS n FROM o GROUP BY hlo_op, source) s GROUP BY hlo_op
)
SELECT p.hlo_op,
       regexp_replace(regexp_replace(p.hlo_op, '^%', ''), '\.[0-9]+$', '') AS canonical_name,
       p.category, p.count, p.total_ns, p.self_ns,
       CAST(p.total_ns AS DOUBLE) / p.count AS avg_ns,
       sh.shape, sc.scope_path, so.source, p.devices
FROM per_op p JOIN shapes sh ON sh.hlo_op = p.hlo_op JOIN scopes sc ON sc.hlo_op = p.hlo_op JOIN sources so ON so.hlo_op = p.hlo_op
ORDER BY p.self_ns DESC, p.total_ns DESC, p.hlo_op
LIMIT {{top_k}}
