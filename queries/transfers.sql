-- Host <-> device transfers: copies between host and device memory, or between devices,
-- by direction.
--
-- Answers: how much time goes to moving data between host and device? A transfer is a copy,
-- recognised by name (memcpy HtoD/DtoH/PtoP, device_put, transfer to/from device,
-- host_to_device, device_to_host, TransferToDevice/Literal) and, for Kineto, the copy
-- category; a copy within one device (DtoD) is memory work, and a host API call
-- (`cudaMemcpyAsync`, Kineto's runtime category) a launch, so neither is one. The SQL
-- function `transfer_direction` (src/tables/events_of_interest.rs) says which and how.
-- Only outermost matching events count, so a transfer and its nested phases are not
-- counted twice.
--
-- Rows only from: events (its transfers are events of the run).
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   direction      host_to_device | device_to_host | peer | unknown
--   on_device      true for events on device lines (the copy itself), false for host calls
--   count          events
--   total_ns       summed duration
--   avg_ns         total_ns / count
--   bytes          summed `bytes`/`size`/`bytes_transferred` args, or the `size:` of XPlane
--                  `memcpy_details`, where present
--   example        the longest event's name (ties: name)
-- Names are classified once per distinct (name, category) of event_totals, then joined
-- back to the events, so a profile without transfers never scans its events.
WITH names AS (
  -- Still dictionary-encoded, so the join hashes each distinct name once.
  SELECT name, category FROM event_totals WHERE run_id = {{run_id}} GROUP BY name, category
),
matching AS (
  SELECT name, category, direction FROM (
    SELECT name, category, transfer_direction(CAST(name AS VARCHAR), CAST(category AS VARCHAR)) AS direction FROM names
  ) d WHERE direction IS NOT NULL
),
t AS (
  SELECT e.event_id, e.parent_id, CAST(e.name AS VARCHAR) AS name, m.direction, e.dur_ns, e.device IS NOT NULL AS on_device,
         coalesce(try_cast(e.args['bytes'] AS BIGINT), try_cast(e.args['size'] AS BIGINT), try_cast(e.args['bytes_transferred'] AS BIGINT),
                  try_cast(regexp_match(e.args['memcpy_details'], '(?:^|\s)size:([0-9]+)')[1] AS BIGINT)) AS bytes
  FROM matching m JOIN events e ON m.name = e.name AND (m.category IS NOT DISTINCT FROM e.category)
  WHERE e.run_id = {{run_id}}
),
outer_ AS (SELECT t.* FROM t LEFT JOIN t p ON p.event_id = t.parent_id WHERE p.event_id IS NULL),
ranked AS (SELECT *, row_number() OVER (PARTITION BY direction, on_device ORDER BY dur_ns DESC, name) AS rk FROM outer_)
SELECT direction, on_device, count(*) AS count, sum(dur_ns) AS total_ns, CAST(sum(dur_ns) AS DOUBLE) / count(*) AS avg_ns,
       sum(bytes) AS bytes, min(name) FILTER (WHERE rk = 1) AS example
FROM ranked
GROUP BY direction, on_device
ORDER BY total_ns DESC, direction, on_device
