"""Scanned, rematerialised transformer layers (the MaxText / Levanter layout) on one GPU.

    python3 scan_remat_gen.py --out OUT_DIR

Uses the shared generators' `common.capture` (profile layout, capture.json); run it from a
folder holding `common.py` (../shared/fixtures/gen). The layer stack is one `jax.lax.scan`
over stacked weights, each layer under `jax.checkpoint` (remat) with named scopes
layer/{attention,mlp}; 10 steps, each in StepTraceAnnotation("train", step_num=i).
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax

import common

args = common.parse_args("scan_remat")
out = args.out
L, D, H, T, B, V = 4, 256, 4, 128, 8, 1024
HD = D // H


def init(key):
    k = jax.random.split(key, 6)
    n = lambda kk, shape, fan_in: jax.random.normal(kk, shape) / np.sqrt(fan_in)
    return {
        "embed": n(k[0], (V, D), 1.0) * 0.02,
        "head": n(k[1], (D, V), D),
        "layers": {"wqkv": n(k[2], (L, D, 3 * D), D), "wo": n(k[3], (L, D, D), D),
                   "w1": n(k[4], (L, D, 4 * D), D), "w2": n(k[5], (L, 4 * D, D), 4 * D)},
    }


def norm(x):
    return (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)


def layer(x, w):
    with jax.named_scope("layer"):
        with jax.named_scope("attention"):
            q, k, v = jnp.split(norm(x) @ w["wqkv"], 3, axis=-1)
            q, k, v = (t.reshape(B, T, H, HD).transpose(0, 2, 1, 3) for t in (q, k, v))
            s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(HD)
            s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -1e9)
            a = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)
            x = x + a.transpose(0, 2, 1, 3).reshape(B, T, D) @ w["wo"]
        with jax.named_scope("mlp"):
            x = x + jax.nn.gelu(norm(x) @ w["w1"]) @ w["w2"]
    return x, None


def loss_fn(p, tokens):
    with jax.named_scope("forward"):
        x = p["embed"][tokens]
        x, _ = jax.lax.scan(jax.checkpoint(layer), x, p["layers"])
        logits = norm(x) @ p["head"]
    with jax.named_scope("loss"):
        return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()


opt = optax.adamw(1e-3)


@jax.jit
def train_step(p, s, tokens):
    loss, g = jax.value_and_grad(loss_fn)(p, tokens)
    with jax.named_scope("optimizer"):
        u, s = opt.update(g, s, p)
        p = optax.apply_updates(p, u)
    return p, s, loss


params = init(jax.random.PRNGKey(0))
state = opt.init(params)
data = jax.random.randint(jax.random.PRNGKey(1), (8, B, T), 0, V)
for i in range(3):
    params, state, loss = common.block(train_step(params, state, data[i]))
with common.capture(out, meta={"workload": "scan_remat", "layers": L, "d_model": D, "seq": T, "batch": B, "steps": args.steps}):
    for i in range(args.steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            params, state, loss = common.block(train_step(params, state, data[i % 8]))
print("final loss", float(loss))
