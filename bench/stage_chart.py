"""Where a daily run's time goes, as a picture: one stacked bar per run set, by stage.

    uv run python bench/stage_chart.py bench/results/A.json [B.json ...] [--out chart.svg]

`bench/run` writes this chart beside every result (`<result>.svg`) and `--compare A B` writes
one of both sets. Each bar stacks the stages' medians (landing, staging, the scope, intermediate,
marts, commit, the rest of the run, then the gate: Great Expectations' import and validation,
then exports); the black whisker is the measured total's median and min-max (`daily_total`, or
`pipeline_run` without the gate), which the medians of the parts need not add up to exactly. The
bare DuckDB scans of the same input (`floor_scan`, `floor_extract`) are thin grey bars under
their set. A dashed line marks the target the set is held to: 20 s for issue #8's 500-node day
(`--nodes 500 --scale 27 --endpoints 2500 --days 1`), 1.25x the day alone for a run on history.
Drawn by hand (matplotlib is not a dependency), as bench/scaling.py's chart.
"""

from __future__ import annotations

import argparse
import json
from html import escape
from pathlib import Path

# stage -> (legend text, colour), in stacking order; `findings` is inside `marts`
STACK = {
    "import": ("import recon", "#c7c7c7"),
    "landing": ("landing", "#1f77b4"),
    "staging": ("staging", "#2ca02c"),
    "scope": ("scope", "#98df8a"),
    "intermediate": ("intermediate", "#ff7f0e"),
    "marts": ("marts", "#9467bd"),
    "commit": ("commit", "#8c564b"),
    "run_other": ("rest of the run", "#bcbd22"),
    "gx_import": ("gate: wait for GX import", "#f7b6d2"),
    "validation": ("gate: validation", "#d62728"),
    "exports": ("exports", "#17becf"),
}
FLOORS = {"scan": "floor: bare DuckDB scan", "extract": "floor: DuckDB extract of a few fields"}


def _targets():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_targets", Path(__file__).with_name(
        "targets.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TARGETS = _targets()  # bench/targets.py: issue #8's targets, in one place
DAY_RATIO = TARGETS.DAY_RATIO
HISTORY_FACTOR = TARGETS.HISTORY_FACTOR


def _median(stats: dict, key: str) -> float | None:
    v = (stats.get(key) or {}).get("median")
    return float(v) if v is not None else None


def _bar(label: str, run: dict) -> dict:
    stages = run["stages"]
    parts = [(k, v) for k in STACK if (v := _median(stages, k))]
    total = "daily_total" if _median(stages, "daily_total") else "pipeline_run"
    t = stages.get(total) or {}
    return {"label": label, "parts": parts, "total": total,
            "whisker": (t.get("median"), t.get("min"), t.get("max"))}


def rows_of(res: dict, name: str) -> tuple[list[dict], tuple[float, str] | None]:
    """Bars of one result file (a day's run sets, or day 1 / day N alone / day N on history),
    each followed by its floors; and the target line (seconds, text) it is held to, if any."""
    rows: list[dict] = []
    target = None
    if "run" in res:
        rows.append(_bar(name, res["run"]))
        for k, text in FLOORS.items():
            if (res.get("floor") or {}).get(k):
                rows.append({"label": text, "floor": res["floor"][k]["median"]})
        fl = TARGETS.floor_extract(res)
        if TARGETS.is_target_day(res.get("params") or {}) and fl:
            target = (DAY_RATIO * fl, f"target: the whole day in {DAY_RATIO:g}x floor_extract")
    h = res.get("history")
    if h:
        rows.append(_bar(f"{name}: day 1", h["day1"]))
        if h.get("dayN_alone"):
            alone = _bar(f"{name}: day {h['day_n']} alone", h["dayN_alone"])
            rows.append(alone)
            if alone["whisker"][0]:
                target = (HISTORY_FACTOR * alone["whisker"][0],
                          f"{HISTORY_FACTOR}x day {h['day_n']} alone")
        rows.append(_bar(f"{name}: day {h['day_n']} on {h.get('history_days') or h['day_n'] - 1}"
                         " days", h["dayN"]))
    return rows, target


def stage_svg(rows: list[dict], title: str, target: tuple[float, str] | None = None) -> str:
    """The chart of `rows` (see rows_of) as SVG text."""
    R, T, BAR, FLOOR, GAP = 150, 50, 26, 9, 10
    L = int(min(420, max(150, 16 + 6.6 * max(len(r["label"]) for r in rows))))  # the labels' width
    W = L + 580 + R
    heights = [FLOOR if "floor" in r else BAR for r in rows]
    legend_rows = -(-len(STACK) // 4)
    H = T + sum(heights) + GAP * len(rows) + 50 + 18 * legend_rows
    top = max([r["floor"] for r in rows if "floor" in r]
              + [max(sum(v for _, v in r["parts"]), r["whisker"][2] or 0) for r in rows
                 if "parts" in r]
              + ([target[0]] if target else []) + [1.0]) * 1.08

    def sx(s: float) -> float:
        return L + (W - L - R) * s / top

    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            'font-family="sans-serif" font-size="12">'),
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    axis_y = H - 40 - 18 * legend_rows
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1e9) if top / s <= 12)
    tick = 0.0
    while tick <= top:
        x = sx(tick)
        out.append(f'<line x1="{x:.1f}" y1="{T - 6}" x2="{x:.1f}" y2="{axis_y}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle">{tick:g}</text>')
        tick += step
    out.append(f'<text x="{(L + W - R) / 2}" y="{axis_y + 32}" text-anchor="middle">'
               'seconds (medians stacked; whisker: the total, median and min-max)</text>')
    y = T
    for r, h in zip(rows, heights):
        muted = ' fill="#555" font-size="11"' if "floor" in r else ""
        out.append(f'<text x="{L - 8}" y="{y + h / 2 + 4:.1f}" text-anchor="end"{muted}>'
                   f'{escape(r["label"])}</text>')
        if "floor" in r:
            out.append(f'<rect class="floor" x="{L}" y="{y}" width="{sx(r["floor"]) - L:.2f}" '
                       f'height="{h}" fill="#999"><title>{r["floor"]:.2f} s</title></rect>')
            out.append(f'<text x="{sx(r["floor"]) + 4:.1f}" y="{y + h - 1}" font-size="10" '
                       f'fill="#555">{r["floor"]:.2f} s</text>')
        else:
            x = float(L)
            for k, v in r["parts"]:
                w = sx(v) - L
                out.append(f'<rect class="stage" data-stage="{k}" data-seconds="{v:.4f}" '
                           f'x="{x:.2f}" y="{y}" width="{w:.2f}" height="{h}" '
                           f'fill="{STACK[k][1]}"><title>{STACK[k][0]}: {v:.2f} s</title></rect>')
                if w > 34:
                    out.append(f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 4:.1f}" '
                               f'text-anchor="middle" font-size="10" fill="white">{v:.1f}</text>')
                x += w
            med, lo, hi = r["whisker"]
            if med is not None:
                mid = y + h / 2
                out.append(f'<line class="whisker" x1="{sx(lo):.2f}" y1="{mid}" x2="{sx(hi):.2f}" '
                           f'y2="{mid}" stroke="black"/>')
                out.append(f'<line x1="{sx(med):.2f}" y1="{y - 3}" x2="{sx(med):.2f}" '
                           f'y2="{y + h + 3}" stroke="black" stroke-width="2"/>')
                out.append(f'<text x="{max(sx(hi), x) + 5:.1f}" y="{mid + 4}">'
                           f'{med:.2f} s ({r["total"]})</text>')
        y += h + GAP
    if target:
        x = sx(target[0])
        out.append(f'<line class="target" x1="{x:.2f}" y1="{T - 10}" x2="{x:.2f}" y2="{axis_y}" '
                   'stroke="#c33" stroke-dasharray="6 4" stroke-width="1.5"/>')
        out.append(f'<text x="{x - 4:.1f}" y="{T - 14}" text-anchor="end" fill="#c33">'
                   f'{escape(target[1])}: {target[0]:.2f} s</text>')
    for i, (_k, (text, colour)) in enumerate(STACK.items()):
        lx, ly = L + (i % 4) * 160, axis_y + 48 + 18 * (i // 4)
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 16}" y="{ly}">{escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def chart(paths: list[Path]) -> str:
    """The chart of result files (bench/run's JSON), their bars in the order given."""
    rows, target, keys, shas, m = [], None, [], [], {}
    for p in paths:
        res = json.loads(Path(p).read_text())
        label = (res.get("params") or {}).get("label")
        shas.append(f"{res.get('sha', '?')}{'-dirty' if res.get('dirty') else ''}")
        name = f"{label or res.get('key', Path(p).stem)} ({shas[-1][:7]})"
        r, t = rows_of(res, name)
        rows += r
        target = target or t
        keys.append(res.get("key", "?"))
        m = res.get("machine") or m
    title = (f"{', '.join(dict.fromkeys(keys))}: where the time goes "
             f"({m.get('cpu', '?')} x{m.get('cpus', '?')}, DuckDB {m.get('duckdb', '?')})")
    return stage_svg(rows, title, target)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/stage_chart.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path, help="bench/run result JSON files")
    ap.add_argument("--out", type=Path, help="SVG to write (default: beside the first result)")
    a = ap.parse_args(argv)
    out = a.out or a.results[0].with_suffix(".svg")
    out.write_text(chart(a.results))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
