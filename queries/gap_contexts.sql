-- Gap region contexts: in which named scope do the ops that wait after idle gaps live?
--
-- Answers: which region (scope path, at most 4 levels) the gaps' payload ops belong to.
-- The label is the payload's region path; an op without one takes the most common region
-- path of ops with the same name (ties: smallest path), else `unknown`. Copies are labelled
-- `copy(<path>)` (just `copy` without a path), never wrapped twice.
--
-- Parameters:
--   run_id  TEXT           run to analyse
--   top_k   INT   = 500    rows to return
--
-- Columns:
--   op_name          payload op
--   region_path      label as described above
--   count            gaps
--   total_gap_ns     summed gap time
--   avg_gap_ns       total_gap_ns / count
-- Reads gap_totals (gaps already summed per marker, payload and its region), summed again per
-- (payload, payload region) before any text is compared; the most common region per name
-- comes from op_totals, picked by `top_value(region_path, count)` (profq's aggregate:
-- highest summed weight, ties: smallest path).
WITH preferred AS (
  SELECT CAST(hlo_op AS VARCHAR) AS hlo_op, region_path
  FROM (SELECT hlo_op, top_value(region_path, count) AS region_path FROM op_totals WHERE run_id = {{run_id}} AND region_path IS NOT NULL GROUP BY hlo_op) c
),
per_payload AS (
  SELECT CAST(payload_op AS VARCHAR) AS op_name, CAST(payload_region_path AS VARCHAR) AS own_path, n, gap_ns
  FROM (SELECT payload_op, payload_region_path, sum(count) AS n, sum(gap_ns) AS gap_ns FROM gap_totals WHERE run_id = {{run_id}} GROUP BY payload_op, payload_region_path) c
),
grouped AS (
  SELECT g.op_name, coalesce(g.own_path, p.region_path) AS path, sum(g.n) AS n, sum(g.gap_ns) AS gap_ns
  FROM per_payload g LEFT JOIN preferred p ON p.hlo_op = g.op_name
  GROUP BY g.op_name, coalesce(g.own_path, p.region_path)
),
labelled AS (
  SELECT op_name, n, gap_ns,
         CASE
           WHEN starts_with(lower(canonical_name(op_name)), 'copy') THEN
             CASE WHEN path IS NULL OR path = '' OR path = 'copy' THEN 'copy'
                  WHEN starts_with(path, 'copy(') THEN path
                  ELSE 'copy(' || array_to_string(array_slice(string_to_array(path, '/'), 1, 4), '/') || ')' END
           WHEN path IS NULL OR path = '' THEN 'unknown'
           ELSE array_to_string(array_slice(string_to_array(path, '/'), 1, 4), '/')
         END AS region_path
  FROM grouped
)
SELECT op_name, region_path, sum(n) AS count, sum(gap_ns) AS total_gap_ns, CAST(sum(gap_ns) AS DOUBLE) / sum(n) AS avg_gap_ns
FROM labelled
GROUP BY op_name, region_path
ORDER BY total_gap_ns DESC, op_name, region_path
LIMIT {{top_k}}
