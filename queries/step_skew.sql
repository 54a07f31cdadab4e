-- Per-device step skew: which devices finish their share of each step last (stragglers)?
--
-- Answers: is one device (or host) consistently slower? For each step and device, the
-- device's active time is from the step start to the end of its last op in the step
-- (device `Steps` lines give it directly). Lag is how far a device finishes after the
-- fastest device of the same step.
--
-- Parameters:
--   run_id        TEXT          run to analyse
--   warmup_steps  INT   = 5     steps with a smaller number are left out
--
-- Columns:
--   host             host
--   rank             the host's rank (hosts.rank)
--   device           device
--   steps            steady steps the device took part in
--   avg_active_ns    mean active time per step
--   max_active_ns    longest active time
--   avg_lag_ns       mean lag behind the fastest device of the step
--   max_lag_ns       largest lag
--   times_slowest    steps in which this device finished last (ties all count)
--   busy_ns          summed op self time of the device in those steps
WITH host_steps AS (
  SELECT host, step, start_ns FROM steps WHERE run_id = {{run_id}} AND device IS NULL AND step >= {{warmup_steps}}
),
-- Ops come summed per (host, device, line, step) from `line_steps` (a few rows per line and
-- step rather than one per op), then per (host, device, step) before the join to the host's
-- step (one row per (host, step)).
from_ops AS (
  SELECT CAST(o.host AS VARCHAR) AS host, CAST(o.device AS VARCHAR) AS device, o.step, o.last_end_ns - s.start_ns AS active_ns, o.busy_ns
  FROM (
    SELECT host, device, step, max(last_end_ns) AS last_end_ns, sum(self_ns) AS busy_ns
    FROM line_steps WHERE run_id = {{run_id}} AND step >= {{warmup_steps}} AND NOT is_async_line(line)
    GROUP BY host, device, step
  ) o
  JOIN host_steps s ON s.host = o.host AND s.step = o.step
),
from_lines AS (
  SELECT CAST(host AS VARCHAR) AS host, CAST(device AS VARCHAR) AS device, step, dur_ns AS active_ns, busy_ns
  FROM steps WHERE run_id = {{run_id}} AND device IS NOT NULL AND step >= {{warmup_steps}}
),
per AS (
  SELECT host, device, step, active_ns, busy_ns FROM from_ops
  UNION ALL SELECT host, device, step, active_ns, busy_ns FROM from_lines
),
lagged AS (
  SELECT host, device, step, active_ns, busy_ns,
         active_ns - min(active_ns) OVER (PARTITION BY step) AS lag_ns,
         active_ns = max(active_ns) OVER (PARTITION BY step) AS slowest
  FROM per
),
ranks AS (SELECT CAST(host AS VARCHAR) AS host, rank FROM hosts WHERE run_id = {{run_id}})
SELECT l.host, r.rank, l.device, count(*) AS steps, avg(l.active_ns) AS avg_active_ns, max(l.active_ns) AS max_active_ns,
       avg(l.lag_ns) AS avg_lag_ns, max(l.lag_ns) AS max_lag_ns,
       sum(CASE WHEN l.slowest THEN 1 ELSE 0 END) AS times_slowest, sum(l.busy_ns) AS busy_ns
FROM lagged l LEFT JOIN ranks r ON r.host = l.host
GROUP BY l.host, r.rank, l.device
ORDER BY avg_lag_ns DESC, l.host, l.device
