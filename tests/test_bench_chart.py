"""bench/stage_chart.py (the harness's picture of where a run's time goes) and bench/flow.py (the
daily flow timed as users run it)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.bench_modules import load

SVG = "{http://www.w3.org/2000/svg}"


_load = load  # bench/<name>.py as a module


def _run(medians: dict[str, float], total: str = "daily_total") -> dict:
    stages = {k: {"median": v, "min": v * 0.9, "max": v * 1.2} for k, v in medians.items()}
    t = sum(medians.values())
    stages[total] = {"median": t, "min": t * 0.95, "max": t * 1.1}
    stages["findings"] = {"median": 0.07, "min": 0.07, "max": 0.07}  # inside marts: not stacked
    return {"stages": stages}


def _rects(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter(f"{SVG}rect") if e.get("class") == cls]


def _lines(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter(f"{SVG}line") if e.get("class") == cls]


def _scale(svg: str) -> tuple[float, float]:
    """(x of 0 s, pixels per second) from the first bar's first stage and the widest one."""
    rects = _rects(svg, "stage")
    wide = max(rects, key=lambda r: float(r.get("width")))
    return float(rects[0].get("x")), float(wide.get("width")) / float(wide.get("data-seconds"))


TARGET_PARAMS = {"nodes": 500, "scale": 27.0, "endpoints": 2500, "days": 1, "input": None,
                 "history_only": False, "label": "x"}


def test_each_bar_stacks_the_stage_medians_in_order_at_one_scale_and_marks_the_target():
    c = _load("stage_chart")
    a = {"landing": 9.5, "staging": 4.4, "intermediate": 1.7, "marts": 0.4, "commit": 1.0,
         "run_other": 0.2, "gx_import": 2.0, "validation": 1.8, "exports": 0.25, "import": 0.15}
    b = {k: v * 1.3 for k, v in a.items()}
    res = {"run": _run(a), "params": TARGET_PARAMS,
           "floor": {"scan": {"median": 1.3}, "extract": {"median": 5.7}}}
    rows, target = c.rows_of(res, "a")
    rows += c.rows_of({"run": _run(b), "params": {**TARGET_PARAMS, "nodes": 100}}, "b")[0]
    # the whole day's target is 3x the floor_extract of the same run (5.7 s here)
    assert target == (pytest.approx(17.1), "target: the whole day in 3x floor_extract")
    svg = c.stage_svg(rows, "t", target)
    x0, px = _scale(svg)
    stages = _rects(svg, "stage")
    assert len(stages) == len(a) + len(b)  # findings (inside marts) is not stacked again
    for medians, bar in ((a, stages[:len(a)]), (b, stages[len(a):])):
        assert [r.get("data-stage") for r in bar] == [k for k in c.STACK if k in medians]
        x = x0
        for r in bar:  # contiguous, each as wide as its median at the chart's one scale
            assert float(r.get("x")) == pytest.approx(x, abs=0.02)
            assert float(r.get("width")) == pytest.approx(medians[r.get("data-stage")] * px, abs=0.02)
            x += float(r.get("width"))
        assert x - x0 == pytest.approx(sum(medians.values()) * px, abs=0.1)
    floors = _rects(svg, "floor")
    assert [float(f.get("width")) for f in floors] == pytest.approx([1.3 * px, 5.7 * px], abs=0.02)
    (line,) = _lines(svg, "target")
    assert float(line.get("x1")) == pytest.approx(x0 + 17.1 * px, abs=0.02)
    whiskers = _lines(svg, "whisker")  # the measured total's min-max, one per bar
    t = sum(a.values())
    assert float(whiskers[0].get("x1")) == pytest.approx(x0 + 0.95 * t * px, abs=0.02)
    assert float(whiskers[0].get("x2")) == pytest.approx(x0 + 1.1 * t * px, abs=0.02)


def test_only_the_target_day_gets_the_whole_day_line_and_history_gets_1_1x_the_day_alone():
    c = _load("stage_chart")
    m = {"landing": 3.0, "staging": 1.0}
    for params in ({**TARGET_PARAMS, "nodes": 100}, {**TARGET_PARAMS, "days": 2},
                   {**TARGET_PARAMS, "input": "/some/folder"}):
        rows, target = c.rows_of({"run": _run(m, "pipeline_run"), "params": params}, "x")
        assert target is None
        assert not _lines(c.stage_svg(rows, "t", target), "target")
    hist = {"history": {"day_n": 4, "history_days": 30, "day1": _run(m),
                        "dayN_alone": _run({"landing": 4.0, "staging": 2.0}),
                        "dayN": _run({"landing": 4.0, "staging": 2.0, "scope": 0.6})},
            "params": {**TARGET_PARAMS, "days": 4, "history_only": True}}
    rows, target = c.rows_of(hist, "h")
    assert [r["label"] for r in rows] == ["h: day 1", "h: day 4 alone", "h: day 4 on 30 days"]
    assert target[0] == pytest.approx(1.1 * 6.0)
    svg = c.stage_svg(rows, "t", target)
    x0, px = _scale(svg)
    assert float(_lines(svg, "target")[0].get("x1")) == pytest.approx(x0 + 6.6 * px, abs=0.02)
    assert "scope" in [r.get("data-stage") for r in _rects(svg, "stage")]


def test_the_chart_draws_every_stage_a_harness_run_reports(tmp_path):
    """A stage the harness times but the chart does not stack would vanish from the picture."""
    from recon.simulate import simulate

    h = _load("harness")
    c = _load("stage_chart")
    simulate(tmp_path / "sim", seed=3, days=1, nodes=4, endpoints=2)
    (tmp_path / "sim" / "expected" / "ground_truth.json").unlink()
    run = h.child_run({"input": str(tmp_path / "sim"), "db": str(tmp_path / "b.duckdb"),
                       "day_from": "2026-06-01", "day_to": "2026-06-01",
                       "export_day": "2026-06-01", "validation": False, "exports": True})
    run["process_wall"] = 1.0
    res = {"key": "k", "sha": "abc", "dirty": False, "params": {"label": "l"},
           "machine": {"cpu": "cpu", "cpus": 2, "duckdb": "2"}, "run": h.summarise([run])}
    totals = {"pipeline_run", "daily_total", "process_wall", "findings"}
    timed = {k for k, v in res["run"]["stages"].items() if v["median"]} - totals
    assert timed <= set(c.STACK), timed - set(c.STACK)
    (tmp_path / "r.json").write_text(json.dumps(res))
    out = h.write_chart([tmp_path / "r.json"], tmp_path / "out" / "r.svg")
    svg = out.read_text()
    drawn = {r.get("data-stage"): float(r.get("data-seconds")) for r in _rects(svg, "stage")}
    assert set(drawn) == timed
    for k in timed:
        assert drawn[k] == pytest.approx(res["run"]["stages"][k]["median"], abs=1e-4)
    assert "l (abc)" in svg and "k: where the time goes" in svg


def test_the_flow_benchmark_times_a_real_flow_run_and_its_task_runs(tmp_path, monkeypatch):
    """bench/flow.py: one fresh process runs the daily flow on a temporary Prefect API; the
    task runs it reports are the flow's own, and they fit inside the flow's wall time."""
    from recon.simulate import simulate

    f = _load("flow")
    h = f._harness()
    monkeypatch.setattr(h, "CACHE", tmp_path)  # its warehouse and Prefect home: under tmp_path
    simulate(tmp_path / "sim", seed=3, days=1, nodes=3, endpoints=1)
    (tmp_path / "sim" / "expected" / "ground_truth.json").unlink()
    r = f.run_once(h, tmp_path / "sim", "2026-06-01", validation=False)
    # no gate (validation=False); the day's bill state, then the finance CSVs as the deployment
    # writes them
    assert set(r["tasks"]) == {"build_marts", "bill_states", "export_finance", "publish_summary"}
    assert all(v > 0 for v in r["tasks"].values())
    assert 0 <= r["orchestration"] < r["flow"] < r["process"]
    assert r["orchestration"] == pytest.approx(r["flow"] - sum(r["tasks"].values()))
    assert r["server_start"] > 0
    s = f.summarise(h, [r, {**r, "flow": r["flow"] + 2, "tasks": r["tasks"]}])
    assert s["flow"]["min"] == r["flow"] and s["flow"]["max"] == r["flow"] + 2
    assert s["task build_marts"]["median"] == r["tasks"]["build_marts"]


def test_targets_hold_each_benchmark_to_ratios_of_the_floor_of_the_same_run():
    t = _load("targets")
    run = _run({"landing": 10.0, "staging": 5.0, "commit": 1.0}, "pipeline_run")  # 16 s
    run["stages"]["daily_total"] = {"median": 23.7, "min": 23.2, "max": 23.8}
    run["peak_rss_mib"] = {"process": 1074.0}
    # floor_extract 7 s: the pipeline is 16/7 = 2.29x (<= 2.5), the whole day 23.7/7 = 3.39x (> 3)
    res = {"params": {**TARGET_PARAMS, "validation": True, "exports": True}, "run": run,
           "floor": {"extract": {"median": 7.0}}}
    got = {x["target"]: x for x in t.check_run(res)}
    day = got["500-node day: the pipeline (land, build, commit) / floor_extract"]
    whole = got["500-node day: the whole daily run / floor_extract"]
    assert day["value"] == pytest.approx(16 / 7) and day["met"]
    assert whole["value"] == pytest.approx(23.7 / 7) and not whole["met"]
    assert got["peak RSS of the daily run"]["met"]
    text = t.report(list(got.values()))
    assert text.count("MISSED") == 1 and "3.39 x (<= 3.00)" in text
    head = t.ratios(res)
    assert head["landing"] == pytest.approx(10 / 7) and head["after_landing"] == pytest.approx(5 / 7)
    # the same seconds on a host twice as slow (floor 14 s): every ratio is met
    slow = {**res, "floor": {"extract": {"median": 14.0}}}
    assert all(x["met"] for x in t.check_run(slow))
    # no floor measured (--no-floor): the speed targets cannot be judged, the peak still is
    nofloor = {x["target"] for x in t.check_run({**res, "floor": {}})}
    assert nofloor == {"peak RSS of the daily run"}
    # 100 nodes: the pipeline alone at 3x; 16/5 = 3.2x is missed
    small = t.check_run({**res, "params": {**TARGET_PARAMS, "nodes": 100, "scale": 4},
                         "floor": {"extract": {"median": 5.0}}})
    assert [(x["target"], x["met"]) for x in small] == [
        ("100-node run: the pipeline / floor_extract", False)]
    # another fleet: no target applies
    assert t.check_run({**res, "params": {**TARGET_PARAMS, "nodes": 40}}) == []
    # history: day N against the day alone
    hist = {"params": {**TARGET_PARAMS, "history_only": True}, "history": {
        "day_n": 4, "history_days": 30, "dayN": {**_run({"landing": 13.0}), "peak_rss_mib": {"process": 1600}},
        "dayN_alone": _run({"landing": 10.0})}}
    (ratio, peak) = t.check_run(hist)
    assert ratio["value"] == pytest.approx(1.3) and not ratio["met"] and not peak["met"]
    hist["history"]["dayN"] = {**_run({"landing": 10.9}), "peak_rss_mib": {"process": 900}}
    assert all(x["met"] for x in t.check_run(hist))  # 1.09x <= 1.1
    # the collector: at least, not at most
    ok, flat = t.check_collector({"events_per_second": 15576,
                                  "rss_slope_mib_per_million_events_after_warmup": 0.0})
    assert ok["met"] and flat["met"] and not ok["at_most"]
    assert not t.check_collector({"events_per_second": 4000,
                                  "rss_slope_mib_per_million_events_after_warmup": 3})[0]["met"]
    assert t.check_flow({**TARGET_PARAMS, "nodes": 100},
                        {"flow": {"median": 5}, "floor_extract": 1.0}) == []
    assert not t.check_flow(TARGET_PARAMS, {"flow": {"median": 29.7}, "floor_extract": 5.0})[0]["met"]
    assert t.check_flow(TARGET_PARAMS, {"flow": {"median": 14.9}, "floor_extract": 5.0})[0]["met"]
