"""The ad-hoc queries of `sql/queries/`: SQL the code runs (the gate's tie-outs, the summary,
`recon check` and `recon whatif`) that is no model, so that no SQL lives in Python strings or
suite JSON. `sql/queries/` is not a layer of `recon.build.models.LAYERS`: nothing builds it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

QUERY_DIR = Path(__file__).resolve().parent.parent / "sql" / "queries"


@cache
def query(name: str) -> str:
    """The text of `sql/queries/<name>.sql`, without a trailing semicolon."""
    path = QUERY_DIR / f"{name}.sql"
    if not path.is_file():
        raise FileNotFoundError(f"no query {name!r}: {path} does not exist")
    return path.read_text(encoding="utf-8").strip().rstrip(";").rstrip()
