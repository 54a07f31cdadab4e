-- Step time statistics: all steps and steady state (step number >= warmup_steps).
--
-- Answers: how long is a step, and how much does it vary? A step's duration is its longest
-- instance over hosts and devices (a synchronous step ends when its slowest device ends).
-- Quantiles interpolate linearly at (n-1)*q, as numpy does. Light/heavy step classes need
-- an iterative 2-means clustering, which SQL cannot express: src/summary/steps.rs computes
-- them from this query's per-step rows (query `step_durations`).
--
-- Parameters:
--   run_id        TEXT          run to analyse
--   warmup_steps  INT   = 5     steps with a smaller step number are warm-up
--
-- Columns:
--   steps       all | steady_state
--   count       steps
--   mean_ns     mean duration (null when count = 0, as every statistic)
--   median_ns   median duration
--   p90_ns      90th percentile
--   min_ns      shortest step
--   max_ns      longest step
--   first_step  smallest step number
--   last_step   largest step number
WITH per_step AS (SELECT step, dur_ns FROM ({{include per_step}}) AS p WHERE run_id = {{run_id}}),
tagged AS (
  SELECT 1 AS ord, 'all' AS steps, step, dur_ns FROM per_step
  UNION ALL
  SELECT 2 AS ord, 'steady_state' AS steps, step, dur_ns FROM per_step WHERE step >= {{warmup_steps}}
),
kinds AS (SELECT * FROM (VALUES (1, 'all'), (2, 'steady_state')) AS k(ord, steps))
SELECT k.steps, count(t.dur_ns) AS count, avg(t.dur_ns) AS mean_ns, median(t.dur_ns) AS median_ns,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY t.dur_ns) AS p90_ns,
       min(t.dur_ns) AS min_ns, max(t.dur_ns) AS max_ns, min(t.step) AS first_step, max(t.step) AS last_step
FROM kinds k LEFT JOIN tagged t ON t.ord = k.ord
GROUP BY k.ord, k.steps
ORDER BY k.ord
