"""Fixtures for the Prefect flow tests.

Prefect reads its settings (PREFECT_HOME among them) when it is first imported, and importing
it creates the home folder: so the environment is set here, at collection time, before any
test module of this folder imports `flows` (and with it prefect). Every flow run then goes to
ONE session-wide `prefect_test_harness` (a temporary SQLite API server): each flow run costs
seconds on a 2-core machine, so the tests share runs through session fixtures.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from datetime import date
from pathlib import Path

import pytest

_HOME = Path(tempfile.mkdtemp(prefix="recon-prefect-home-"))
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
os.environ["PREFECT_HOME"] = str(_HOME)
os.environ["DO_NOT_TRACK"] = "1"
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.pop("PREFECT_API_URL", None)  # never a developer's own server
os.environ.pop("PREFECT_API_KEY", None)
_PREFECT_IMPORTED_EARLY = "prefect" in sys.modules

DAY = date(2026, 6, 1)
DAY2 = date(2026, 6, 2)


@pytest.fixture(scope="session")
def prefect_home() -> Path:
    return _HOME


@pytest.fixture(scope="session")
def harness(prefect_home):
    """One temporary Prefect API for the whole session (startup ~5-15 s here)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_HOME, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    # A sync flow run starts a heartbeat thread and joins it on exit (~1 s per run): off.
    # PREFECT_HOME again in case another test module imported prefect before this conftest.
    overrides = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    if _PREFECT_IMPORTED_EARLY:
        overrides[PREFECT_HOME] = str(prefect_home)
    with temporary_settings(overrides), prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.fixture(scope="session")
def landing(tmp_path_factory) -> Path:
    """Simulated input: 2 days, small fleet (seed 7)."""
    from recon.simulate import simulate

    out = tmp_path_factory.mktemp("flows") / "landing"
    simulate(out, seed=7, days=2, nodes=2, endpoints=1, start_day=DAY)
    return out


@pytest.fixture(scope="session")
def daily_run(harness, landing, tmp_path_factory) -> dict:
    """ONE run of the daily flow for DAY through the harness API."""
    from flows.daily_reconciliation import daily_reconciliation

    db = tmp_path_factory.mktemp("warehouse") / "recon.duckdb"
    exports = db.parent / "exports"
    lake = db.parent / "lake"
    state = daily_reconciliation(day=DAY.isoformat(), landing_dir=str(landing), db=str(db),
                                 exports_dir=str(exports), marts_dir=str(lake), return_state=True)
    return {"state": state, "db": db, "landing": landing, "day": DAY, "day2": DAY2,
            "exports": exports, "lake": lake, "flow_run_id": state.state_details.flow_run_id}


@pytest.fixture(scope="session")
def artifacts_of(harness):
    """artifacts_of(flow_run_id) -> {key: artifact} (its task runs' artifacts included; of
    several with one key, the latest created: a run that publishes a held day before its own
    day publishes its own summary last)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    def read(flow_run_id) -> dict:
        with get_client(sync_client=True) as client:
            arts = client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
        return {a.key: a for a in sorted(arts, key=lambda a: a.created)}

    return read
