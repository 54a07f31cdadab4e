-- Provenance hints: the most frequent XLA launch ids and source files named by event stats.
--
-- Answers: which executions (`run_id` stat) and which source files does the trace mention,
-- to tell two captures apart? Counted at ingest over every event (runs.launch_run_ids,
-- runs.source_file_hints), most frequent first.
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   kind     run_ids | source_file_hints
--   value    the stat value
--   rank     1 for the most frequent
-- The rank is the value's position in its list (the lists are stored most frequent first,
-- ties by value), so the order never depends on how rows happen to flow through a plan.
WITH r AS (SELECT launch_run_ids, source_file_hints FROM runs WHERE run_id = {{run_id}}),
positions AS (
  SELECT 'run_ids' AS kind, launch_run_ids AS list,
         unnest(generate_series(1, CAST(coalesce(array_length(launch_run_ids), 0) AS BIGINT))) AS pos
  FROM r
  UNION ALL
  SELECT 'source_file_hints' AS kind, source_file_hints AS list,
         unnest(generate_series(1, CAST(coalesce(array_length(source_file_hints), 0) AS BIGINT))) AS pos
  FROM r
)
SELECT kind, array_element(list, pos) AS value, pos AS rank FROM positions ORDER BY kind, rank
