-- Pre-op gaps: idle time on device-op lines, attributed to the op that does the work after it.
--
-- Answers: what idles the device before which op? A gap is found per line when an op starts
-- after every earlier op of the line ended; the marker is that first op. When the marker is
-- a setup op (iota, constant, bitcast, get-tuple-element, parameter, tuple, after-all,
-- copy-start/done), the gap goes to the first real op among the next 8 that follows without
-- a second gap (the payload). That lookahead is sequential, so it runs in Rust at ingest
-- (src/tables/derive.rs, `find_gaps`) and fills the `gaps` table; this query aggregates it.
--
-- Parameters:
--   run_id  TEXT           run to analyse
--   top_k   INT   = 500    rows to return
--
-- Columns:
--   payload_op          op the gaps are attributed to
--   marker_op           most frequent first-op-after-the-gap (ties: name)
--   count               gaps
--   total_gap_ns        summed gap time
--   max_gap_ns          longest gap
--   avg_gap_ns          total_gap_ns / count
--   lines               distinct lines the gaps were on
-- Reads gap_totals (gaps already summed per line, marker and payload). The most frequent
-- marker is `top_value(marker_op, count)` (profq's aggregate: highest summed weight, ties:
-- smallest name, nulls left out), in the same grouping as the sums.
WITH o AS (
  SELECT CAST(payload_op AS VARCHAR) AS payload_op, CAST(marker_op AS VARCHAR) AS marker_op,
         CAST(host AS VARCHAR) || '/' || CAST(line AS VARCHAR) AS track, count, gap_ns, max_gap_ns
  FROM gap_totals WHERE run_id = {{run_id}} AND payload_op IS NOT NULL
),
per_payload AS (
  SELECT payload_op, top_value(marker_op, count) AS marker_op, sum(count) AS count, sum(gap_ns) AS total_gap_ns,
         max(max_gap_ns) AS max_gap_ns, count(DISTINCT track) AS lines
  FROM o GROUP BY payload_op
)
SELECT payload_op, marker_op, count, total_gap_ns, max_gap_ns, CAST(total_gap_ns AS DOUBLE) / count AS avg_gap_ns, lines
FROM per_payload
ORDER BY total_gap_ns DESC, max_gap_ns DESC, payload_op
LIMIT {{top_k}}
