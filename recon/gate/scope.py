"""The gate's scope: what a run's validation reads of the suites that declare `meta.scope` (the
run's own files and days), and the files a passed gate remembers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from ..ingest.raw_tables import TABLES
from .suites import Suite

VALIDATED_DDL = ("create table if not exists meta.validated_files "
                 "(source_file varchar primary key, sha256 varchar)")


@dataclass(frozen=True)
class Scope:
    """What a run's validation reads of the suites that declare `meta.scope`.

    Checking every table whole made the gate grow with history: on the 500-node fleet's 30-day
    warehouse it took 15.2 s against 2.2 s on a first day, most of it the raw tables' 125 M rows
    (bench/README.md). A run checks what it changed instead:

    * `by: "file"` suites (the raw tables, the per-file tie-out): the rows of `files`, the
      landed files no validation has passed yet (`for_run`). Raw rows only change with their
      file's bytes (a file landed again with other bytes has another sha256 and is checked
      again), and every raw key holds the file, so a key cannot repeat across files.
    * `by: "day"` suites (billing buckets, the day marts, the resource-day tie-outs): the rows of
      the UTC days `days` [first, last], the days a windowed run rebuilt and publishes.

    `None` for either checks those suites whole; `validate(con, id)` without a scope checks
    everything (what a full check, or a run over all days, wants)."""
    files: tuple[str, ...] | None = None
    days: tuple[date, date] | None = None
    every_file: bool = False  # `files` are all of raw.files: the file suites read whole tables

    @classmethod
    def for_run(cls, con, day_from: date | None = None, day_to: date | None = None) -> Scope:
        """The files landed since the last validation that passed, and [day_from, day_to]
        when the run was windowed (else every day). When no validation passed yet, every file
        is new and the file suites read their tables whole (rows of no landed file included)."""
        landed = con.execute("select source_file, sha256 from raw.files order by 1").fetchall()
        done = set()
        if con.execute("select count(*) from duckdb_tables() where database_name = "
                       "current_database() and schema_name = 'meta' and "
                       "table_name = 'validated_files'").fetchone()[0]:
            done = set(con.execute("select source_file, sha256 from meta.validated_files").fetchall())
        files = tuple(f for f, h in landed if (f, h) not in done)
        days = None
        if day_from is not None or day_to is not None:
            days = (day_from or date.min, day_to or date.max)
        return cls(files=files, days=days, every_file=len(files) == len(landed))

    def predicate(self, suite: Suite) -> str | None:
        """The suite's rows in this scope, as SQL on its table or query (None: every row)."""
        if suite.scope is None:
            return None
        by, column = suite.scope
        col = '"' + column + '"'
        if by == "file" and self.files is not None and not self.every_file:
            if not self.files:
                return "false"
            return _in_files(col, self.files)
        if by == "day" and self.days is not None:
            first, last = self.days
            tests = []
            if first > date.min:
                tests.append(f"{col} >= DATE '{first.isoformat()}'")
            if last < date.max - timedelta(days=1):
                tests.append(f"{col} < DATE '{(last + timedelta(days=1)).isoformat()}'")
            return " and ".join(tests) or None
        return None


def from_first_row(con, suite: Suite, where: str, tail: dict[str, int | None] | None = None) -> str:
    """`where`, with a lower bound on rowid for a table scoped by file: a run's files are the
    table's last rows (appended), so every scan of the suite then skips the row groups of
    history by rowid. Exact: no row in scope lies below the first one. `tail` holds the first
    rows `tail_bounds` found from the tables' ends by `source_file`; a table it lacks (or a
    suite scoped by another column) costs one scan."""
    if suite.table is None or suite.scope is None or suite.scope[0] != "file" or where == "false":
        return where
    if tail is not None and suite.table in tail and suite.scope[1] == "source_file":
        first = tail[suite.table]
    else:
        first = con.execute(f"select min(rowid) from {suite.table} where {where}").fetchone()[0]
    return "false" if first is None else f"rowid >= {int(first)} and {where}"


# Where a landed file's records are: its loaded records in one of these raw tables (the tables of
# recon.ingest.raw_tables.TABLES), its quarantined ones in raw.quarantine; raw.files counts both.
LOADED_TABLES = tuple(f"raw.{t}" for t in TABLES)
QUARANTINE_TABLE = "raw.quarantine"


def tail_bounds(con, files: tuple[str, ...], rounds: int = 6) -> dict[str, int | None]:
    """A rowid lower bound per raw table for the rows of `files`, found from the tables' ends.

    The files a gate has not checked yet were landed after every file it has (a passed gate
    remembers every landed file), so their rows are the last ones appended: a first guess of the
    region [end - k, end) with k = the rows raw.files says they have reads the day's rows, not
    `min(rowid)` over all history (0.17-0.20 s over the 500-node fleet's 62.7 M job rows).

    Exact, whatever the order of the rows: a bound is accepted only when the regions together
    hold as many rows of `files` as raw.files counts for them (loaded rows across the data
    tables, quarantined ones in raw.quarantine); until then a region that did not reach its
    table's start grows 4x. A table whose region holds none of them gets None (no rows in scope).
    If the counts never meet (rows missing or extra: the per-file tie-out, raw.files, reports
    that), the result is {} and the caller finds `min(rowid)` the old way.
    """
    if not files:
        return {}
    loaded, quarantined = con.execute(
        "select coalesce(sum(records_loaded), 0), coalesce(sum(records_quarantined), 0) "
        "from raw.files where source_file in (select unnest(?::varchar[]))", [list(files)]).fetchone()
    pred = _in_files('"source_file"', files)
    bounds: dict[str, int | None] = {}
    for tables, expected in ((LOADED_TABLES, int(loaded)), ((QUARANTINE_TABLE,), int(quarantined))):
        ends = {}
        for t in tables:
            end = con.execute(f"select max(rowid) from {t}").fetchone()[0]
            ends[t] = -1 if end is None else int(end)
        k = max(expected, 1)
        found: dict[str, tuple[int, int | None, bool]] = {}
        for _ in range(rounds):
            for t, end in ends.items():
                if t in found and found[t][2]:
                    continue  # this region already holds the whole table
                lo = max(end + 1 - k, 0)
                n, first = con.execute(f"select count(*), min(rowid) from {t} "
                                       f"where rowid >= {lo} and {pred}").fetchone()
                found[t] = (int(n), None if first is None else int(first), lo == 0)
            if sum(n for n, _, _ in found.values()) == expected:
                bounds.update({t: first for t, (_, first, _) in found.items()})
                break
            if all(whole for _, _, whole in found.values()):
                return {}
            k *= 4
        else:
            return {}
    return bounds


def _in_files(column: str, files: tuple[str, ...]) -> str:
    """`column in ('a', 'b', …)`: a literal list, which DuckDB pushes into the scan as a filter."""
    return f"{column} in ({', '.join(_literal(f) for f in files)})"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def note_validated(con, files: tuple[str, ...]) -> None:
    """Remember that these files' rows passed (by their sha256 now): later runs skip them."""
    if not files:
        return
    con.execute("create schema if not exists meta")
    con.execute(VALIDATED_DDL)
    con.execute("insert or replace into meta.validated_files select source_file, sha256 "
                "from raw.files where source_file in (select unnest(?::varchar[]))", [list(files)])
