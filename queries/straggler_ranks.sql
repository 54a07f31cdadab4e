-- Which rank is the straggler: per rank, how often it arrived last at a collective and how
-- late it arrived in all.
--
-- Answers: does one rank hold up the collectives of a multi-rank job (a slow GPU, a noisy
-- host, an imbalanced input), or is lateness spread evenly? A rank's lateness at an
-- instance is its arrival (the start of its collective kernel) minus the instance's
-- earliest arrival. Instances are include/collective_arrivals.sql's: Kineto collectives
-- matched by process group, name and order, XPlane collectives by module, op and order;
-- one counts when every rank of its group ran it.
--
-- Parameters:
--   run_id  TEXT  run to analyse
--
-- Columns:
--   rank         rank (hosts.rank)
--   host         host
--   instances    collective instances the rank took part in
--   times_last   instances at which it arrived last (ties: the lowest rank; not when all arrived at once)
--   lateness_ns  summed lateness over those instances
-- Rows only from: collectives
WITH a AS ({{include collective_arrivals}})
SELECT rank, host, count(*) AS instances, sum(CASE WHEN last_rank = rank THEN 1 ELSE 0 END) AS times_last,
       sum(arrival_ns - first_ns) AS lateness_ns
FROM a
GROUP BY rank, host
ORDER BY lateness_ns DESC, times_last DESC, rank
