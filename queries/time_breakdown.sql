-- Time breakdown per track: every event's exclusive time by category, summed over all lines.
--
-- Answers: where busy time goes across all threads and devices (compute, communication,
-- host, stall, other). Sums every line, so the total is busy time, not wall time; use
-- time_breakdown_global for a wall-clock view of the devices.
-- Rule, in order: an op takes its op category (compute / communication / stall); any other
-- event whose name has a stall word is stall (`is_stall_name`); other events on host planes
-- are host; on device planes, names of a collective kind are communication
-- (`collective_kind`) and the rest compute. Both rules match whole words of the name, as
-- they do for ops (docs/semantics.md, Collectives). Device `Steps` lines are skipped.
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   category        compute | communication | host | stall | other (always all five, in this order)
--   total_ns        summed exclusive time
--   share_of_total  total_ns / sum over categories (0 when empty)
-- Exclusive time comes summed per (line, name, op category) from event_totals, so no
-- event is scanned; the name rules are tested once per (name, plane kind, op category),
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
           WHEN is_stall_name(name) THEN 'stall'
           WHEN on_host THEN 'host'
           WHEN collective_kind(name) IS NOT NULL THEN 'communication'
           ELSE 'compute'
         END AS category,
         sum(self_ns) AS total_ns
  FROM ev GROUP BY 1
)
SELECT c.category, coalesce(t.total_ns, 0) AS total_ns,
       CASE WHEN sum(t.total_ns) OVER () > 0 THEN CAST(coalesce(t.total_ns, 0) AS DOUBLE) / sum(t.total_ns) OVER () ELSE 0.0 END AS share_of_total
FROM ({{include categories}}) AS c
LEFT JOIN totals t ON t.category = c.category
ORDER BY c.ord
