"""The guards of a windowed build: what reads intermediate tables fails clearly when they do
not hold the days it asks for."""

from __future__ import annotations

from datetime import date

import duckdb


def require_built(con, day_from: date, day_to: date, what: str) -> None:
    """Fail clearly when the intermediate tables do not hold [day_from, day_to].

    A windowed run (`--from/--to`) leaves the intermediate tables holding its own scope; the
    marts keep every day. Reports, exports and what-if read intermediate tables too."""
    try:
        lo, hi = con.execute("select cfg('day_from'), cfg('day_to')").fetchone()
    except duckdb.Error:
        return  # no run yet: the caller finds empty marts
    if lo is None or (lo == "0001-01-01" and hi == "9999-12-31"):
        return
    if day_from < date.fromisoformat(lo) or day_to > date.fromisoformat(hi):
        raise ValueError(
            f"{what} for {day_from}..{day_to} reads intermediate tables, which hold the last run's "
            f"window {lo}..{hi} only. Run `recon run --input <folder> --from {day_from} "
            f"--to {day_to}` first (landed files are not read again), or a run without a window.")
