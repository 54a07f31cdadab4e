-- Steady step durations of every run of the store, for the verdict of each run against the
-- run ingested before it (`profq query "which runs regressed?"`: the noise test is
-- compare's, src/compare/stats.rs, which SQL cannot express).
--
-- Answers: what are each run's steady steps? Deterministic: ordered by run, then step.
--
-- Parameters:
--   warmup_steps  INT   = 5     steps with a smaller step number are warm-up
--
-- Columns:
--   run_id  run
--   step    step number (>= warmup_steps)
--   dur_ns  the step's duration: its longest instance over hosts and devices
SELECT run_id, step, dur_ns FROM ({{include per_step}}) AS p
WHERE step >= {{warmup_steps}}
ORDER BY run_id, step
