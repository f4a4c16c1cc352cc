"""`recon serve`: run the daily reconciliation on its cron from one long-lived process.

Prefect's scheduler is a service of a real API server: a flow served against the temporary
(ephemeral) API is registered but never scheduled ("Cannot schedule flows on an ephemeral
server"). So when PREFECT_API_URL is not set, this starts `prefect server start` on
127.0.0.1 as a child process for as long as it serves (its SQLite database lives in
PREFECT_HOME, so the schedule and the run history survive restarts), then serves.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request


@contextlib.contextmanager
def local_server(port: int = 4200, timeout: float = 120.0):
    """A `prefect server start` child on 127.0.0.1:port; yields its API URL."""
    url = f"http://127.0.0.1:{port}/api"
    with contextlib.suppress(OSError):
        urllib.request.urlopen(f"{url}/health", timeout=2)
        raise RuntimeError(f"something already answers on {url}: set PREFECT_API_URL to use "
                           f"it, or pick another --port")
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start",
                             "--host", "127.0.0.1", "--port", str(port)], start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prefect server exited with code {proc.returncode}")
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"prefect server not healthy on {url} after {timeout}s") from None
                time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serve_daily(landing_dir: str, db: str, cron: str = "30 2 * * *", port: int = 4200,
                exports_dir: str | None = "data/exports", settle_seconds: int = 600) -> None:
    """Serve deployment `daily-reconciliation/daily-reconciliation` on `cron` (UTC), with the
    parameters prefect.yaml's deployment has: the day's finance CSVs into `exports_dir` (None:
    none) and files modified in the last `settle_seconds` left for the next run (the
    collector's open hour)."""
    if os.environ.get("PREFECT_API_URL"):
        return _serve(landing_dir, db, cron, exports_dir, settle_seconds)
    with local_server(port) as url:
        os.environ["PREFECT_API_URL"] = url  # for flow-run subprocesses
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings({PREFECT_API_URL: url}):
            _serve(landing_dir, db, cron, exports_dir, settle_seconds)


def serve_parameters(landing_dir: str, db: str, exports_dir: str | None = "data/exports",
                     settle_seconds: int = 600) -> dict:
    """The served deployment's parameters: besides the landing area and the warehouse, the
    finance CSVs' folder (without it no CSVs are written) and the settle time (without it the
    collector's open hour would land half-written)."""
    params = {"landing_dir": str(landing_dir), "db": str(db), "settle_seconds": int(settle_seconds)}
    if exports_dir:
        params["exports_dir"] = str(exports_dir)
    return params


def _serve(landing_dir: str, db: str, cron: str, exports_dir: str | None = "data/exports",
           settle_seconds: int = 600) -> None:
    from prefect.schedules import Cron

    from flows.daily_reconciliation import daily_reconciliation

    daily_reconciliation.serve(name="daily-reconciliation",
                               schedules=[Cron(cron, timezone="UTC")],
                               parameters=serve_parameters(landing_dir, db, exports_dir,
                                                           settle_seconds))


def main(argv: list[str] | None = None) -> None:
    """`python -m flows.serve`: what `recon serve` runs (the library does not import flows/),
    with its options."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m flows.serve",
                                description="Serve the daily reconciliation on its cron.")
    p.add_argument("--landing-dir", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--cron", default="30 2 * * *")
    p.add_argument("--port", type=int, default=4200)
    p.add_argument("--exports-dir", default="data/exports", help="'' for none")
    p.add_argument("--settle", type=int, default=600)
    a = p.parse_args(argv)
    serve_daily(a.landing_dir, a.db, a.cron, a.port, a.exports_dir or None, a.settle)


if __name__ == "__main__":
    main()
