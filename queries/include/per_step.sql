-- Per-step durations of every run: a step's duration is its longest instance over hosts and
-- devices (a synchronous step ends when its slowest device ends).
--
-- Columns:
--   run_id  run
--   step    step number
--   dur_ns  duration of the step's longest instance
SELECT run_id, step, max(dur_ns) AS dur_ns FROM steps GROUP BY run_id, step
