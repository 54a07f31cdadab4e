"""A bf16 transformer whose attention is cuDNN's fused kernel and whose MLP bias-GELU is a Pallas kernel.

    python3 fused_kernels_gen.py --out OUT_DIR [--attention cudnn|xla] [--interpret] [--scan]

Uses the shared generators' `common.capture` (profile layout, capture.json); run it from a
folder holding `common.py` (../shared/fixtures/gen). What real JAX training on NVIDIA GPUs
runs besides XLA's own fusions: `jax.nn.dot_product_attention(implementation="cudnn")` (a
cuDNN flash-attention custom call, forward and backward) and a `pl.pallas_call` (a Triton
kernel; `custom_vjp`, its backward in jnp), in bf16 with fp32 master weights. Named scopes
forward/layer/{attention,mlp}, loss, optimizer; 10 steps, each in
StepTraceAnnotation("train", step_num=i). If cuDNN attention or the Pallas kernel cannot be
built on the machine, the generator falls back (XLA attention, jnp GELU) and capture.json
says what ran. `--scan` stacks the layers and runs them in one `jax.lax.scan`, each under
`jax.checkpoint` (the MaxText / Levanter layout): the library kernels then run in loop bodies.
`--attention xla --interpret` runs it on a CPU.
"""
import functools
import traceback

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import pallas as pl

import common

args = common.parse_args("fused_kernels", lambda p: (
    p.add_argument("--attention", choices=["cudnn", "xla"], default="cudnn"),
    p.add_argument("--interpret", action="store_true", help="run the Pallas kernel interpreted"),
    p.add_argument("--scan", action="store_true", help="scan the layers, each rematerialised"),
    p.add_argument("--layers", type=int, default=2)))
out = args.out
L, D, H, T, B, V = args.layers, 512, 8, 256, 8, 2048
HD = D // H
ROWS = 128  # rows of a Pallas block; B*T and 4*D are multiples of it


def bias_gelu_kernel(x_ref, b_ref, o_ref):
    x = x_ref[...].astype(jnp.float32) + b_ref[...].astype(jnp.float32)
    o_ref[...] = jax.nn.gelu(x).astype(o_ref.dtype)


def pallas_bias_gelu(x, b):
    n, f = x.shape
    return pl.pallas_call(
        bias_gelu_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(n // ROWS,),
        in_specs=[pl.BlockSpec((ROWS, f), lambda i: (i, 0)), pl.BlockSpec((f,), lambda i: (0,))],
        out_specs=pl.BlockSpec((ROWS, f), lambda i: (i, 0)),
        interpret=args.interpret,
        name="bias_gelu",
    )(x, b)


def jnp_bias_gelu(x, b):
    return jax.nn.gelu(x + b)


@jax.custom_vjp
def bias_gelu(x, b):
    return BIAS_GELU(x, b)


def _bias_gelu_fwd(x, b):
    return BIAS_GELU(x, b), (x, b)


def _bias_gelu_bwd(res, g):
    x, b = res
    _, vjp = jax.vjp(jnp_bias_gelu, x, b)
    return vjp(g)


bias_gelu.defvjp(_bias_gelu_fwd, _bias_gelu_bwd)


def attend_cudnn(q, k, v):
    return jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="cudnn")


def attend_xla(q, k, v):
    return jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")


def works(fn, *xs):
    """True when fn's value and gradient compile and run here; prints why not."""
    try:
        jax.block_until_ready(jax.jit(jax.grad(lambda *a: fn(*a).astype(jnp.float32).sum(),
                                               argnums=tuple(range(len(xs)))))(*xs))
        return True
    except Exception:
        traceback.print_exc()
        return False


qkv = jnp.ones((B, T, H, HD), jnp.bfloat16)
ATTEND = attend_cudnn if args.attention == "cudnn" and works(attend_cudnn, qkv, qkv, qkv) else attend_xla
BIAS_GELU = pallas_bias_gelu
if not works(bias_gelu, jnp.ones((B * T, 4 * D), jnp.bfloat16), jnp.zeros((4 * D,), jnp.bfloat16)):
    BIAS_GELU = jnp_bias_gelu
ran = {"attention": ATTEND.__name__, "bias_gelu": BIAS_GELU.__name__}
print("ran", ran)


def init(key):
    k = jax.random.split(key, 2 + 4 * L)
    n = lambda kk, shape, fan_in: jax.random.normal(kk, shape) / np.sqrt(fan_in)
    layers = [{"wqkv": n(k[2 + 4 * i], (D, 3 * D), D), "wo": n(k[3 + 4 * i], (D, D), D),
               "w1": n(k[4 + 4 * i], (D, 4 * D), D), "b1": jnp.zeros((4 * D,)),
               "w2": n(k[5 + 4 * i], (4 * D, D), 4 * D)} for i in range(L)]
    if args.scan:
        layers = jax.tree.map(lambda *ws: jnp.stack(ws), *layers)
    return {"embed": n(k[0], (V, D), 1.0) * 0.02, "head": n(k[1], (D, V), D), "layers": layers}


def norm(x):
    x32 = x.astype(jnp.float32)
    y = (x32 - x32.mean(-1, keepdims=True)) * jax.lax.rsqrt(x32.var(-1, keepdims=True) + 1e-5)
    return y.astype(jnp.bfloat16)


def layer(x, w):
    w = jax.tree.map(lambda a: a.astype(jnp.bfloat16), w)
    with jax.named_scope("layer"):
        with jax.named_scope("attention"):
            q, k, v = jnp.split(norm(x) @ w["wqkv"], 3, axis=-1)
            q, k, v = (t.reshape(B, T, H, HD) for t in (q, k, v))
            x = x + ATTEND(q, k, v).reshape(B, T, D) @ w["wo"]
        with jax.named_scope("mlp"):
            h = bias_gelu((norm(x) @ w["w1"]).reshape(B * T, 4 * D), w["b1"])
            x = x + h.reshape(B, T, 4 * D) @ w["w2"]
    return x


def loss_fn(p, tokens):
    with jax.named_scope("forward"):
        x = p["embed"][tokens].astype(jnp.bfloat16)
        if args.scan:
            x, _ = jax.lax.scan(jax.checkpoint(lambda x, w: (layer(x, w), None)), x, p["layers"])
        else:
            for w in p["layers"]:
                x = layer(x, w)
        logits = (norm(x) @ p["head"].astype(jnp.bfloat16)).astype(jnp.float32)
    with jax.named_scope("loss"):
        return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()


opt = optax.adamw(1e-3)


@functools.partial(jax.jit, donate_argnums=(0, 1))
def train_step(p, s, tokens):
    loss, g = jax.value_and_grad(loss_fn)(p, tokens)
    with jax.named_scope("optimizer"):
        u, s = opt.update(g, s, p)
        p = optax.apply_updates(p, u)
    return p, s, loss


params = init(jax.random.PRNGKey(0))
state = opt.init(params)
data = jax.random.randint(jax.random.PRNGKey(1), (8, B, T), 0, V)
for i in range(args.warmup):
    params, state, loss = common.block(train_step(params, state, data[i % 8]))
meta = {"workload": "fused_kernels", "scan": args.scan, "layers": L, "d_model": D, "heads": H, "seq": T, "batch": B,
        "vocab": V, "dtype": "bfloat16", "steps": args.steps, "ran": ran}
with common.capture(out, tracer=args.tracer, meta=meta):
    for i in range(args.steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            params, state, loss = common.block(train_step(params, state, data[i % 8]))
print("final loss", float(loss))
