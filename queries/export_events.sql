-- Every event of a time window, with what profq knows of the ops among them: what
-- `profq export-trace` draws.
--
-- Answers: what ran on every line (device ops, XLA modules, steps lines, host threads)
-- between two instants, with each op's HLO name, module, scope, category, step, cost and
-- self time, and each collective's bytes and exposed time? Rows come in no order. Reads
-- `events` row by row: a profile analysed in memory must be opened with every event
-- (`source::open_whole`).
--
-- Parameters:
--   run_id      TEXT   run to export
--   from_ns     INT    window start (ns since the run start)
--   to_ns       INT    window end; events overlapping [from_ns, to_ns) are returned
--
-- Columns:
--   event_id          the event's row in `events`
--   host              host
--   plane             plane (XPlane name, or trace JSON process)
--   device            device of the plane; null on host planes
--   line              line (stream, thread)
--   line_id           line id (orders lines as the profile does)
--   name              event name
--   display_name      short name where the profile has one (TPU ops)
--   start_ns          start
--   dur_ns            duration
--   correlation_id    launch/kernel correlation id (the flows from host to device)
--   is_op             whether the event is a device op (`ops`)
--   op_start_ns       op: start
--   op_dur_ns         op: duration (the device-measured one where the profile has it, as
--                     `ops.dur_ns`; the collectives' exposed time is over these spans)
--   op_device         op: device (on CPU captures the ops' host plane has no device of its own)
--   hlo_op            op: HLO op
--   hlo_module        op: HLO module
--   program_id        op: XLA program id
--   scope             op: framework scope path (tf_op)
--   category          op: compute | communication | stall
--   pass              op: forward | backward | remat | optimizer | other
--   region_path       op: named-scope path
--   step              op: step
--   flops             op: flops
--   bytes_accessed    op: bytes accessed
--   self_ns           op: self time
--   collective_kind   collective: kind
--   bytes             collective: result bytes
--   is_async          collective: async
--   overlapped_ns     collective: time covered by compute
--   exposed_ns        collective: time not covered
SELECT e.event_id, e.host, e.plane, e.device, e.line, e.line_id, e.name, e.display_name,
       e.start_ns, e.dur_ns, e.correlation_id,
       o.event_id IS NOT NULL AS is_op, o.start_ns AS op_start_ns, o.dur_ns AS op_dur_ns, o.device AS op_device, o.hlo_op, o.hlo_module, o.program_id,
       o.tf_op AS scope, o.category, o.pass, o.region_path, o.step, o.flops, o.bytes_accessed, o.self_ns,
       c.kind AS collective_kind, c.bytes, c.is_async, c.overlapped_ns, c.exposed_ns
FROM events e
LEFT JOIN ops o ON o.run_id = e.run_id AND o.event_id = e.event_id
LEFT JOIN collectives c ON c.run_id = e.run_id AND c.event_id = e.event_id
WHERE e.run_id = {{run_id}} AND e.start_ns < {{to_ns}} AND e.start_ns + e.dur_ns > {{from_ns}}
