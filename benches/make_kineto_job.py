#!/usr/bin/env python3
"""Writes a PyTorch job's per-rank Kineto traces (rank<N>.pt.trace.json.gz) for benchmarks.

usage: make_kineto_job.py OUT_DIR [--ranks 8] [--steps 30] [--kernels 400] [--late-rank 3]

Each rank runs STEPS ProfilerSteps; a step launches KERNELS compute kernels (a cpu_op around a
cudaLaunchKernel, the kernel on `stream 7`, linked by `correlation`) and, every 50 kernels, an
NCCL all-reduce on `stream 20` with its `Collective name` / `Process Group Name` /
`Group size` args. LATE_RANK's all-reduces start 30 µs late. Timestamps are ns-resolution
µs on Kineto's clock (`baseTimeNanoseconds` + ts), as PyTorch 2 writes them.
"""
import argparse
import gzip
import json
import os
import random


def rank_trace(rank, a):
    rnd = random.Random(rank)
    base_ns = 1_700_000_000_000_000_000
    pid, tid = 1000 + rank, 1000 + rank
    ev = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 20, "args": {"name": "stream 20 "}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": f"thread {tid} (python3)"}},
    ]
    t = 1_000_000.0 + rank * 0.013
    corr = 0
    for step in range(a.steps):
        step_start = t
        body = []
        gpu_t = t + 50.0
        for k in range(a.kernels):
            corr += 1
            dur = rnd.uniform(2.0, 40.0)
            body.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": tid, "ts": round(t + 1.0, 3), "dur": 9.5, "args": {"External id": corr}})
            body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": round(t + 3.0, 3), "dur": 4.2,
                         "args": {"correlation": corr, "cbid": 211}})
            gpu_t = max(gpu_t, t + 8.0) + rnd.uniform(0.5, 6.0)
            body.append({"ph": "X", "cat": "kernel", "name": f"void gemm_kernel_{k % 37}<float>(float*)", "pid": 0, "tid": 7, "ts": round(gpu_t, 3),
                         "dur": round(dur, 3), "args": {"correlation": corr, "stream": 7, "device": 0, "External id": corr}})
            gpu_t += dur
            t += 12.0
            if k % 50 == 49:
                corr += 1
                late = 30.0 if rank == a.late_rank else 0.0
                at = round(step_start + 600.0 * (k // 50 + 1) + late, 3)
                body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": round(t, 3), "dur": 4.0,
                             "args": {"correlation": corr, "cbid": 211}})
                body.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                             "pid": 0, "tid": 20, "ts": max(at, round(t + 6.0, 3)), "dur": 150.0,
                             "args": {"correlation": corr, "stream": 20, "device": 0, "Collective name": "allreduce",
                                      "Process Group Name": "0", "Group size": a.ranks, "In msg nelems": 1 << 20, "dtype": "Float"}})
        t = max(t, gpu_t) + 20.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid, "tid": tid, "ts": round(step_start, 3),
                   "dur": round(t - step_start - 1.0, 3), "args": {}})
        ev.extend(body)
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": a.ranks},
            "traceEvents": ev, "displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--kernels", type=int, default=400)
    ap.add_argument("--late-rank", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for rank in range(a.ranks):
        with gzip.open(os.path.join(a.out, f"rank{rank}.pt.trace.json.gz"), "wt") as f:
            json.dump(rank_trace(rank, a), f)


if __name__ == "__main__":
    main()
