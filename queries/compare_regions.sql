-- Region-by-region comparison of two runs: op self time per step under each (pass, scope).
--
-- Answers: which named scopes (forward/backward, layers, attention, optimizer) got slower
-- or faster? Inclusive time per step, each run divided by its number of steps (1 if none).
--
-- Parameters:
--   before_run  TEXT   run id of the baseline
--   after_run   TEXT   run id of the candidate
--
-- Columns:
--   pass                forward | backward | remat | optimizer | other
--   path                scope path
--   depth               1 for a root scope
--   before_ns           inclusive op self time per step in the baseline (0 if absent)
--   after_ns            the same in the candidate
--   delta_ns            after_ns - before_ns
--   delta_pct           delta_ns / before_ns * 100 (null when the baseline is 0)
WITH nb AS (SELECT greatest(count(DISTINCT step), 1) AS n FROM steps WHERE run_id = {{before_run}}),
na AS (SELECT greatest(count(DISTINCT step), 1) AS n FROM steps WHERE run_id = {{after_run}}),
b AS (SELECT CAST(pass AS VARCHAR) AS pass, path, depth, CAST(inclusive_ns AS DOUBLE) / nb.n AS ns FROM nb CROSS JOIN regions WHERE run_id = {{before_run}}),
a AS (SELECT CAST(pass AS VARCHAR) AS pass, path, depth, CAST(inclusive_ns AS DOUBLE) / na.n AS ns FROM na CROSS JOIN regions WHERE run_id = {{after_run}})
SELECT coalesce(b.pass, a.pass) AS pass, coalesce(b.path, a.path) AS path, coalesce(b.depth, a.depth) + 1 AS depth,
       coalesce(b.ns, 0) AS before_ns, coalesce(a.ns, 0) AS after_ns, coalesce(a.ns, 0) - coalesce(b.ns, 0) AS delta_ns,
       CASE WHEN b.ns > 0 THEN (coalesce(a.ns, 0) - b.ns) / b.ns * 100 END AS delta_pct
FROM b FULL OUTER JOIN a ON a.pass = b.pass AND a.path = b.path
ORDER BY abs(coalesce(a.ns, 0) - coalesce(b.ns, 0)) DESC, pass, path
