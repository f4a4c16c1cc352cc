"""prefect.yaml: every entrypoint resolves to a Flow whose parameters match the deployment."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def deployments() -> dict[str, dict]:
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    return {d["name"]: d for d in spec["deployments"]}


def resolve(entrypoint: str):
    path, func = entrypoint.split(":")
    assert (REPO / path).is_file(), f"{path} does not exist"
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    return getattr(module, func)


def test_one_deployment_per_flow():
    # `shard` is a second deployment of the daily flow: the fleet flow's children
    assert set(deployments()) == {"daily-reconciliation", "collect", "backfill", "shard",
                                  "fleet-reconciliation"}


@pytest.mark.parametrize("name", ["daily-reconciliation", "collect", "backfill", "shard",
                                  "fleet-reconciliation"])
def test_entrypoint_resolves_to_a_flow_with_these_parameters(name):
    from prefect import Flow

    d = deployments()[name]
    fl = resolve(d["entrypoint"])
    assert isinstance(fl, Flow), f"{d['entrypoint']} is {type(fl)}"
    params = inspect.signature(fl.fn).parameters
    unknown = set(d.get("parameters") or {}) - set(params)
    assert not unknown, f"{name}: parameters not on the flow: {unknown}"
    missing_doc = [p for p in params if p not in d["description"]]
    assert not missing_doc, f"{name}: description does not document {missing_doc}"
    assert d["work_pool"]["name"] == "recon-process"


def test_daily_schedule_is_0230_utc_and_names_match_the_cli():
    d = deployments()["daily-reconciliation"]
    assert isinstance(d["schedules"], list) and len(d["schedules"]) == 1
    s = d["schedules"][0]
    assert s["cron"] == "30 2 * * *" and s["timezone"] == "UTC" and s.get("active", True)
    # `prefect deployment run 'daily-reconciliation/daily-reconciliation'` and `recon serve`
    assert resolve(d["entrypoint"]).name == "daily-reconciliation"
    assert "schedules" not in deployments()["backfill"]


def test_the_fleet_starts_its_children_from_the_shard_deployment():
    """The parent's default `deployment` and prefect.yaml's name the shard deployment, and that
    one runs the daily flow without the daily deployment's limit of one run at a time (the named
    shards run at once) or a schedule of its own (the parent starts it)."""
    import flows.fleet_reconciliation as fleet

    d = deployments()
    sig = inspect.signature(fleet.fleet_reconciliation.fn).parameters
    flow_name = resolve(d["shard"]["entrypoint"]).name
    assert f"{flow_name}/shard" == sig["deployment"].default == fleet.SHARD_DEPLOYMENT \
        == d["fleet-reconciliation"]["parameters"]["deployment"]
    assert "concurrency_limit" not in d["shard"] and "schedules" not in d["shard"]
    assert d["shard"]["parameters"]["pull_provider"] is False
    # the fleet's schedule is off by default: it replaces the daily deployment's, not adds to it
    assert [s.get("active", True) for s in d["fleet-reconciliation"]["schedules"]] == [False]
    assert resolve(d["fleet-reconciliation"]["entrypoint"]).name == "fleet-reconciliation"


def test_provider_tasks_carry_the_concurrency_tag():
    from flows.collect import snapshot_runpod_inventory
    from flows.daily_reconciliation import pull_provider_window

    for t in (pull_provider_window, snapshot_runpod_inventory):
        assert "runpod-api" in t.tags and t.retries == 3


def test_recon_serve_runs_the_daily_flow_with_the_deployments_parameters(monkeypatch):
    """`recon serve` serves the daily flow with what prefect.yaml's deployment sets for the
    finance CSVs and the collector's open hour (with only the landing area and the warehouse
    there would be no CSVs, and a half-written hour would land), and the CLI's options reach
    it."""
    from typer.testing import CliRunner

    import flows.daily_reconciliation as daily
    from flows import serve
    from recon.cli import app

    yaml_params = deployments()["daily-reconciliation"]["parameters"]
    served = serve.serve_parameters("L", "D")
    assert served["exports_dir"] == yaml_params["exports_dir"]
    assert served["settle_seconds"] == yaml_params["settle_seconds"]
    assert set(served) <= set(inspect.signature(daily.daily_reconciliation.fn).parameters)
    assert "exports_dir" not in serve.serve_parameters("L", "D", exports_dir=None)

    calls = []
    monkeypatch.setattr(daily.daily_reconciliation, "serve",
                        lambda **kw: calls.append(kw), raising=False)
    serve._serve("L", "D", "30 2 * * *", "X", 60)
    assert calls[0]["parameters"] == {"landing_dir": "L", "db": "D", "exports_dir": "X",
                                      "settle_seconds": 60}
    # the CLI becomes `python -m flows.serve` with its options (recon does not import flows/)
    execs = []
    monkeypatch.setattr("os.execv", lambda path, argv: execs.append((path, argv)))
    r = CliRunner().invoke(app, ["serve", "--landing-dir", "L", "--db", "D", "--exports-dir", "",
                                 "--settle", "0"])
    assert r.exit_code == 0, r.output
    [(path, argv)] = execs
    assert path == sys.executable and argv[:3] == [sys.executable, "-m", "flows.serve"]
    got = []
    monkeypatch.setattr(serve, "serve_daily", lambda *a: got.append(a))
    serve.main(argv[3:])
    assert got == [("L", "D", "30 2 * * *", 4200, None, 0)]
