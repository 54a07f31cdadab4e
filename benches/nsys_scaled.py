#!/usr/bin/env python3
"""A larger Nsight Systems export made from a real one: its timeline repeated FACTOR times,
back to back, in the same schema (every event table's rows copied with their times shifted
by the capture's span and their correlation ids kept apart). For benchmarks of exports
larger than the shared ones; the copy keeps the original's mix of kernels, launches and NVTX.

    benches/nsys_scaled.py EXPORT.sqlite FACTOR OUT.sqlite
"""
import shutil
import sqlite3
import sys

EVENT_TABLES = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",
]


def main(src, factor, out):
    shutil.copyfile(src, out)
    db = sqlite3.connect(out)
    present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables = [t for t in EVENT_TABLES if t in present]
    lo, hi = None, None
    for t in tables:
        a, b = db.execute(f'SELECT min(start), max(coalesce("end", start)) FROM {t}').fetchone()
        if a is not None:
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    span = hi - lo + 1_000_000
    columns = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})") if not (r[5] and r[1] == "id")] for t in tables}
    # One offset for every table, so that a launch and its kernel stay linked.
    max_corr = max(
        (db.execute(f"SELECT coalesce(max(correlationId), 0) FROM {t}").fetchone()[0] for t in tables if "correlationId" in columns[t]),
        default=0,
    )
    for t in tables:
        cols = columns[t]
        for k in range(1, factor):
            shifted = []
            for c in cols:
                if c in ("start", "end"):
                    shifted.append(f'"{c}" + {k * span}')
                elif c == "correlationId":
                    shifted.append(f"correlationId + {k * (max_corr + 1)}")
                else:
                    shifted.append(f'"{c}"')
            names = ", ".join(f'"{c}"' for c in cols)
            db.execute(f"INSERT INTO {t} ({names}) SELECT {', '.join(shifted)} FROM {t} WHERE start < {lo + span}")
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
