-- Time breakdown on the global device timeline: a true interval union over all device-op lines.
--
-- Answers: of the wall time between the first and last compute op, how much had
-- communication running, compute only, or nothing (stall)? Overlapping lines and devices
-- are never double counted; when communication and compute overlap the time counts as
-- communication. Async in-flight spans (`Async XLA Ops` lines) are left out.
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   category        compute | communication | host | stall | other (host and other are always 0)
--   total_ns        time in the window credited to the category
--   share_of_total  total_ns / window length (0 when there is no compute)
WITH iv AS (
  SELECT start_ns AS s, start_ns + dur_ns AS e, CAST(category AS VARCHAR) = 'communication' AS is_comm
  FROM ops
  WHERE run_id = {{run_id}} AND CAST(category AS VARCHAR) IN ('compute', 'communication')
    AND line NOT LIKE 'Async%' AND dur_ns > 0
),
win AS (SELECT min(s) AS ws, max(e) AS we FROM iv WHERE NOT is_comm),
clipped AS (
  SELECT greatest(iv.s, win.ws) AS s, least(iv.e, win.we) AS e, iv.is_comm
  FROM iv CROSS JOIN win WHERE iv.e > win.ws AND iv.s < win.we
),
-- Each start adds one to its kind's count of active intervals and each end takes one off,
-- both counts packed in one number (communication × 2^32 + compute): one running sum gives
-- both (a running sum is the costly part of the sweep), and since neither count is ever
-- negative at a point, each unpacks exactly.
points AS (
  SELECT s AS t, CASE WHEN is_comm THEN 4294967296 ELSE 1 END AS delta FROM clipped
  UNION ALL
  SELECT e AS t, CASE WHEN is_comm THEN -4294967296 ELSE -1 END AS delta FROM clipped
),
net AS (SELECT t, sum(delta) AS delta FROM points GROUP BY t),
running AS (
  SELECT t, lead(t) OVER (ORDER BY t) AS next_t,
         sum(delta) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS active
  FROM net
),
sweep AS (SELECT t, next_t, active / 4294967296 AS comm_active, active % 4294967296 AS compute_active FROM running),
credited AS (
  SELECT coalesce(sum(CASE WHEN comm_active > 0 THEN next_t - t ELSE 0 END), 0) AS communication,
         coalesce(sum(CASE WHEN comm_active = 0 AND compute_active > 0 THEN next_t - t ELSE 0 END), 0) AS compute
  FROM sweep WHERE next_t IS NOT NULL
),
window_len AS (SELECT CASE WHEN we > ws THEN we - ws ELSE 0 END AS w FROM win),
-- One row of totals, read once: DataFusion runs a CTE again for every reference to it, and
-- the sweep above is the costly part.
totals AS (
  SELECT CASE WHEN w > 0 THEN compute ELSE 0 END AS compute, CASE WHEN w > 0 THEN communication ELSE 0 END AS communication, w
  FROM credited CROSS JOIN window_len
),
per_category AS (
  SELECT c.ord, c.category, t.w,
         CASE c.ord WHEN 1 THEN t.compute WHEN 2 THEN t.communication
                    WHEN 4 THEN CASE WHEN t.w > 0 THEN t.w - t.compute - t.communication ELSE 0 END
                    ELSE 0 END AS total_ns
  FROM totals t CROSS JOIN (VALUES (1, 'compute'), (2, 'communication'), (3, 'host'), (4, 'stall'), (5, 'other')) AS c(ord, category)
)
SELECT category, coalesce(total_ns, 0) AS total_ns,
       CASE WHEN coalesce(w, 0) > 0 THEN CAST(total_ns AS DOUBLE) / w ELSE 0.0 END AS share_of_total
FROM per_category
ORDER BY ord
