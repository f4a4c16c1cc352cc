"""`recon`'s Typer app and what its commands share: days and windows from options, errors as one
line and an exit code, the warehouse opened read-only, tables that never cut a value short."""

from __future__ import annotations

import logging
import sys
from datetime import date
from pathlib import Path
from typing import NoReturn

import typer
from rich.markup import escape
from rich.table import Table

from ..guard import visible  # data's control characters shown, not acted on by the terminal
from ..outputs.summary import err

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="GPU billing reconciliation: Kubernetes lifecycle vs Runpod/FOCUS bills.")


class _VisibleFormatter(logging.Formatter):
    """Log lines name files and quote records: their control characters are shown escaped."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


class _StderrNow(logging.StreamHandler):
    """Writes to `sys.stderr` as it is when a record is logged, not as it was when the handler
    was made (as logging's own last-resort handler does). `basicConfig` configures once per
    process: a command run in-process again (a test's CliRunner, which swaps and then closes
    stderr) would otherwise log into the first run's closed stream, and print "--- Logging
    error ---" and a traceback into its own output instead of the record."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ sets it: sys.stderr wins
        pass


def _logging(verbose: bool) -> None:
    """Records of this command at INFO with -v, else ERROR, to stderr. `basicConfig` acts once
    per process: when the root logger holds this handler (the CLI configured logging), the
    level is set again on every call, so that an earlier in-process command's -v does not make
    this one verbose; when something else configured logging (pytest's capture, an embedding
    program), its level is left alone."""
    handler = _StderrNow()
    handler.setFormatter(_VisibleFormatter("%(levelname)s %(name)s: %(message)s"))
    level = logging.INFO if verbose else logging.ERROR
    logging.basicConfig(level=level, handlers=[handler])
    root = logging.getLogger()
    if any(isinstance(h, _StderrNow) for h in root.handlers):
        root.setLevel(level)


def _day(s: str | None, option: str = "--day") -> date | None:
    """A UTC day option (YYYY-MM-DD), or a clear error and exit 2 (not a traceback)."""
    if not s:
        return None
    from ..outputs.exports import parse_day

    try:
        return parse_day(s)
    except ValueError:
        _fail(f"{option} must be a UTC day YYYY-MM-DD, got {s!r}")


def _window(day_from: str | None, day_to: str | None):
    """--from/--to as days; a window that ends before it starts is an error, not an empty run."""
    lo, hi = _day(day_from, "--from"), _day(day_to, "--to")
    if lo is not None and hi is not None and lo > hi:
        _fail(f"--from {lo} is after --to {hi}")
    return lo, hi


def _fail(msg: str, code: int = 2) -> NoReturn:
    """Print `error: msg` (as text: a message from data or a library is never read as rich
    markup, which would eat `[thresholds]` and crash on `[/x]`) and exit with `code`."""
    err.print("[red]error:[/red] " + escape(visible(msg)))
    raise typer.Exit(code) from None


def _environment_failure(e: Exception, doing: str) -> None:
    """A warehouse held by another process or a full disk: one line and exit 1. Anything else
    is re-raised (a bug shows its traceback)."""
    from ..guard import WarehouseBusy, disk_full

    if isinstance(e, WarehouseBusy):
        _fail(str(e), code=1)
    if (msg := disk_full(e, doing)) is not None:
        _fail(msg, code=1)
    raise e


def _no_data(con, day: date, db) -> str | None:
    """What to say when the warehouse has no billed or active resource on `day` (a mistyped
    --day, or a day outside what was landed or built): without it `recon check` would pass every
    step on such a day, and `report` / `export` would write $0.00 pages and empty files in
    silence."""
    from ..pipeline import billed_span, empty_days

    if not empty_days(con, day, day):
        return None
    span = billed_span(con)
    cover = f"the landed bills cover {span[0]}..{span[1]}" if span else "no bill was landed"
    return f"no billed or active resource on {day} in {db} ({cover})"


def _table(*columns: str, numeric: tuple[str, ...] = (), **kw) -> Table:
    """A table that never cuts a value short: where the terminal (80 columns when piped) is too
    narrow, a long word folds onto the next line instead of ending in '…' (rich's default,
    which showed `recon query`'s finding codes as SAVINGS_PLAN_UNUS…)."""
    t = Table(**kw)
    for c in columns:
        t.add_column(c, overflow="fold", justify="right" if c in numeric else "left")
    return t


def _open_db(db: Path, need_marts: bool = False):
    """The warehouse, read-only; a missing file (or, with `need_marts`, one no run has built
    yet) is a clear error and exit 2, not DuckDB's traceback."""
    from ..db import connect

    if not db.exists():
        _fail(f"{db} does not exist; run `recon run` or `recon demo` first")
    from ..guard import WarehouseBusy

    try:
        con = connect(db, read_only=True)
    except WarehouseBusy as e:
        _fail(str(e), code=1)
    if need_marts and not con.execute(
            "select count(*) from duckdb_tables() where schema_name = 'marts' "
            "and table_name = 'resource_day'").fetchone()[0]:
        con.close()
        _fail(f"{db} holds no reconciliation yet; run `recon run` first")
    return con
