-- Recompilation inside the captured window: compile events per step.
--
-- Answers: did JAX/XLA compile (and so stall a step) while profiling? Compile events are
-- events on any line whose name contains `compile` (backend_compile_and_load,
-- PjRtCpuClient::Compile, CpuCompiler::RunBackend, XlaCompile, python `compile` frames,
-- ...), except host<->device copies that a compiler object runs
-- (`PjRtCApiCompiler::BufferFromHostBuffer(f32[])` on GPU: the `transfers` query counts them);
-- the SQL function `is_compile_event` (src/tables/events_of_interest.rs). Compile time is the
-- union of their intervals inside the step, so nested and concurrent compile events on
-- several threads are not counted twice. Events outside every host step form a row with a
-- null step.
--
-- Rows only from: events (its compile events are events of the run).
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   step               step number (null: outside any step)
--   step_dur_ns        duration of that step (null outside steps)
--   compile_events     compile events starting in the step
--   compile_ns         union of their intervals (wall time spent compiling)
--   compile_share      compile_ns / step_dur_ns
--   example            the longest compile event's name (ties: name)
WITH compile_names AS (
  -- Distinct names from event_totals (no scan of the events), still dictionary-encoded: the
  -- join hashes each distinct name once, and finds nothing to probe when no name matches.
  SELECT name FROM (SELECT name FROM event_totals WHERE run_id = {{run_id}} GROUP BY name) n
  WHERE is_compile_event(CAST(name AS VARCHAR))
),
compiles AS (
  SELECT e.host, e.start_ns, e.start_ns + e.dur_ns AS end_ns, e.dur_ns, CAST(e.name AS VARCHAR) AS name
  FROM compile_names c JOIN events e ON c.name = e.name
  WHERE e.run_id = {{run_id}} AND e.dur_ns > 0
),
host_steps AS (SELECT host, step, start_ns, end_ns, dur_ns FROM steps WHERE run_id = {{run_id}} AND device IS NULL),
placed AS (
  SELECT c.name, c.start_ns, c.end_ns, c.dur_ns, s.step, s.dur_ns AS step_dur_ns
  FROM compiles c LEFT JOIN host_steps s ON s.host = c.host AND c.start_ns >= s.start_ns AND c.start_ns < s.end_ns
),
ordered AS (
  SELECT *, max(end_ns) OVER (PARTITION BY step ORDER BY start_ns, end_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end,
         row_number() OVER (PARTITION BY step ORDER BY dur_ns DESC, name) AS rk
  FROM placed
),
islands AS (
  SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
              OVER (PARTITION BY step ORDER BY start_ns, end_ns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS island
  FROM ordered
),
island_len AS (SELECT step, island, max(end_ns) - min(start_ns) AS len FROM islands GROUP BY step, island),
per_step AS (SELECT step, sum(len) AS compile_ns FROM island_len GROUP BY step)
SELECT i.step, min(i.step_dur_ns) AS step_dur_ns, count(*) AS compile_events, min(p.compile_ns) AS compile_ns,
       CASE WHEN min(i.step_dur_ns) > 0 THEN CAST(min(p.compile_ns) AS DOUBLE) / min(i.step_dur_ns) END AS compile_share,
       min(CASE WHEN i.rk = 1 THEN i.name END) AS example
FROM islands i JOIN per_step p ON p.step IS NOT DISTINCT FROM i.step
GROUP BY i.step
ORDER BY i.step NULLS LAST
