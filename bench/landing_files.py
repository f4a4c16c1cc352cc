"""Time the landing of single files, each in a fresh warehouse: wall, CPU and CPU/wall.

    uv run python bench/landing_files.py DIR/file.jsonl [more files]
    BENCH_ROOT=/other/checkout uv run python bench/landing_files.py …   # that tree's recon

A/B of a landing change: run it alternately for two checkouts on the same files (the whole-day
figures of bench/run are noisier than one file's). Files that the
DuckDB paths (big JSON Lines, big Kubernetes Lists) leave to the Python reader are timed parsing
only: load_folder inserts their rows afterwards.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("BENCH_ROOT", str(Path(__file__).resolve().parent.parent)))

from recon.db import connect
from recon.ingest.jsonl import land_jsonl
from recon.ingest.lists import land_list
from recon.ingest.reader import read_file


def main(files: list[str]) -> None:
    for f in files:
        p = Path(f)
        with tempfile.TemporaryDirectory() as tmp:
            con = connect(Path(tmp) / "w.duckdb")
            con.execute("set force_compression = 'zstd'")  # as load_folder lands
            con.execute("begin")
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            res = land_jsonl(con, p, str(p)) or land_list(con, p, str(p)) or read_file(p, str(p))
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            con.execute("commit")
            con.close()
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        print(f"{p.name}: wall {wall:.2f} s  cpu {cpu:.2f} s  cpu/wall {cpu / wall:.2f}  "
              f"records {res.records_in}  peak {r1.ru_maxrss // 1024} MiB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
