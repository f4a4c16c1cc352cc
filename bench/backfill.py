"""Time a backfill: every day of a multi-day landing area reconciled, two ways.

    uv run python bench/backfill.py --nodes 100 --scale 4 --endpoints 2 --days 30 [--validation]

* `daily`: what `flows/backfill.py` does without Prefect around it — one `recon.pipeline.run`
  per UTC day (`--from D --to D`), oldest first, on one warehouse; the first run lands every
  file, later runs land nothing and read only their day's scope.
* `batch`: what `flows/backfill.py` does — one `recon.pipeline.run` per
  batch of `--batch-days` consecutive days (`--from FIRST --to LAST`), with `--validation` one
  gate per batch; `daily` is the same with batches of one day (the flow's `batch_days=1`).
* `once`: one `recon.pipeline.run` without a window: every day's marts in one build.

Each way runs in a fresh process on a fresh DuckDB file; prints seconds (and per day) and peak
RSS, writes bench/results/backfill-<key>.json. The input is the harness's cached simulation
(`bench/run` parameters; generated once).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _harness():
    spec = importlib.util.spec_from_file_location("bench_harness", HERE / "harness.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CHILD = r"""
import json, sys, time
from datetime import date, timedelta
from recon.pipeline import run
spec = json.loads(sys.argv[1])
def hwm():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
t0 = time.perf_counter()
per_day = []
if spec['mode'] == 'once':
    run(spec['input'], spec['db'], validate=spec['validation'])
else:
    d, last = date.fromisoformat(spec['first']), date.fromisoformat(spec['last'])
    step = spec['batch_days'] if spec['mode'] == 'batch' else 1
    while d <= last:
        e = min(d + timedelta(days=step - 1), last)
        t = time.perf_counter()
        run(spec['input'], spec['db'], day_from=d, day_to=e, validate=spec['validation'])
        per_day.append(time.perf_counter() - t)
        print(f"  {d}..{e}: {per_day[-1]:.2f} s", file=sys.stderr, flush=True)
        d = e + timedelta(days=1)
print(json.dumps({'seconds': time.perf_counter() - t0, 'per_day': per_day, 'peak_rss_mib': hwm()}))
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--scale", type=float, default=4)
    ap.add_argument("--endpoints", type=int, default=2)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--validation", action="store_true", help="validate after every run "
                    "(as the backfill flow does)")
    ap.add_argument("--modes", default="daily,batch,once", help="daily, batch, once")
    ap.add_argument("--batch-days", type=int, default=7, help="days per batch (mode batch)")
    a = ap.parse_args(argv)
    h = _harness()
    sim = h.ensure_sim(a)
    first = h.START_DAY
    last = first + __import__("datetime").timedelta(days=a.days - 1)
    out = {"key": h.scale_key(a), "input": h.dir_stats(sim / "input"), "machine": h.machine_note(),
           "validation": a.validation, "sha": h.git_sha()}
    for mode in a.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="backfill-", dir=h.CACHE) as tmp:
            spec = {"mode": mode, "input": str(sim / "input"), "db": str(Path(tmp) / "w.duckdb"),
                    "first": first.isoformat(), "last": last.isoformat(),
                    "validation": a.validation, "batch_days": a.batch_days}
            print(f"{mode}: {a.days} days ...", file=sys.stderr, flush=True)
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], cwd=HERE.parent,
                               env=h.child_env(), check=True, capture_output=True, text=True)
            sys.stderr.write(r.stderr[-4000:] if mode != "once" else "")
            res = json.loads(r.stdout.strip().splitlines()[-1])
            res["process_wall"] = time.perf_counter() - t
            out[mode] = res
            pd = res["per_day"]
            unit = "day" if mode == "daily" else "batch"
            extra = (f", per {unit} median {sorted(pd)[len(pd) // 2]:.2f} s (first {pd[0]:.2f} s "
                     f"lands everything)") if pd else ""
            name = f"batch of {a.batch_days}" if mode == "batch" else mode
            print(f"{name}: {res['seconds']:.1f} s{extra}, peak RSS {res['peak_rss_mib']:.0f} MiB")
    h.RESULTS.mkdir(parents=True, exist_ok=True)
    out["batch_days"] = a.batch_days
    path = h.RESULTS / f"backfill-{out['key']}{'-val' if a.validation else ''}-{a.modes.replace(',', '_')}.json"
    path.write_text(json.dumps(out, indent=1, default=str))
    print(f"written: {path}")


if __name__ == "__main__":
    main()
