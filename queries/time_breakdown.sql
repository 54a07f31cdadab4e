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
-- event is scanned; the name patterns are tested once per (name, plane kind, op category),
-- and only on rows without an op category.
WITH ev AS (
  SELECT CAST(name AS VARCHAR) AS name, device IS NULL AS on_host, CAST(op_category AS VARCHAR) AS op_category, sum(self_ns) AS self_ns
  FROM event_totals
  WHERE run_id = {{run_id}} AND line <> 'Steps'
  GROUP BY name, device IS NULL, op_category
),
totals AS (
  SELECT CASE
           WHEN op_category IS NOT NULL THEN op_category
           WHEN regexp_like(lower(name), '(^|[^a-z])(wait|await|barrier|semaphore|acquire|idle|blocked|sleep)|donation holds') THEN 'stall'
           WHEN on_host THEN 'host'
           WHEN regexp_like(lower(name), 'all-reduce|all_reduce|allreduce|all-gather|all_gather|allgather|reduce-scatter|reduce_scatter|reducescatter|all-to-all|alltoall|collective|permute|psum|nccl|rccl|send|recv') THEN 'communication'
           ELSE 'compute'
         END AS category,
         sum(self_ns) AS total_ns
  FROM ev GROUP BY 1
)
SELECT c.category, coalesce(t.total_ns, 0) AS total_ns,
       CASE WHEN sum(t.total_ns) OVER () > 0 THEN CAST(coalesce(t.total_ns, 0) AS DOUBLE) / sum(t.total_ns) OVER () ELSE 0.0 END AS share_of_total
FROM (VALUES (1, 'compute'), (2, 'communication'), (3, 'host'), (4, 'stall'), (5, 'other')) AS c(ord, category)
LEFT JOIN totals t ON t.category = c.category
ORDER BY c.ord
