-- The GPU events of a PyTorch (Kineto) run as HTA 0.5.0 (Holistic Trace Analysis) reads
-- them for its breakdowns, so that the hta-defined queries reconcile with HTA's numbers.
--
-- HTA's rules (hta/common/trace.py, trace_parser.py, trace_filter.py), each kept here:
-- * a GPU event has an integer `stream` arg >= 0 (a kernel, copy or set on any device);
-- * times are whole µs of the file's clock: a start is rounded up and an end down, as HTA
--   does to ns-resolution traces (a µs trace is left as it is), so an event under 1 µs
--   may end before it starts;
-- * the window: when the run's events name two or more distinct ProfilerSteps, a GPU event
--   with a `correlation` is kept when a host event of that correlation (its launch) starts
--   before the last ProfilerStep of its rank starts (with include_last_step: no later than
--   it ends); one without a correlation when it starts so itself. The last ProfilerStep is
--   the latest event outside the correlated GPU events whose name holds `ProfilerStep`
--   (host or GPU annotation). With fewer, every GPU event is kept.
--
-- Parameters (those of the query that includes it):
--   run_id             TEXT  run to analyse
--   include_last_step  INT   1 keeps the last ProfilerStep's events, 0 leaves them out
--
-- Columns:
--   rank         the host's rank (hosts.rank)
--   stream       stream number
--   name         event name
--   category     Kineto category (kernel, gpu_memcpy, gpu_memset, ...)
--   kernel_type  hta_kernel_type(name): COMPUTATION, COMMUNICATION, MEMORY or OTHER
--   start_us     start, µs of file time, rounded up
--   end_us       end, µs of file time, rounded down
--   launch_us    start of its launch (the host event of its correlation), rounded up
WITH ev AS (
  SELECT h.rank, CAST(e.name AS VARCHAR) AS name, CAST(e.category AS VARCHAR) AS category,
         try_cast(e.args['stream'] AS BIGINT) AS stream, coalesce(e.correlation_id, -1) AS correlation,
         (e.start_ns + coalesce(h.ts_origin_ns, 0) + 999) / 1000 AS start_us,
         (e.start_ns + e.dur_ns + coalesce(h.ts_origin_ns, 0)) / 1000 AS end_us
  FROM events e JOIN hosts h ON h.run_id = e.run_id AND h.host = e.host
  WHERE e.run_id = {{run_id}} AND e.category IS NOT NULL AND CAST(e.category AS VARCHAR) <> 'Trace'
),
-- Host events: all but the correlated GPU events and the device's synchronisations.
host AS (
  SELECT rank, name, correlation, start_us, end_us FROM ev
  WHERE NOT (coalesce(stream, -1) >= 0 AND correlation >= 0) AND name NOT IN ('Event Sync', 'Context Sync')
),
windowed AS (SELECT count(DISTINCT name) >= 2 AS yes FROM ev WHERE name LIKE '%ProfilerStep%'),
last_step AS (
  SELECT rank, max(start_us) AS start_us, max(end_us) AS end_us FROM host WHERE name LIKE '%ProfilerStep%' GROUP BY rank
),
-- A kernel is in the window when any launch of its correlation is: when its earliest is.
launch AS (SELECT rank, correlation, min(start_us) AS start_us FROM host WHERE correlation >= 0 GROUP BY rank, correlation),
gpu AS (
  SELECT g.rank, g.stream, g.name, g.category, g.start_us, g.end_us, l.start_us AS launch_us,
         CASE WHEN g.correlation >= 0 THEN l.start_us ELSE g.start_us END AS placed_us
  FROM ev g LEFT JOIN launch l ON g.correlation >= 0 AND l.rank = g.rank AND l.correlation = g.correlation
  WHERE g.stream >= 0
)
SELECT g.rank, g.stream, g.name, g.category, hta_kernel_type(g.name) AS kernel_type, g.start_us, g.end_us, g.launch_us
FROM gpu g CROSS JOIN windowed w LEFT JOIN last_step s ON s.rank = g.rank
WHERE NOT w.yes OR ({{include_last_step}} = 0 AND g.placed_us < s.start_us) OR ({{include_last_step}} <> 0 AND g.placed_us <= s.end_us)
