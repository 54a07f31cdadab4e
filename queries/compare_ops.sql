-- Op-by-op comparison of two runs over their FULL op tables, by self time per step.
--
-- Answers: which ops got slower or faster, and which appeared or disappeared? Ops are
-- matched by exact name first; ops left unmatched on both sides are then matched by
-- canonical name and scope path (module renumbering renames `fusion.12` to `fusion.13`).
-- Times are divided by each run's number of steps (1 when it has none), so runs of
-- different lengths compare.
--
-- Parameters:
--   before_run  TEXT   run id of the baseline
--   after_run   TEXT   run id of the candidate
--
-- Columns:
--   match_kind              name | canonical+scope | appeared | disappeared
--   name_before             op name in the baseline (null if it appeared)
--   name_after              op name in the candidate (null if it disappeared)
--   canonical_name          name without `%` and a trailing `.N`
--   scope_path              framework scope (tf_op) of the op
--   count_before            executions per step in the baseline
--   count_after             executions per step in the candidate
--   self_before_ns          self time per step in the baseline (0 if absent)
--   self_after_ns           self time per step in the candidate (0 if absent)
--   delta_ns                self_after_ns - self_before_ns
--   delta_pct               delta_ns / self_before_ns * 100 (null when the baseline is 0)
WITH nb AS (SELECT greatest(count(DISTINCT step), 1) AS n FROM steps WHERE run_id = {{before_run}}),
na AS (SELECT greatest(count(DISTINCT step), 1) AS n FROM steps WHERE run_id = {{after_run}}),
per_op AS (
  SELECT run_id, CAST(hlo_op AS VARCHAR) AS hlo_op,
         canonical_name(CAST(hlo_op AS VARCHAR)) AS canonical_name,
         coalesce(min(CAST(tf_op AS VARCHAR)), '') AS scope_path, count(*) AS cnt, sum(self_ns) AS self_ns
  FROM ops WHERE run_id IN ({{before_run}}, {{after_run}})
  GROUP BY run_id, hlo_op
),
b AS (SELECT p.hlo_op, p.canonical_name, p.scope_path, CAST(p.cnt AS DOUBLE) / nb.n AS cnt, CAST(p.self_ns AS DOUBLE) / nb.n AS self_ns FROM nb CROSS JOIN per_op p WHERE p.run_id = {{before_run}}),
a AS (SELECT p.hlo_op, p.canonical_name, p.scope_path, CAST(p.cnt AS DOUBLE) / na.n AS cnt, CAST(p.self_ns AS DOUBLE) / na.n AS self_ns FROM na CROSS JOIN per_op p WHERE p.run_id = {{after_run}}),
by_name AS (
  SELECT b.hlo_op AS name_before, a.hlo_op AS name_after, b.canonical_name, b.scope_path, b.cnt AS count_before, a.cnt AS count_after,
         b.self_ns AS self_before_ns, a.self_ns AS self_after_ns
  FROM b JOIN a ON a.hlo_op = b.hlo_op
),
lone_b AS (
  SELECT canonical_name, scope_path, min(hlo_op) AS name_before, sum(cnt) AS count_before, sum(self_ns) AS self_before_ns
  FROM b WHERE NOT EXISTS (SELECT 1 FROM a WHERE a.hlo_op = b.hlo_op) GROUP BY canonical_name, scope_path
),
lone_a AS (
  -- Key columns renamed: a full join whose sides share key names trips DataFusion 55's
  -- projection pushdown.
  SELECT canonical_name AS a_canonical, scope_path AS a_scope, min(hlo_op) AS name_after, sum(cnt) AS count_after, sum(self_ns) AS self_after_ns
  FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.hlo_op = a.hlo_op) GROUP BY canonical_name, scope_path
),
by_scope AS (
  SELECT CASE WHEN lb.name_before IS NULL THEN 'appeared' WHEN la.name_after IS NULL THEN 'disappeared' ELSE 'canonical+scope' END AS match_kind,
         lb.name_before, la.name_after, coalesce(lb.canonical_name, la.a_canonical) AS canonical_name,
         coalesce(lb.scope_path, la.a_scope) AS scope_path, lb.count_before, la.count_after,
         coalesce(lb.self_before_ns, 0) AS self_before_ns, coalesce(la.self_after_ns, 0) AS self_after_ns
  FROM lone_b lb FULL OUTER JOIN lone_a la ON la.a_canonical = lb.canonical_name AND la.a_scope = lb.scope_path
),
matched AS (
  SELECT 'name' AS match_kind, name_before, name_after, canonical_name, scope_path, count_before, count_after, self_before_ns, self_after_ns
  FROM by_name
  UNION ALL
  SELECT match_kind, name_before, name_after, canonical_name, scope_path, count_before, count_after, self_before_ns, self_after_ns
  FROM by_scope
)
SELECT match_kind, name_before, name_after, canonical_name, NULLIF(scope_path, '') AS scope_path,
       coalesce(count_before, 0.0) AS count_before, coalesce(count_after, 0.0) AS count_after,
       self_before_ns, self_after_ns, self_after_ns - self_before_ns AS delta_ns,
       CASE WHEN self_before_ns > 0 THEN (self_after_ns - self_before_ns) / self_before_ns * 100 END AS delta_pct
FROM matched
ORDER BY abs(self_after_ns - self_before_ns) DESC, coalesce(name_before, name_after)
