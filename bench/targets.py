"""Issue #8's targets, in one place: each benchmark checks its result against them.

`bench/run`, `bench/flow.py` and `bench/collector.py` print a "targets" block after their
table (met / MISSED, the measured value, the limit) and keep it in their JSON under "targets";
`bench/stage_chart.py` draws the 20 s line from here. With `--check`, a missed target makes
the command exit 1. Targets beaten easily are set tighter than the issue's, as it asks
(README.md, "Performance"): the peak at 1.5 GiB (the issue's 2 GiB), the collector at 10,000
events/s (the issue's 5,000). Reconciliation after landing is held to the issue's 3x
`floor_extract`, a floor that parses each document once, as a bare scan needs (parsing once
per field is 1.5-1.9x slower and would flatter the ratio; bench/README.md).
"""

from __future__ import annotations

TARGET_DAY = {"nodes": 500, "scale": 27, "endpoints": 2500, "days": 1}  # bench/run's parameters
DAY_SECONDS = 20.0  # the 500-node day's daily run, wall
PEAK_MIB = 1536.0  # a daily run's peak RSS (the 2 GiB, tightened: 1,074-1,511 MiB measured)
FLOOR_RATIO = 3.0  # reconciliation after landing / floor_extract (the issue's; 2.56-3.02 measured)
HISTORY_FACTOR = 1.25  # day N on history against day N alone
COLLECTOR_EVENTS_PER_S = 10_000.0  # one core (the 5,000, tightened: 15,576 measured)
COLLECTOR_RSS_SLOPE = 1.0  # MiB of RSS per million events after warm-up: flat


def _t(name: str, value, limit: float, unit: str, at_most: bool = True) -> dict | None:
    if value is None:
        return None
    met = value <= limit if at_most else value >= limit
    return {"target": name, "value": float(value), "limit": limit, "unit": unit,
            "at_most": at_most, "met": bool(met)}


def _median(run: dict, stage: str):
    return ((run.get("stages") or {}).get(stage) or {}).get("median")


def is_target_day(params: dict) -> bool:
    return (all(params.get(k) == v for k, v in TARGET_DAY.items()) and not params.get("input")
            and not params.get("history_only"))


def check_run(res: dict) -> list[dict]:
    """The targets a `bench/run` result is held to."""
    out = []
    params = res.get("params") or {}
    run = res.get("run")
    if run:
        if is_target_day(params):
            out.append(_t("500-node day: the pipeline (land, build, commit)",
                          _median(run, "pipeline_run"), DAY_SECONDS, "s"))
            if params.get("validation", True):
                out.append(_t("500-node day: with the gate and exports",
                              _median(run, "daily_total"), DAY_SECONDS, "s"))
            # at scale: on a small fleet the build's fixed part dwarfs a floor of milliseconds
            out.append(_t("reconciliation after landing / floor_extract",
                          (res.get("derived") or {}).get("reconciliation / floor_extract"),
                          FLOOR_RATIO, "x"))
        out.append(_t("peak RSS of the daily run", (run.get("peak_rss_mib") or {}).get("process"),
                      PEAK_MIB, "MiB"))
    h = res.get("history")
    if h and h.get("dayN_alone"):
        key = "daily_total" if _median(h["dayN"], "daily_total") else "pipeline_run"
        n, alone = _median(h["dayN"], key), _median(h["dayN_alone"], key)
        if n and alone:
            out.append(_t(f"day {h['day_n']} on {h.get('history_days')} days of history / "
                          f"the day alone ({key})", n / alone, HISTORY_FACTOR, "x"))
        out.append(_t(f"peak RSS of day {h['day_n']} on history",
                      (h["dayN"].get("peak_rss_mib") or {}).get("process"), PEAK_MIB, "MiB"))
    return [t for t in out if t]


def check_flow(key_params: dict, summary: dict) -> list[dict]:
    """The targets a `bench/flow.py` result is held to (the target day only)."""
    if not is_target_day(key_params):
        return []
    return [t for t in [_t("500-node day: the Prefect daily flow (build, gate, exports, summary)",
                           (summary.get("flow") or {}).get("median"), DAY_SECONDS, "s")] if t]


def check_collector(summary: dict) -> list[dict]:
    """The targets a `bench/collector.py` result is held to."""
    return [t for t in [
        _t("collector: events per second on one core", summary.get("events_per_second"),
           COLLECTOR_EVENTS_PER_S, "events/s", at_most=False),
        _t("collector: RSS growth after warm-up", summary.get(
            "rss_slope_mib_per_million_events_after_warmup"), COLLECTOR_RSS_SLOPE,
           "MiB per M events"),
    ] if t]


def report(targets: list[dict]) -> str:
    """The block printed after a benchmark's table."""
    if not targets:
        return "targets: none apply to these parameters"
    lines = ["targets (issue #8; README.md, Performance):"]
    for t in targets:
        op = "<=" if t["at_most"] else ">="
        lines.append(f"  {'met   ' if t['met'] else 'MISSED'}  {t['target']}: "
                     f"{t['value']:,.2f} {t['unit']} ({op} {t['limit']:,.2f})")
    return "\n".join(lines)
