"""`recon query`, `recon quarantine` and `recon schema`: what the warehouse holds."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.text import Text  # a cell shown as is: data is never read as rich markup

from ..guard import visible  # data's control characters shown, not acted on by the terminal
from ..outputs.present import cell as _cell
from ..outputs.summary import console
from .app import (
    _fail,
    _open_db,
    _table,
)


def query(sql: str = typer.Argument(..., help="SQL to run (read-only)"),
          db: Path = typer.Option(Path("data/recon.duckdb")),
          format: str = typer.Option("table", help="table | csv | json"),
          allow_files: bool = typer.Option(False, "--allow-files", help="Let the SQL read and "
                                           "write files (COPY … TO, read_csv, ATTACH) and "
                                           "INSTALL/LOAD extensions: off, it reads the "
                                           "warehouse only")):
    """Run ad-hoc SQL against the warehouse, opened read-only.

    Example: recon query "select * from marts.resource_day limit 5"
    """
    if format not in ("table", "csv", "json"):
        _fail(f"--format {format!r}: expected table, csv or json")
    con = _open_isolated(db)
    try:
        _query(con, sql, format, allow_files)
    finally:
        con.close()


def _open_isolated(db: Path):
    """The warehouse attached read-only to a DuckDB instance of its own.

    `lock_down` locks the configuration of a whole database instance, and DuckDB shares one
    instance among every connection of a process to the same file: a query run in-process
    (a notebook, a test, a service calling the CLI's app) would otherwise leave that file's
    other connections unable to set anything, for as long as any of them stays open. An
    in-memory instance with the file attached is this command's alone. The catalog keeps the
    file's name, so `recon.marts.x` reads as it would with the file opened directly."""
    import duckdb

    from ..db import connect
    from ..guard import busy

    if not db.exists():
        _fail(f"{db} does not exist; run `recon run` or `recon demo` first")
    con = connect(None)
    name = db.stem if db.stem.lower() not in ("memory", "system", "temp") else "warehouse"
    quoted = '"' + name.replace('"', '""') + '"'
    try:
        con.execute(f"attach ? as {quoted} (read_only)", [str(db)])
    except duckdb.Error as e:
        con.close()
        locked = busy(e, db)
        _fail(str(locked) if locked is not None else f"{db}: {e}", code=1 if locked else 2)
    from ..shards import is_sharded, lens

    shard = is_sharded(con, name)
    if shard is not None:  # a shard's warehouse: marts.* are its own rows, whole.* the account's
        from ..db import _configure

        con.close()
        return lens(db, shard, _configure)
    con.execute(f"use {quoted}")
    return con


def _query(con, sql: str, format: str, allow_files: bool) -> None:
    from ..guard import lock_down

    lock_down(con, allow_files=allow_files)
    try:
        rel = con.sql(sql)
    except Exception as e:  # noqa: BLE001 -- any duckdb error (parser, binder, catalog, IO) is one line for the user, with its SQL position
        hint = ("" if allow_files or "disabled" not in str(e) else
                " (recon query reads the warehouse only: --allow-files lets the SQL use "
                "files and extensions)")
        _fail(str(e) + hint)
    if rel is None:
        return
    try:
        df = _frame(rel, format)
        text = df.write_csv() if format == "csv" else df.write_json() if format == "json" else None
    except BaseException as e:  # polars panics are BaseExceptions, not Exceptions
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        _fail(f"the result cannot be written as {format} ({type(e).__name__}: "
              f"{str(e).splitlines()[0] if str(e) else ''}): cast the column to varchar in "
              "the SQL" + (", or use --format json" if format == "csv" else ""))
    if text is not None:
        sys.stdout.write(visible(text) if sys.stdout.isatty() else text)
        return
    t = _table(*df.columns, numeric=tuple(c for c, dt in df.schema.items() if dt.is_numeric()))
    for row in df.iter_rows():
        t.add_row(*[Text(visible(_cell(v))) for v in row])
    console.print(t)


# DuckDB types that polars cannot take in (interval, union) or that a CSV cannot hold (nested):
# these columns are shown as DuckDB writes them as text ([1, 2], {'a': 1})
_AS_TEXT = {"csv": {"list", "struct", "map", "array", "union", "interval", "blob", "bit"},
            "json": {"map", "union", "interval", "blob", "bit"}, "table": {"union", "interval"}}


def _frame(rel, format: str):
    """The result as a polars frame, the columns polars or the format cannot take as text."""
    cast = _AS_TEXT[format]
    if any(t.id in cast for t in rel.types):
        cols = []
        for c, t in zip(rel.columns, rel.types):
            q = '"' + c.replace('"', '""') + '"'
            cols.append(f"{q}::varchar as {q}" if t.id in cast else q)
        rel = rel.project(", ".join(cols))
    return rel.pl()


def quarantine(db: Path = typer.Option(Path("data/recon.duckdb")), limit: int = 50):
    """List quarantined records: file, locator (line/record), reason.

    Example: recon quarantine --limit 20
    """
    con = _open_db(db, need_marts=True)
    rows = con.execute(
        "select source_file, locator, reason from raw.quarantine union all "
        "select source_file, locator, reason from staging.quarantine "
        "order by 1, 2 limit ?", [limit]).fetchall()
    t = _table("file", "where", "reason")
    for r in rows:
        t.add_row(*[Text(visible(x)) for x in r])
    console.print(t)


def schema_cmd(markdown: bool = typer.Option(False, "--markdown", help="Print Markdown tables")):
    """List the marts and what each column means.

    Example: recon schema --markdown
    """
    from ..schema import MARTS
    from ..schema import markdown as schema_markdown

    if markdown:
        sys.stdout.write(schema_markdown())
        return
    for table, spec in MARTS.items():
        t = _table("column", "meaning", title=f"marts.{table} — {spec['grain']}",
                   title_justify="left")
        for col, desc in spec["columns"].items():
            t.add_row(Text(col), Text(desc))
        console.print(t)
