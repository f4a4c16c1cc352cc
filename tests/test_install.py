"""The environment's bytecode is compiled once (recon/bytecode.py), not on every `uv run`.

Without compiled bytecode, a machine or image that sets PYTHONDONTWRITEBYTECODE=1 (this
project's own machines do; many container images do) compiles Great Expectations and Prefect
from source in every process: importing Great Expectations takes 10.5-13.0 s instead of
5.1-6.5 s, and `uv run recon demo` 17-19 s instead of 11-14 s (bench/README.md). uv's
`compile-bytecode` setting does it at the price of recompiling ~11k files on every `uv run`
(astral-sh/uv#12202, +0.7-0.9 s per command); `import recon` does it once per set of
installed packages instead.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from recon import bytecode

ROOT = Path(__file__).resolve().parent.parent


def test_uv_does_not_recompile_on_every_run():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert not cfg.get("tool", {}).get("uv", {}).get("compile-bytecode"), (
        "[tool.uv] compile-bytecode makes every `uv run` recompile the environment "
        "(astral-sh/uv#12202); recon/bytecode.py compiles it once")


def test_great_expectations_is_imported_from_compiled_bytecode():
    # .ci/run syncs without compiling: where Python may not write bytecode itself, only
    # `import recon` (this test module imported it) can have put it there
    import great_expectations
    import prefect

    for mod in (great_expectations, prefect):
        pyc = Path(importlib.util.cache_from_source(mod.__file__))
        assert pyc.exists(), (f"{mod.__name__} has no compiled bytecode ({pyc}); "
                              f"dont_write_bytecode={sys.flags.dont_write_bytecode}")


def _fake_site(tmp_path: Path) -> Path:
    site = tmp_path / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("X = 1\n")
    (site / "pkg" / "broken.py").write_text("def (:\n")  # compileall fails on it: still stamped
    (site / "pkg-1.0.dist-info").mkdir()
    return site


def test_compiles_once_per_set_of_installed_packages(tmp_path):
    site = _fake_site(tmp_path)
    pyc = Path(importlib.util.cache_from_source(str(site / "pkg" / "__init__.py")))
    logs: list[str] = []

    assert bytecode.ensure_compiled([site], force=True, log=logs.append) is True
    assert pyc.exists()
    assert not Path(importlib.util.cache_from_source(str(site / "pkg" / "broken.py"))).exists()
    stamps = [p.name for p in site.glob(bytecode.STAMP_PREFIX + "*") if not p.name.endswith("lock")]
    assert len(stamps) == 1 and "compileall exit 1" in (site / stamps[0]).read_text()
    assert any("compiling" in m for m in logs)
    assert logs[-1].startswith("recon: compiled 1 files in ")
    assert logs[-1].endswith("; 1 did not compile (Python compiles them on import)")  # broken.py

    # the same packages: nothing to do, nothing rewritten
    before = pyc.stat().st_mtime_ns
    assert bytecode.ensure_compiled([site], force=True, log=logs.append) is False
    assert pyc.stat().st_mtime_ns == before

    # a package added (or upgraded: its dist-info name changes): compiled again, one stamp left
    (site / "newpkg").mkdir()
    (site / "newpkg" / "mod.py").write_text("Y = 2\n")
    (site / "newpkg-2.0.dist-info").mkdir()
    assert bytecode.ensure_compiled([site], force=True, log=logs.append) is True
    assert Path(importlib.util.cache_from_source(str(site / "newpkg" / "mod.py"))).exists()
    stamps2 = [p.name for p in site.glob(bytecode.STAMP_PREFIX + "*")
               if not p.name.endswith("lock")]
    assert len(stamps2) == 1 and stamps2 != stamps


def test_long_compiles_show_progress(tmp_path, monkeypatch):
    site = _fake_site(tmp_path)
    for i in range(40):
        (site / "pkg" / f"m{i}.py").write_text(f"X = {i}\n")
    monkeypatch.setattr(bytecode, "PROGRESS_SECONDS", 0.0)  # a line after every file named
    logs: list[str] = []
    assert bytecode.ensure_compiled([site], force=True, log=logs.append) is True
    progress = [m for m in logs if " of " in m]
    counts = [int(m.split()[2].replace(",", "")) for m in progress]
    assert progress and all(m.endswith(" s)") and " of 42 files " in m for m in progress), logs
    assert counts == sorted(counts) and counts[-1] == 42  # every file looked at
    assert logs[-1].startswith("recon: compiled 41 files in ")  # all but broken.py


def test_switched_off_read_only_or_writing_python_does_nothing(tmp_path, monkeypatch):
    site = _fake_site(tmp_path)
    pyc = Path(importlib.util.cache_from_source(str(site / "pkg" / "__init__.py")))
    monkeypatch.setenv(bytecode.ENV_SWITCH, "0")
    assert bytecode.ensure_compiled([site], force=True) is False
    monkeypatch.delenv(bytecode.ENV_SWITCH)
    # site-packages not writable (a read-only image; as root, os.access would say yes to a
    # chmod 555 folder, so the check is made to answer as for another user)
    monkeypatch.setattr(bytecode.os, "access", lambda p, mode: Path(p) != site)
    assert bytecode.ensure_compiled([site], force=True) is False
    monkeypatch.undo()
    assert not pyc.exists()
    # a Python that writes bytecode itself needs no help (not forced: the real decision)
    code = ("import sys; from pathlib import Path; from recon import bytecode; "
            f"print(bytecode.ensure_compiled([Path({str(site)!r})]))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"
    assert not pyc.exists()
