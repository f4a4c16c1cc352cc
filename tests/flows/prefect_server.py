"""A real `prefect server` (and the processes beside it) on 127.0.0.1 for the end-to-end flow
tests: its environment, its start until healthy, and stopping what a test started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
PREFECT = [sys.executable, "-m", "prefect"]
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


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


def environments(home: Path, api: str, query_seconds: int) -> tuple[dict, dict]:
    """(the server's environment, the CLI's and worker's): a Prefect home of the test's own, no
    PREFECT_* setting of the caller's, no telemetry; the worker polls every `query_seconds`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_UI_ENABLED="false")
    cli_env = {**env, "PREFECT_API_URL": api, "PREFECT_WORKER_QUERY_SECONDS": str(query_seconds),
               "PREFECT_WORKER_PREFETCH_SECONDS": "5"}
    return env, cli_env


def prefect_cli(env: dict, *args: str, timeout: float = 120) -> str:
    """`prefect <args>` from the repository with `env` (the CLI's environment); its stdout, or
    the test fails showing both outputs."""
    r = subprocess.run([*PREFECT, *args], check=False, env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"prefect {' '.join(args)}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def start_worker(env: dict, log_path: Path, pool: str = "recon-process") -> subprocess.Popen:
    """`prefect worker start --pool <pool>` from the repository, in a process group of its own
    (`stop` ends it and the flow runs it started), its output in `log_path`."""
    with log_path.open("w") as log:
        return subprocess.Popen([*PREFECT, "worker", "start", "--pool", pool], env=env, cwd=REPO,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def start_server(port: int, env: dict, cwd: Path, log_path: Path, poll: float = 0.5,
                 within: float = 120) -> subprocess.Popen:
    """`prefect server start` on 127.0.0.1:`port`, returned once /api/health answers 200."""
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + within
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"server exited:\n{tail(log_path)}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop(proc)
            raise AssertionError(f"server not healthy:\n{tail(log_path)}")
        time.sleep(poll)
