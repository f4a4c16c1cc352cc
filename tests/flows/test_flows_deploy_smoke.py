"""End to end as an operator does it: a real `prefect server`, `prefect deploy --all` from
prefect.yaml, a process worker on `recon-process`, one run of the daily deployment, its
artifacts read back over the REST API. Slow (about a minute on 2 cores): `-m 'not slow'`
skips it locally; CI runs it. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
PREFECT = [sys.executable, "-m", "prefect"]
DAY = "2026-06-01"
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, n: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:]) if path.exists() else ""


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group we started (server or worker and its flow-run children)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


@pytest.mark.slow
def test_deploy_and_run_the_daily_deployment_with_a_process_worker(tmp_path):
    from recon.simulate import simulate

    landing, db = tmp_path / "landing", tmp_path / "recon.duckdb"
    simulate(landing, seed=7, days=1, nodes=2, endpoints=1)
    home = tmp_path / "prefect-home"
    home.mkdir()
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_UI_ENABLED="false")
    cli_env = {**env, "PREFECT_API_URL": api, "PREFECT_WORKER_QUERY_SECONDS": "2",
               "PREFECT_WORKER_PREFETCH_SECONDS": "5"}
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    procs: list[subprocess.Popen] = []

    def cli(*args: str, timeout: float = 120) -> str:
        r = subprocess.run([*PREFECT, *args], check=False, env=cli_env, cwd=REPO,
                           capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"prefect {' '.join(args)}:\n{r.stdout}\n{r.stderr}"
        return r.stdout

    try:
        with server_log.open("w") as log:
            procs.append(subprocess.Popen(
                [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
        deadline = time.monotonic() + 120
        while True:
            assert procs[0].poll() is None, f"server exited:\n{tail(server_log)}"
            try:
                if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"server not healthy:\n{tail(server_log)}"
            time.sleep(1)

        cli("work-pool", "create", "recon-process", "--type", "process")
        out = cli("--no-prompt", "deploy", "--all", timeout=180)
        for name in ("daily-reconciliation", "collect", "backfill"):
            assert name in out, out
        with worker_log.open("w") as log:
            procs.append(subprocess.Popen(
                [*PREFECT, "worker", "start", "--pool", "recon-process"], env=cli_env,
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
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
