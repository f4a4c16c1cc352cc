"""The suite's own promises: run on xdist workers, it still fails when a test leaves something in
the temp folder (tests/conftest.py), whichever worker ran it, and it keeps the tests that share
a costly fixture on one worker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")

LEAKY = '''
import os, tempfile

def test_clean():
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "x"), "w").close()

def test_leaks():
    if os.environ.get("LEAK") == "1":
        fd, _ = tempfile.mkstemp(prefix="left-behind-")
        os.close(fd)
'''

RECORD = '''
import os
import pytest

@pytest.fixture(scope="module")  # (what makes the scheduler keep this file whole)
def shared():
    return os.environ.get("PYTEST_XDIST_WORKER")

@pytest.mark.parametrize("i", range(4))
def test_record(shared, i):
    out = os.path.join(os.environ["RECORD_DIR"], __name__ + f"-{i}")
    with open(out, "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])
'''


def _pytest(folder: Path, *args: str, leak: bool = False,
            record: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "LEAK": "1" if leak else "0", "RECORD_DIR": str(record)}
    env.pop("PYTEST_XDIST_WORKER", None)  # the child is a controller of its own
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "xdist", "-n", "2",
                           "--dist", "loadfile", "-q", "-p", "no:cacheprovider", *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def _suite(tmp_path: Path, files: dict[str, str]) -> Path:
    """A folder with this suite's conftest.py and `files` (path: source)."""
    folder = tmp_path / "suite"
    for name, body in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(body)
    shutil.copy(CONFTEST, folder / "conftest.py")
    return folder


def test_a_leak_on_a_worker_fails_the_run_and_is_named(tmp_path):
    folder = _suite(tmp_path, {"test_child.py": LEAKY})
    clean = _pytest(folder)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "2 passed" in clean.stdout
    leaky = _pytest(folder, leak=True)
    assert leaky.returncode == 1, leaky.stdout + leaky.stderr
    assert "2 passed" in leaky.stdout  # the tests passed: the leak check failed the run
    assert "tests left 1 entries" in leaky.stdout
    assert "recon-tests-gw" in leaky.stdout and "/left-behind-" in leaky.stdout


def test_a_file_runs_on_one_worker_and_the_flow_tests_on_one_worker(tmp_path):
    folder = _suite(tmp_path, dict.fromkeys(("tests/flows/test_a.py", "tests/flows/test_b.py", "tests/test_c.py", "tests/test_d.py", "tests/test_e.py"), RECORD))
    record = tmp_path / "record"
    record.mkdir()
    r = _pytest(folder, record=record)
    assert r.returncode == 0, r.stdout + r.stderr
    ran = {p.name: p.read_text() for p in record.iterdir()}
    assert len(ran) == 20, sorted(ran)

    def workers(*modules):
        return {w for n, w in ran.items() if n.rsplit("-", 1)[0] in modules}

    assert len(workers("test_a", "test_b")) == 1  # the flow tests share one worker
    for m in ("test_c", "test_d", "test_e"):
        assert len(workers(m)) == 1, (m, ran)
    assert len(set(ran.values())) == 2  # and the suite did run on both
