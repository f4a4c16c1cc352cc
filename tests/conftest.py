import json
import os
from decimal import Decimal

import duckdb
import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


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
