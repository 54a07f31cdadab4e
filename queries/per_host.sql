-- Per-host detail of a (multi-host) run: steps, ops and device activity of each host.
--
-- Answers: does one host of the session behave differently (slower steps, more idle)?
--
-- Parameters:
--   run_id        TEXT          run to analyse
--   warmup_steps  INT   = 5     steps with a smaller number are warm-up
--
-- Columns:
--   host               host
--   rank               the host's rank (hosts.rank: its file's stated rank, else its position)
--   steady_steps       steady steps seen on the host
--   median_step_ns     median steady step duration on the host
--   busy_share         device busy time / step time over the steady steps
--   ops                op executions on the host
--   op_self_ns         their summed self time
--   devices            devices of the host that ran ops
WITH s AS (
  SELECT CAST(host AS VARCHAR) AS host, step, max(dur_ns) AS dur_ns, max(busy_ns) AS busy_ns
  FROM steps WHERE run_id = {{run_id}} AND step >= {{warmup_steps}} GROUP BY host, step
),
sh AS (
  SELECT host, count(*) AS steady_steps, median(dur_ns) AS median_step_ns,
         CASE WHEN sum(dur_ns) > 0 THEN CAST(sum(busy_ns) AS DOUBLE) / sum(dur_ns) END AS busy_share
  FROM s GROUP BY host
),
oh AS (
  SELECT CAST(host AS VARCHAR) AS host, sum(count) AS ops, sum(self_ns) AS op_self_ns, count(DISTINCT device) AS devices
  FROM op_totals WHERE run_id = {{run_id}} GROUP BY host
),
all_hosts AS (SELECT host FROM sh UNION SELECT host FROM oh),
ranks AS (SELECT CAST(host AS VARCHAR) AS host, rank FROM hosts WHERE run_id = {{run_id}})
SELECT h.host, r.rank, coalesce(sh.steady_steps, 0) AS steady_steps, sh.median_step_ns, sh.busy_share,
       coalesce(oh.ops, 0) AS ops, coalesce(oh.op_self_ns, 0) AS op_self_ns, coalesce(oh.devices, 0) AS devices
FROM all_hosts h LEFT JOIN sh ON sh.host = h.host LEFT JOIN oh ON oh.host = h.host LEFT JOIN ranks r ON r.host = h.host
ORDER BY r.rank, h.host
