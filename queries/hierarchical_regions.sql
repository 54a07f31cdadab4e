-- Hierarchical regions over all passes (the profile_summary.v1 view), unary chains pruned.
--
-- Answers: which named scope costs most, forward and backward of the same scope together?
-- (`regions` keeps passes apart.) Same pruning rule as `regions`: a region of depth >= 2
-- with exactly one child that carries all its time is dropped.
--
-- Parameters:
--   run_id  TEXT           run to analyse
--   top_k   INT   = 500    rows to return
--
-- Columns:
--   path              scope path, `/`-joined
--   depth             1 for a root scope
--   op_count          op executions at or under the region
--   inclusive_ns      op self time at or under the region
--   exclusive_ns      op self time exactly at the region
--   inclusive_share   inclusive_ns / inclusive time of its root
--   exclusive_share   exclusive_ns / inclusive time of its root
WITH r AS (
  SELECT path, min(depth) AS depth, min(parent_path) AS parent_path, sum(op_count) AS op_count,
         sum(inclusive_ns) AS inclusive_ns, sum(exclusive_ns) AS exclusive_ns
  FROM regions WHERE run_id = {{run_id}} GROUP BY path
),
children AS (SELECT parent_path, count(*) AS n, max(inclusive_ns) AS child_ns FROM r WHERE parent_path IS NOT NULL GROUP BY parent_path),
roots AS (SELECT path AS root, inclusive_ns AS root_ns FROM r WHERE depth = 0)
SELECT r.path, r.depth + 1 AS depth, r.op_count, r.inclusive_ns, r.exclusive_ns,
       CASE WHEN roots.root_ns > 0 THEN CAST(r.inclusive_ns AS DOUBLE) / roots.root_ns ELSE 0.0 END AS inclusive_share,
       CASE WHEN roots.root_ns > 0 THEN CAST(r.exclusive_ns AS DOUBLE) / roots.root_ns ELSE 0.0 END AS exclusive_share
FROM r
LEFT JOIN children c ON c.parent_path = r.path
LEFT JOIN roots ON roots.root = split_part(r.path, '/', 1)
WHERE NOT (r.depth >= 1 AND coalesce(c.n, 0) = 1 AND c.child_ns = r.inclusive_ns)
ORDER BY r.inclusive_ns DESC, r.exclusive_ns DESC, r.path
LIMIT {{top_k}}
