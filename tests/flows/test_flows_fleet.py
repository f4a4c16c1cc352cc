"""The fleet flow end to end, as an operator runs it: a real `prefect server`, the two deployments
of prefect.yaml it needs (`fleet-reconciliation` and the daily flow's `shard`), a real process
worker on `recon-process`, all on 127.0.0.1.

The fleet: three simulated clusters (`recon simulate`, seeds 7, 8, 9: disjoint Runpod pods,
nodes and pod uids) laid out as docs/scaling-out.md section 1 (each cluster's Kubernetes files
under `k8s/cluster=<c>/`), sharing ONE Runpod account: one `runpod/` folder whose bills hold
every cluster's lines (a Runpod pull returns the account's records, whichever cluster the pod
serves). `[shards]`: eu = gpu-eu, us = gpu-us + gpu-us2.

One parent run reconciles the day: `__unassigned__` lands the landing area, then eu and us at
the same time (their child runs overlap in time), each taking its provider rows from that
warehouse, then `__unassigned__` builds with their claims, then the tie-out. A second parent, run beside it, has an
unwritable warehouse for shard us and fails naming the shard and the day. Slow (a server, a
worker and a flow-run process per run): `-m 'not slow'` skips it locally; CI runs it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from datetime import date, datetime
from decimal import Decimal
from functools import partial
from pathlib import Path

import duckdb
import httpx
import pytest

from recon.shards import UNASSIGNED
from recon.simulate import simulate
from recon.simulate.fleet import ACCOUNT_BILL as ACCOUNT
from recon.simulate.fleet import ACCOUNT_FILES, merged_config, place_cluster
from tests.fakes.fault_proxy import free_port
from tests.flows.duck import q
from tests.flows.prefect_server import (
    TERMINAL,
    environments,
    prefect_cli,
    start_server,
    start_worker,
    stop,
    tail,
)

DAY = "2026-06-01"
CLUSTERS = {"gpu-eu": 7, "gpu-us": 8, "gpu-us2": 9}
SHARDS = {"eu": ["gpu-eu"], "us": ["gpu-us", "gpu-us2"]}

# the simulator's fixed scenarios the first world keeps; the account's hourly totals are rebuilt
# from every world's instead (_account_bill)
EXTRAS = ACCOUNT_FILES - {ACCOUNT}


# ------------------------------------------------------------------------------------ the fleet

def _merge_provider_file(dst: Path, src: Path) -> None:
    """`src` into the account's file of the same name: a JSON object's lists (`records`,
    `endpoints`, `networkVolumes`, ...) and a JSON list are concatenated, JSON lines appended;
    an identical file (the sample GPU catalog) is kept once."""
    if not dst.exists():
        shutil.copyfile(src, dst)
        return
    if dst.read_bytes() == src.read_bytes():
        return
    if src.suffix == ".jsonl":
        with dst.open("ab") as f:
            f.write(src.read_bytes())
        return
    a, b = json.loads(dst.read_text()), json.loads(src.read_text())
    if isinstance(a, list):
        merged = a + b
    else:
        merged = {k: (v + b[k] if isinstance(v, list) and isinstance(b.get(k), list) else v)
                  for k, v in a.items()}
    dst.write_text(json.dumps(merged, indent=1))


def _account_bill(sims: list[Path]) -> dict:
    """One account's hourly totals over every world: per bucket, the sum of the worlds' totals,
    less the lines of the fixed scenarios the other worlds do not keep (each world's total is
    the sum of its own lines, fixed scenarios included: the gate's `tieout.account_billing`,
    sql/queries/tieout__account_billing.sql, holds a bucket's total to the sum of its lines)."""
    out = json.loads((sims[0] / "runpod" / ACCOUNT).read_text())
    total = {r["startTime"]: 0.0 for r in out["records"]}
    for i, sim in enumerate(sims):
        for r in json.loads((sim / "runpod" / ACCOUNT).read_text())["records"]:
            total[r["startTime"]] += r["totalAmount"]
        lines = {}  # a line repeated in a file is one line (the loader keeps one per bucket)
        for f in (sorted((sim / "runpod").glob("billing-*.json")) if i else []):
            if f.name in EXTRAS:
                for r in json.loads(f.read_text())["records"]:
                    rid = r.get("podId") or r.get("serverlessId") or r.get("networkVolumeId")
                    lines[rid, r["startTime"]] = r["totalAmount"]
        for (_, start), amount in lines.items():
            total[start] -= amount
    for r in out["records"]:
        r["totalAmount"] = round(total[r["startTime"]], 10)
    out["metadata"]["totals"]["totalAmount"] = round(sum(total.values()), 10)
    return out


def build_fleet(root: Path) -> Path:
    """The landing tree: k8s/cluster=<c>/ per cluster (recon.simulate.fleet), runpod/ shared:
    one account's files, each the worlds' records together."""
    fleet = root / "fleet"
    (fleet / "runpod").mkdir(parents=True)
    configs, sims = [], []
    for i, (name, seed) in enumerate(CLUSTERS.items()):
        sim = root / f"sim-{name}"
        simulate(sim, seed=seed, days=1, nodes=2, endpoints=1, start_day=date(2026, 6, 1))
        sims.append(sim)
        place_cluster(sim, fleet, name, first=i == 0)
        for p in sorted((sim / "runpod").iterdir()):
            if not (i and p.name in EXTRAS) and p.name != ACCOUNT:
                _merge_provider_file(fleet / "runpod" / p.name, p)
        configs.append((sim / "recon.toml").read_text())
    (fleet / "runpod" / ACCOUNT).write_text(json.dumps(_account_bill(sims), indent=1))
    (fleet / "recon.toml").write_text(merged_config(configs, SHARDS))
    return fleet


# ------------------------------------------------------------------------- server and worker

def own_billed(db: Path) -> Decimal:
    """A shard's own billed amount on DAY: `marts.resource_day` as a read-only connection to
    its warehouse shows it (recon.shards.lens: the shard's own rows)."""
    from recon.db import connect

    con = connect(db, read_only=True)
    try:
        return con.execute("select coalesce(sum(billed_amount), 0) from marts.resource_day "
                           "where day = ?", [DAY]).fetchone()[0]
    finally:
        con.close()


def cents(v) -> str:
    """As the summary writes money: to the cent, half-even (recon.outputs.present.usd)."""
    return str(Decimal(v).quantize(Decimal("0.01")))


def _utc(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


@pytest.mark.slow
def test_fleet_runs_the_shards_at_once_then_unassigned_then_ties_out(tmp_path):
    t_start = time.monotonic()
    phases: dict[str, float] = {}  # seconds since the start, printed (-s) for the report

    def mark(what: str) -> None:
        phases[what] = round(time.monotonic() - t_start, 1)

    fleet = build_fleet(tmp_path)
    mark("fleet built")
    good, broken = tmp_path / "good", tmp_path / "broken"
    (broken / "shards" / "us.duckdb").mkdir(parents=True)  # a folder: DuckDB cannot open it
    home = tmp_path / "prefect-home"
    home.mkdir()
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env, cli_env = environments(home, api, query_seconds=1)
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    procs: list[subprocess.Popen] = []

    cli = partial(prefect_cli, cli_env)

    def start_parent(out: Path) -> str:
        """A run of the parent's deployment, as `prefect deployment run` creates it (REST: the
        CLI's own start-up would add seconds); the worker runs it."""
        dep = httpx.get(f"{api}/deployments/name/fleet-reconciliation/fleet-reconciliation",
                        timeout=10).json()
        params = {"day": DAY, "landing_dir": str(fleet), "warehouse_dir": str(out / "shards"),
                  "validation": True, "settle_seconds": 0, "exports_dir": str(out / "exports"),
                  "marts_dir": str(out / "lake"), "poll_seconds": 1}
        r = httpx.post(f"{api}/deployments/{dep['id']}/create_flow_run", timeout=10,
                       json={"parameters": params})
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def runs(**flow_runs) -> list[dict]:
        return httpx.post(f"{api}/flow_runs/filter", timeout=10,
                          json={"flow_runs": flow_runs}).json()

    try:
        procs.append(start_server(port, env, tmp_path, server_log))
        mark("server healthy")

        cli("work-pool", "create", "recon-process", "--type", "process")
        procs.append(start_worker(cli_env, worker_log))  # it starts while the deployments are made
        out = cli("--no-prompt", "deploy", "--name", "fleet-reconciliation", "--name", "shard",
                  timeout=180)
        assert "fleet-reconciliation/fleet-reconciliation" in out and \
            "daily-reconciliation/shard" in out, out
        mark("deployed")
        good_id = start_parent(good)
        mark("parent started")

        # meanwhile, the whole fleet in one warehouse: the account's bill the shards must sum to
        from recon.pipeline import run

        whole = tmp_path / "whole.duckdb"
        run(fleet, whole, day_from=date.fromisoformat(DAY), day_to=date.fromisoformat(DAY))
        [(account,)] = q(whole, "select sum(billed_amount) from marts.resource_day where day = ?",
                         [DAY])
        mark("whole fleet in one warehouse")

        # and a parent in this process, its children in threads (no `deployment`), shard us's
        # warehouse a folder: the parent fails naming the shard and the day, and never starts
        # __unassigned__ or the tie-out
        from prefect.settings import PREFECT_API_URL, temporary_settings

        from flows.fleet_reconciliation import fleet_reconciliation

        with temporary_settings({PREFECT_API_URL: api}):
            bad = asyncio.run(fleet_reconciliation(
                day=DAY, landing_dir=str(fleet), warehouse_dir=str(broken / "shards"),
                validation=False, deployment=None, return_state=True))
            # a deployment name the API does not know fails before any child or pull
            lost = asyncio.run(fleet_reconciliation(
                day=DAY, landing_dir=str(fleet), warehouse_dir=str(broken / "lost"),
                deployment="daily-reconciliation/no-such", return_state=True))
            # children that cannot finish in time (the worker polls every second, a shard's run
            # takes seconds): cancelled, and the parent fails naming them
            slow = asyncio.run(fleet_reconciliation(
                day=DAY, landing_dir=str(fleet), warehouse_dir=str(broken / "slow"),
                validation=False, poll_seconds=0.1, child_timeout_seconds=0.3,
                return_state=True))
        mark("broken parents ended")
        assert slow.is_failed()
        late = str(slow.result(raise_on_failure=False))
        # the first child, __unassigned__'s landing, is cancelled: no named shard starts
        assert late.startswith("1 shard run(s) failed, nothing tied out:"), late
        assert "not finished within 0.3 s" in late and "cancelled" in late, late
        slow_kids = runs(parent_flow_run_id={"any_": [str(slow.state_details.flow_run_id)]})
        assert [(r["parameters"]["shard"], r["parameters"].get("land_only")) for r in slow_kids
                ] == [(UNASSIGNED, True)]
        assert all(r["state"]["type"] in ("CANCELLING", "CANCELLED") for r in slow_kids), [
            r["state"] for r in slow_kids]
        assert lost.is_failed()
        assert str(lost.result(raise_on_failure=False)).startswith(
            "no deployment 'daily-reconciliation/no-such' on the Prefect API: deploy it")
        assert runs(parent_flow_run_id={"any_": [str(lost.state_details.flow_run_id)]}) == []
        assert not (broken / "lost").exists()
        assert bad.is_failed(), bad
        err = bad.result(raise_on_failure=False)
        assert isinstance(err, RuntimeError), err
        assert f"1 shard run(s) failed, nothing tied out:\n  shard us on {DAY}: child flow run " \
            in str(err) and "FAILED" in str(err) and "us.duckdb" in str(err), str(err)
        assert (broken / "shards" / "eu.duckdb").is_file()  # the other shard ran to its end
        # __unassigned__ landed the account first, and never built: no marts in its warehouse
        con = duckdb.connect(str(broken / "shards" / f"{UNASSIGNED}.duckdb"), read_only=True)
        assert con.execute("select count(*) from raw.files").fetchone()[0] > 0
        assert con.execute("select count(*) from duckdb_tables() where schema_name = 'marts'"
                           ).fetchone()[0] == 0
        con.close()

        deadline = time.monotonic() + 240
        while True:
            state = httpx.get(f"{api}/flow_runs/{good_id}", timeout=10).json()["state"]
            if state["type"] in TERMINAL:
                break
            assert time.monotonic() < deadline, (
                f"parent still running after 240 s: {state}\nworker:\n{tail(worker_log)}")
            time.sleep(1)
        mark("parent ended")
        wall = time.monotonic() - t_start
        assert state["type"] == "COMPLETED", f"{state}\nworker:\n{tail(worker_log, 120)}"

        # the children: __unassigned__'s landing, then the named shards overlapping, each
        # taking its provider rows from that warehouse, then __unassigned__'s build after both
        every = runs(parent_flow_run_id={"any_": [good_id]})
        assert all(r["state"]["type"] == "COMPLETED" for r in every)
        landing = [r for r in every if r["parameters"].get("land_only")]
        kids = {r["parameters"]["shard"]: r for r in every if r not in landing}
        assert set(kids) == {"eu", "us", UNASSIGNED} and len(landing) == 1, sorted(kids)
        assert landing[0]["parameters"]["shard"] == UNASSIGNED
        assert landing[0]["name"] == f"daily-{DAY}-{UNASSIGNED}-landing"
        assert {r["name"] for r in kids.values()} == {f"daily-{DAY}-{s}" for s in kids}
        span = {s: (_utc(r["start_time"]), _utc(r["end_time"])) for s, r in kids.items()}
        span["landing"] = (_utc(landing[0]["start_time"]), _utc(landing[0]["end_time"]))
        assert min(span["eu"][0], span["us"][0]) >= span["landing"][1], span
        assert max(span["eu"][0], span["us"][0]) < min(span["eu"][1], span["us"][1]), span
        assert span[UNASSIGNED][0] >= max(span["eu"][1], span["us"][1]), span
        account_db = str(good / "shards" / f"{UNASSIGNED}.duckdb")
        assert all(kids[s]["parameters"]["account"] == account_db for s in ("eu", "us"))
        assert kids[UNASSIGNED]["parameters"]["claims"] == [
            str(good / "shards" / "eu.duckdb"), str(good / "shards" / "us.duckdb")]
        for s in kids:
            assert (good / "shards" / f"{s}.duckdb").is_file()
            assert (good / "exports" / s / f"costs_{DAY}.csv").is_file()

        # the tie-out: each shard's bill, from its own warehouse, adds up to the one-warehouse
        # bill of the whole fleet, and the parent's summary says so
        per_shard = {s: own_billed(good / "shards" / f"{s}.duckdb") for s in kids}
        print(f"fleet test: {wall:.1f} s to the parent's end; {phases}; children {span}")
        assert sum(per_shard.values(), Decimal(0)) == account, (per_shard, account)
        assert per_shard["eu"] > 0 and per_shard["us"] > 0
        arts = httpx.post(f"{api}/artifacts/filter", timeout=10, json={
            "artifacts": {"flow_run_id": {"any_": [good_id]}}}).json()
        md = {a["key"]: a for a in arts}["recon-fleet-summary"]["data"]
        assert "**Tie-out: ok.**" in md, md
        assert f"| account (every provider line) | {cents(account)} |" in md, md
        assert "| difference | 0.00 |" in md, md
        for s, v in per_shard.items():
            assert f"| {s.replace('_', chr(92) + '_')} | {cents(v)} |" in md, (s, md)
        # each child published its own rows under shard=<s>/ of the one marts_dir
        lake = q(whole, "select shard, sum(billed_amount) from read_parquet(?, hive_partitioning "
                 "= true) group by shard", [str(good / "lake" / "marts" / "resource_day" / "*" /
                                               "*" / "part-0.parquet")])
        assert dict(lake) == per_shard, (lake, per_shard)
    finally:
        for p in reversed(procs):
            stop(p)


def test_a_tie_out_off_by_a_cent_fails_naming_the_day_the_shards_and_the_amounts(tmp_path):
    """The parent's tie-out step on the shards' warehouses (`recon run --shard` of the same
    fleet): it holds to the cent; one cent more on one resource-day of shard eu's bill (what a
    shard that landed a restated line the others did not would show) fails it, and the error and
    the summary name the day, each shard's amount and the cent."""
    from flows.fleet_reconciliation import render_fleet, tie_out, tie_out_error
    from recon.pipeline import run

    fleet = build_fleet(tmp_path)
    w = {s: tmp_path / "w" / f"{s}.duckdb" for s in (*SHARDS, UNASSIGNED)}
    for s in SHARDS:
        run(fleet, w[s], shard=s)
    run(fleet, w[UNASSIGNED], shard=UNASSIGNED, claims=[str(w[s]) for s in SHARDS])
    paths = [str(p) for p in w.values()]

    tie = tie_out.fn(paths, str(fleet), None)
    assert tie["ok"] and tie["problems"] == [], tie
    [d] = [d for d in tie["days"] if d["day"] == DAY]
    own = {s: own_billed(p) for s, p in w.items()}
    assert d["shards"] == own and d["difference"] == 0
    assert d["shards_total"] == d["account_total"] == sum(own.values(), Decimal(0))
    assert tie_out_error(tie) is None

    import duckdb

    con = duckdb.connect(str(w["eu"]))
    [(rid,)] = con.execute("select min(resource_id) from meta.shard_claims").fetchall()
    con.execute("update marts.resource_day set billed_amount = billed_amount + 0.01 "
                "where resource_id = ? and day = ?", [rid, DAY])
    con.close()
    off = tie_out.fn(paths, str(fleet), None)
    assert not off["ok"]
    [d] = [d for d in off["days"] if d["day"] == DAY]
    assert d["shards"]["eu"] == own["eu"] + Decimal("0.01")
    assert d["difference"] == Decimal("-0.01"), d  # the account's, less the shards' sum
    err = str(tie_out_error(off))
    assert err.startswith("the shards do not tie out to the account's bill:"), err
    assert (f"{DAY}: eu {cents(d['shards']['eu'])}, us {cents(own['us'])}, __unassigned__ "
            f"{cents(own[UNASSIGNED])} = {cents(d['shards_total'])} USD against the account's "
            f"{cents(d['account_total'])} USD (difference -0.010000000000 USD)") in err, err
    assert (f"shard eu's bill differs from the account's (__unassigned__) for 1 resource-day(s), "
            f"e.g. {rid} on {DAY}: ") in err and "lacks or adds provider files" in err, err
    md = render_fleet([date.fromisoformat(DAY)], [], off)
    assert "**Tie-out: OFF.**" in md and "| difference | -0.01 |" in md, md
