"""Kineto (PyTorch profiler) traces of a small transformer training loop on one CUDA GPU.

    python3 torch_trace_gen.py OUT_DIR

Writes OUT_DIR/torch_tlm_eager_mem.pt.trace.json.gz (eager; record_shapes, profile_memory,
with_stack) and OUT_DIR/torch_tlm_cudagraphs.pt.trace.json.gz (torch.compile with
mode="reduce-overhead": the step replays as CUDA graphs). 6 steps each, every step inside
the profiler's schedule (wait 0, warmup 1, active 5), so steps are `ProfilerStep#1..5`.
"""
import os
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
dev = "cuda"
D, H, T, B, V, L = 256, 4, 128, 16, 1024, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        with record_function("attention"):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
        with record_function("mlp"):
            x = x + self.mlp(self.ln2(x))
        return x


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.head = nn.Linear(D, V)

    def forward(self, tokens):
        x = self.embed(tokens)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def run(name, compiled, **profile_args):
    model = LM().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fwd = torch.compile(model, mode="reduce-overhead") if compiled else model
    data = torch.randint(0, V, (8, B, T), device=dev)

    def step(i):
        tokens = data[i % 8]
        with record_function("forward"):
            logits = fwd(tokens)
        with record_function("loss"):
            loss = nn.functional.cross_entropy(logits.reshape(-1, V).float(), tokens.reshape(-1))
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        return loss

    for i in range(5):  # compile / autotune / graph capture outside the trace
        step(i)
    torch.cuda.synchronize()
    path = os.path.join(out, f"{name}.pt.trace.json.gz")
    # Exported when the active steps end, as tensorboard_trace_handler does.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=schedule(wait=0, warmup=1, active=5),
                 on_trace_ready=lambda p: p.export_chrome_trace(path), record_shapes=True, **profile_args) as prof:
        for i in range(6):
            step(i)
            torch.cuda.synchronize()
            prof.step()
    print(path, os.path.getsize(path))


run("torch_tlm_eager_mem", False, profile_memory=True, with_stack=True)
run("torch_tlm_cudagraphs", True)
