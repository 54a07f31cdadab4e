-- Provenance hints: the most frequent XLA launch ids and source files named by event args.
--
-- Answers: which executions (`run_id` stat) and which source files does the trace mention,
-- to tell two captures apart?
--
-- Parameters:
--   run_id  TEXT          run to analyse
--   limit   INT   = 20    values per kind
--
-- Columns:
--   kind     run_ids | source_file_hints
--   value    the arg value (`run_id` arg; `source`, `source_file` or `file_name` arg)
--   count    events carrying it
WITH v AS (
  SELECT 'run_ids' AS kind, args['run_id'] AS value FROM events WHERE run_id = {{run_id}} AND args['run_id'] IS NOT NULL
  UNION ALL
  SELECT 'source_file_hints', coalesce(args['source'], args['source_file'], args['file_name']) FROM events
  WHERE run_id = {{run_id}} AND coalesce(args['source'], args['source_file'], args['file_name']) IS NOT NULL
),
counted AS (
  SELECT kind, value, count(*) AS count, row_number() OVER (PARTITION BY kind ORDER BY count(*) DESC, value) AS rk
  FROM v GROUP BY kind, value
)
SELECT kind, value, count FROM counted WHERE rk <= {{limit}} ORDER BY kind, rk
