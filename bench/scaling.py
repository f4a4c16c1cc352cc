"""Scaling out: how the daily run's cost grows with clusters and days (docs/scaling-out.md).

    uv run python bench/scaling.py                         # clusters 1,2,4 x days 1,2,4, 3 runs
    uv run python bench/scaling.py --clusters 1,2,4,8 --days 1,2 --nodes 40 --runs 5

For every (K clusters, D days) of the grid it builds a landing tree laid out as in production:
`k8s/cluster=c<k>/...` for k < K (one simulated cluster each: `recon simulate` with seed
SEED + k, the cluster renamed from the simulator's `sim-cluster`), `runpod/account=c<k>/...`
(each simulated cluster's own Runpod files; the simulator's fixed warm-pool scenario is kept in
c0 only, so no billed resource appears twice) and one `recon.toml` with every cluster's rates.
Generated data is cached under bench/.cache/scaling/ (keyed by the simulator's source hash).

Then `recon.pipeline.run(tree, fresh DuckDB)` (no validation, no window: every day of the tree)
runs in a fresh process per measurement, grid points round-robin per repetition so machine noise
spreads over all of them. Reported per point: median seconds (min-max), records in, seconds
per million records; and a least-squares fit of median seconds against records (slope,
intercept, R^2) plus the fit's largest relative residual. Writes
bench/results/scaling-<sha>-<key>.json and an SVG chart beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache" / "scaling"
RESULTS = ROOT / "bench" / "results"
def sim_version() -> str:
    import hashlib
    h = hashlib.sha256()
    for p in sorted((ROOT / "recon" / "simulate").glob("*.py")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:8]


def git_sha() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               check=False, capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "nogit"


# ----------------------------------------------------------------------------- data (cached)

def ensure_cluster(a, k: int, days: int, out: Path | None = None,
                   runpod: str = "account") -> Path:
    """One simulated cluster `c<k>` over `days` days, renamed, its Runpod files under
    `runpod/<runpod>=c<k>/`; cached in `out` with a .complete marker."""
    out = out or CACHE / a.key / f"c{k}-d{days}"
    if (out / ".complete").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    code = ("from datetime import date; from recon.simulate import simulate; "
            f"simulate({str(out / 'sim')!r}, seed={a.seed + k}, days={days}, nodes={a.nodes}, "
            f"endpoints={a.endpoints}, scale={a.scale}, start_day=date(2026, 6, 1))")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    from recon.simulate.fleet import place_cluster

    # the simulator's fixed account scenarios (recon/simulate/fleet.py): c0 only, so no billed
    # resource repeats
    sim, name = out / "sim", f"c{k}"
    place_cluster(sim, out, name, first=k == 0, runpod=out / "runpod" / f"{runpod}={name}")
    shutil.move(str(sim / "recon.toml"), out / "recon.toml")
    shutil.rmtree(sim)  # the ground truth is not an input
    (out / ".complete").write_text(json.dumps({"simulate_seconds": time.perf_counter() - t0}))
    return out


def merged_config(parts: list[Path]) -> str:
    """The clusters' recon.toml files as one (recon.simulate.fleet.merged_config)."""
    from recon.simulate.fleet import merged_config as merged

    return merged([(p / "recon.toml").read_text() for p in parts])


def ensure_grid_input(a, clusters: int, days: int) -> Path:
    """The landing tree of K clusters x D days: hard links into the per-cluster caches."""
    out = CACHE / a.key / f"tree-k{clusters}-d{days}"
    if (out / ".complete").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    parts = [ensure_cluster(a, k, days) for k in range(clusters)]
    for part in parts:
        for src in part.rglob("*"):
            if src.is_file() and src.name not in (".complete", "recon.toml"):
                dst = out / src.relative_to(part)
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.link(src, dst)
    (out / "recon.toml").write_text(merged_config(parts))
    files = [p for p in out.rglob("*") if p.is_file()]
    (out / ".complete").write_text(json.dumps({"files": len(files),
                                               "bytes": sum(p.stat().st_size for p in files)}))
    return out


# ----------------------------------------------------------------------------- one run (child)

def child(tree: str, db: str) -> None:
    for p in Path(tree).rglob("*"):  # page cache warm: time the pipeline, not the disk
        if p.is_file():
            p.read_bytes()
    for suffix in ("", ".wal"):
        Path(db + suffix).unlink(missing_ok=True)
    t0 = time.perf_counter()
    from recon.pipeline import run
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = run(tree, db)
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "import_seconds": t_import, "records_in": res.records_in,
                      "loaded": res.loaded, "quarantined": res.quarantined,
                      "stages": {k: round(v, 4) for k, v in res.timings.items()},
                      "db_bytes": Path(db).stat().st_size}))
    for suffix in ("", ".wal"):
        Path(db + suffix).unlink(missing_ok=True)


def measure(tree: Path, db: Path) -> dict:
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(tree),
                        str(db)], cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- fit and chart

def fit(xs: list[float], ys: list[float]) -> dict:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_res = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - my) ** 2 for y in ys)
    resid = [(y - (intercept + slope * x)) / y for x, y in zip(xs, ys)]
    return {"slope_seconds_per_million_records": slope * 1e6, "intercept_seconds": intercept,
            "r2": 1 - ss_res / ss_tot if ss_tot else 1.0,
            "max_abs_relative_residual": max(abs(r) for r in resid), "points": n}


def svg_chart(points: list[dict], f: dict, title: str) -> str:
    """Median seconds against records (whiskers: min-max), the fitted line, labels K x D."""
    W, H, L, R, T, B = 720, 460, 70, 20, 40, 55
    xmax = max(p["records_in"] for p in points) * 1.05
    ymax = max(p["seconds_max"] for p in points) * 1.1
    sx = lambda x: L + (W - L - R) * x / xmax
    sy = lambda y: H - B - (H - T - B) * y / ymax
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            f'font-family="sans-serif" font-size="12">'),
           f'<rect width="{W}" height="{H}" fill="white"/>',
           (f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>'),
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
           (f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">records in '
            '(millions)</text>'),
           (f'<text x="16" y="{(T + H - B) / 2}" text-anchor="middle" '
            f'transform="rotate(-90 16 {(T + H - B) / 2})">seconds (recon.pipeline.run)</text>')]
    for i in range(6):
        x, y = xmax * i / 5, ymax * i / 5
        out.append(f'<line x1="{sx(x):.1f}" y1="{H - B}" x2="{sx(x):.1f}" y2="{H - B + 5}" '
                   'stroke="black"/>')
        out.append(f'<text x="{sx(x):.1f}" y="{H - B + 18}" text-anchor="middle">'
                   f'{x / 1e6:.2f}</text>')
        out.append(f'<line x1="{L - 5}" y1="{sy(y):.1f}" x2="{L}" y2="{sy(y):.1f}" stroke="black"/>')
        out.append(f'<text x="{L - 8}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.1f}</text>')
        out.append(f'<line x1="{L}" y1="{sy(y):.1f}" x2="{W - R}" y2="{sy(y):.1f}" '
                   'stroke="#eee"/>')
    a, b = f["intercept_seconds"], f["slope_seconds_per_million_records"] / 1e6
    out.append(f'<line x1="{sx(0):.1f}" y1="{sy(a):.1f}" x2="{sx(xmax):.1f}" '
               f'y2="{sy(a + b * xmax):.1f}" stroke="#c33" stroke-dasharray="6 4"/>')
    out.append(f'<text x="{L + 10}" y="{T + 14}" fill="#c33">fit: {a:.2f} s + '
               f'{f["slope_seconds_per_million_records"]:.2f} s per M records, '
               f'R² = {f["r2"]:.4f}</text>')
    colours = {1: "#1f77b4", 2: "#2ca02c", 4: "#ff7f0e", 8: "#9467bd"}
    for p in points:
        x, c = sx(p["records_in"]), colours.get(p["days"], "#333")
        out.append(f'<line x1="{x:.1f}" y1="{sy(p["seconds_min"]):.1f}" x2="{x:.1f}" '
                   f'y2="{sy(p["seconds_max"]):.1f}" stroke="{c}"/>')
        out.append(f'<circle cx="{x:.1f}" cy="{sy(p["seconds"]):.1f}" r="4" fill="{c}"/>')
        out.append(f'<text x="{x + 6:.1f}" y="{sy(p["seconds"]) - 6:.1f}">'
                   f'{p["clusters"]}×{p["days"]}d</text>')
    out.append(f'<text x="{W - R - 5}" y="{H - B - 10}" text-anchor="end" fill="#555">'
               'label: clusters × days; colour: days</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    ap = argparse.ArgumentParser(prog="bench/scaling.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clusters", default="1,2,4", help="cluster counts (comma-separated)")
    ap.add_argument("--days", default="1,2,4", help="day counts (comma-separated)")
    ap.add_argument("--nodes", type=int, default=40, help="simulated GPU node slots per cluster")
    ap.add_argument("--scale", type=float, default=4, help="jobs per session / requests scale")
    ap.add_argument("--endpoints", type=int, default=4, help="serverless endpoints per cluster")
    ap.add_argument("--seed", type=int, default=7, help="cluster k uses seed + k")
    ap.add_argument("--runs", type=int, default=3, help="measured runs per grid point")
    ap.add_argument("--label", default="", help="appended to the result file name")
    a = ap.parse_args(argv)
    ks = sorted({int(x) for x in a.clusters.split(",")})
    ds = sorted({int(x) for x in a.days.split(",")})
    a.key = f"n{a.nodes}-s{a.scale:g}-e{a.endpoints}-seed{a.seed}-sim{sim_version()}"

    grid = [(k, d) for k in ks for d in ds]
    trees = {}
    t0 = time.perf_counter()
    for k, d in grid:
        trees[k, d] = ensure_grid_input(a, k, d)
    print(f"inputs ready in {time.perf_counter() - t0:.1f} s ({CACHE / a.key})", file=sys.stderr)
    db = CACHE / a.key / "scaling.duckdb"
    runs: dict[tuple[int, int], list[dict]] = {g: [] for g in grid}
    rng = random.Random(a.seed)
    for rep in range(a.runs):
        order = grid[:]
        rng.shuffle(order)
        for k, d in order:
            r = measure(trees[k, d], db)
            runs[k, d].append(r)
            print(f"run {rep + 1}/{a.runs}  {k} clusters x {d} days: {r['seconds']:.2f} s, "
                  f"{r['records_in']:,} records", file=sys.stderr, flush=True)

    points = []
    for (k, d), rs in runs.items():
        secs = [r["seconds"] for r in rs]
        recs = {r["records_in"] for r in rs}
        assert len(recs) == 1, f"records differ between runs of {k}x{d}: {recs}"
        rec = recs.pop()
        med = statistics.median(secs)
        points.append({"clusters": k, "days": d, "cluster_days": k * d, "records_in": rec,
                       "seconds": med, "seconds_min": min(secs), "seconds_max": max(secs),
                       "seconds_per_million_records": med / rec * 1e6,
                       "stages_median": {s: statistics.median(r["stages"].get(s, 0) for r in rs)
                                         for s in rs[0]["stages"]},
                       "runs": secs, "quarantined": rs[0]["quarantined"],
                       "input": json.loads((trees[k, d] / ".complete").read_text())})
    points.sort(key=lambda p: (p["clusters"], p["days"]))
    f = fit([p["records_in"] for p in points], [p["seconds"] for p in points])
    f_all = fit([p["records_in"] for p in points for _ in p["runs"]],
                [s for p in points for s in p["runs"]])
    f_cd = fit([p["cluster_days"] for p in points], [p["seconds"] for p in points])
    result = {"sha": git_sha(), "key": a.key, "args": dict(vars(a).items()),
              "load_avg": os.getloadavg(), "cpus": os.cpu_count(),
              "points": points, "fit_median_seconds_vs_records": f,
              "fit_all_runs_vs_records": f_all,
              "fit_median_seconds_vs_cluster_days": {
                  "slope_seconds_per_cluster_day": f_cd["slope_seconds_per_million_records"] / 1e6,
                  "intercept_seconds": f_cd["intercept_seconds"], "r2": f_cd["r2"]}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"scaling-{result['sha']}-{a.key}{'-' + a.label if a.label else ''}"
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
    (RESULTS / f"{name}.svg").write_text(svg_chart(
        points, f, f"recon.pipeline.run: {a.nodes} nodes/cluster, scale {a.scale:g}, "
        f"median of {a.runs}"))

    print("| clusters | days | records in | seconds, median (min–max) | s per M records |")
    print("|---:|---:|---:|---|---:|")
    for p in points:
        print(f"| {p['clusters']} | {p['days']} | {p['records_in']:,} | {p['seconds']:.2f} "
              f"({p['seconds_min']:.2f}–{p['seconds_max']:.2f}) | "
              f"{p['seconds_per_million_records']:.2f} |")
    print(f"\nfit (medians): seconds = {f['intercept_seconds']:.3f} + "
          f"{f['slope_seconds_per_million_records']:.3f} × M records; R² = {f['r2']:.4f}; "
          f"largest residual {f['max_abs_relative_residual']:.1%}")
    print(f"fit (all {f_all['points']} runs): R² = {f_all['r2']:.4f}")
    print(f"wrote {RESULTS / name}.json and .svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
