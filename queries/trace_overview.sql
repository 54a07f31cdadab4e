-- Trace overview: what the run holds, for the summary's trace_overview section.
--
-- Answers: how many events, processes (planes) and threads (lines), over which time span?
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   num_events_total      every event in the source (runs.num_events_total)
--   num_complete_events   events kept (runs.num_complete_events)
--   num_processes         distinct (host, plane) with events
--   num_threads           distinct (host, plane, line) with events
--   profile_start_ns      earliest event start
--   profile_end_ns        latest event end
--   num_hosts             hosts in the run
--   num_devices           devices that ran ops
--   suspected_truncation  runs.suspected_truncation
-- Read from event_totals (one row per distinct name of a line), not the events themselves.
WITH lines AS (
  SELECT host, plane, line, min(first_start_ns) AS s, max(last_end_ns) AS e
  FROM event_totals WHERE run_id = {{run_id}} GROUP BY host, plane, line
),
planes AS (SELECT DISTINCT host, plane FROM lines),
e AS (
  SELECT (SELECT count(*) FROM planes) AS num_processes, count(*) AS num_threads,
         min(s) AS profile_start_ns, max(e) AS profile_end_ns
  FROM lines
)
SELECT r.num_events_total, r.num_complete_events, e.num_processes, e.num_threads, e.profile_start_ns, e.profile_end_ns,
       array_length(r.hosts) AS num_hosts, r.num_devices, r.suspected_truncation
FROM runs r CROSS JOIN e
WHERE r.run_id = {{run_id}}
