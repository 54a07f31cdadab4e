-- Device idle time per step: how much of each step no device op was running.
--
-- Answers: is the device starved (input pipeline, host work, synchronisation)? Busy time is
-- the union of op intervals in the step window (all devices of the host for host-annotated
-- steps; the device itself for device `Steps` lines); idle is the rest of the step.
--
-- Parameters:
--   run_id        TEXT          run to analyse
--   warmup_steps  INT   = 5     steps with a smaller number are left out
--
-- Columns:
--   host          host
--   rank          the host's rank (hosts.rank)
--   device        device for device Steps lines; for host-annotated steps the host's device
--                 when it has one (a PyTorch rank's GPU), else null (the step spans them all)
--   step          step number
--   dur_ns        step duration
--   busy_ns       union of op time in the step
--   idle_ns       dur_ns - busy_ns
--   idle_share    idle_ns / dur_ns
--   largest_gap_ns  longest pre-op gap ending in the step (its marker op starts in the step;
--                   the gap itself may reach back into earlier steps)
-- The largest gap per (host, step) comes from `line_steps`, which holds each line's longest
-- gap per step (null where it has none), not from every gap.
WITH g AS (
  SELECT host, step, max(max_gap_ns) AS largest_gap_ns FROM line_steps WHERE run_id = {{run_id}} GROUP BY host, step
),
ranks AS (SELECT CAST(host AS VARCHAR) AS host, rank FROM hosts WHERE run_id = {{run_id}}),
one_device AS (
  SELECT host, min(CAST(device AS VARCHAR)) AS device FROM line_steps WHERE run_id = {{run_id}} GROUP BY host HAVING count(DISTINCT device) = 1
)
SELECT CAST(s.host AS VARCHAR) AS host, r.rank, coalesce(CAST(s.device AS VARCHAR), d.device) AS device, s.step, s.dur_ns, s.busy_ns, s.idle_ns,
       CASE WHEN s.dur_ns > 0 THEN CAST(s.idle_ns AS DOUBLE) / s.dur_ns ELSE 0.0 END AS idle_share,
       g.largest_gap_ns
FROM steps s LEFT JOIN g ON g.host = s.host AND g.step = s.step LEFT JOIN one_device d ON d.host = s.host LEFT JOIN ranks r ON r.host = CAST(s.host AS VARCHAR)
WHERE s.run_id = {{run_id}} AND s.step >= {{warmup_steps}}
ORDER BY s.step, host, device
