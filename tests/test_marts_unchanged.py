"""The marts of the demo and of a benchmark-shaped day, row for row, against the digests kept in
`tests/golden/marts.json`.

A refactor of the house (modules moved, SQL settings declared elsewhere, outputs reading marts)
must not change a number: this test fails on any row that differs, in any of the marts the
digests name. A change that is meant to alter the marts regenerates the file on purpose:

    uv run python -m tests.test_marts_unchanged   # rewrites tests/golden/marts.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import date
from pathlib import Path

import duckdb
import pytest

GOLDEN = Path(__file__).resolve().parent / "golden" / "marts.json"

# (name, simulate(**kwargs)): the demo's own fleet (`recon demo`'s defaults) and a day shaped as
# the benchmark's (bench/harness.py: seed 7, KEDA-scaled nodes, several endpoints), smaller
CASES = {
    "demo": {"seed": 7, "days": 2, "nodes": 4},
    "bench_day": {"seed": 7, "days": 1, "nodes": 12, "endpoints": 3, "scale": 2,
                  "start_day": date(2026, 6, 1)},
}


def mart_digests(db: Path) -> dict[str, dict]:
    """Each mart's row count and the sha256 of its rows in a total order."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        tables = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'marts' "
            "order by 1").fetchall()]
        out = {}
        for t in tables:
            rows = con.execute(f"select * from marts.{t} order by all").fetchall()
            out[t] = {"rows": len(rows),
                      "sha256": hashlib.sha256(repr(rows).encode()).hexdigest()}
        return out
    finally:
        con.close()


def build(case: str, tmp: Path) -> dict[str, dict]:
    from recon.pipeline import run
    from recon.simulate import simulate

    src, db = tmp / case / "in", tmp / case / "recon.duckdb"
    simulate(src, **CASES[case])
    gt = src / "expected"  # the ground truth is not an input (as bench/harness.py moves it)
    if gt.exists():
        import shutil

        shutil.rmtree(gt)
    run(src, db)
    return mart_digests(db)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_marts_are_row_for_row_the_kept_ones(case, tmp_path):
    kept = json.loads(GOLDEN.read_text())[case]
    now = build(case, tmp_path)
    assert all(kept[t]["rows"] > 0 for t in ("resource_day", "billed_segments", "findings"))
    for table, want in kept.items():  # a mart added later is not compared; one removed fails
        assert now.get(table) == want, table


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps({c: build(c, Path(d)) for c in sorted(CASES)}, indent=1)
                          + "\n")
    print(f"wrote {GOLDEN}", file=sys.stderr)
