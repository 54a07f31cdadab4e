-- Memory per allocator: the peak bytes in use during the capture, when, and the largest request.
--
-- Answers: how close did each device's memory come to full, and when? Read from the
-- allocators' events, each stating the allocator's state right after it:
--   XPlane `MemoryAllocation` / `MemoryDeallocation` (host planes of TPU and GPU captures, as
--     XProf's memory_profile reads them): bytes allocated (heap), reserved (stack), available,
--     fragmentation. An allocator is its `allocator_name` (GPU: `GPU_0_bfc`), else its
--     `index_on_host` (TPU: the device's memory id).
--   Kineto `[memory]` (PyTorch with `profile_memory=True`): `Bytes` (negative when freed),
--     `Total Allocated` (heap) and `Total Reserved` (what the caching allocator holds). An
--     allocator is its device: `cuda:<Device Id>` (Device Type 1), `cpu` (0), else
--     `device_type_<N>:<Device Id>`.
-- The peak is the event with the most heap plus stack bytes, the latest of equals (as
-- XProf's peak). A profile without these events gives no rows.
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   host                   host
--   memory_id              the allocator (see above)
--   allocations            allocation events
--   deallocations          deallocation events
--   peak_in_use_bytes      heap + stack bytes at the peak
--   peak_heap_bytes        bytes allocated at the peak
--   peak_stack_bytes       bytes reserved for stacks at the peak (XLA); null for Kineto
--   peak_free_bytes        bytes available at the peak (XLA); null for Kineto
--   peak_reserved_bytes    bytes the caching allocator holds at the peak, allocated or cached
--                          (Kineto `Total Reserved`); null for XLA
--   peak_fragmentation     the allocator's fragmentation at the peak, 0 to 1 (XLA)
--   peak_time_ns           start_ns of the event at the peak
--   capacity_bytes         heap + stack + free bytes at the peak: the allocator's memory (XLA);
--                          null where the events state no free bytes
--   peak_share             peak_in_use_bytes / capacity_bytes
--   lifetime_peak_bytes    the allocator's own peak (XLA `peak_bytes_in_use`), which counts
--                          what it held before the capture too; null for Kineto
--   largest_request_bytes  the largest request of an allocation (`requested_bytes`, Kineto `Bytes`)
--   largest_request_shape  its `shape`, where the event names one (ties: the earliest)
-- Memory events are found through event_totals first, so a profile without them never
-- scans its events.
WITH names AS (
  SELECT name FROM event_totals
  WHERE run_id = {{run_id}} AND CAST(name AS VARCHAR) IN ('MemoryAllocation', 'MemoryDeallocation', '[memory]')
  GROUP BY name
),
e AS (
  SELECT CAST(e.host AS VARCHAR) AS host, CAST(e.name AS VARCHAR) AS name, e.start_ns, e.event_id, e.args,
         try_cast(e.args['Bytes'] AS BIGINT) AS kineto_bytes
  FROM names n JOIN events e ON n.name = e.name
  WHERE e.run_id = {{run_id}}
),
m AS (
  SELECT host, start_ns, event_id,
         CASE WHEN name <> '[memory]' THEN coalesce(args['allocator_name'], args['index_on_host'])
              WHEN args['Device Type'] = '1' THEN 'cuda:' || args['Device Id']
              WHEN args['Device Type'] = '0' THEN 'cpu'
              ELSE 'device_type_' || args['Device Type'] || ':' || args['Device Id'] END AS memory_id,
         CASE WHEN name = 'MemoryAllocation' OR (name = '[memory]' AND kineto_bytes >= 0) THEN 'alloc' ELSE 'free' END AS activity,
         coalesce(try_cast(args['bytes_allocated'] AS BIGINT), try_cast(args['Total Allocated'] AS BIGINT), 0) AS heap_bytes,
         try_cast(args['bytes_reserved'] AS BIGINT) AS stack_bytes,
         try_cast(args['bytes_available'] AS BIGINT) AS free_bytes,
         try_cast(args['Total Reserved'] AS BIGINT) AS reserved_bytes,
         try_cast(args['fragmentation'] AS DOUBLE) AS fragmentation,
         try_cast(args['peak_bytes_in_use'] AS BIGINT) AS lifetime_peak_bytes,
         coalesce(try_cast(args['requested_bytes'] AS BIGINT), kineto_bytes) AS requested_bytes,
         args['shape'] AS shape
  FROM e
),
ranked AS (
  SELECT *,
         row_number() OVER (PARTITION BY host, memory_id ORDER BY heap_bytes + coalesce(stack_bytes, 0) DESC, start_ns DESC, event_id DESC) AS peak_rank,
         row_number() OVER (PARTITION BY host, memory_id
                            ORDER BY CASE WHEN activity = 'alloc' THEN requested_bytes END DESC NULLS LAST, start_ns, event_id) AS request_rank
  FROM m WHERE memory_id IS NOT NULL
),
per_allocator AS (
  SELECT host, memory_id,
         count(*) FILTER (WHERE activity = 'alloc') AS allocations,
         count(*) FILTER (WHERE activity = 'free') AS deallocations,
         max(heap_bytes + coalesce(stack_bytes, 0)) FILTER (WHERE peak_rank = 1) AS peak_in_use_bytes,
         max(heap_bytes) FILTER (WHERE peak_rank = 1) AS peak_heap_bytes,
         max(stack_bytes) FILTER (WHERE peak_rank = 1) AS peak_stack_bytes,
         max(free_bytes) FILTER (WHERE peak_rank = 1) AS peak_free_bytes,
         max(reserved_bytes) FILTER (WHERE peak_rank = 1) AS peak_reserved_bytes,
         max(fragmentation) FILTER (WHERE peak_rank = 1) AS peak_fragmentation,
         max(start_ns) FILTER (WHERE peak_rank = 1) AS peak_time_ns,
         max(heap_bytes + coalesce(stack_bytes, 0) + free_bytes) FILTER (WHERE peak_rank = 1) AS capacity_bytes,
         max(lifetime_peak_bytes) AS lifetime_peak_bytes,
         max(requested_bytes) FILTER (WHERE activity = 'alloc') AS largest_request_bytes,
         max(shape) FILTER (WHERE request_rank = 1 AND activity = 'alloc') AS largest_request_shape
  FROM ranked GROUP BY host, memory_id
)
SELECT host, memory_id, allocations, deallocations, peak_in_use_bytes, peak_heap_bytes, peak_stack_bytes, peak_free_bytes,
       peak_reserved_bytes, peak_fragmentation, peak_time_ns, capacity_bytes,
       CASE WHEN capacity_bytes > 0 THEN CAST(peak_in_use_bytes AS DOUBLE) / capacity_bytes END AS peak_share,
       lifetime_peak_bytes, largest_request_bytes, largest_request_shape
FROM per_allocator
ORDER BY host, memory_id
