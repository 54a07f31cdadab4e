-- Hierarchical regions: named scopes ranked by the op time under them, unary chains pruned.
--
-- Answers: which named scope (forward/backward, layer, attention, mlp, ...) costs most?
-- Rolled up from op self time per (pass, scope path). A region of depth >= 2 is pruned when
-- it has exactly one child that carries all of its time (the child keeps its full path).
--
-- Parameters:
--   run_id  TEXT           run to analyse
--   top_k   INT   = 500    rows to return
--
-- Columns:
--   pass                  forward | backward | remat | optimizer | other
--   path                  scope path, `/`-joined
--   depth                 1 for a root scope
--   op_count              op executions at or under the region
--   inclusive_ns          op self time at or under the region
--   exclusive_ns          op self time exactly at the region
--   inclusive_share       inclusive_ns / inclusive time of its root (first path component)
--   exclusive_share       exclusive_ns / inclusive time of its root
WITH r AS (
  SELECT CAST(pass AS VARCHAR) AS pass, path, depth, parent_path, op_count, inclusive_ns, exclusive_ns
  FROM regions WHERE run_id = {{run_id}}
),
children AS (
  SELECT pass, parent_path, count(*) AS n, max(inclusive_ns) AS child_ns
  FROM r WHERE parent_path IS NOT NULL GROUP BY pass, parent_path
),
roots AS (SELECT pass, path AS root, inclusive_ns AS root_ns FROM r WHERE depth = 0)
SELECT r.pass, r.path, r.depth + 1 AS depth, r.op_count, r.inclusive_ns, r.exclusive_ns,
       CASE WHEN roots.root_ns > 0 THEN CAST(r.inclusive_ns AS DOUBLE) / roots.root_ns ELSE 0.0 END AS inclusive_share,
       CASE WHEN roots.root_ns > 0 THEN CAST(r.exclusive_ns AS DOUBLE) / roots.root_ns ELSE 0.0 END AS exclusive_share
FROM r
LEFT JOIN children c ON c.pass = r.pass AND c.parent_path = r.path
LEFT JOIN roots ON roots.pass = r.pass AND roots.root = split_part(r.path, '/', 1)
WHERE NOT (r.depth >= 1 AND coalesce(c.n, 0) = 1 AND c.child_ns = r.inclusive_ns)
ORDER BY r.inclusive_ns DESC, r.exclusive_ns DESC, r.pass, r.path
LIMIT {{top_k}}
