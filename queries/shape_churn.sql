-- Shape churn: modules that ran as several compiled programs in one run.
--
-- Answers: is a jitted function being recompiled for new shapes? Each XLA compilation gets
-- its own program id; one module name with several program ids executing in the capture
-- means it was compiled more than once (new shapes, dtypes or static arguments).
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   hlo_module       module name
--   programs         distinct program ids that ran ops
--   op_executions    ops executed by the module
--   first_steps      the first step each program ran in, in program order, comma-separated
WITH p AS (
  SELECT CAST(hlo_module AS VARCHAR) AS hlo_module, program_id, sum(count) AS n, min(first_step) AS first_step, min(first_start_ns) AS first_ns
  FROM op_totals WHERE run_id = {{run_id}} AND hlo_module IS NOT NULL AND program_id IS NOT NULL
  GROUP BY hlo_module, program_id
)
SELECT hlo_module, count(*) AS programs, sum(n) AS op_executions,
       array_to_string(array_agg(coalesce(CAST(first_step AS VARCHAR), '-') ORDER BY first_ns), ',') AS first_steps
FROM p
GROUP BY hlo_module
HAVING count(*) > 1
ORDER BY programs DESC, hlo_module
