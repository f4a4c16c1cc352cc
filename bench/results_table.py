"""The results table of bench/README.md, regenerated from the result files `bench/run` writes.

    uv run python bench/results_table.py                 # print the table (Markdown)
    uv run python bench/results_table.py --write         # ... and put it in bench/README.md
    uv run python bench/results_table.py --results DIR --readme FILE --write

Reads every `bench/results/*.json` that `bench/run` (bench/harness.py) wrote with a daily run
in it (`"run"`; the backfill, flow, collector and history-only results have other shapes and
are left out) and prints one row per file, oldest first: the label, the date, the machine and
its load average (at the start and at the end of the set), the fleet, the medians of the
pipeline (`pipeline_run`) and of the whole daily run (`daily_total`: imports, pipeline, gate,
exports), the floor (`floor_extract`: a bare DuckDB extract of a few fields of the same landed
files, measured in the same run), each as a ratio to that floor, and the peak memory.

Seconds differ 2x from host to host and day to day here; the ratios to the floor measured in
the same run are what compares across rows. With `--write` the table replaces what stands
between `<!-- results:begin -->` and `<!-- results:end -->` in the README, nothing else.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"

COLUMNS = ["label", "date", "machine (load start → end)", "nodes", "scale", "days", "runs",
           "pipeline s", "whole run s", "floor_extract s", "pipeline / floor",
           "whole run / floor", "after landing / floor", "peak MiB"]


def _median(section: dict | None, key: str):
    return ((section or {}).get(key) or {}).get("median")


def _ratio(x, floor):
    return x / floor if x is not None and floor else None


def _s(x, digits: int = 2) -> str:
    return "" if x is None else f"{x:,.{digits}f}"


def _x(x) -> str:
    return "" if x is None else f"{x:.2f}×"


def _load(machine: dict, key: str) -> str:
    la = machine.get(key)
    return f"{la[0]:.1f}" if isinstance(la, (list, tuple)) and la else "?"


def row(path: Path, res: dict) -> dict:
    """The table's values for one result file (numbers unformatted)."""
    params = res.get("params") or {}
    run = res["run"]
    machine = res.get("machine") or {}
    floor = _median(res.get("floor"), "extract")
    pipeline = _median(run.get("stages"), "pipeline_run")
    whole = _median(run.get("stages"), "daily_total")
    after_landing = (res.get("derived") or {}).get("reconciliation_after_landing_s")
    label = params.get("label") or path.stem
    sha = (res.get("sha") or "")[:7]
    cpu = machine.get("cpu")
    if cpu and machine.get("cpus"):
        cpu = f"{cpu} ×{machine['cpus']}"
    load = (f"load {_load(machine, 'loadavg_start')} → {_load(machine, 'loadavg')}"
            if machine.get("loadavg_start") or machine.get("loadavg") else "")
    return {
        "label": f"{label} ({sha}{'-dirty' if res.get('dirty') else ''})" if sha else label,
        "time": res.get("time") or "",
        "date": (res.get("time") or "")[:10],
        "machine": ", ".join(x for x in (cpu, load) if x) or "not recorded",
        "nodes": "input" if params.get("input") else params.get("nodes"),
        "scale": params.get("scale"),
        "days": params.get("days"),
        "runs": run.get("runs", params.get("runs")),
        "pipeline_s": pipeline,
        "whole_run_s": whole,
        "floor_extract_s": floor,
        "pipeline_ratio": _ratio(pipeline, floor),
        "whole_run_ratio": _ratio(whole, floor),
        "after_landing_ratio": _ratio(after_landing, floor),
        "peak_mib": (run.get("peak_rss_mib") or {}).get("process"),
    }


def load_rows(results: Path) -> list[dict]:
    """One row per daily-run result file in `results`, oldest first."""
    rows = []
    for p in sorted(results.glob("*.json")):
        try:
            res = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            print(f"skipped {p.name}: {e}", file=sys.stderr)
            continue
        if isinstance(res, dict) and res.get("run") and res.get("params") is not None:
            rows.append(row(p, res))
    return sorted(rows, key=lambda r: (r["time"], r["label"]))


def _cell(v) -> str:
    return "" if v is None else str(v).replace("|", "\\|")


def table(rows: list[dict]) -> str:
    """The Markdown table of `rows`."""
    out = ["| " + " | ".join(COLUMNS) + " |",
           "|" + "|".join("---" if i < 3 else "---:" for i in range(len(COLUMNS))) + "|"]
    for r in rows:
        scale = r["scale"]
        if isinstance(scale, float) and scale.is_integer():
            scale = int(scale)
        cells = [r["label"], r["date"], r["machine"], r["nodes"], scale, r["days"], r["runs"],
                 _s(r["pipeline_s"]), _s(r["whole_run_s"]), _s(r["floor_extract_s"], 3),
                 _x(r["pipeline_ratio"]), _x(r["whole_run_ratio"]), _x(r["after_landing_ratio"]),
                 _s(r["peak_mib"], 0)]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if not rows:
        out.append("| " + " | ".join(["(no results)"] + [""] * (len(COLUMNS) - 1)) + " |")
    return "\n".join(out)


def replace_block(text: str, block: str) -> str:
    """`text` with what stands between the markers replaced by `block` (markers kept)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {BEGIN} … {END} block")
    return text[:start + len(BEGIN)] + "\n" + block.rstrip("\n") + "\n" + text[end:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench/results_table.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=HERE / "results",
                    help="folder of bench/run's result files (default: bench/results)")
    ap.add_argument("--readme", type=Path, default=HERE / "README.md",
                    help="the file whose results block --write replaces (default: bench/README.md)")
    ap.add_argument("--write", action="store_true", help="replace the README's results block")
    a = ap.parse_args(argv)
    md = table(load_rows(a.results))
    print(md)
    if a.write:
        try:
            a.readme.write_text(replace_block(a.readme.read_text(), md))
        except ValueError as e:
            print(f"{a.readme}: {e}", file=sys.stderr)
            return 2
        print(f"\nwritten: {a.readme}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
