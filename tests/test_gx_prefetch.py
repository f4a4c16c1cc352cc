"""Great Expectations starts importing during the build's commit when a gate follows
(`recon.gate.gx.prefetch_gx`): after the models, before the commit, once per process, never
when no gate follows."""

import json
import subprocess
import sys
import textwrap

import pytest

import recon.gate.gx as V
from recon import pipeline


@pytest.fixture
def calls(monkeypatch):
    seen = []
    real_build = pipeline.build

    def build(con, *a, **kw):
        real_build(con, *a, **kw)
        seen.append(("build", con.execute("select count(*) from marts.resource_day").fetchone()[0]))

    monkeypatch.setattr(pipeline, "build", build)
    monkeypatch.setattr(V, "prefetch_gx", lambda: seen.append(("prefetch", None)))
    return seen


@pytest.mark.parametrize("kw, prefetched", [({}, False), ({"prefetch_gate": True}, True)])
def test_prefetch_after_the_models_before_the_commit(sim_run, tmp_path, calls, kw, prefetched):
    db = tmp_path / "w.duckdb"
    res = pipeline.run(sim_run["root"] / "input", db, **kw)
    assert res.loaded > 0
    names = [c[0] for c in calls]
    assert names == (["build", "prefetch"] if prefetched else ["build"])
    assert calls[0][1] > 0  # the marts were built when it started


def test_prefetch_imports_once_on_a_thread():
    script = textwrap.dedent("""
        import json, sys, threading, time
        import recon.gate.gx as V
        before = "great_expectations" in sys.modules
        V.prefetch_gx(); V.prefetch_gx()
        threads = [t.name for t in threading.enumerate() if t.name == "recon-gx-prefetch"]
        t0 = time.perf_counter()
        s = V.GxSession()  # waits for the same import if the thread is still at it
        print(json.dumps({"before": before, "threads": len(threads), "started": len(V._PREFETCH),
                          "after": "great_expectations" in sys.modules,
                          "session": s.context is not None}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"before": False, "threads": 1, "started": 1, "after": True, "session": True}
