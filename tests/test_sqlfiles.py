"""The ad-hoc queries of sql/queries/ (recon.sqlfiles): each one is read by the code or a suite,
and none is built as a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recon.build.models import LAYERS, sql_models
from recon.sqlfiles import QUERY_DIR, query

ROOT = Path(__file__).resolve().parent.parent


def test_every_query_is_read_and_none_is_a_model():
    names = {p.stem for p in QUERY_DIR.glob("*.sql")}
    assert names
    code = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "recon").rglob("*.py"))
    files = {json.loads(p.read_text(encoding="utf-8"))["meta"].get("query_file")
             for p in (ROOT / "expectations").glob("*.json")}
    unread = {n for n in names if f'query("{n}")' not in code and f"{n}.sql" not in files}
    assert not unread, f"sql/queries/ files nothing reads: {sorted(unread)}"
    assert QUERY_DIR.name not in LAYERS
    assert not {p for _, _, p in sql_models() if p.parent == QUERY_DIR}


def test_a_query_is_its_file_and_an_unknown_name_is_an_error():
    assert query("check__startup").startswith("-- `recon check`")
    assert not query("check__startup").endswith(";")
    with pytest.raises(FileNotFoundError, match="no_such_query"):
        query("no_such_query")
