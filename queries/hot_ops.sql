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
-- Reads op_totals (executions already summed per distinct op of a device), summed again per
-- (op, category, shape, scope, source, device); the most common shape/scope/source are then
-- picked by window functions over those groups.
WITH g AS (
  SELECT hlo_op, category, shape, tf_op, source, device, sum(count) AS n, sum(dur_ns) AS total_ns, sum(self_ns) AS self_ns
  FROM op_totals WHERE run_id = {{run_id}}
  GROUP BY hlo_op, category, shape, tf_op, source, device
),
o AS (
  SELECT CAST(hlo_op AS VARCHAR) AS hlo_op, CAST(category AS VARCHAR) AS category, CAST(shape AS VARCHAR) AS shape,
         CAST(tf_op AS VARCHAR) AS tf_op, CAST(source AS VARCHAR) AS source, CAST(device AS VARCHAR) AS device, n, total_ns, self_ns
  FROM g
),
counted AS (
  SELECT *, sum(n) OVER (PARTITION BY hlo_op, shape) AS shape_n, sum(n) OVER (PARTITION BY hlo_op, tf_op) AS scope_n,
         sum(n) OVER (PARTITION BY hlo_op, source) AS source_n
  FROM o
),
picked AS (
  SELECT *,
         first_value(shape) OVER (PARTITION BY hlo_op ORDER BY shape IS NULL, shape_n DESC, shape) AS top_shape,
         first_value(tf_op) OVER (PARTITION BY hlo_op ORDER BY tf_op IS NULL, scope_n DESC, tf_op) AS top_scope,
         first_value(source) OVER (PARTITION BY hlo_op ORDER BY source IS NULL, source_n DESC, source) AS top_source
  FROM counted
),
per_op AS (
  SELECT hlo_op, min(category) AS category, sum(n) AS count, sum(total_ns) AS total_ns, sum(self_ns) AS self_ns,
         min(top_shape) AS shape, min(top_scope) AS scope_path, min(top_source) AS source, count(DISTINCT device) AS devices
  FROM picked GROUP BY hlo_op
)
SELECT hlo_op,
       regexp_replace(regexp_replace(hlo_op, '^%', ''), '\.[0-9]+$', '') AS canonical_name,
       category, count, total_ns, self_ns,
       CAST(total_ns AS DOUBLE) / count AS avg_ns,
       shape, scope_path, source, devices
FROM per_op
ORDER BY self_ns DESC, total_ns DESC, hlo_op
LIMIT {{top_k}}
