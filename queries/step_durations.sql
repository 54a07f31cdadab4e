-- Per-step durations and device activity, one row per step number.
--
-- Answers: how long did each step take and how busy were the devices in it? The input of
-- the step classes (light/heavy, periodicity) computed in src/summary/steps.rs.
--
-- Parameters:
--   run_id        TEXT          run to analyse
--   warmup_steps  INT   = 5     steps with a smaller number are flagged as warm-up
--
-- Columns:
--   step              step number
--   dur_ns            longest instance of the step over hosts and devices
--   instances         rows of `steps` for this number (hosts x devices)
--   busy_ns           device busy time (union of ops) in the longest instance
--   idle_ns           dur_ns - busy_ns
--   communication_ns  collective time not hidden by compute, in that instance
--   op_count          ops started in that instance
--   warmup            step < warmup_steps
WITH s AS (
  SELECT step, dur_ns, busy_ns, idle_ns, communication_ns, op_count,
         row_number() OVER (PARTITION BY step ORDER BY dur_ns DESC, CAST(host AS VARCHAR), CAST(device AS VARCHAR)) AS rk,
         count(*) OVER (PARTITION BY step) AS instances
  FROM steps WHERE run_id = {{run_id}}
)
SELECT step, dur_ns, instances, busy_ns, idle_ns, communication_ns, op_count, step < {{warmup_steps}} AS warmup
FROM s WHERE rk = 1
ORDER BY step
