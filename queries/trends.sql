-- Trends across every run of the store: one row per run, in ingest order.
--
-- Answers: how did step time, the time split, the hottest op and collective time move
-- across runs (a sweep, a bisection, nightly captures)? Deterministic: runs are ordered by
-- ingest time, ties by run id.
--
-- Parameters:
--   warmup_steps  INT   = 5     steps with a smaller number are warm-up
--
-- Columns:
--   ingest_order            1 for the first run ingested
--   run_id                  run
--   labels                  the run's labels as `k=v` pairs, comma-separated, sorted
--   steady_steps            steady steps
--   steady_median_ns        median steady step duration (longest instance per step number)
--   op_self_ns              total op self time
--   compute_share           share of op self time in compute ops
--   communication_share     share of op self time in collectives
--   top_op                  op with the most self time (ties: name)
--   top_op_self_ns          its self time
--   all_reduce_ns           summed duration of all-reduce collectives (0 if none)
--   all_gather_ns           the same for all-gather
--   reduce_scatter_ns       the same for reduce-scatter
--   all_to_all_ns           the same for all-to-all
--   collective_permute_ns   the same for collective-permute
--   other_collective_ns     send-recv and other collectives
WITH r AS (
  SELECT run_id, ingested_at_ns,
         array_to_string(array_sort(array_agg(k.key || '=' || k.value)), ',') AS labels
  FROM runs LEFT JOIN (SELECT run_id AS rid, unnest(map_keys(labels)) AS key, unnest(map_values(labels)) AS value FROM runs) k ON k.rid = runs.run_id
  GROUP BY run_id, ingested_at_ns
),
per_step AS (SELECT run_id, step, dur_ns FROM ({{include per_step}}) AS p WHERE step >= {{warmup_steps}}),
st AS (SELECT run_id, count(*) AS steady_steps, median(dur_ns) AS steady_median_ns FROM per_step GROUP BY run_id),
o AS (
  SELECT run_id, sum(self_ns) AS op_self_ns,
         sum(CASE WHEN CAST(category AS VARCHAR) = 'compute' THEN self_ns ELSE 0 END) AS compute_ns,
         sum(CASE WHEN CAST(category AS VARCHAR) = 'communication' THEN self_ns ELSE 0 END) AS comm_ns
  FROM ops GROUP BY run_id
),
hottest AS (
  SELECT run_id, hlo_op, self_ns, row_number() OVER (PARTITION BY run_id ORDER BY self_ns DESC, hlo_op) AS rk
  FROM (SELECT run_id, CAST(hlo_op AS VARCHAR) AS hlo_op, sum(self_ns) AS self_ns FROM ops GROUP BY run_id, hlo_op) t
),
c AS (
  SELECT run_id,
         sum(CASE WHEN CAST(kind AS VARCHAR) = 'all-reduce' THEN dur_ns ELSE 0 END) AS all_reduce_ns,
         sum(CASE WHEN CAST(kind AS VARCHAR) = 'all-gather' THEN dur_ns ELSE 0 END) AS all_gather_ns,
         sum(CASE WHEN CAST(kind AS VARCHAR) = 'reduce-scatter' THEN dur_ns ELSE 0 END) AS reduce_scatter_ns,
         sum(CASE WHEN CAST(kind AS VARCHAR) = 'all-to-all' THEN dur_ns ELSE 0 END) AS all_to_all_ns,
         sum(CASE WHEN CAST(kind AS VARCHAR) = 'collective-permute' THEN dur_ns ELSE 0 END) AS collective_permute_ns,
         sum(CASE WHEN CAST(kind AS VARCHAR) IN ('send-recv', 'other') THEN dur_ns ELSE 0 END) AS other_collective_ns
  FROM collectives GROUP BY run_id
)
SELECT row_number() OVER (ORDER BY r.ingested_at_ns, r.run_id) AS ingest_order, r.run_id, r.labels,
       coalesce(st.steady_steps, 0) AS steady_steps, st.steady_median_ns,
       coalesce(o.op_self_ns, 0) AS op_self_ns,
       CASE WHEN o.op_self_ns > 0 THEN CAST(o.compute_ns AS DOUBLE) / o.op_self_ns END AS compute_share,
       CASE WHEN o.op_self_ns > 0 THEN CAST(o.comm_ns AS DOUBLE) / o.op_self_ns END AS communication_share,
       hottest.hlo_op AS top_op, hottest.self_ns AS top_op_self_ns,
       coalesce(c.all_reduce_ns, 0) AS all_reduce_ns, coalesce(c.all_gather_ns, 0) AS all_gather_ns,
       coalesce(c.reduce_scatter_ns, 0) AS reduce_scatter_ns, coalesce(c.all_to_all_ns, 0) AS all_to_all_ns,
       coalesce(c.collective_permute_ns, 0) AS collective_permute_ns, coalesce(c.other_collective_ns, 0) AS other_collective_ns
FROM r
LEFT JOIN st ON st.run_id = r.run_id
LEFT JOIN o ON o.run_id = r.run_id
LEFT JOIN hottest ON hottest.run_id = r.run_id AND hottest.rk = 1
LEFT JOIN c ON c.run_id = r.run_id
ORDER BY ingest_order
