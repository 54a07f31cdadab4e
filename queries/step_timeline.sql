-- The ops of one step on every device line: the timeline of that step.
--
-- Answers: what ran when inside a step (typically the representative one), line by line,
-- and where the lines sat idle? The HTML report draws it; `profq export-trace` is the tool
-- for more than one step.
--
-- Parameters:
--   run_id    TEXT            run to analyse
--   step      INT             step number
--   max_ops   INT   = 20000   rows to return at most (the earliest ops of the step)
--
-- Columns:
--   host          host
--   device        device
--   line          line the op ran on
--   hlo_op        op name
--   category      compute | communication | stall
--   region_path   named-scope path of the op
--   offset_ns     start, ns after the step's start (its earliest instance over hosts and devices)
--   dur_ns        duration
--   self_ns       exclusive time on its line
WITH s AS (SELECT min(start_ns) AS start_ns FROM steps WHERE run_id = {{run_id}} AND step = {{step}})
SELECT CAST(o.host AS VARCHAR) AS host, CAST(o.device AS VARCHAR) AS device, CAST(o.line AS VARCHAR) AS line,
       CAST(o.hlo_op AS VARCHAR) AS hlo_op, CAST(o.category AS VARCHAR) AS category,
       CAST(o.region_path AS VARCHAR) AS region_path,
       o.start_ns - s.start_ns AS offset_ns, o.dur_ns, o.self_ns
FROM s CROSS JOIN ops o
WHERE o.run_id = {{run_id}} AND o.step = {{step}}
ORDER BY o.start_ns, host, device, line, hlo_op
LIMIT {{max_ops}}
