"""Which UTC days the daily steps published, so that a backfill resumes where it stopped.

A day's marts rows are written by its build and committed before the data-quality gate runs,
so rows in `marts.resource_day` do not say the day is done: a day whose gate failed critically
has rows too, and nothing was published for it. `meta.published_days` records a day when its
summary was published, with the gate's run id, or none when the run asked for no gate.

A backfill (flows/backfill.py) skips exactly the days recorded here (`published`), and with
the gate on, only those whose gate passed: a day built without the gate is built and checked
again.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime

DDL = """create table if not exists meta.published_days (
    day date primary key,
    validation_run varchar,           -- the gate's run id; null: published without the gate
    published_at timestamptz not null)"""


def mark_published(con, days: Iterable[date], validation_run: str | None) -> None:
    """Record `days` as published, with the gate run that passed for them (None: no gate).
    A later publication of a day replaces its row."""
    rows = [(d, validation_run, datetime.now(UTC)) for d in sorted(set(days))]
    if not rows:
        return
    con.execute("create schema if not exists meta")
    con.execute(DDL)
    con.executemany("insert or replace into meta.published_days values (?, ?, ?)", rows)


def published(con, days: Iterable[date], validated: bool) -> list[date]:
    """The days among `days` that were published; with `validated`, only those whose gate
    passed. A warehouse without the table (nothing published yet, or built before it
    existed) has none."""
    wanted = sorted(set(days))
    if not wanted:
        return []
    has = con.execute("select count(*) from information_schema.tables where table_schema = "
                      "'meta' and table_name = 'published_days'").fetchone()[0]
    if not has:
        return []
    rows = con.execute(
        "select day from meta.published_days where day between ? and ?"
        + (" and validation_run is not null" if validated else "") + " order by day",
        [wanted[0], wanted[-1]]).fetchall()
    keep = set(wanted)
    return [r[0] for r in rows if r[0] in keep]


def batches(days: Iterable[date], size: int) -> list[list[date]]:
    """`days` (sorted) cut into runs of consecutive days, each at most `size` long: a window
    `--from first --to last` builds exactly one of them."""
    if size < 1:
        raise ValueError(f"a batch holds at least one day, got {size}")
    out: list[list[date]] = []
    for d in sorted(set(days)):
        if out and len(out[-1]) < size and (d - out[-1][-1]).days == 1:
            out[-1].append(d)
        else:
            out.append([d])
    return out
