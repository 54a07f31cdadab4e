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
WITH r AS (SELECT launch_run_ids, source_file_hints FROM runs WHERE run_id = {{run_id}}),
v AS (
  SELECT 'run_ids' AS kind, unnest(launch_run_ids) AS value FROM r
  UNION ALL
  SELECT 'source_file_hints' AS kind, unnest(source_file_hints) AS value FROM r
)
SELECT kind, value, row_number() OVER (PARTITION BY kind) AS rank FROM v ORDER BY kind
