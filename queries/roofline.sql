-- Roofline: each HLO op's FLOP rate and memory bandwidth against the device's peaks.
--
-- Answers: is an op (and the time as a whole) compute-bound or memory-bound, and how far is
-- it from the roof it could reach? Needs the compiler's cost model on the ops (`ops.flops`,
-- `ops.bytes_accessed`: TPU profiles have it) and, to tell the bound, the peaks the profile
-- states (`runs.peak_flops_per_s`, `runs.peak_hbm_bytes_per_s`). Ops without a cost model are
-- left out, so a profile without one gives no rows. Ops of `Async*` lines (the spans of async
-- copies and collectives, which the line's `*-start` / `*-done` ops already count) are left
-- out, as XProf's roofline does. Rates are over exclusive time, as XProf's (which shows
-- GFLOP/s and GiB/s: divide by 1e9 and 2^30).
--
-- Parameters:
--   run_id  TEXT           run to analyse
--   top_k   INT   = 25     rows to return
--
-- Columns:
--   program_id            XLA program of the op
--   hlo_module            HLO module
--   hlo_op                HLO instruction
--   category              XProf's hlo_category, else the HLO opcode
--   is_async              an async op (`*-start` / `*-done`): its bytes move while other ops run
--   count                 executions
--   self_ns               summed exclusive time
--   share_of_self         self_ns over the self time of every op with a cost model
--   flops                 summed FLOPs of the executions (cost model)
--   bytes_accessed        summed bytes read and written (cost model)
--   flop_rate             flops per second of exclusive time (taken to the picosecond from
--                         `ops.dur_ps`); null when it is 0
--   bandwidth             bytes_accessed per second of exclusive time (bytes/s); null when it is 0
--   intensity             flops / bytes_accessed (FLOP/byte); null when bytes_accessed is 0
--   bound_by              memory (intensity below the ridge point, peak FLOP rate / peak
--                         bandwidth), compute (at or above it, or no bytes), or unknown (no
--                         peaks, or neither FLOPs nor bytes)
--   roof_flop_rate        the FLOP rate the roofline allows at this intensity: the least of the
--                         peak FLOP rate and intensity × peak bandwidth; null without peaks
--   roofline_efficiency   flop_rate / roof_flop_rate; for an op without FLOPs, bandwidth / peak
--                         bandwidth; null without peaks or without FLOPs and bytes
--   devices               distinct devices that ran it
WITH peaks AS (
  SELECT max(peak_flops_per_s) AS peak_flops, max(peak_hbm_bytes_per_s) AS peak_bw FROM runs WHERE run_id = {{run_id}}
),
per_op AS (
  SELECT program_id, CAST(hlo_module AS VARCHAR) AS hlo_module, CAST(hlo_op AS VARCHAR) AS hlo_op,
         min(CAST(coalesce(hlo_category, opcode) AS VARCHAR)) AS category, bool_or(is_async) AS is_async,
         count(*) AS count, sum(self_ns) AS self_ns,
         -- Exclusive time to the picosecond where the profile measures it (TPU ops last a few ns).
         sum(dur_ps - (dur_ns - self_ns) * 1000) AS self_ps,
         sum(coalesce(flops, 0)) AS flops, sum(coalesce(bytes_accessed, 0)) AS bytes_accessed,
         count(DISTINCT device) AS devices
  FROM ops
  WHERE run_id = {{run_id}} AND (flops IS NOT NULL OR bytes_accessed IS NOT NULL) AND NOT is_async_line(line)
  GROUP BY program_id, hlo_module, hlo_op
),
rates AS (
  SELECT o.*, p.peak_flops, p.peak_bw,
         CAST(o.self_ns AS DOUBLE) / sum(o.self_ns) OVER () AS share_of_self,
         CASE WHEN o.self_ps > 0 THEN o.flops / (o.self_ps / 1000000000000.0) END AS flop_rate,
         CASE WHEN o.self_ps > 0 THEN o.bytes_accessed / (o.self_ps / 1000000000000.0) END AS bandwidth,
         CASE WHEN o.bytes_accessed > 0 THEN o.flops / o.bytes_accessed END AS intensity
  FROM peaks p CROSS JOIN per_op o
),
roofs AS (
  SELECT *,
         CASE WHEN peak_flops IS NULL OR peak_bw IS NULL THEN NULL
              WHEN intensity IS NULL OR intensity * peak_bw >= peak_flops THEN peak_flops
              ELSE intensity * peak_bw END AS roof_flop_rate
  FROM rates
)
SELECT program_id, hlo_module, hlo_op, category, is_async, count, self_ns, share_of_self, flops, bytes_accessed,
       flop_rate, bandwidth, intensity,
       CASE WHEN peak_flops IS NULL OR peak_bw IS NULL OR (flops = 0 AND bytes_accessed = 0) THEN 'unknown'
            WHEN intensity IS NOT NULL AND intensity < peak_flops / peak_bw THEN 'memory'
            ELSE 'compute' END AS bound_by,
       roof_flop_rate,
       CASE WHEN flops > 0 THEN flop_rate / roof_flop_rate WHEN bytes_accessed > 0 THEN bandwidth / peak_bw END AS roofline_efficiency,
       devices
FROM roofs
ORDER BY self_ns DESC, hlo_op, program_id
LIMIT {{top_k}}
