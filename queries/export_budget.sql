-- How the events of a window spread over time: what lets a trace export keep within its
-- event budget.
--
-- Answers: how many events of the window start in each 1/4096 of its span? `profq
-- export-trace` adds the buckets up to find where its `--max-events` budget ends, then
-- reads the events starting before that bucket's end only, so that a window of any size is
-- read in bounded memory. Reads `events` row by row: a profile analysed in memory must be
-- opened with every event (`source::open_whole`).
--
-- Parameters:
--   run_id    TEXT   run to export
--   from_ns   INT    window start (ns since the run start)
--   to_ns     INT    window end; events overlapping [from_ns, to_ns) count
--
-- Columns:
--   bucket          bucket number, 0 to 4095 over the starts of the window's events
--   first_start_ns  earliest start in the bucket
--   events          events starting in the bucket
WITH w AS (
  SELECT start_ns FROM events
  WHERE run_id = {{run_id}} AND start_ns < {{to_ns}} AND start_ns + dur_ns > {{from_ns}}
),
span AS (SELECT min(start_ns) AS lo, max(start_ns) AS hi FROM w)
SELECT CAST(floor(CAST(w.start_ns - span.lo AS DOUBLE) * 4096.0 / CAST(span.hi - span.lo + 1 AS DOUBLE)) AS BIGINT) AS bucket,
       min(w.start_ns) AS first_start_ns, count(*) AS events
FROM span CROSS JOIN w
GROUP BY 1
ORDER BY bucket
