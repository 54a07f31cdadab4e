-- How one op (or every op whose name contains the text) changed across the runs of a store.
--
-- Answers: "how did fusion.3 change across runs?" One row per run, in ingest order, with
-- the op's self time per step (each run divided by its number of steps, 1 if none).
--
-- Parameters:
--   op  TEXT   op name, or a part of it (case-insensitive)
--
-- Columns:
--   ingest_order       1 for the first run ingested
--   run_id             run
--   matched_ops        distinct op names matched in the run (comma-separated, sorted)
--   count_per_step     executions per step
--   self_ns_per_step   self time per step (0 when the run has no such op)
--   delta_vs_first_pct change against the first run that has the op
WITH r AS (SELECT run_id, row_number() OVER (ORDER BY ingested_at_ns, run_id) AS ingest_order FROM runs),
n AS (SELECT run_id, greatest(count(DISTINCT step), 1) AS n FROM steps GROUP BY run_id),
m AS (
  SELECT run_id, array_to_string(array_sort(array_agg(DISTINCT CAST(hlo_op AS VARCHAR))), ',') AS matched_ops,
         count(*) AS cnt, sum(self_ns) AS self_ns
  FROM ops WHERE strpos(lower(CAST(hlo_op AS VARCHAR)), lower({{op}})) > 0 GROUP BY run_id
),
per_run AS (
  SELECT r.ingest_order, r.run_id, m.matched_ops,
         CAST(coalesce(m.cnt, 0) AS DOUBLE) / coalesce(n.n, 1) AS count_per_step,
         CAST(coalesce(m.self_ns, 0) AS DOUBLE) / coalesce(n.n, 1) AS self_ns_per_step, m.cnt IS NOT NULL AS has_op
  FROM r LEFT JOIN m ON m.run_id = r.run_id LEFT JOIN n ON n.run_id = r.run_id
),
first AS (SELECT self_ns_per_step AS base FROM per_run WHERE has_op ORDER BY ingest_order LIMIT 1)
SELECT p.ingest_order, p.run_id, p.matched_ops, p.count_per_step, p.self_ns_per_step,
       CASE WHEN f.base > 0 THEN (p.self_ns_per_step - f.base) / f.base * 100 END AS delta_vs_first_pct
FROM per_run p LEFT JOIN first f ON true
ORDER BY p.ingest_order
