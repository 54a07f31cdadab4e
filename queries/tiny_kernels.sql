-- Many tiny kernels / launch-bound steps.
--
-- Answers: are steps made of many very short ops, with the device mostly idle between
-- them (dispatch- or launch-bound)? A step is flagged launch_bound when more than half of
-- its ops are shorter than tiny_us and the devices are busy less than half of the step.
--
-- Parameters:
--   run_id        TEXT            run to analyse
--   tiny_us       INT   = 10      an op shorter than this (µs) is tiny
--   warmup_steps  INT   = 5       steps with a smaller number are left out
--
-- Columns:
--   step            step number
--   dur_ns          step duration
--   op_count        ops started in the step
--   tiny_ops        of which shorter than tiny_us
--   tiny_share      tiny_ops / op_count
--   tiny_ns         summed duration of the tiny ops
--   busy_share      device busy time / step duration
--   launch_bound    tiny_share > 0.5 and busy_share < 0.5
WITH s AS (
  SELECT step, dur_ns, busy_ns, row_number() OVER (PARTITION BY step ORDER BY dur_ns DESC) AS rk
  FROM steps WHERE run_id = {{run_id}} AND step >= {{warmup_steps}}
),
-- Tiny ops are counted with FILTER, not a CASE (evaluated row by row: twice the aggregation
-- itself on a million ops) nor a 0/1 cast summed (a cast and a product per row more).
o AS (
  SELECT step, count(*) AS op_count, count(*) FILTER (WHERE dur_ns < {{tiny_us}} * 1000) AS tiny_ops,
         sum(dur_ns) FILTER (WHERE dur_ns < {{tiny_us}} * 1000) AS tiny_ns
  FROM ops WHERE run_id = {{run_id}} AND step IS NOT NULL AND NOT is_async_line(line)
  GROUP BY step
)
SELECT s.step, s.dur_ns, coalesce(o.op_count, 0) AS op_count, coalesce(o.tiny_ops, 0) AS tiny_ops,
       CASE WHEN o.op_count > 0 THEN CAST(o.tiny_ops AS DOUBLE) / o.op_count ELSE 0.0 END AS tiny_share,
       coalesce(o.tiny_ns, 0) AS tiny_ns,
       CASE WHEN s.dur_ns > 0 THEN CAST(s.busy_ns AS DOUBLE) / s.dur_ns ELSE 0.0 END AS busy_share,
       (CASE WHEN o.op_count > 0 THEN CAST(o.tiny_ops AS DOUBLE) / o.op_count ELSE 0.0 END) > 0.5
         AND (CASE WHEN s.dur_ns > 0 THEN CAST(s.busy_ns AS DOUBLE) / s.dur_ns ELSE 0.0 END) < 0.5 AS launch_bound
FROM s LEFT JOIN o ON o.step = s.step
WHERE s.rk = 1
ORDER BY s.step
