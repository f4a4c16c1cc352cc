"""The environment `uv sync` / `uv run` installs is byte-compiled (pyproject `[tool.uv]`).

Without compiled bytecode, a machine or image that sets PYTHONDONTWRITEBYTECODE=1 (this
project's own machines do; many container images do) or mounts site-packages read-only
compiles Great Expectations and Prefect from source in every process: importing Great
Expectations took 10.5-13.0 s instead of 5.1-6.5 s, and `uv run recon demo` 17-19 s instead of
11-14 s (bench/README.md, session 15).
"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_uv_installs_the_environment_byte_compiled():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert cfg["tool"]["uv"]["compile-bytecode"] is True


def test_great_expectations_is_imported_from_compiled_bytecode():
    # .ci/run leaves compiling to the project's own setting (no UV_COMPILE_BYTECODE): where
    # Python may not write bytecode itself, only the install can have put it there
    import great_expectations
    import prefect

    for mod in (great_expectations, prefect):
        pyc = Path(importlib.util.cache_from_source(mod.__file__))
        assert pyc.exists(), (f"{mod.__name__} has no compiled bytecode ({pyc}); "
                              f"dont_write_bytecode={sys.flags.dont_write_bytecode}")
