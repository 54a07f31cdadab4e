-- Each collective instance matched across ranks: when every rank arrived, which arrived
-- last, and by how much.
--
-- Answers: which rank holds up each collective, and how long do the others wait for it?
-- Instances and arrivals are include/collective_arrivals.sql's: Kineto collectives matched
-- by process group, name and order; XPlane collectives by module, op and order.
--
-- Parameters:
--   run_id  TEXT  run to analyse
--
-- Columns:
--   grp          process group (Kineto) or HLO module (XPlane)
--   collective   collective name, or op / kernel name
--   seq          the instance's number within its group and collective, from 0
--   rank         rank (hosts.rank)
--   host         host
--   arrival_ns   start of the rank's collective, on the run's clock
--   lateness_ns  arrival_ns - the instance's earliest arrival
--   wait_ns      the instance's latest arrival - arrival_ns: how long this rank waited for the last
--   last_rank    the rank that arrived last (ties: the lowest rank); null when all arrived at once
--   skew_ns      the instance's latest - earliest arrival
-- Rows only from: collectives
WITH a AS ({{include collective_arrivals}})
SELECT grp, collective, seq, rank, host, arrival_ns, arrival_ns - first_ns AS lateness_ns, last_ns - arrival_ns AS wait_ns, last_rank,
       last_ns - first_ns AS skew_ns
FROM a
ORDER BY grp, collective, seq, rank
