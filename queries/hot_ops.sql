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
-- shape/scope/source of an op is `top_value(value, count)`, profq's aggregate for the
-- value with the highest summed weight (ties: smallest; nulls left out), in the same
-- grouping as the sums.
WITH o AS (
  SELECT CAST(hlo_op AS VARCHAR) AS hlo_op, CAST(category AS VARCHAR) AS category, CAST(shape AS VARCHAR) AS shape,
         CAST(tf_op AS VARCHAR) AS tf_op, CAST(source AS VARCHAR) AS source, device, count, dur_ns, self_ns
  FROM op_totals WHERE run_id = {{run_id}} AND hlo_op IS NOT NULL
),
per_op AS (
  SELECT hlo_op, min(category) AS category, sum(count) AS count, sum(dur_ns) AS total_ns, sum(self_ns) AS self_ns,
         count(DISTINCT device) AS devices, top_value(shape, count) AS shape, top_value(tf_op, count) AS scope_path,
         top_value(source, count) AS source
  FROM o GROUP BY hlo_op
)
SELECT hlo_op,
       canonical_name(hlo_op) AS canonical_name,
       category, count, total_ns, self_ns,
       CAST(total_ns AS DOUBLE) / count AS avg_ns,
       shape, scope_path, source, devices
FROM per_op
ORDER BY self_ns DESC, total_ns DESC, hlo_op
LIMIT {{top_k}}
