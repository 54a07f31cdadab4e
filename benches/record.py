"""Appends a benchmark script's measurements to its results CSV (benches/results/README.md).

    record.py RESULTS COMMIT INPUT INPUT_BYTES FILES < MEASUREMENTS

MEASUREMENTS: one line per measurement, `group tool wall_s cpu_s peak_rss_kb round [input]`;
wall_s `timeout` or `failed` records that status with no figures; a 7th word names the
input of that line instead of INPUT.
"""
import csv
import datetime
import os
import sys

COLUMNS = ["date", "commit", "input", "input_bytes", "files", "cores", "round", "group", "tool", "status", "wall_s", "cpu_s", "peak_rss_kb"]


def main():
    results, commit, default_input, nbytes, files = sys.argv[1:6]
    cores = open("/proc/cpuinfo").read().count("processor")
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    new = not os.path.exists(results)
    os.makedirs(os.path.dirname(results) or ".", exist_ok=True)
    with open(results, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(COLUMNS)
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            group, tool, wall, cpu, rss, rnd = words[:6]
            name = " ".join(words[6:]) or default_input
            ok = wall not in ("timeout", "failed")
            w.writerow([day, commit, name, nbytes, files, cores, rnd, group, tool, "ok" if ok else wall, wall if ok else "", cpu if ok else "", rss if ok else ""])


main()
