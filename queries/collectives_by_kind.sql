-- Collectives by kind: time, how much of it compute hides, bytes and bandwidth.
--
-- Answers: which collective kind costs most, and is its time exposed (on the critical path)
-- or overlapped by compute on the same device?
--
-- Rows only from: collectives (one row per kind of the run's collectives).
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   kind            all-reduce | all-gather | reduce-scatter | all-to-all | collective-permute | send-recv | other
--   count           executions (each device's execution counts once)
--   total_ns        sum of durations
--   avg_ns          total_ns / count
--   exposed_ns      time not covered by compute on the same device
--   overlapped_ns   time covered by compute on the same device
--   exposed_share   exposed_ns / total_ns
--   bytes           sum of result sizes where the HLO shape is known (null if none is)
--   gbytes_per_s    bytes / total time of the executions with known size, in GB/s
--   top_op          the op of this kind with the most time (ties: name)
WITH c AS (
  SELECT CAST(kind AS VARCHAR) AS kind, CAST(hlo_op AS VARCHAR) AS hlo_op, dur_ns, exposed_ns, overlapped_ns, bytes
  FROM collectives WHERE run_id = {{run_id}}
),
per_op AS (
  SELECT kind, hlo_op, row_number() OVER (PARTITION BY kind ORDER BY sum(dur_ns) DESC, hlo_op) AS rk
  FROM c GROUP BY kind, hlo_op
)
SELECT c.kind, count(*) AS count, sum(c.dur_ns) AS total_ns, CAST(sum(c.dur_ns) AS DOUBLE) / count(*) AS avg_ns,
       sum(c.exposed_ns) AS exposed_ns, sum(c.overlapped_ns) AS overlapped_ns,
       CASE WHEN sum(c.dur_ns) > 0 THEN CAST(sum(c.exposed_ns) AS DOUBLE) / sum(c.dur_ns) ELSE 0.0 END AS exposed_share,
       sum(c.bytes) AS bytes,
       CASE WHEN sum(CASE WHEN c.bytes IS NOT NULL THEN c.dur_ns END) > 0
            THEN CAST(sum(c.bytes) AS DOUBLE) / sum(CASE WHEN c.bytes IS NOT NULL THEN c.dur_ns END) END AS gbytes_per_s,
       min(p.hlo_op) AS top_op
FROM c JOIN per_op p ON p.kind = c.kind AND p.rk = 1
GROUP BY c.kind
ORDER BY total_ns DESC, c.kind
