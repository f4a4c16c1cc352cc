import atexit
import json
import os
import re
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
# Under pytest-xdist (the suite runs on every core: pyproject's addopts) each worker makes its
# folder inside the controller's (it inherits TMPDIR), named after the worker, and leaves it
# there: the controller checks the workers' folders too once they have finished, then removes
# them with its own.
os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_WORKER_PREFIX = "recon-tests-gw"
_TMP = tempfile.mkdtemp(prefix=f"recon-tests-{_WORKER}-" if _WORKER else "recon-tests-")
tempfile.tempdir = _TMP
os.environ["TMPDIR"] = _TMP
if not _WORKER:
    atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_KEPT = ("recon-prefect-home-", ".", "uv-")  # (dot folders: Chromium's profiles, removed at exit)


def _tmp_entries(root: str = _TMP) -> set[str]:
    """What tests left in `root` (a worker's folder: what they left in it, by its name)."""
    out = set()
    for n in os.listdir(root):
        p = os.path.join(root, n)
        if root == _TMP and n.startswith(_WORKER_PREFIX) and os.path.isdir(p):
            out |= {f"{n}/{m}" for m in _tmp_entries(p)}
        elif not n.startswith(_KEPT) and not _prefect_harness(p):
            out.add(n)
    return out


def _prefect_harness(p: str) -> bool:
    """prefect_test_harness's SQLite folder: its API server removes it at exit, after pytest."""
    try:
        names = os.listdir(p) if os.path.isdir(p) else []
        return bool(names) and all(f.startswith("prefect-test.db") for f in names)
    except OSError:
        return False


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown
def pytest_sessionfinish(session, exitstatus):
    if _WORKER:
        return  # (an xdist worker: the controller checks its folder)
    leaked = sorted(_tmp_entries())  # the folder is the session's own: anything left is a leak
    if leaked:
        tw = session.config.get_terminal_writer()
        tw.line()
        tw.line(f"tests left {len(leaked)} entries in {_TMP}: {', '.join(leaked[:10])}", red=True)
        for n in leaked[:3]:
            p = os.path.join(_TMP, n)
            tw.line(f"  {n}: {os.listdir(p)[:10] if os.path.isdir(p) else 'file'}")
        session.exitstatus = 1


_SHARED_SCOPE = re.compile(r"""scope\s*=\s*["'](?:module|package|class)["']""")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` (pyproject's addopts), refined: the Prefect flow tests are one unit
    (they share one session-wide test API server, seconds to start, and flow runs made by
    session fixtures); a file with a module-, package- or class-scoped fixture is one unit (the
    fixture is built once); every other test is a unit of its own, so that the run's end is not
    one worker finishing a long file while the other waits. xdist hands out the units with the
    most tests first. (`--dist loadgroup` with xdist_group marks would say this by fixture, but
    on pytest 9.2 it silently stops grouping: pytest-xdist issue #1386.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    shares: dict[str, bool] = {}

    def shares_fixtures(path: str) -> bool:
        if path not in shares:
            try:
                text = (config.rootpath / path).read_text(encoding="utf-8")
            except OSError:
                text = 'scope="module"'  # (unreadable: keep the file whole, as loadfile does)
            shares[path] = bool(_SHARED_SCOPE.search(text))
        return shares[path]

    class _Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::")[0]
            if path.startswith("tests/flows/"):
                return "tests/flows"
            return path if shares_fixtures(path) else nodeid

    return _Units(config, log)


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
