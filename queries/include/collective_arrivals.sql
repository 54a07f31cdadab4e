-- Each collective instance matched across the ranks of a run, with every rank's arrival.
--
-- An instance is one collective call that every rank of its group makes. Kineto (PyTorch):
-- the n-th call of a collective (its `Collective name` arg, else its kernel's name) within a
-- process group (`Process Group Name`); NCCL requires every rank of a group to issue its
-- collectives in one order. XPlane: the n-th run of an HLO collective op within its module.
-- A rank's arrival is the start of its collective kernel on its device (on a rank with
-- several devices, the latest). An instance counts when it has two or more ranks and every
-- rank of its group ran it: the group's size as the trace states it (`Group size`), else
-- every host of the run. Arrivals are on the run's clock, on which ranks' files line up.
--
-- Parameters (those of the query that includes it):
--   run_id  TEXT  run to analyse
--
-- Columns:
--   grp         process group (Kineto) or HLO module (XPlane); '' when neither is known
--   collective  collective name, or op / kernel name
--   seq         the instance's number within its group and collective, from 0
--   rank        rank (hosts.rank)
--   host        host
--   arrival_ns  start of the rank's collective
--   first_ns    the instance's earliest arrival
--   last_ns     the instance's latest arrival
--   last_rank   the rank that arrived last (ties: the lowest rank); null when all arrived at once
WITH c AS (
  SELECT h.rank, CAST(c.host AS VARCHAR) AS host, CAST(c.device AS VARCHAR) AS device, c.start_ns,
         coalesce(e.args['Process Group Name'], CAST(c.hlo_module AS VARCHAR), '') AS grp,
         coalesce(e.args['Collective name'], CAST(c.hlo_op AS VARCHAR)) AS collective,
         try_cast(e.args['Group size'] AS BIGINT) AS group_size
  FROM collectives c
  JOIN hosts h ON h.run_id = c.run_id AND h.host = c.host
  -- The args of collective kernels (Kineto); an XPlane collective has none to join.
  LEFT JOIN (SELECT event_id, args FROM events WHERE run_id = {{run_id}} AND is_collective_kernel(CAST(name AS VARCHAR))) e ON e.event_id = c.event_id
  WHERE c.run_id = {{run_id}}
),
numbered AS (
  SELECT rank, host, device, start_ns, grp, collective, group_size,
         row_number() OVER (PARTITION BY rank, device, grp, collective ORDER BY start_ns) - 1 AS seq
  FROM c
),
arrivals AS (
  SELECT grp, collective, seq, rank, host, max(start_ns) AS arrival_ns, max(group_size) AS group_size
  FROM numbered GROUP BY grp, collective, seq, rank, host
),
world AS (SELECT count(*) AS hosts FROM hosts WHERE run_id = {{run_id}}),
instances AS (
  SELECT a.grp, a.collective, a.seq, min(a.arrival_ns) AS first_ns, max(a.arrival_ns) AS last_ns
  FROM arrivals a CROSS JOIN world w
  GROUP BY a.grp, a.collective, a.seq, w.hosts
  HAVING count(*) >= 2 AND count(*) = coalesce(max(a.group_size), w.hosts)
),
last AS (
  SELECT a.grp, a.collective, a.seq, min(a.rank) AS last_rank
  FROM arrivals a JOIN instances i ON i.grp = a.grp AND i.collective = a.collective AND i.seq = a.seq AND a.arrival_ns = i.last_ns
  WHERE i.last_ns > i.first_ns
  GROUP BY a.grp, a.collective, a.seq
)
SELECT a.grp, a.collective, a.seq, a.rank, a.host, a.arrival_ns, i.first_ns, i.last_ns, l.last_rank
FROM arrivals a
JOIN instances i ON i.grp = a.grp AND i.collective = a.collective AND i.seq = a.seq
LEFT JOIN last l ON l.grp = a.grp AND l.collective = a.collective AND l.seq = a.seq
