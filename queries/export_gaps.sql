-- The idle gaps on device lines inside a time window: the "profq · gaps" track of
-- `profq export-trace`.
--
-- Answers: where did device lines sit idle, and which op was each gap waiting for?
--
-- Parameters:
--   run_id    TEXT   run to export
--   from_ns   INT    window start (ns since the run start)
--   to_ns     INT    window end; gaps overlapping [from_ns, to_ns) are returned
--
-- Columns:
--   host            host
--   device          device
--   line            device line
--   step            step of the marker op
--   start_ns        gap start
--   gap_ns          gap length
--   marker_op       first op after the gap
--   payload_op      op the gap is attributed to
--   payload_region  named-scope path of the payload
SELECT CAST(host AS VARCHAR) AS host, CAST(device AS VARCHAR) AS device, CAST(line AS VARCHAR) AS line, step,
       gap_start_ns AS start_ns, gap_ns, CAST(marker_op AS VARCHAR) AS marker_op, CAST(payload_op AS VARCHAR) AS payload_op,
       CAST(payload_region_path AS VARCHAR) AS payload_region
FROM gaps
WHERE run_id = {{run_id}} AND gap_start_ns < {{to_ns}} AND gap_start_ns + gap_ns > {{from_ns}}
ORDER BY gap_start_ns, host, device, line
