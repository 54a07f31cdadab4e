-- Semantic families over ALL ops of the run (not a truncated top-N).
--
-- Answers: how much time goes to attention, loss, optimizer, MoE, MLP, norms, collectives,
-- fusions, copies, converts? A collective (any op with a collective kind, so `psum.7`
-- counts) is `collective` wherever it was called from: a scope path that names attention or
-- a norm says where the collective was issued, not what it does. Other ops take the first
-- matching rule, tested case-insensitively on "canonical name + space + scope path":
-- attention_splash, attention_flash, loss_xent, optimizer_muon, optimizer_adam,
-- optimizer_apply, moe, attention_dense, dense_mlp, norm_gating; then fusion (opcode
-- `fusion` or a name with the word fusion, so `fusion.3` counts), copy, convert, else other.
--
-- Parameters:
--   run_id  TEXT          run to analyse
--   top_k   INT   = 50    rows to return
--
-- Columns:
--   family                 family name
--   count                  op executions
--   total_ns               summed duration
--   self_ns                summed exclusive time
--   share_of_total         self_ns / self time of all ops
--   avg_ns                 total_ns / count
--   avg_self_ns            self_ns / count
--   example_op             the family's op with the most self time (ties: name)
--   dominant_shape         most common shape in the family (ties: smallest text)
--   distinct_ops           distinct op names
--   flop_proxy_total       Σ flop_proxy(family, shape_signature(shape)) × executions: the
--                          reference's coarse work measure (not FLOPs); NULL when no op of
--                          the family has a shape giving one
-- Executions are first summed per distinct (op, scope, opcode, kind, shape); the rules then
-- run once per such group, never per execution. Ops without a name are left out.
WITH o AS (
  SELECT CAST(hlo_op AS VARCHAR) AS hlo_op, coalesce(CAST(tf_op AS VARCHAR), '') AS tf_op, coalesce(CAST(opcode AS VARCHAR), '') AS opcode,
         coalesce(CAST(collective_kind AS VARCHAR), '') AS collective_kind, CAST(shape AS VARCHAR) AS shape, n, dur_ns, self_ns
  FROM (
    SELECT hlo_op, tf_op, opcode, collective_kind, shape, sum(count) AS n, sum(dur_ns) AS dur_ns, sum(self_ns) AS self_ns
    FROM op_totals WHERE run_id = {{run_id}} AND hlo_op IS NOT NULL
    GROUP BY hlo_op, tf_op, opcode, collective_kind, shape
  ) g
),
kinds AS (
  SELECT *, lower(canonical_name(hlo_op) || ' ' || tf_op) AS text, lower(hlo_op) AS lname
  FROM o
),
f AS (
  SELECT hlo_op, shape, n, dur_ns, self_ns,
    CASE
      WHEN collective_kind <> '' THEN 'collective'
      WHEN regexp_like(text, 'splash_mha|splash_attention') THEN 'attention_splash'
      WHEN regexp_like(text, 'flash_attention|fused_attention|fa4_cute') THEN 'attention_flash'
      WHEN regexp_like(text, 'linear_softmax_cross_entropy_loss|softmax_cross_entropy|xent') THEN 'loss_xent'
      WHEN regexp_like(text, 'muon|newton_schulz|zeropower|orthogonalize') THEN 'optimizer_muon'
      WHEN regexp_like(text, 'adamh|adam|update_first_moment|update_second_moment') THEN 'optimizer_adam'
      WHEN regexp_like(text, 'optimizer_update|apply_updates|apply_qb_betas') THEN 'optimizer_apply'
      WHEN regexp_like(text, '(^|[^a-z])(moe|ragged|experts?)([^a-z]|$)') THEN 'moe'
      WHEN regexp_like(text, 'causalselfattention|apply_rotary_embedding|(^|/)attention(/|$)') THEN 'attention_dense'
      WHEN regexp_like(text, 'densemlp|(^|/)mlp(/|$)') THEN 'dense_mlp'
      WHEN regexp_like(text, 'rmsnorm|gatednorm|layernorm|layer_norm|jit\(silu\)|(^|/)ln[0-9_]*(/|$)') THEN 'norm_gating'
      WHEN opcode = 'fusion' OR regexp_like(lname, '(^|[^a-z])fusion([^a-z]|$)') THEN 'fusion'
      WHEN regexp_like(lname, '^%?copy([.-]|$)') THEN 'copy'
      WHEN regexp_like(text, 'convert_element_type') OR opcode = 'convert' THEN 'convert'
      ELSE 'other'
    END AS family
  FROM kinds
),
families AS (
  SELECT family, sum(n) AS count, sum(dur_ns) AS total_ns, sum(self_ns) AS self_ns,
         top_value(hlo_op, self_ns) AS example_op, top_value(shape, n) AS dominant_shape, count(DISTINCT hlo_op) AS distinct_ops,
         sum(flop_proxy(family, shape_signature(shape)) * n) AS flop_proxy_total
  FROM f GROUP BY family
)
SELECT family, count, total_ns, self_ns,
       CASE WHEN sum(self_ns) OVER () > 0 THEN CAST(self_ns AS DOUBLE) / sum(self_ns) OVER () ELSE 0.0 END AS share_of_total,
       CAST(total_ns AS DOUBLE) / count AS avg_ns, CAST(self_ns AS DOUBLE) / count AS avg_self_ns,
       example_op, dominant_shape, distinct_ops, flop_proxy_total
FROM families
ORDER BY self_ns DESC, family
LIMIT {{top_k}}
