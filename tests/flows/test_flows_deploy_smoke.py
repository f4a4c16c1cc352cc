"""End to end as an operator does it: a real `prefect server`, `prefect deploy --all` from
prefect.yaml, a process worker on `recon-process`, one run of the daily deployment, its
artifacts read back over the REST API. Slow (about a minute on 2 cores): `-m 'not slow'`
skips it locally; CI runs it. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from functools import partial

import httpx
import pytest

from tests.fakes.fault_proxy import free_port
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


@pytest.mark.slow
def test_deploy_and_run_the_daily_deployment_with_a_process_worker(tmp_path):
    from recon.simulate import simulate

    landing, db = tmp_path / "landing", tmp_path / "recon.duckdb"
    simulate(landing, seed=7, days=1, nodes=2, endpoints=1)
    home = tmp_path / "prefect-home"
    home.mkdir()
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env, cli_env = environments(home, api, query_seconds=2)
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    procs: list[subprocess.Popen] = []

    cli = partial(prefect_cli, cli_env)

    try:
        procs.append(start_server(port, env, tmp_path, server_log, poll=1))

        cli("work-pool", "create", "recon-process", "--type", "process")
        out = cli("--no-prompt", "deploy", "--all", timeout=180)
        for name in ("daily-reconciliation", "collect", "backfill"):
            assert name in out, out
        procs.append(start_worker(cli_env, worker_log))
        # settle 0: the test's files were just written (prefect.yaml's 600 s would leave them)
        exports = tmp_path / "exports"  # not prefect.yaml's data/exports in the worker's cwd
        params = json.dumps({"day": DAY, "landing_dir": str(landing), "db": str(db),
                             "settle_seconds": 0, "exports_dir": str(exports)})
        out = cli("deployment", "run", "daily-reconciliation/daily-reconciliation",
                  "--params", params)
        m = re.search(r"UUID:\s*([0-9a-f-]{36})", out)
        assert m, out
        run_id = m.group(1)

        deadline = time.monotonic() + 180
        while True:
            state = httpx.get(f"{api}/flow_runs/{run_id}", timeout=10).json()["state"]["type"]
            if state in TERMINAL:
                break
            assert time.monotonic() < deadline, (
                f"flow run still {state} after 180 s\nworker:\n{tail(worker_log)}")
            time.sleep(2)
        assert state == "COMPLETED", f"flow run {state}\nworker:\n{tail(worker_log, 80)}"

        arts = httpx.post(f"{api}/artifacts/filter", timeout=10, json={
            "artifacts": {"flow_run_id": {"any_": [run_id]}}}).json()
        by_key = {a["key"]: a for a in arts}
        assert by_key["recon-daily-summary"]["type"] == "markdown"
        assert DAY in by_key["recon-daily-summary"]["data"]
        assert "| Billed |" in by_key["recon-daily-summary"]["data"]
        assert by_key["recon-daily-findings"]["type"] == "table"
        assert db.exists()
        assert sorted(p.name for p in exports.iterdir()) == [f"costs_{DAY}.csv",
                                                            f"findings_{DAY}.csv"]
    finally:
        for p in reversed(procs):
            stop(p)
