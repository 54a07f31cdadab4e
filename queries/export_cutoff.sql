-- Where a trace export of a window stops to keep within its event budget.
--
-- Answers: which instant leaves at most `max_events` events of the window starting before
-- it? `profq export-trace` then reads the events starting before that instant only, so
-- that a window of any size is read in bounded memory. Reads `events` row by row: a profile
-- analysed in memory must be opened with every event (`source::open_whole`).
--
-- Parameters:
--   run_id      TEXT                run to export
--   from_ns     INT                 window start (ns since the run start)
--   to_ns       INT                 window end
--   max_events  INT   = 1000000     events the export writes at most
--
-- Columns:
--   start_ns   start of the first event past the budget (no row when the window holds at
--              most max_events events)
SELECT start_ns FROM events
WHERE run_id = {{run_id}} AND start_ns < {{to_ns}} AND start_ns + dur_ns > {{from_ns}}
ORDER BY start_ns
LIMIT 1 OFFSET {{max_events}}
