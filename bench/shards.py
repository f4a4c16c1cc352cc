"""Shards at scale: cost per shard-day as shards grow, and the fleet's wall time with workers.

    uv run python bench/shards.py                                  # shards 1,2,4,8; workers 1,2
    uv run python bench/shards.py --nodes 20 --scale 4 --endpoints 4 --shards 1,2,4,8 --runs 3

For every S of `--shards` it builds a fleet of S clusters of one size sharing ONE Runpod
account, as tests/test_shards.py does: cluster `c<k>` is `recon simulate --seed SEED+k` with the
simulator's `sim-cluster` renamed, its Kubernetes files under `k8s/cluster=c<k>/`, its Runpod
files under `runpod/pull=c<k>/` (the account's pulls side by side); the simulator's fixed
account scenarios (warm pool, balance, account bill, serverless extras) only in c0, so no
billed resource repeats; one `recon.toml` with every cluster's rates and
`[shards] s0 = ["c0"], s1 = ["c1"], ...` (one cluster a shard). Inputs are cached under
bench/.cache/shards/ (keyed by the simulator's source hash; fleets are hard links to the
per-cluster caches).

Per repetition, the S of the grid in a shuffled order (machine noise spreads over all of
them), each run in a fresh child process (the input already in the page cache):

* the fleet with W concurrent workers for each W of `--workers` (W = 1 always runs: it is
  the cost measurement): the named shards through a pool of W processes, then
  `__unassigned__` with their warehouses as claims; the fleet's wall time from the first
  shard's start to the unassigned shard's end. Each run reports its seconds, CPU seconds
  (the run, and the whole child process), peak RSS, its stage timings and its landing split
  into the provider's files (outside any `cluster=` folder: every shard lands all of them) and
  the shard's own Kubernetes files. `recon.shards.tieout` must pass for every fleet run, or the
  harness stops;
* the whole fleet unsharded (one machine, one warehouse): the reference;
* the floor (bench/harness.py's `floor_extract`: one DuckDB parse of every document) of the
  fleet's tree and of shard s0's input, so costs are also given as ratios to a floor of the
  same run (bench/README.md, "Report ratios to the floor of the same run").

Cost per shard-day is the median over the named shards of the W = 1 pass (the S shards of a
one-day fleet are S shard-days); `__unassigned__` is reported apart. Prints a Markdown table,
writes bench/results/shards-<sha>-<key>.json and an SVG chart beside it.

A harness of its own rather than a mode of bench/scaling.py: its input is one account's
(`runpod/pull=c<k>/`, the fixed scenarios once) where scaling.py's clusters each bring an
account of their own (`runpod/account=c<k>/`), and a measurement is a fleet of S + 1 runs,
pooled, tied out, against scaling.py's one run per grid point. It borrows scaling.py's
simulator hash, git sha and least-squares fit, and harness.py's floor.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache" / "shards"
RESULTS = ROOT / "bench" / "results"
UNASSIGNED = "__unassigned__"  # recon.shards.UNASSIGNED (not imported: the parent stays light)


def _bench(name: str):
    """A sibling module of bench/ (not a package): scaling.py's helpers, harness.py's floor."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fixed_files() -> set[str]:
    """The simulator's fixed account scenarios: one account's, so c0's copy only."""
    from recon.simulate.fleet import ACCOUNT_FILES
    return set(ACCOUNT_FILES)


# ----------------------------------------------------------------------------- data (cached)

def ensure_cluster(a, k: int) -> Path:
    """One simulated cluster `c<k>` over `a.days` days, as bench/scaling.py makes it, its
    Runpod files under `runpod/pull=c<k>/` (one account's pulls, side by side)."""
    return _bench("scaling").ensure_cluster(a, k, a.days, out=a.cache / a.key / f"c{k}",
                                            runpod="pull")


def merged_config(parts: list[Path], shards: int) -> str:
    """The clusters' recon.toml files as one, with one shard per cluster (`s<k> = ["c<k>"]`)."""
    from recon.simulate.fleet import merged_config as merged
    return merged([(p / "recon.toml").read_text() for p in parts],
                  {f"s{k}": [f"c{k}"] for k in range(shards)})


def _link_tree(parts: list[Path], out: Path, keep=lambda rel: True) -> None:
    for part in parts:
        for src in sorted(part.rglob("*")):
            rel = src.relative_to(part)
            if src.is_file() and src.name not in (".complete", "recon.toml") and keep(rel):
                dst = out / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.link(src, dst)


def ensure_fleet(a, shards: int) -> Path:
    """The landing tree of S clusters sharing one account: hard links into the cluster caches."""
    out = a.cache / a.key / f"fleet-s{shards}"
    if (out / ".complete").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    parts = [ensure_cluster(a, k) for k in range(shards)]
    _link_tree(parts, out)
    (out / "recon.toml").write_text(merged_config(parts, shards))
    # what shard s0 lands (every provider file, c0's Kubernetes files): the floor of a shard
    s0 = out.parent / f"input-s{shards}-s0"
    if s0.exists():
        shutil.rmtree(s0)
    _link_tree(parts, s0,
               lambda rel: rel.parts[0] == "runpod" or rel.parts[1] == "cluster=c0")
    files = [p for p in out.rglob("*") if p.is_file()]
    (out / ".complete").write_text(json.dumps({
        "files": len(files), "bytes": sum(p.stat().st_size for p in files),
        "provider_files": sum("runpod" in p.relative_to(out).parts[:1] for p in files)}))
    return out


def warm(folder: Path) -> None:
    """Read every file once: the runs are timed on input in the page cache, not the disk."""
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            with open(p, "rb") as f:
                while f.read(8 << 20):
                    pass


# ----------------------------------------------------------------------------- one run (child)

def child(spec: dict) -> dict:
    """One `recon.pipeline.run` in this fresh process; per-file landing seconds by wrapping the
    landing's reader (`recon.ingest.land._read_safely`: read, then insert, then `progress`)."""
    db = Path(spec["db"])
    for suffix in ("", ".wal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    t0 = time.perf_counter()
    from recon.ingest import land
    from recon.pipeline import run
    t_import = time.perf_counter() - t0

    started: list = []
    per_file: dict[str, float] = {}
    read = land._read_safely

    def timed_read(con, p, display, *args, **kw):
        started[:] = [display, time.perf_counter()]
        return read(con, p, display, *args, **kw)

    def progress(i, n, name):  # after the file's rows are inserted
        if started:
            per_file[started[0]] = time.perf_counter() - started[1]
            started.clear()

    land._read_safely = timed_read
    from recon import shards
    take = shards.take_account
    took = []

    def timed_take(*args, **kw):  # a routed shard's rows taken from the account's warehouse
        t = time.perf_counter()
        out = take(*args, **kw)
        took.append(time.perf_counter() - t)
        return out

    shards.take_account = timed_take
    cpu0 = time.process_time()  # every thread of the process (DuckDB's too)
    t0 = time.perf_counter()
    res = run(spec["tree"], db, shard=spec.get("shard"), claims=spec.get("claims"),
              progress=progress, account=spec.get("account"),
              land_only=spec.get("land_only", False))
    secs = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    split = {"provider": {"files": 0, "records": 0, "seconds": 0.0},
             "k8s": {"files": 0, "records": 0, "seconds": 0.0}}
    for f in res.files:
        part = split["k8s" if "/cluster=" in f.path.replace("\\", "/") else "provider"]
        part["files"] += 1
        part["records"] += f.records_in
        part["seconds"] += per_file.get(f.path, 0.0)
    return {"seconds": secs, "cpu_seconds": cpu,
            "process_cpu_seconds": ru.ru_utime + ru.ru_stime,
            "peak_rss_mib": ru.ru_maxrss / 1024, "import_seconds": t_import,
            "records_in": res.records_in, "loaded": res.loaded, "quarantined": res.quarantined,
            "stages": {k: round(v, 4) for k, v in res.timings.items()}, "landing": split,
            "take_seconds": sum(took), "taken": res.taken, "db_bytes": db.stat().st_size}


def spawn(spec: dict) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                        json.dumps(spec)], cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("BENCH-RESULT ")),
                None)
    if p.returncode or line is None:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit(f"shard run {spec.get('shard')} of {spec['tree']} failed "
                         f"(exit {p.returncode})")
    r = json.loads(line[len("BENCH-RESULT "):])
    r["process_wall"] = wall
    return r


# ----------------------------------------------------------------------------- a fleet run

def fleet(tree: Path, work: Path, shards: int, workers: int, routed: bool = True) -> dict:
    """`routed` (the fleet flow's order): `__unassigned__` lands the tree first (land only),
    then the named shards through a pool of `workers` processes, each taking its provider rows
    from that warehouse, then `__unassigned__` builds with their claims. Not routed: the named
    shards land every provider file themselves, then `__unassigned__` lands and builds. The
    tie-out of the S + 1 warehouses must pass."""
    from recon import shards as recon_shards
    from recon.config import load_config

    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    names = [f"s{k}" for k in range(shards)]
    dbs = {s: work / f"{s}.duckdb" for s in names}
    u_db = work / "unassigned.duckdb"
    t0 = time.perf_counter()
    landed = (spawn({"tree": str(tree), "db": str(u_db), "shard": UNASSIGNED, "land_only": True})
              if routed else None)
    t1 = time.perf_counter()
    account = {"account": str(u_db)} if routed else {}
    with ThreadPoolExecutor(max_workers=workers) as pool:  # each thread waits on one child
        named = dict(zip(names, pool.map(
            lambda s: spawn({"tree": str(tree), "db": str(dbs[s]), "shard": s, **account}),
            names)))
    t_named = time.perf_counter() - t1
    unassigned = spawn({"tree": str(tree), "db": str(u_db), "shard": UNASSIGNED,
                        "claims": [str(dbs[s]) for s in names]})
    wall = time.perf_counter() - t0
    t = recon_shards.tieout([*dbs.values(), u_db], load_config(tree / "recon.toml"))
    if not t.ok:
        raise SystemExit(f"tie-out failed for {shards} shards, {workers} workers: "
                         + "; ".join(t.problems()))
    out = {"mode": "routed" if routed else "whole", "workers": workers, "wall_seconds": wall,
           "named_wall_seconds": t_named, "account_landing": landed,
           "named": named, "unassigned": unassigned, "tieout_ok": t.ok,
           "account_billed": str(sum(t.account.values())),
           "shards_billed": {s: str(sum(v.values())) for s, v in t.shards.items()}}
    shutil.rmtree(work)
    return out


def single(tree: Path, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    r = spawn({"tree": str(tree), "db": str(work / "single.duckdb")})
    shutil.rmtree(work)
    return r


def floor(folder: Path, harness) -> dict | None:
    try:
        f = harness.spawn({"mode": "floor", "input": str(folder)})
    except SystemExit as e:  # the floor is a reference, not the product
        print(f"  floor of {folder} failed: {e}", file=sys.stderr, flush=True)
        return None
    return {"scan": f["scan"], "extract": f["extract"], "records": f["records"]}


# ----------------------------------------------------------------------------- summary

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(S: int, reps: list[dict], inp: dict) -> dict:
    """One point of the grid: medians over repetitions (and over the named shards)."""
    cost = [f for r in reps for f in r["fleets"] if f["workers"] == 1]
    named = [n for f in cost for n in f["named"].values()]
    un = [f["unassigned"] for f in cost]
    landings = [f["account_landing"] for f in cost if f.get("account_landing")]

    def m(rows, key):
        return med([r[key] for r in rows])

    def stage(rows, key):
        return med([r["stages"].get(key, 0.0) for r in rows])

    def land(rows, part, key):
        return med([r["landing"][part][key] for r in rows])

    def build(rows):
        return med([sum(r["stages"].get(k, 0.0) for k in ("staging", "intermediate", "marts"))
                    for r in rows])

    def breakdown(rows):
        return {"seconds": m(rows, "seconds"), "cpu_seconds": m(rows, "cpu_seconds"),
                "process_cpu_seconds": m(rows, "process_cpu_seconds"),
                "process_wall": m(rows, "process_wall"), "peak_rss_mib": m(rows, "peak_rss_mib"),
                "records_in": m(rows, "records_in"),
                "load_seconds": stage(rows, "load"), "build_seconds": build(rows),
                "commit_seconds": stage(rows, "commit"),
                "stages": {k: stage(rows, k) for k in rows[0]["stages"]},
                "landing_provider_seconds": land(rows, "provider", "seconds"),
                "landing_k8s_seconds": land(rows, "k8s", "seconds"),
                "provider_records": land(rows, "provider", "records"),
                "k8s_records": land(rows, "k8s", "records"),
                "provider_files": land(rows, "provider", "files"),
                "k8s_files": land(rows, "k8s", "files"),
                "take_seconds": med([r.get("take_seconds", 0.0) for r in rows]),
                "taken_records": med([(r.get("taken") or {}).get("records", 0) for r in rows])}

    walls = {}
    for f in (f for r in reps for f in r["fleets"]):
        walls.setdefault(f["workers"], []).append(f["wall_seconds"])
    singles = [r["single"] for r in reps]
    fl = [r["floor_fleet"] for r in reps if r.get("floor_fleet")]
    fl0 = [r["floor_s0"] for r in reps if r.get("floor_s0")]
    p = {"shards": S, "shard_days": S * inp["days"], "input": inp,
         "records_in": singles[0]["records_in"],
         "per_shard_day": breakdown(named), "unassigned": breakdown(un),
         "account_landing": breakdown(landings) if landings else None,
         "fleet_wall_seconds": {str(w): med(v) for w, v in sorted(walls.items())},
         "fleet_wall_runs": {str(w): v for w, v in sorted(walls.items())},
         "single": breakdown(singles),
         "tieout_ok": all(f["tieout_ok"] for r in reps for f in r["fleets"]),
         "floor_extract_fleet": med([f["extract"] for f in fl]),
         "floor_extract_s0": med([f["extract"] for f in fl0]),
         "named_sum_records_in": med([sum(n["records_in"] for n in f["named"].values())
                                      for f in cost]),
         # the fleet's CPU (named shards and unassigned, its landing too) over its S shard-days
         "fleet_cpu_seconds_per_shard_day": med([
             (sum(n["cpu_seconds"] for n in f["named"].values())
              + f["unassigned"]["cpu_seconds"]
              + (f.get("account_landing") or {}).get("cpu_seconds", 0.0)) / (S * inp["days"])
             for f in cost]),
         "runs": reps}
    if p["floor_extract_s0"]:
        p["per_shard_day_over_floor_s0"] = p["per_shard_day"]["seconds"] / p["floor_extract_s0"]
    if p["floor_extract_fleet"]:
        p["single_over_floor_fleet"] = p["single"]["seconds"] / p["floor_extract_fleet"]
        p["fleet_wall_over_floor_fleet"] = {w: v / p["floor_extract_fleet"]
                                            for w, v in p["fleet_wall_seconds"].items()}
    return p


def growth_of(points: list[dict], scaling) -> dict:
    """What grows with the account: least-squares lines of a shard's cost and its parts
    against S (per added cluster, i.e. shard, of the fleet)."""
    growth = {}
    if len(points) > 1:
        xs = [p["shards"] for p in points]
        for what, key in (("per_shard_day_seconds", "seconds"),
                          ("per_shard_day_cpu_seconds", "cpu_seconds"),
                          ("landing_provider_seconds", "landing_provider_seconds"),
                          ("take_seconds", "take_seconds"),
                          ("landing_k8s_seconds", "landing_k8s_seconds"),
                          ("build_seconds", "build_seconds")):
            ys = [p["per_shard_day"][key] for p in points]
            if not all(ys):  # a part this mode has not (no take when not routed): no line
                continue
            f = scaling.fit(xs, ys)
            growth[what] = {"intercept": f["intercept_seconds"],
                            "per_shard": f["slope_seconds_per_million_records"] / 1e6,
                            "r2": f["r2"]}
    return growth


def table(points: list[dict], workers: list[int]) -> str:
    base = points[0]
    ws = " | ".join(f"fleet wall, W={w} (s)" for w in workers)
    lines = [f"| S | records in (fleet) | per shard-day: s (CPU s) | × S=1 | "
             f"unassigned s | {ws} | unsharded s | per shard-day / floor_extract(s0) | "
             "unsharded / floor_extract(fleet) |",
             "|" + "---:|" * (8 + len(workers))]
    for p in points:
        d = p["per_shard_day"]
        walls = " | ".join(f"{p['fleet_wall_seconds'].get(str(w), float('nan')):.2f}"
                           for w in workers)
        r0 = p.get("per_shard_day_over_floor_s0")
        r1 = p.get("single_over_floor_fleet")
        un = _unassigned_seconds(p)
        lines.append(
            f"| {p['shards']} | {p['records_in']:,} | {d['seconds']:.2f} ({d['cpu_seconds']:.2f}) | "
            f"{d['seconds'] / base['per_shard_day']['seconds']:.2f} | "
            f"{un:.2f} | {walls} | {p['single']['seconds']:.2f} | "
            f"{'' if r0 is None else f'{r0:.1f}×'} | {'' if r1 is None else f'{r1:.1f}×'} |")
    lines += ["", "Per shard-day, where the time goes (medians, seconds; records landed):", "",
              "| S | records: provider (landed + taken) + own k8s | load | of it: provider "
              "files | taken from the account | own k8s files | build "
              "(staging+intermediate+marts) | commit | peak RSS MiB | fleet CPU s per shard-day |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        d = p["per_shard_day"]
        lines.append(
            f"| {p['shards']} | {d['provider_records'] + d['taken_records']:,.0f} + "
            f"{d['k8s_records']:,.0f} | "
            f"{d['load_seconds']:.2f} | {d['landing_provider_seconds']:.2f} | "
            f"{d['take_seconds']:.2f} | "
            f"{d['landing_k8s_seconds']:.2f} | {d['build_seconds']:.2f} | "
            f"{d['commit_seconds']:.2f} | {d['peak_rss_mib']:.0f} | "
            f"{p['fleet_cpu_seconds_per_shard_day']:.2f} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- chart

COLOURS = {"shard-day": "#1f77b4", "landing-provider": "#8c564b", "landing-k8s": "#e377c2",
           "build": "#17becf", "unassigned": "#bcbd22", "unsharded": "#7f7f7f",
           "shard-day-whole": "#aec7e8", "take": "#98df8a", "whole-w1": "#ff9896",
           1: "#d62728", 2: "#2ca02c", 4: "#ff7f0e", 8: "#9467bd"}


def nice(y: float) -> float:
    """The smallest 1, 2, 2.5 or 5 × 10^k at or above y: the top of an axis."""
    import math
    k = 10 ** math.floor(math.log10(y)) if y > 0 else 1
    return next(m * k for m in (1, 2, 2.5, 5, 10) if m * k >= y)


def _panel(x0: float, width: float, points: list[dict], series: dict, labels: dict,
           spans: dict, ylabel: str, T: int = 50, H: int = 470, B: int = 55) -> list[str]:
    """One chart: seconds against S (linear: a cost linear in S is a straight line)."""
    L = x0 + 55
    R = x0 + width - 10
    xs = sorted({p["shards"] for p in points})
    xmax = max(xs) + 0.5
    ymax = nice(max([y for pts in series.values() for _, y in pts]
                    + [max(v) for v in spans.values()] + [1e-9]) * 1.05)
    sx = lambda x: L + (R - L) * x / xmax
    sy = lambda y: H - B - (H - T - B) * y / ymax
    out = [f'<line x1="{L}" y1="{H - B}" x2="{R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
           (f'<text x="{(L + R) / 2}" y="{H - 15}" text-anchor="middle">shards S (one cluster '
            'each, one account)</text>'),
           (f'<text x="{x0 + 14}" y="{(T + H - B) / 2}" text-anchor="middle" '
            f'transform="rotate(-90 {x0 + 14} {(T + H - B) / 2})">{ylabel}</text>')]
    for x in xs:
        out.append(f'<line x1="{sx(x):.1f}" y1="{H - B}" x2="{sx(x):.1f}" y2="{H - B + 5}" '
                   'stroke="black"/>')
        out.append(f'<text x="{sx(x):.1f}" y="{H - B + 18}" text-anchor="middle">{x}</text>')
    for i in range(6):
        y = ymax * i / 5
        out.append(f'<line x1="{L - 5}" y1="{sy(y):.1f}" x2="{L}" y2="{sy(y):.1f}" stroke="black"/>')
        out.append(f'<text x="{L - 8}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        out.append(f'<line x1="{L}" y1="{sy(y):.1f}" x2="{R}" y2="{sy(y):.1f}" stroke="#eee"/>')
    for x, v in spans.items():
        out.append(f'<line class="span" x1="{sx(x):.1f}" y1="{sy(min(v)):.1f}" x2="{sx(x):.1f}" '
                   f'y2="{sy(max(v)):.1f}" stroke="{COLOURS["shard-day"]}"/>')
    for i, (key, pts) in enumerate(series.items()):
        c = COLOURS.get(key, "#333")
        cls = key if isinstance(key, str) else f"fleet-w{key}"
        dash = (' stroke-dasharray="6 4"'
                if key in ("unsharded", "unassigned", "shard-day-whole", "whole-w1") else "")
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        out.append(f'<polyline class="{cls}" points="{path}" fill="none" stroke="{c}"{dash}/>')
        for x, y in pts:
            out.append(f'<circle class="{cls}" data-shards="{x}" data-seconds="{y:.4f}" '
                       f'cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{c}"/>')
        ly = T + 8 + 17 * i
        out.append(f'<line x1="{L + 12}" y1="{ly}" x2="{L + 32}" y2="{ly}" stroke="{c}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{L + 37}" y="{ly + 4}">{labels[key]}</text>')
    return out


def _unassigned_seconds(p: dict) -> float:
    """The __unassigned__ shard's two runs of a routed fleet (landing, build), or its one."""
    return p["unassigned"]["seconds"] + ((p.get("account_landing") or {}).get("seconds") or 0)


def svg_chart(points: list[dict], workers: list[int], title: str,
              whole: list[dict] | None = None) -> str:
    """Two panels against S: on the left a shard's cost (median over the named shards,
    whiskers min-max) and its parts, the unassigned shard, and with `whole` (the same grid,
    every shard landing every provider file) that mode's shard-day and its provider landing;
    on the right the fleet's wall time per W (and `whole`'s with one worker) and the whole
    fleet run unsharded."""
    W, H = 960, 470
    left = {"shard-day": [(p["shards"], p["per_shard_day"]["seconds"]) for p in points],
            "take": [(p["shards"], p["per_shard_day"]["take_seconds"]) for p in points],
            "landing-k8s": [(p["shards"], p["per_shard_day"]["landing_k8s_seconds"])
                            for p in points],
            "build": [(p["shards"], p["per_shard_day"]["build_seconds"]) for p in points],
            "unassigned": [(p["shards"], _unassigned_seconds(p)) for p in points]}
    right: dict = {w: [(p["shards"], p["fleet_wall_seconds"][str(w)]) for p in points
                       if str(w) in p["fleet_wall_seconds"]] for w in workers}
    if whole:
        left["shard-day-whole"] = [(p["shards"], p["per_shard_day"]["seconds"]) for p in whole]
        left["landing-provider"] = [(p["shards"], p["per_shard_day"]["landing_provider_seconds"])
                                    for p in whole]
        right["whole-w1"] = [(p["shards"], p["fleet_wall_seconds"]["1"]) for p in whole]
    right["unsharded"] = [(p["shards"], p["single"]["seconds"]) for p in points]
    labels = {"shard-day": "a named shard's run (cost per shard-day)",
              "take": "of it: taking its provider rows from the account",
              "landing-k8s": "of it: landing its own Kubernetes files",
              "build": "of it: build (staging, intermediate, marts)",
              "unassigned": "the __unassigned__ shard (landing + build)",
              "shard-day-whole": "a named shard landing every provider file",
              "landing-provider": "of it: landing the provider's files",
              "whole-w1": "fleet wall, 1 worker, every shard landing every provider file",
              "unsharded": "the whole fleet unsharded (one run)",
              **{w: f"fleet wall, {w} worker{'s' if w != 1 else ''}" for w in workers}}
    spans = {p["shards"]: [n["seconds"] for r in p["runs"] for f in r["fleets"]
                           if f["workers"] == 1 for n in f["named"].values()] for p in points}
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            f'font-family="sans-serif" font-size="12">'),
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    out += _panel(0, W / 2, points, left, labels, spans, "seconds per shard-day")
    out += _panel(W / 2, W / 2, points, right, labels, {}, "seconds, the whole fleet")
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print("BENCH-RESULT " + json.dumps(child(json.loads(argv[1]))), flush=True)
        return 0
    ap = argparse.ArgumentParser(prog="bench/shards.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", default="1,2,4,8", help="shard counts S (comma-separated)")
    ap.add_argument("--workers", default="1,2", help="concurrent worker processes W")
    ap.add_argument("--modes", default="routed,whole",
                    help="routed: the named shards take their provider rows from the "
                         "__unassigned__ warehouse (the fleet flow's order); whole: each lands "
                         "every provider file (one worker only)")
    ap.add_argument("--nodes", type=int, default=20, help="simulated GPU node slots per cluster")
    ap.add_argument("--scale", type=float, default=4, help="jobs per session / requests scale")
    ap.add_argument("--endpoints", type=int, default=4, help="serverless endpoints per cluster")
    ap.add_argument("--days", type=int, default=1, help="days of input per cluster")
    ap.add_argument("--seed", type=int, default=7, help="cluster k uses seed + k")
    ap.add_argument("--runs", type=int, default=1, help="repetitions of every measurement")
    ap.add_argument("--no-floor", dest="floor", action="store_false")
    ap.add_argument("--cache", type=Path, default=CACHE, help="where generated input is kept")
    ap.add_argument("--out", type=Path, default=RESULTS, help="where the JSON and SVG go")
    ap.add_argument("--label", default="", help="appended to the result file name")
    a = ap.parse_args(argv)
    scaling = _bench("scaling")
    harness = _bench("harness") if a.floor else None
    ss = sorted({int(x) for x in a.shards.split(",")})
    ws = sorted({1, *(int(x) for x in a.workers.split(","))})  # W = 1 is the cost measurement
    a.key = (f"n{a.nodes}-s{a.scale:g}-e{a.endpoints}-d{a.days}-seed{a.seed}"
             f"-sim{scaling.sim_version()}")
    load0 = os.getloadavg()
    sha = scaling.git_sha()  # the tree the run starts from

    t0 = time.perf_counter()
    trees = {S: ensure_fleet(a, S) for S in ss}
    print(f"inputs ready in {time.perf_counter() - t0:.1f} s ({a.cache / a.key})",
          file=sys.stderr, flush=True)
    work = a.cache / a.key / "work"
    modes = [m for m in ("routed", "whole") if m in a.modes.split(",")]
    if not modes:
        raise SystemExit("--modes: routed, whole or both")
    reps = {m: {S: [] for S in ss} for m in modes}
    rng = random.Random(a.seed)
    for rep in range(a.runs):
        order = ss[:]
        rng.shuffle(order)  # per repetition, so that the machine's noise spreads over every S
        for S in order:
            tree = trees[S]
            warm(tree)
            single_run = floors = None
            for mode in rng.sample(modes, len(modes)):
                r = {"fleets": []}
                for w in ws if mode == "routed" else [1]:
                    f = fleet(tree, work / f"s{S}-w{w}", S, w, routed=mode == "routed")
                    r["fleets"].append(f)
                    secs = sorted(n["seconds"] for n in f["named"].values())
                    print(f"run {rep + 1}/{a.runs}  S={S} {mode} W={w}: fleet "
                          f"{f['wall_seconds']:.2f} s (named "
                          f"{', '.join(f'{x:.2f}' for x in secs)} s; unassigned "
                          f"{_unassigned_seconds(f):.2f} s); tie-out ok",
                          file=sys.stderr, flush=True)
                if single_run is None:  # the same reference for both modes
                    single_run = single(tree, work / f"s{S}-single")
                    print(f"run {rep + 1}/{a.runs}  S={S} unsharded: "
                          f"{single_run['seconds']:.2f} s, {single_run['records_in']:,} records",
                          file=sys.stderr, flush=True)
                    if harness is not None:
                        floors = {"floor_fleet": floor(tree, harness),
                                  "floor_s0": floor(a.cache / a.key / f"input-s{S}-s0",
                                                    harness)}
                r["single"] = single_run
                r.update(floors or {})
                reps[mode][S].append(r)
    results = {}
    for mode in modes:
        points = [summarise(S, reps[mode][S], json.loads((trees[S] / ".complete").read_text())
                            | {"days": a.days}) for S in ss]
        results[mode] = {"points": points, "growth_with_shards": growth_of(points, scaling)}
    args = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()}
    result = {"sha": sha, "key": a.key, "args": args,
              "load_avg_start": load0, "load_avg_end": os.getloadavg(), "cpus": os.cpu_count(),
              "workers": ws, "modes": results}
    a.out.mkdir(parents=True, exist_ok=True)
    name = f"shards-{result['sha']}-{a.key}{'-' + a.label if a.label else ''}"
    (a.out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
    first = results[modes[0]]["points"]
    (a.out / f"{name}.svg").write_text(svg_chart(
        first, ws if modes[0] == "routed" else [1],
        f"shards of one account: {a.nodes} nodes/cluster, scale {a.scale:g}, "
        f"{a.days} day(s), median of {a.runs}",
        whole=results["whole"]["points"] if modes[0] != "whole" and "whole" in results else None))
    for mode in modes:
        print(f"## {mode}: " + ("the named shards take their provider rows from the "
                                "__unassigned__ warehouse, landed first" if mode == "routed" else
                                "every named shard lands every provider file") + "\n")
        print(table(results[mode]["points"], ws if mode == "routed" else [1]))
        for what, g in results[mode]["growth_with_shards"].items():
            print(f"{what}: {g['intercept']:.3f} s + {g['per_shard']:.3f} s per shard (S), "
                  f"R² = {g['r2']:.3f}")
        print()
    print(f"load average {load0[0]:.2f} at the start, {result['load_avg_end'][0]:.2f} at the end; "
          f"{os.cpu_count()} CPUs")
    print(f"wrote {a.out / name}.json and .svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
