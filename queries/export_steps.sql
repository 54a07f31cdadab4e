-- The steps of a run that overlap a time window, per host and device: the "profq · steps"
-- track of `profq export-trace`, and how it resolves `--step` and `--steps`.
--
-- Answers: where does each step start and end, and how busy was it?
--
-- Parameters:
--   run_id    TEXT   run to export
--   from_ns   INT    window start (ns since the run start)
--   to_ns     INT    window end; steps overlapping [from_ns, to_ns) are returned
--
-- Columns:
--   host              host
--   device            device of a device Steps line; null for host step annotations
--   step              step number
--   start_ns          start
--   end_ns            end
--   busy_ns           device busy time in the step
--   communication_ns  collective time not hidden by compute
--   idle_ns           end - start - busy
--   op_count          ops started in the step
SELECT CAST(host AS VARCHAR) AS host, CAST(device AS VARCHAR) AS device, step, start_ns, end_ns, busy_ns, communication_ns, idle_ns, op_count
FROM steps
WHERE run_id = {{run_id}} AND start_ns < {{to_ns}} AND end_ns > {{from_ns}}
ORDER BY start_ns, host, device, step
