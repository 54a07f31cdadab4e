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
WITH g AS (
  SELECT CAST(payload_op AS VARCHAR) AS payload_op, CAST(marker_op AS VARCHAR) AS marker_op, gap_ns,
         CAST(host AS VARCHAR) || '/' || CAST(line AS VARCHAR) AS track
  FROM gaps WHERE run_id = {{run_id}}
),
markers AS (
  SELECT payload_op, marker_op, row_number() OVER (PARTITION BY payload_op ORDER BY count(*) DESC, marker_op) AS rk
  FROM g GROUP BY payload_op, marker_op
)
SELECT g.payload_op, min(m.marker_op) AS marker_op, count(*) AS count, sum(g.gap_ns) AS total_gap_ns,
       max(g.gap_ns) AS max_gap_ns, CAST(sum(g.gap_ns) AS DOUBLE) / count(*) AS avg_gap_ns,
       count(DISTINCT g.track) AS lines
FROM g JOIN markers m ON m.payload_op = g.payload_op AND m.rk = 1
GROUP BY g.payload_op
ORDER BY total_gap_ns DESC, max_gap_ns DESC, g.payload_op
LIMIT {{top_k}}
