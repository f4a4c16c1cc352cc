"""bench/results_table.py: bench/README.md's results table, regenerated from bench/run's result
files, with every speed as a ratio to the floor measured in the same run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location("bench_results_table",
                                                  ROOT / "bench" / "results_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _stat(x: float) -> dict:
    return {"median": x, "min": x * 0.9, "max": x * 1.1}


def _result(label: str, time: str, nodes: int, scale: float, pipeline: float, total: float,
            floor: float, after_landing: float, peak: float) -> dict:
    """A result as bench/harness.py's main() writes it (the keys results_table reads, and some
    it does not)."""
    return {
        "key": f"n{nodes}-s{scale:g}-e2-d1-seed7", "sha": "0123456789", "dirty": False,
        "argv": ["--nodes", str(nodes), "--label", label], "root": "/x",
        "params": {"nodes": nodes, "scale": scale, "endpoints": 2, "days": 1, "seed": 7,
                   "input": None, "runs": 3, "label": label, "validation": True},
        "input": {"files": 24, "bytes": 5_000_000, "simulate_seconds": 1.4},
        "time": time,
        "run": {"runs": 3,
                "stages": {"landing": _stat(pipeline / 2), "pipeline_run": _stat(pipeline),
                           "daily_total": _stat(total)},
                "peak_rss_mib": {"landing": peak / 2, "process": peak}},
        "floor": {"scan": _stat(floor / 2), "extract": _stat(floor), "records": 1000,
                  "rss_mib": 150.0},
        "derived": {"reconciliation_after_landing_s": after_landing,
                    "reconciliation / floor_extract": after_landing / floor},
        "machine": {"cpu": "AMD EPYC", "cpus": 2, "loadavg_start": [0.5, 1.0, 1.0],
                    "loadavg": [2.25, 1.5, 1.0]},
        "targets": [],
    }


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    # written in the other order than they ran: the table is oldest first
    (d / "b.json").write_text(json.dumps(_result(
        "big", "2026-12-05T10:00:00Z", 500, 27, pipeline=20.0, total=24.0, floor=8.0,
        after_landing=10.0, peak=1100.0)))
    (d / "a.json").write_text(json.dumps(_result(
        "small", "2026-12-04T09:00:00Z", 100, 4, pipeline=3.0, total=6.0, floor=1.0,
        after_landing=1.5, peak=400.0)))
    # other benchmarks' results (a backfill's, a flow's) have no daily run: left out
    (d / "backfill-x.json").write_text(json.dumps({"modes": {}, "params": {}}))
    (d / "flow-x.json").write_text(json.dumps({"summary": {"flow": _stat(30.0)}}))
    return d


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_the_table_has_a_row_per_daily_run_with_ratios_to_its_own_floor(results):
    rt = _load()
    md = rt.table(rt.load_rows(results))
    lines = md.splitlines()
    header = _cells(lines[0])
    assert header == rt.COLUMNS
    rows = [dict(zip(header, _cells(line))) for line in lines[2:]]
    assert [r["label"] for r in rows] == ["small (0123456)", "big (0123456)"]
    small, big = rows
    assert small["date"] == "2026-12-04"
    assert small["machine (load start → end)"] == "AMD EPYC ×2, load 0.5 → 2.2"
    assert (small["nodes"], small["scale"], small["days"], small["runs"]) == ("100", "4", "1", "3")
    assert (small["pipeline s"], small["whole run s"], small["floor_extract s"]) == (
        "3.00", "6.00", "1.000")
    assert (small["pipeline / floor"], small["whole run / floor"],
            small["after landing / floor"]) == ("3.00×", "6.00×", "1.50×")
    assert small["peak MiB"] == "400"
    assert (big["nodes"], big["scale"]) == ("500", "27")
    assert (big["pipeline / floor"], big["whole run / floor"], big["after landing / floor"]) == (
        "2.50×", "3.00×", "1.25×")
    assert big["peak MiB"] == "1,100"


def test_a_run_without_a_floor_has_no_ratios(results):
    rt = _load()
    res = json.loads((results / "a.json").read_text())
    del res["floor"]
    (results / "a.json").write_text(json.dumps(res))
    small = next(r for r in rt.load_rows(results) if r["label"].startswith("small"))
    assert small["floor_extract_s"] is None
    assert small["pipeline_ratio"] is None and small["whole_run_ratio"] is None
    assert small["pipeline_s"] == 3.0


def test_write_replaces_only_the_block_between_the_markers(results, tmp_path, capsys):
    rt = _load()
    readme = tmp_path / "README.md"
    before = "# bench\n\nintro text\n\n<!-- results:begin -->\n"
    after = "<!-- results:end -->\n\n## Levers tried\n\n| a | b |\n|---|---|\n"
    readme.write_text(before + "| old | table |\n|---|---|\n| 1 | 2 |\n" + after)
    assert rt.main(["--results", str(results), "--readme", str(readme), "--write"]) == 0
    text = readme.read_text()
    assert text.startswith(before) and text.endswith(after)
    block = text[len(before):-len(after)]
    assert "old" not in block
    assert block == rt.table(rt.load_rows(results)) + "\n"
    assert capsys.readouterr().out.startswith("| label |")
    # a second write gives the same file
    rt.main(["--results", str(results), "--readme", str(readme), "--write"])
    assert readme.read_text() == text


def test_write_without_the_markers_changes_nothing(results, tmp_path):
    rt = _load()
    readme = tmp_path / "README.md"
    readme.write_text("# bench\n\nno block here\n")
    assert rt.main(["--results", str(results), "--readme", str(readme), "--write"]) == 2
    assert readme.read_text() == "# bench\n\nno block here\n"

