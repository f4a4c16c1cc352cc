"""bench/shards.py (cost per shard-day as shards grow, the fleet's wall time with workers) on a
tiny grid: two fleets (1 and 2 clusters of 2 nodes sharing one account), both modes (routed:
the named shards take their provider rows from the `__unassigned__` warehouse landed first;
whole: each lands every provider file), the sequential pass (one worker) through the command
line, and the two-shard fleet once through a pool of two.

What the harness reports must add up with what recon/shards.py says a shard lands: each
cluster's `k8s/cluster=<c>/` files in the one shard naming it (`keeps_path`), so the named
shards' Kubernetes records sum to the unsharded run's; every file outside a `cluster=` folder
(the account's provider files) in every shard of the whole mode, and in the routed mode only in
`__unassigned__`, the named shards taking a part of its rows."""

from __future__ import annotations

import json
import statistics
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

from tests.bench_modules import load

SVG = "{http://www.w3.org/2000/svg}"


_load = load  # bench/<name>.py as a module


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("shards")
    m = _load("shards")
    out = root / "out"
    args = ["--shards", "1,2", "--workers", "1", "--nodes", "2", "--scale", "1", "--endpoints",
            "1", "--runs", "1", "--no-floor", "--cache", str(root / "cache"), "--out", str(out)]
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert m.main(args) == 0
    [js] = out.glob("shards-*.json")
    [svg] = out.glob("shards-*.svg")
    return {"m": m, "res": json.loads(js.read_text()), "svg": svg.read_text(),
            "stdout": buf.getvalue(), "cache": root / "cache"}


def _points(bench, mode: str = "routed") -> list[dict]:
    return bench["res"]["modes"][mode]["points"]


@pytest.mark.parametrize("mode", ["routed", "whole"])
def test_every_fleet_run_ties_out_and_the_shards_bills_add_up_to_the_accounts(bench, mode):
    res = bench["res"]
    assert [p["shards"] for p in _points(bench, mode)] == [1, 2]
    assert res["workers"] == [1]
    for p in _points(bench, mode):
        assert p["tieout_ok"] is True
        for rep in p["runs"]:
            assert [f["workers"] for f in rep["fleets"]] == [1]
            for f in rep["fleets"]:
                assert sorted(f["named"]) == [f"s{k}" for k in range(p["shards"])]
                billed = {s: Decimal(v) for s, v in f["shards_billed"].items()}
                assert set(billed) == {*f["named"], "__unassigned__"}
                assert sum(billed.values(), Decimal(0)) == Decimal(f["account_billed"]) > 0


def test_each_shard_lands_the_whole_accounts_provider_files_and_its_own_clusters_only(bench):
    for p in _points(bench, "whole"):
        for rep in p["runs"]:
            single = rep["single"]["landing"]
            for f in rep["fleets"]:
                named = list(f["named"].values())
                # provider files: every shard lands all of them (recon/shards.py, keeps_path)
                for r in [*named, f["unassigned"]]:
                    assert r["landing"]["provider"] == {**r["landing"]["provider"],
                                                        "records": single["provider"]["records"],
                                                        "files": single["provider"]["files"]}
                    assert r["records_in"] == (r["landing"]["provider"]["records"]
                                               + r["landing"]["k8s"]["records"])
                # Kubernetes files: each cluster's in exactly one shard; unassigned owns none here
                assert sum(r["landing"]["k8s"]["records"] for r in named) == \
                    single["k8s"]["records"] > 0
                assert f["unassigned"]["landing"]["k8s"]["files"] == 0
        assert p["single"]["provider_files"] == p["input"]["provider_files"]
    # the growth fit through two points is the line through them
    g = bench["res"]["modes"]["whole"]["growth_with_shards"]["landing_provider_seconds"]
    one, two = (p["per_shard_day"]["landing_provider_seconds"] for p in _points(bench, "whole"))
    assert g["per_shard"] == pytest.approx(two - one) and g["intercept"] == pytest.approx(2 * one - two)
    # two clusters' pulls side by side: the two-shard fleet's account holds more provider records
    one, two = (p["single"]["provider_records"] for p in _points(bench, "whole"))
    assert two > one


def test_routed_the_account_lands_once_and_each_shard_takes_a_part_of_it(bench):
    for p in _points(bench):
        for rep in p["runs"]:
            single = rep["single"]["landing"]
            for f in rep["fleets"]:
                named = list(f["named"].values())
                landed = f["account_landing"]
                # __unassigned__ lands every provider file once, first, and builds after
                assert landed["landing"]["provider"]["records"] == single["provider"]["records"]
                assert landed["landing"]["provider"]["files"] == single["provider"]["files"]
                assert "staging" not in landed["stages"] and "staging" in f["unassigned"]["stages"]
                assert f["unassigned"]["landing"]["provider"]["records"] == \
                    single["provider"]["records"]  # unchanged: counted, not read again
                for r in named:
                    assert r["landing"]["provider"]["files"] == 0  # none landed from disk
                    t = r["taken"]
                    assert 0 < t["records"] < t["account_records"] and r["take_seconds"] > 0
                    assert r["take_seconds"] <= r["stages"]["load"]
                assert sum(r["landing"]["k8s"]["records"] for r in named) == \
                    single["k8s"]["records"] > 0


def test_cost_per_shard_day_is_the_median_of_the_named_shards_of_the_sequential_pass(bench):
    for p in _points(bench):
        seq = [f for rep in p["runs"] for f in rep["fleets"] if f["workers"] == 1]
        secs = [n["seconds"] for f in seq for n in f["named"].values()]
        assert p["per_shard_day"]["seconds"] == statistics.median(secs)
        assert p["unassigned"]["seconds"] == statistics.median(
            f["unassigned"]["seconds"] for f in seq)
        assert p["shard_days"] == p["shards"]  # one day of input: S shards are S shard-days
        assert p["fleet_cpu_seconds_per_shard_day"] == statistics.median(
            (sum(n["cpu_seconds"] for n in f["named"].values()) + f["unassigned"]["cpu_seconds"]
             + f["account_landing"]["cpu_seconds"]) / p["shards"] for f in seq)
        for f in seq:
            # sequential: the fleet's wall covers every child process one after another
            assert f["wall_seconds"] >= sum(n["process_wall"] for n in f["named"].values()) + \
                f["unassigned"]["process_wall"] + f["account_landing"]["process_wall"]
            for n in [*f["named"].values(), f["unassigned"], f["account_landing"]]:
                # the split of landing (and the take) is within the landing stage, which is
                # within the run
                split = (n["landing"]["provider"]["seconds"] + n["landing"]["k8s"]["seconds"]
                         + n["take_seconds"])
                assert 0 < split <= n["stages"]["load"] < n["seconds"] < n["process_wall"]


def test_the_table_and_the_chart_show_one_point_per_shard_count(bench):
    svg = ET.fromstring(bench["svg"])
    routed, whole = bench["stdout"].split("## whole")
    assert routed.startswith("## routed")
    rows, others = ([ln for ln in part.splitlines() if ln.startswith(("| 1 |", "| 2 |"))]
                    for part in (routed, whole))
    assert len(rows) == len(others) == 4  # per mode, the table and the breakdown, a row per S
    for p in _points(bench):
        row = next(r for r in rows if r.startswith(f"| {p['shards']} | {p['records_in']:,} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        d = p["per_shard_day"]
        assert cells[2] == f"{d['seconds']:.2f} ({d['cpu_seconds']:.2f})"
        assert cells[4] == f"{p['unassigned']['seconds'] + p['account_landing']['seconds']:.2f}"
        assert cells[5] == f"{p['fleet_wall_seconds']['1']:.2f}"
        assert cells[6] == f"{p['single']['seconds']:.2f}"
    for cls, key, mode in (("shard-day", lambda p: p["per_shard_day"]["seconds"], "routed"),
                           ("unsharded", lambda p: p["single"]["seconds"], "routed"),
                           ("fleet-w1", lambda p: p["fleet_wall_seconds"]["1"], "routed"),
                           ("shard-day-whole", lambda p: p["per_shard_day"]["seconds"], "whole"),
                           ("whole-w1", lambda p: p["fleet_wall_seconds"]["1"], "whole")):
        dots = [e for e in svg.iter(f"{SVG}circle") if e.get("class") == cls]
        assert [int(e.get("data-shards")) for e in dots] == [1, 2]
        assert [float(e.get("data-seconds")) for e in dots] == pytest.approx(
            [key(p) for p in _points(bench, mode)], abs=1e-4)
        # higher seconds is higher on the chart (smaller y)
        ys = {float(e.get("data-seconds")): float(e.get("cy")) for e in dots}
        lo, hi = min(ys), max(ys)
        assert lo == hi or ys[lo] > ys[hi]


def test_the_fleet_config_names_one_shard_per_cluster_and_the_fixed_scenarios_once(bench):
    from recon.config import load_config
    key = bench["res"]["key"]
    tree = bench["cache"] / key / "fleet-s2"
    assert load_config(tree / "recon.toml").shards == {"s0": ("c0",), "s1": ("c1",)}
    fixed = bench["m"].fixed_files()
    for c in ("c0", "c1"):
        names = {p.name for p in (tree / "k8s" / f"cluster={c}").iterdir()} | {
            p.name for p in (tree / "runpod" / f"pull={c}").iterdir()}
        # the account's own scenarios (balance, account bill, warm pool, serverless extras)
        assert (names & fixed == set()) == (c == "c1")
    assert "balance.json" in {p.name for p in (tree / "runpod" / "pull=c0").iterdir()}


def test_a_pool_of_two_runs_the_named_shards_side_by_side_and_unassigned_after_them(bench):
    m, key = bench["m"], bench["res"]["key"]
    f = m.fleet(bench["cache"] / key / "fleet-s2", bench["cache"] / key / "work-w2", 2, 2)
    assert f["tieout_ok"] and f["workers"] == 2 and sorted(f["named"]) == ["s0", "s1"]
    named = [n["process_wall"] for n in f["named"].values()]
    # the named shards overlap: their phase is shorter than the two children one after another
    assert max(named) <= f["named_wall_seconds"] < sum(named)
    # they wait for the account's landing, and unassigned's build for their claims
    assert f["wall_seconds"] >= (f["account_landing"]["process_wall"] + f["named_wall_seconds"]
                                 + f["unassigned"]["process_wall"])
    assert not (bench["cache"] / key / "work-w2").exists()  # the warehouses are removed


def test_the_scaling_grid_keeps_the_account_scenarios_and_their_rates_in_c0_only(bench):
    """bench/scaling.py's trees of K clusters: the serverless scenario's files are the account's
    (recon/simulate/serverless_extras.py, FILES and ENDPOINTS), so only c0 keeps them, and the
    merged config names each endpoint's rate once (TOML refuses a key defined twice)."""
    import tomllib

    from recon.simulate import serverless_extras
    from recon.simulate.fleet import ACCOUNT_FILES
    scaling = _load("scaling")
    assert set(serverless_extras.FILES) <= ACCOUNT_FILES
    parts = [bench["cache"] / bench["res"]["key"] / c for c in ("c0", "c1")]
    rates = tomllib.loads(scaling.merged_config(parts))["rates"]["serverless_per_second"]
    for c in parts:
        own = tomllib.loads((c / "recon.toml").read_text())["rates"]["serverless_per_second"]
        assert own.items() <= rates.items()
    assert set(serverless_extras.ENDPOINTS) <= set(rates)
