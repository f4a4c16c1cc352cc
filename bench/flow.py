"""Time the daily run as users run it: the Prefect flow `daily-reconciliation`, task by task.

    uv run python bench/flow.py --nodes 500 --scale 27 --endpoints 2500 --runs 3   # the target day
    uv run python bench/flow.py                                      # 100 nodes, scale 4, 1 day

`bench/run` times the library calls the flow's tasks make (`recon.pipeline.run`, then the
gate); this runs the flow itself on the harness's cached simulation (its first day), each run in
a fresh process on a fresh DuckDB file, with the same `sync` and page-cache warming as
`bench/run`. In the child: a temporary Prefect API (its own PREFECT_HOME) is started by a trivial
flow first (`server_start`, a fixed cost reported apart), then `daily_reconciliation(day)` is
timed (`flow`). Its task runs' durations come from the API afterwards (start to end of each
`build_marts`, `validate_marts`, `export_finance` (as the deployment runs it),
`publish_summary` run); `orchestration` = the flow's wall minus
its task runs (task and flow run creation, state changes, the concurrency-limit check).
Prints median and min-max, writes bench/results/flow-<sha>-<key>[-label].json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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


TASKS = ("build_marts", "validate_marts", "export_finance", "publish_summary")

CHILD = r"""
import inspect, json, sys, time
spec = json.loads(sys.argv[1])
t = time.perf_counter()
from prefect import flow
from flows.daily_reconciliation import daily_reconciliation
imports = time.perf_counter() - t
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

@flow
def noop():
    return 1

t = time.perf_counter()
noop()
server_start = time.perf_counter() - t
t = time.perf_counter()
# the day's finance CSVs, as prefect.yaml's deployment writes them (an older tree measured
# through BENCH_ROOT may have no exports_dir)
kw = ({'exports_dir': spec['db'] + '.exports'}
      if 'exports_dir' in inspect.signature(daily_reconciliation.fn).parameters else {})
state = daily_reconciliation(day=spec['day'], landing_dir=spec['input'], db=spec['db'],
                             validation=spec['validation'], return_state=True, **kw)
wall = time.perf_counter() - t
assert state.is_completed(), state
with get_client(sync_client=True) as c:
    runs = c.read_task_runs(flow_run_filter=FlowRunFilter(
        id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
tasks = {}
for r in runs:
    name = r.name.rsplit('-', 1)[0]
    tasks[name] = tasks.get(name, 0.0) + (r.end_time - r.start_time).total_seconds()
print('BENCH-RESULT ' + json.dumps({'imports': imports, 'server_start': server_start,
                                    'flow': wall, 'tasks': tasks}))
"""


def child_env(h, home: str) -> dict:
    """The harness's child environment, Prefect kept to its own temporary API and home (never a
    developer's own server)."""
    env = {**h.child_env(), "PREFECT_HOME": home, "DO_NOT_TRACK": "1",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    # the temporary API takes 6-15 s to start on this project's hosts, and can pass Prefect's
    # default 20 s when the machine is busy (a run then fails): wait longer, the start is timed
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_API_KEY", None)
    return env


def run_once(h, inp: Path, day: str, validation: bool) -> dict:
    """One fresh process: temporary API, one flow run on a fresh warehouse; its timings."""
    with tempfile.TemporaryDirectory(prefix="flow-", dir=h.CACHE) as tmp:
        spec = {"input": str(inp), "db": str(Path(tmp) / "w.duckdb"), "day": day,
                "validation": validation}
        h.settle()
        h.warm(inp)
        env = child_env(h, str(Path(tmp) / "prefect-home"))
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], cwd=h.ROOT, env=env,
                           capture_output=True, text=True, check=False)
        process = time.perf_counter() - t
    r = h.child_result(p, "flow child")
    r["process"] = process
    r["orchestration"] = r["flow"] - sum(r["tasks"].values())
    return r


def summarise(h, runs: list[dict]) -> dict:
    def stat(xs):
        lo, hi = h.spread(xs)
        return {"median": h.med(xs), "min": lo, "max": hi, "all": xs}

    out = {k: stat([r[k] for r in runs])
           for k in ("imports", "server_start", "flow", "orchestration", "process")}
    for t in sorted({t for r in runs for t in r["tasks"]}):
        out[f"task {t}"] = stat([r["tasks"].get(t) for r in runs])
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/flow.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--scale", type=float, default=4)
    ap.add_argument("--endpoints", type=int, default=2)
    ap.add_argument("--days", type=int, default=1, help="simulated days (the flow runs the first)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-validation", dest="validation", action="store_false")
    ap.add_argument("--label", default="")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed "
                    "(bench/targets.py)")
    a = ap.parse_args(argv)
    h = _harness()
    sim = h.ensure_sim(a)
    day = h.START_DAY.isoformat()
    runs, floors = [], []
    for i in range(a.runs):
        runs.append(run_once(h, sim / "input", day, a.validation))
        floors.append(h.spawn({"mode": "floor", "input": str(sim / "input")})["extract"])
        r = runs[-1]
        print(f"  run {i + 1}/{a.runs}: server start {r['server_start']:.2f} s, flow "
              f"{r['flow']:.2f} s (" + ", ".join(f"{k} {v:.2f}" for k, v in r["tasks"].items())
              + f", orchestration {r['orchestration']:.2f})", file=sys.stderr, flush=True)
    sha, dirty = h.git_sha()
    key = h.scale_key(a)
    res = {"key": key, "sha": sha, "dirty": dirty, "day": day, "validation": a.validation,
           "input": h.dir_stats(sim / "input"), "machine": h.machine_note(),
           "runs": runs, "summary": summarise(h, runs)}
    # the speed target is a multiple of the floor measured in the same run (bench/targets.py)
    res["summary"]["floor_extract"] = {"median": h.med(floors), "min": h.spread(floors)[0],
                                       "max": h.spread(floors)[1], "all": floors}
    print(f"\n# daily-reconciliation flow, {key}, day {day}, sha {sha}{'-dirty' if dirty else ''}, "
          f"runs {a.runs}\n# machine: {res['machine'].get('cpu')} x{res['machine'].get('cpus')}, "
          f"loadavg {os.getloadavg()}")
    print(f"{'':<28}{'median s':>10}{'min':>9}{'max':>9}")
    for k, v in res["summary"].items():
        print(f"{k:<28}{v['median']:>10.3f}{v['min']:>9.3f}{v['max']:>9.3f}")
    targets = h.bench_module("targets")
    res["targets"] = targets.check_flow(vars(a), {
        "flow": res["summary"]["flow"], "floor_extract": res["summary"]["floor_extract"]["median"]})
    print("\n" + targets.report(res["targets"]))
    h.RESULTS.mkdir(parents=True, exist_ok=True)
    path = h.RESULTS / f"flow-{sha}{'-dirty' if dirty else ''}-{key}{'-' + a.label if a.label else ''}.json"
    path.write_text(json.dumps(res, indent=1, default=str))
    print(f"\nwritten: {path}")
    if a.check and not all(t["met"] for t in res["targets"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
