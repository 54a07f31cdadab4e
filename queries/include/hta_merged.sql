-- HTA's merge of intervals (hta/utils/utils.py merge_kernel_intervals), per rank and group:
-- in order of start, an interval starting after every earlier interval's end begins a new
-- merged interval; a merged interval spans its members' earliest start to latest end.
--
-- Input: a CTE `grouped(rank, grp, start_us, end_us)` defined by the including query.
--
-- Columns:
--   rank      rank
--   grp       the group the including query merges by (a kernel type, or ALL)
--   merged_no 0, 1, ... in order of start
--   start_us  start of the merged interval
--   end_us    end of the merged interval
WITH flagged AS (
  SELECT rank, grp, start_us, end_us,
         CASE WHEN start_us > max(end_us) OVER (PARTITION BY rank, grp ORDER BY start_us, end_us ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
              THEN 1 ELSE 0 END AS starts_new
  FROM grouped
),
numbered AS (
  SELECT rank, grp, start_us, end_us,
         sum(starts_new) OVER (PARTITION BY rank, grp ORDER BY start_us, end_us ROWS UNBOUNDED PRECEDING) AS merged_no
  FROM flagged
)
SELECT rank, grp, merged_no, min(start_us) AS start_us, max(end_us) AS end_us FROM numbered GROUP BY rank, grp, merged_no
