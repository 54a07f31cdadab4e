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
-- Gaps are summed once per distinct (payload, marker, line) and the most frequent marker is
-- picked by a window function, so the gaps are scanned once.
WITH g AS (
  SELECT payload_op, marker_op, host, line, count(*) AS n, sum(gap_ns) AS gap_ns, max(gap_ns) AS max_gap_ns
  FROM gaps WHERE run_id = {{run_id}}
  GROUP BY payload_op, marker_op, host, line
),
o AS (
  SELECT CAST(payload_op AS VARCHAR) AS payload_op, CAST(marker_op AS VARCHAR) AS marker_op,
         CAST(host AS VARCHAR) || '/' || CAST(line AS VARCHAR) AS track, n, gap_ns, max_gap_ns
  FROM g
),
counted AS (SELECT *, sum(n) OVER (PARTITION BY payload_op, marker_op) AS marker_n FROM o),
picked AS (SELECT *, first_value(marker_op) OVER (PARTITION BY payload_op ORDER BY marker_n DESC, marker_op) AS top_marker FROM counted)
SELECT payload_op, min(top_marker) AS marker_op, sum(n) AS count, sum(gap_ns) AS total_gap_ns,
       max(max_gap_ns) AS max_gap_ns, CAST(sum(gap_ns) AS DOUBLE) / sum(n) AS avg_gap_ns,
       count(DISTINCT track) AS lines
FROM picked
GROUP BY payload_op
ORDER BY total_gap_ns DESC, max_gap_ns DESC, payload_op
LIMIT {{top_k}}
