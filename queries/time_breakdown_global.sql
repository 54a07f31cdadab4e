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
  SELECT start_ns AS s, start_ns + dur_ns AS e, category = 'communication' AS is_comm
  FROM ops
  WHERE run_id = {{run_id}} AND category IN ('compute', 'communication')
    AND NOT is_async_line(line) AND dur_ns > 0
),
-- The window: from the first compute op's start to the last one's end. Every interval is
-- clipped to it; one that lies outside becomes empty, which `interval_union_ns` leaves out
-- (a join filter here cost more than the rest of the query).
win AS (SELECT min(s) AS ws, max(e) AS we FROM iv WHERE NOT is_comm),
clipped AS (
  SELECT greatest(iv.s, win.ws) AS s, least(iv.e, win.we) AS e, iv.is_comm, win.ws, win.we FROM win CROSS JOIN iv
),
-- Communication is the time any communication op covers, compute the time only compute
-- covers: everything covered less the communication. `interval_union_ns(start, end)` is
-- profq's aggregate for the covered time of a set of intervals, overlaps counted once.
-- The window's length comes along with them (`win` read once more would scan `ops` again).
credited AS (
  SELECT coalesce(interval_union_ns(s, e) FILTER (WHERE is_comm), 0) AS communication,
         coalesce(interval_union_ns(s, e), 0) AS covered,
         CASE WHEN max(we) > max(ws) THEN max(we) - max(ws) ELSE 0 END AS w
  FROM clipped
),
-- One row of totals, read once: DataFusion runs a CTE again for every reference to it.
totals AS (
  SELECT CASE WHEN w > 0 THEN covered - communication ELSE 0 END AS compute, CASE WHEN w > 0 THEN communication ELSE 0 END AS communication, w
  FROM credited
),
per_category AS (
  SELECT c.ord, c.category, t.w,
         CASE c.ord WHEN 1 THEN t.compute WHEN 2 THEN t.communication
                    WHEN 4 THEN CASE WHEN t.w > 0 THEN t.w - t.compute - t.communication ELSE 0 END
                    ELSE 0 END AS total_ns
  FROM totals t CROSS JOIN ({{include categories}}) AS c
)
SELECT category, coalesce(total_ns, 0) AS total_ns,
       CASE WHEN coalesce(w, 0) > 0 THEN CAST(total_ns AS DOUBLE) / w ELSE 0.0 END AS share_of_total
FROM per_category
ORDER BY ord
