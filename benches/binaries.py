#!/usr/bin/env python3
"""Several builds of profq on one XPlane, in interleaved rounds.

For each of RUNS rounds every binary ingests the file into a fresh store and summarizes it,
one binary after the other (the order reversed every other round), so a slow or fast spell
of the VM falls on all of them alike. Prints each binary's size and the medians of wall time
(ms resolution), CPU time and peak RSS, and the ratio of its wall times to the first
binary's. For release-profile levers (strip, LTO, codegen units, opt-level): build each
variant into a target dir of its own, copy its binary out, and pass the copies here.

    benches/binaries.py XPLANE RUNS BINARY...
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd):
    """Runs cmd; returns (wall s, CPU s, peak RSS MiB) of that one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()  # before the wait: a full pipe would block the child
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err.decode()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    xplane, runs, bins = os.path.realpath(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    steps = ("ingest", "summarize")
    got = {(b, s): [] for b in bins for s in steps}
    scratch = tempfile.mkdtemp()
    try:
        logdir = os.path.join(scratch, "log")
        os.makedirs(os.path.join(logdir, "plugins/profile/session"))
        shutil.copy(xplane, os.path.join(logdir, "plugins/profile/session"))
        for round_no in range(runs):
            for b in bins if round_no % 2 == 0 else bins[::-1]:
                store = os.path.join(scratch, "store")
                shutil.rmtree(store, ignore_errors=True)
                got[(b, "ingest")].append(run([b, "ingest", logdir, "--store", store]))
                got[(b, "summarize")].append(run([b, "summarize", logdir]))
    finally:
        shutil.rmtree(scratch)

    def med(b, s, k):
        return statistics.median(m[k] for m in got[(b, s)])

    print(f"{'binary':28} {'bytes':>11} {'ingest_s':>8} {'summ_s':>7} {'ingest_cpu':>10} "
          f"{'summ_cpu':>8} {'ingest_MiB':>10} {'summ_MiB':>8}  wall / first (ingest, summarize)")
    for b in bins:
        print(f"{os.path.basename(b)[:28]:28} {os.path.getsize(b):>11} "
              f"{med(b, 'ingest', 0):8.3f} {med(b, 'summarize', 0):7.3f} "
              f"{med(b, 'ingest', 1):10.3f} {med(b, 'summarize', 1):8.3f} "
              f"{med(b, 'ingest', 2):10.0f} {med(b, 'summarize', 2):8.0f}  "
              f"{med(b, 'ingest', 0) / med(bins[0], 'ingest', 0):.3f} "
              f"{med(b, 'summarize', 0) / med(bins[0], 'summarize', 0):.3f}")


if __name__ == "__main__":
    main()
