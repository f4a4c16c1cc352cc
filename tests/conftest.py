import atexit
import json
import os
import shutil
import tempfile
from decimal import Decimal

import duckdb
import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

# Tests leave nothing in the temp folder: a test that makes a folder there removes it. Two
# property tests once left ~20 folders of ~11 MB each per run (2.4 GB over one session's runs);
# this check fails the session when any test leaks again. The session gets a temp folder of its
# own (tempfile and subprocesses via TMPDIR), so that other programs writing to the system's
# temp folder at the same time are not mistaken for leaks; pytest's tmp_path area (it keeps
# the last 3 runs) stays in the system's. The folder is removed at exit, after Prefect's test
# harness (its API server removes its SQLite folder at exit) and tests/flows' Prefect home.
os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
_TMP = tempfile.mkdtemp(prefix="recon-tests-")
tempfile.tempdir = _TMP
os.environ["TMPDIR"] = _TMP
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_KEPT = ("recon-prefect-home-", ".", "uv-")  # (dot folders: Chromium's profiles, removed at exit)


def _tmp_entries() -> set[str]:
    return {n for n in os.listdir(_TMP) if not n.startswith(_KEPT) and not _prefect_harness(n)}


def _prefect_harness(name: str) -> bool:
    """prefect_test_harness's SQLite folder: its API server removes it at exit, after pytest."""
    p = os.path.join(_TMP, name)
    try:
        names = os.listdir(p) if os.path.isdir(p) else []
        return bool(names) and all(f.startswith("prefect-test.db") for f in names)
    except OSError:
        return False


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown
def pytest_sessionfinish(session, exitstatus):
    if getattr(session.config, "workerinput", None) is not None:
        return  # (an xdist worker: the controller checks)
    leaked = sorted(_tmp_entries())  # the folder is the session's own: anything left is a leak
    if leaked:
        tw = session.config.get_terminal_writer()
        tw.line()
        tw.line(f"tests left {len(leaked)} entries in {_TMP}: {', '.join(leaked[:10])}", red=True)
        for n in leaked[:3]:
            p = os.path.join(_TMP, n)
            tw.line(f"  {n}: {os.listdir(p)[:10] if os.path.isdir(p) else 'file'}")
        session.exitstatus = 1


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory):
    """One simulated fleet (seed 7, 2 days) reconciled once; tests read its marts."""
    from recon.pipeline import run
    from recon.simulate import simulate

    root = tmp_path_factory.mktemp("sim")
    simulate(root / "input", seed=7, days=2, nodes=4, endpoints=2)
    db = root / "recon.duckdb"
    res = run(root / "input", db)
    truth = json.loads((root / "input" / "expected" / "ground_truth.json").read_text())
    return {"root": root, "db": db, "result": res, "truth": truth}


@pytest.fixture
def marts(sim_run):
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    yield con
    con.close()


def dec(x) -> Decimal:
    return Decimal(str(x))
