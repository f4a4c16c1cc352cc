"""The speed and memory targets, in one place: each benchmark checks its result against them.

`bench/run`, `bench/flow.py` and `bench/collector.py` print a "targets" block after their
table (met / MISSED, the measured value, the limit) and keep it in their JSON under "targets";
`bench/stage_chart.py` draws the whole-day line from here. With `--check`, a missed target
makes the command exit 1.

Speed is a ratio to `floor_extract` measured in the same run on the same landed files (a bare
DuckDB extract of a few fields of every document, in one parse of it): the hosts this runs on
differ 2x from one day to the next, so seconds compared across runs say little
(bench/README.md, "Report ratios to the floor of the same run"). Memory is absolute: a Job's
memory limit is.
"""

from __future__ import annotations

TARGET_DAY = {"nodes": 500, "scale": 27, "endpoints": 2500, "days": 1}  # bench/run's parameters
SMALL_NODES = 100  # the smaller fleet the pipeline's ratio is also held at (any scale and days)
DAY_RATIO = 3.0  # the whole daily run (land, build, gate, exports) / floor_extract, 500 nodes
PIPELINE_RATIO = 2.5  # the pipeline alone (land, build, commit) / floor_extract, 500 nodes
SMALL_PIPELINE_RATIO = 3.0  # the pipeline alone / floor_extract, 100 nodes
PEAK_MIB = 1536.0  # a daily run's peak RSS
HISTORY_FACTOR = 1.1  # day N on history against day N alone
COLLECTOR_EVENTS_PER_S = 10_000.0  # one core
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


def is_small_fleet(params: dict) -> bool:
    return (params.get("nodes") == SMALL_NODES and not params.get("input")
            and not params.get("history_only"))


def floor_extract(res: dict):
    return ((res.get("floor") or {}).get("extract") or {}).get("median")


def ratios(res: dict) -> dict:
    """The headline: each stage that has a target, as a multiple of this run's floor_extract."""
    run, fl = res.get("run") or {}, floor_extract(res)
    if not run or not fl:
        return {}
    out = {}
    for stage in ("daily_total", "pipeline_run", "landing"):
        v = _median(run, stage)
        if v:
            out[stage] = v / fl
    after = sum(_median(run, k) or 0 for k in ("staging", "scope", "intermediate", "marts"))
    if after:
        out["after_landing"] = after / fl
    return out


def check_run(res: dict) -> list[dict]:
    """The targets a `bench/run` result is held to."""
    out = []
    params = res.get("params") or {}
    run = res.get("run")
    r = ratios(res)
    if run:
        if is_target_day(params):
            if params.get("validation", True) and params.get("exports", True):
                out.append(_t("500-node day: the whole daily run / floor_extract",
                              r.get("daily_total"), DAY_RATIO, "x"))
            out.append(_t("500-node day: the pipeline (land, build, commit) / floor_extract",
                          r.get("pipeline_run"), PIPELINE_RATIO, "x"))
            out.append(_t("peak RSS of the daily run",
                          (run.get("peak_rss_mib") or {}).get("process"), PEAK_MIB, "MiB"))
        elif is_small_fleet(params):
            out.append(_t("100-node run: the pipeline / floor_extract",
                          r.get("pipeline_run"), SMALL_PIPELINE_RATIO, "x"))
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
    if not is_target_day(key_params) or not summary.get("floor_extract"):
        return []
    return [t for t in [_t("500-node day: the Prefect daily flow / floor_extract",
                           (summary.get("flow") or {}).get("median") / summary["floor_extract"],
                           DAY_RATIO, "x")] if t]


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
    lines = ["targets (bench/targets.py; speed as a multiple of this run's floor_extract):"]
    for t in targets:
        op = "<=" if t["at_most"] else ">="
        lines.append(f"  {'met   ' if t['met'] else 'MISSED'}  {t['target']}: "
                     f"{t['value']:,.2f} {t['unit']} ({op} {t['limit']:,.2f})")
    return "\n".join(lines)
