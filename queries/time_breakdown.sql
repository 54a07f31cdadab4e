-- Time breakdown per track: every event's exclusive time by category, summed over all lines.
--
-- Answers: where busy time goes across all threads and devices (compute, communication,
-- host, stall, other). Sums every line, so the total is busy time, not wall time; use
-- time_breakdown_global for a wall-clock view of the devices.
-- Rule, in order: an op takes its op category (compute / communication / stall); any other
-- event whose name has a stall word (wait, barrier, semaphore, acquire, idle, blocked, sleep,
-- donation holds) is stall; other events on host planes are host; on device planes,
-- collective names are communication and the rest compute. Device `Steps` lines are skipped.
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   category        compute | communication | host | stall | other (always all five, in this order)
--   total_ns        summed exclusive time
--   share_of_total  total_ns / sum over categories (0 when empty)
-- Exclusive time comes summed per (line, name, op category) from event_totals, so no
-- event is scanned; name patterns are then tested once per distinct name.
WITH ev AS (
  SELECT name, device IS NULL AS on_host, CAST(op_category AS VARCHAR) AS op_category, sum(self_ns) AS self_ns
  FROM event_totals
  WHERE run_id = {{run_id}} AND line <> 'Steps'
  GROUP BY name, device IS NULL, op_category
),
names AS (
  SELECT name,
         regexp_like(lower(name), '(^|[^a-z])(wait|await|barrier|semaphore|acquire|idle|blocked|sleep)|donation holds') AS is_stall,
         regexp_like(lower(name), 'all-reduce|all_reduce|allreduce|all-gather|all_gather|allgather|reduce-scatter|reduce_scatter|reducescatter|all-to-all|alltoall|collective|permute|psum|nccl|rccl|send|recv') AS is_comm
  FROM (SELECT DISTINCT CAST(name AS VARCHAR) AS name FROM ev) d
),
classified AS (
  SELECT ev.self_ns,
         CASE
           WHEN ev.op_category IS NOT NULL THEN ev.op_category
           WHEN n.is_stall THEN 'stall'
           WHEN ev.on_host THEN 'host'
           WHEN n.is_comm THEN 'communication'
           ELSE 'compute'
         END AS category
  FROM ev LEFT JOIN names n ON n.name = CAST(ev.name AS VARCHAR)
),
totals AS (SELECT category, sum(self_ns) AS total_ns FROM classified GROUP BY category),
categories AS (
  SELECT * FROM (VALUES (1, 'compute'), (2, 'communication'), (3, 'host'), (4, 'stall'), (5, 'other')) AS c(ord, category)
),
grand AS (SELECT sum(total_ns) AS g FROM totals)
SELECT c.category, coalesce(t.total_ns, 0) AS total_ns,
       CASE WHEN grand.g > 0 THEN CAST(coalesce(t.total_ns, 0) AS DOUBLE) / grand.g ELSE 0.0 END AS share_of_total
FROM categories c CROSS JOIN grand LEFT JOIN totals t ON t.category = c.category
ORDER BY c.ord
