-- HTA's idle-time breakdown per rank and stream: why each stream waited between kernels,
-- by HTA 0.5.0's definitions (get_idle_time_breakdown).
--
-- Answers: is a stream idle because the host did not launch work in time (host_wait), because
-- of the launch overhead between back-to-back kernels (kernel_wait), or for another reason
-- (other: a wait on an event, a synchronisation)?
-- On each stream, in order of start, the idle time before a kernel is its start minus the
-- previous kernel's end. It is host_wait when the kernel's launch started after that end;
-- else kernel_wait when it is shorter than kernel_wait_ns; else other. The stream's first
-- kernel has no idle time and counts as other, as in HTA. Kernels, copies and sets only
-- (Kineto categories kernel, gpu_memcpy, gpu_memset and their 2021 names; MTIA's
-- mtia_ccp_events), in include/hta_kernels.sql's window and µs grid.
-- Reads every event: an INPUT is opened with all its events for it (source::open_whole).
--
-- Parameters:
--   run_id             TEXT            run to analyse
--   include_last_step  INT    = 0      1 keeps the last ProfilerStep (HTA's include_last_profiler_step)
--   kernel_wait_ns     INT    = 30000  gaps shorter than this are kernel_wait (HTA's consecutive_kernel_delay, 30 µs)
--
-- Columns:
--   rank           rank (hosts.rank)
--   stream         stream number
--   idle_category  host_wait, kernel_wait or other (a category no kernel of the stream fell in has no row)
--   idle_ns        idle time of the category
--   idle_share     idle_ns / the stream's idle time (null when the stream never idled)
-- Rows only from: events
WITH k AS ({{include hta_kernels}}),
ordered AS (
  SELECT rank, stream, start_us, launch_us,
         lag(end_us) OVER (PARTITION BY rank, stream ORDER BY start_us, end_us) AS prev_end_us
  FROM k
  WHERE category IN ('kernel', 'Kernel', 'gpu_memset', 'Memset', 'gpu_memcpy', 'Memcpy', 'mtia_ccp_events')
),
gaps AS (
  SELECT rank, stream, start_us - prev_end_us AS idle_us,
         CASE WHEN launch_us > prev_end_us THEN 'host_wait'
              WHEN (start_us - prev_end_us) * 1000 < {{kernel_wait_ns}} THEN 'kernel_wait'
              ELSE 'other' END AS idle_category
  FROM ordered
),
per AS (SELECT rank, stream, idle_category, coalesce(sum(idle_us), 0) AS idle_us FROM gaps GROUP BY rank, stream, idle_category)
SELECT rank, stream, idle_category, idle_us * 1000 AS idle_ns,
       CAST(idle_us AS DOUBLE) / nullif(sum(idle_us) OVER (PARTITION BY rank, stream), 0) AS idle_share
FROM per
ORDER BY rank, stream, idle_category
