-- Memory per allocator: the peak bytes in use during the capture, when, and the largest request.
--
-- Answers: how close did each device's memory come to full, and when? Read from the
-- allocator's `MemoryAllocation` / `MemoryDeallocation` events (XPlane host planes of TPU and
-- GPU captures taken with memory profiling, as XProf's memory_profile reads them): each states
-- the allocator's bytes allocated (heap), reserved (stack), available and its fragmentation
-- right after it. An allocator is its `allocator_name` (GPU: `GPU_0_bfc`), else its
-- `index_on_host` (TPU: the device's memory id). The peak is the event with the most heap plus
-- stack bytes, the latest of equals (as XProf's peak). A profile without these events gives no rows.
--
-- Parameters:
--   run_id  TEXT   run to analyse
--
-- Columns:
--   host                   host
--   memory_id              allocator name, else index_on_host
--   allocations            MemoryAllocation events
--   deallocations          MemoryDeallocation events
--   peak_in_use_bytes      heap + stack bytes at the peak
--   peak_heap_bytes        bytes allocated at the peak
--   peak_stack_bytes       bytes reserved at the peak
--   peak_free_bytes        bytes available at the peak
--   peak_fragmentation     the allocator's fragmentation at the peak (0 to 1)
--   peak_time_ns           start_ns of the event at the peak
--   capacity_bytes         heap + stack + free bytes at the peak: the allocator's memory
--   peak_share             peak_in_use_bytes / capacity_bytes
--   lifetime_peak_bytes    the allocator's own peak (`peak_bytes_in_use`), which counts
--                          what it held before the capture too
--   largest_request_bytes  the largest `requested_bytes` of an allocation
--   largest_request_shape  its `shape`, where the event names one (ties: the earliest)
-- Memory events are found through event_totals first, so a profile without them never
-- scans its events.
WITH names AS (
  SELECT name FROM event_totals
  WHERE run_id = {{run_id}} AND CAST(name AS VARCHAR) IN ('MemoryAllocation', 'MemoryDeallocation')
  GROUP BY name
),
m AS (
  SELECT CAST(e.host AS VARCHAR) AS host, coalesce(e.args['allocator_name'], e.args['index_on_host']) AS memory_id,
         CAST(e.name AS VARCHAR) AS activity, e.start_ns, e.event_id,
         coalesce(try_cast(e.args['bytes_allocated'] AS BIGINT), 0) AS heap_bytes,
         coalesce(try_cast(e.args['bytes_reserved'] AS BIGINT), 0) AS stack_bytes,
         coalesce(try_cast(e.args['bytes_available'] AS BIGINT), 0) AS free_bytes,
         try_cast(e.args['fragmentation'] AS DOUBLE) AS fragmentation,
         try_cast(e.args['peak_bytes_in_use'] AS BIGINT) AS lifetime_peak_bytes,
         try_cast(e.args['requested_bytes'] AS BIGINT) AS requested_bytes,
         e.args['shape'] AS shape
  FROM names n JOIN events e ON n.name = e.name
  WHERE e.run_id = {{run_id}}
),
ranked AS (
  SELECT *,
         row_number() OVER (PARTITION BY host, memory_id ORDER BY heap_bytes + stack_bytes DESC, start_ns DESC, event_id DESC) AS peak_rank,
         row_number() OVER (PARTITION BY host, memory_id
                            ORDER BY CASE WHEN activity = 'MemoryAllocation' THEN requested_bytes END DESC NULLS LAST, start_ns, event_id) AS request_rank
  FROM m WHERE memory_id IS NOT NULL
),
per_allocator AS (
  SELECT host, memory_id,
         count(*) FILTER (WHERE activity = 'MemoryAllocation') AS allocations,
         count(*) FILTER (WHERE activity = 'MemoryDeallocation') AS deallocations,
         max(heap_bytes + stack_bytes) FILTER (WHERE peak_rank = 1) AS peak_in_use_bytes,
         max(heap_bytes) FILTER (WHERE peak_rank = 1) AS peak_heap_bytes,
         max(stack_bytes) FILTER (WHERE peak_rank = 1) AS peak_stack_bytes,
         max(free_bytes) FILTER (WHERE peak_rank = 1) AS peak_free_bytes,
         max(fragmentation) FILTER (WHERE peak_rank = 1) AS peak_fragmentation,
         max(start_ns) FILTER (WHERE peak_rank = 1) AS peak_time_ns,
         max(heap_bytes + stack_bytes + free_bytes) FILTER (WHERE peak_rank = 1) AS capacity_bytes,
         max(lifetime_peak_bytes) AS lifetime_peak_bytes,
         max(requested_bytes) FILTER (WHERE activity = 'MemoryAllocation') AS largest_request_bytes,
         max(shape) FILTER (WHERE request_rank = 1 AND activity = 'MemoryAllocation') AS largest_request_shape
  FROM ranked GROUP BY host, memory_id
)
SELECT host, memory_id, allocations, deallocations, peak_in_use_bytes, peak_heap_bytes, peak_stack_bytes, peak_free_bytes,
       peak_fragmentation, peak_time_ns, capacity_bytes,
       CASE WHEN capacity_bytes > 0 THEN CAST(peak_in_use_bytes AS DOUBLE) / capacity_bytes END AS peak_share,
       lifetime_peak_bytes, largest_request_bytes, largest_request_shape
FROM per_allocator
ORDER BY host, memory_id
