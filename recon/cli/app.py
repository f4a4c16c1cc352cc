"""`recon`: a thin command line over the library. Every command has help and an example."""

from __future__ import annotations

import logging
import sys
import tempfile
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text  # a cell shown as is: data is never read as rich markup

from .guard import visible  # data's control characters shown, not acted on by the terminal

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="GPU billing reconciliation: Kubernetes lifecycle vs Runpod/FOCUS bills.")
console = Console()
err = Console(stderr=True, soft_wrap=True)


class _VisibleFormatter(logging.Formatter):
    """Log lines name files and quote records: their control characters are shown escaped."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


def _logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if verbose else logging.ERROR, handlers=[handler])


def _day(s: Optional[str], option: str = "--day") -> Optional[date]:
    """A UTC day option (YYYY-MM-DD), or a clear error and exit 2 (a traceback until 0.10.5)."""
    if not s:
        return None
    from .outputs.exports import parse_day

    try:
        return parse_day(s)
    except ValueError:
        _fail(f"{option} must be a UTC day YYYY-MM-DD, got {s!r}")


def _window(day_from: Optional[str], day_to: Optional[str]):
    """--from/--to as days; a window that ends before it starts is an error, not an empty run."""
    lo, hi = _day(day_from, "--from"), _day(day_to, "--to")
    if lo is not None and hi is not None and lo > hi:
        _fail(f"--from {lo} is after --to {hi}")
    return lo, hi


STAGE_AFTER_SECONDS = 3.0  # recon run shows its stages once it has run this long


def _fail(msg: str, code: int = 2) -> NoReturn:
    """Print `error: msg` (as text: a message from data or a library is never read as rich
    markup, which ate `[thresholds]` and crashed on `[/x]` until 0.10.6) and exit with `code`."""
    err.print("[red]error:[/red] " + escape(visible(msg)))
    raise typer.Exit(code) from None


def _environment_failure(e: Exception, doing: str) -> None:
    """A warehouse held by another process or a full disk: one line and exit 1. Anything else
    is re-raised (a bug shows its traceback)."""
    from .guard import WarehouseBusy, disk_full

    if isinstance(e, WarehouseBusy):
        _fail(str(e), code=1)
    if (msg := disk_full(e, doing)) is not None:
        _fail(msg, code=1)
    raise e


def _secs(x) -> str:
    """Seconds as the report, `recon check` and finding messages write them (86,400; 688.5):
    until 0.10.6 the summary kept trailing zeros (688.500)."""
    from .outputs.report import seconds_text

    return seconds_text(x)


def _no_data(con, day: date, db) -> str | None:
    """What to say when the warehouse has no billed or active resource on `day` (a mistyped
    --day, or a day outside what was landed or built): until 0.10.6 `recon check` passed every
    step on such a day, and `report` / `export` wrote $0.00 pages and empty files in silence."""
    from .pipeline import billed_span, empty_days

    if not empty_days(con, day, day):
        return None
    span = billed_span(con)
    cover = f"the landed bills cover {span[0]}..{span[1]}" if span else "no bill was landed"
    return f"no billed or active resource on {day} in {db} ({cover})"


def _print_validation(res) -> None:
    v = res.validation
    if v is None:
        return
    console.print(visible(v.summary()), soft_wrap=True, markup=False)
    if not v.success:
        err.print("[red]validation failed:[/red] the marts are written, but critical "
                  "expectations failed (see marts.validation_results)")
        raise typer.Exit(1)


def print_summary(res) -> None:
    from .pipeline import SUMMARY_METRICS

    if not res.days:
        console.print("Reconciliation summary: no day with a billed or active resource.")
    t = Table(title="Reconciliation summary: USD (seconds)", title_justify="left",
              caption="The rows under billed add up to it; each is rounded to the cent on its "
                      "own, so their shown sum may differ by a few cents. Storage seconds run "
                      "beside compute seconds: billed seconds count compute only. Money at "
                      "stake outside the bill: unused savings-plan upfront, work the bill "
                      "has no line for, a balance's shortfall.",
              caption_justify="left")
    t.add_column("", overflow="fold")
    for d in res.days:
        t.add_column(str(d["day"]), justify="right", overflow="fold")
    labels = {"billed": "billed", "busy": "work (busy)",
              "serverless_execution": "serverless execution", "startup": "startup / cold start",
              "tail": "tail after last task", "serverless_idle": "serverless idle",
              "serverless_rounding": "serverless rounding",
              "idle_unobserved": "idle gaps + unobserved",
              "storage_running": "storage, compute running",
              "lingering_storage": "storage, compute stopped", "network_volume": "network volumes"}
    for m in SUMMARY_METRICS:
        t.add_row(labels[m], *[f"{d[m]} ({_secs(d[m + '_seconds'])} s)" for d in res.days])
    t.add_row("findings", *[str(d["findings"]) for d in res.days])
    t.add_row("money at stake", *[str(d["at_stake"]) for d in res.days])
    t.add_row("  of it outside the bill", *[str(d["at_stake_outside_bill"]) for d in res.days])
    if res.days:
        console.print(t)
    if res.empty_days:
        span = (f"the landed bills cover {res.billed_span[0]}..{res.billed_span[1]}"
                if res.billed_span else "no bill was landed")
        days = ", ".join(str(d) for d in res.empty_days[:5]) + (
            f" and {len(res.empty_days) - 5} more" if len(res.empty_days) > 5 else "")
        err.print(f"[yellow]no billed or active resource on {days} ({span}): are --from/--to "
                  f"right, and is the landing area complete for those days?[/yellow]")
    console.print(
        f"Input: {len(res.files)} files, {res.records_in} records: {res.loaded} loaded, "
        f"{res.quarantined} quarantined at load, {res.staging_quarantined} quarantined in staging, "
        f"{res.skipped} skipped (not billing data)."
    )
    for f in res.files:
        staged = res.staging_quarantined_by_file.get(str(f.path), 0)
        if f.quarantined or staged:
            parts = ([f"{f.quarantined} at load"] if f.quarantined else []) + (
                [f"{staged} in staging"] if staged else [])
            err.print(f"[yellow]{_shown(f.path)}: {f.quarantined + staged} record(s) "
                      f"quarantined ({', '.join(parts)}; see `recon quarantine`)[/yellow]")
        if f.kind == "settling":
            err.print(f"[yellow]{_shown(f.path)}: {_shown(f.skip_reason)}[/yellow]")
        for w in f.warnings:
            err.print(f"[yellow]warning: {_shown(w)}[/yellow]")


def _shown(text) -> str:
    """Text from data or a file name inside a rich markup string: neither its brackets read as
    markup nor its control characters acted on."""
    return escape(visible(text, keep_newlines=False))


@app.command()
def simulate(out: Path = typer.Option(..., help="Folder to write"),
             seed: int = 7, days: int = 2, nodes: int = 4, endpoints: int = 2,
             scale: float = typer.Option(1.0, help="Multiplies jobs per session and serverless load"),
             start: str = typer.Option("2026-06-01", help="First UTC day"),
             force: bool = typer.Option(False, "--force", help="Clear an earlier simulation's "
                                        "files from OUT first (only the files it wrote: "
                                        "anything else in OUT makes it refuse)")):
    """Write a realistic input folder plus expected/ground_truth.json.

    Example: recon simulate --out /tmp/sim --days 3 --nodes 8 --seed 1
    """
    from .simulate import output
    from .simulate import simulate as sim

    start_day = _day(start, "--start")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file, not a folder")
    if not output.is_empty(out):
        # two fleets in one folder would reconcile as one, against neither ground truth
        if not force:
            _fail(f"{out} is not empty: a simulation into it would mix two fleets. Choose an "
                  "empty or new folder, or --force to clear an earlier simulation's files")
        try:
            gone = output.clear(out)
        except ValueError as e:
            _fail(str(e))
        console.print(f"Cleared {gone} files of an earlier simulation from {out}")
    r = sim(out, seed=seed, days=days, nodes=nodes, endpoints=endpoints, scale=scale,
            start_day=start_day)
    console.print(f"Wrote {r['files']} input files to {out} (config: {out}/recon.toml, "
                  f"ground truth: {out}/expected/ground_truth.json)")


@app.command("run")
def run_cmd(input: Path = typer.Option(..., "--input", help="Folder of input files (any layout)"),
            db: Path = typer.Option(Path("data/recon.duckdb"), help="DuckDB file to write"),
            config: Optional[Path] = typer.Option(None, help="recon TOML (default: INPUT/recon.toml)"),
            day_from: Optional[str] = typer.Option(None, "--from", help="First UTC day (YYYY-MM-DD)"),
            day_to: Optional[str] = typer.Option(None, "--to", help="Last UTC day, inclusive"),
            verbose: bool = typer.Option(False, "-v", help="Log every quarantined record"),
            validate: bool = typer.Option(True, help="Run the Great Expectations suites (a few "
                                                     "seconds); a critical failure exits 1"),
            settle: float = typer.Option(0, "--settle", help="Leave files modified less than "
                                         "this many seconds ago for a later run (still being "
                                         "written)")):
    """Load every file of a folder, build the marts, print the summary.

    Example: recon run --input /data/landing --db data/recon.duckdb --from 2026-06-01 --to 2026-06-01
    """
    from .pipeline import run

    _logging(verbose)
    try:
        res = run(input, db, config, *_window(day_from, day_to),
                  progress=lambda i, n, name: err.print(
                      f"[dim]loaded {i}/{n} {_shown(name)}[/dim]")
                  if n > 20 and i % max(1, n // 10) == 0 else None, validate=validate,
                  settle_seconds=settle, on_stage=_stage_printer())
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001 - a lock or a full disk is a sentence, else re-raised
        _environment_failure(e, f"writing {db}")
    print_summary(res)
    _print_awaiting(res)
    if res.loaded == 0:  # every record of the folder: a rerun counts what it landed before
        settling = sum(f.kind == "settling" for f in res.files)
        _fail(f"no record of {input} loaded: {len(res.files)} file(s), {res.records_in} "
              f"record(s), {res.quarantined} quarantined, {res.skipped} skipped (not billing "
              f"data)" + (f", {settling} file(s) still being written" if settling else "")
              + f"; see `recon quarantine --db {res.db}`", code=1)
    _print_validation(res)
    console.print(f"Warehouse: {res.db}. Next: recon query --db {res.db} "
                  f"\"select * from marts.findings order by amount_at_stake desc\"")


def _print_awaiting(res) -> None:
    """The days whose provider bill has not landed: their money is not reconciled yet."""
    from .published import AWAITING, day_states
    from .db import connect

    con = connect(res.db, read_only=True)
    try:
        held = [d for d, st in day_states(con, [d["day"] for d in res.days]).items()
                if st == AWAITING]
    finally:
        con.close()
    if held:
        err.print(f"[yellow]awaiting the provider's bill: {', '.join(map(str, held))} (no bill "
                  "line of the day pulled at or after its end + bill_arrival_minutes): not "
                  "reconciled yet (marts.settlement state `awaiting_bill`); run again once the "
                  "bill has landed[/yellow]")


def _stage_printer():
    """on_stage for `recon run`: a dim line per stage with the seconds since the run started,
    once the run has taken STAGE_AFTER_SECONDS (a small run's build is over before anyone
    waits; the 500-node day's stages start at 14, 21, 23, 23 and 25 s)."""
    import time

    t0, after = time.perf_counter(), STAGE_AFTER_SECONDS

    def show(text: str) -> None:
        took = time.perf_counter() - t0
        if took >= after:
            err.print(f"[dim]{text} … ({took:.0f} s so far)[/dim]")
    return show


DEMO_DB = Path("data/demo.duckdb")


def _written_by_demo(db: Path) -> bool:
    """Whether `db` is a warehouse `recon demo` wrote (its meta.demo table)."""
    import duckdb

    try:
        con = duckdb.connect(str(db), read_only=True)
    except Exception:  # noqa: BLE001 - not a DuckDB file, or locked: not the demo's to replace
        return False
    try:
        return bool(con.execute("select count(*) from duckdb_tables() where schema_name = "
                                "'meta' and table_name = 'demo'").fetchone()[0])
    finally:
        con.close()


@app.command()
def demo(db: Path = typer.Option(DEMO_DB, help="DuckDB file to write: its own, never `recon "
                                 "run`'s; a file the demo did not write is left as it is"),
         days: int = 2, nodes: int = 4, seed: int = 7):
    """Simulate a small fleet into a temporary folder, reconcile it, print the summary.

    Example: recon demo
    """
    from .pipeline import run
    from .simulate import simulate as sim
    from .db import connect

    _logging(False)
    if db.exists() and not _written_by_demo(db):
        _fail(f"{db} exists and was not written by `recon demo`: it is left as it is. Give "
              f"another --db (the demo's own is {DEMO_DB})")
    with tempfile.TemporaryDirectory(prefix="recon-demo-") as tmp:
        sim(tmp, seed=seed, days=days, nodes=nodes)
        for p in (db, db.with_name(db.name + ".wal")):
            p.unlink(missing_ok=True)  # the demo's own earlier warehouse (checked above)
        res = run(tmp, db, validate=True)
    con = connect(db)
    try:  # the mark that lets the next demo replace this file, and only this one
        con.execute("create schema if not exists meta")
        con.execute("create or replace table meta.demo as select ? as seed, ? as days, "
                    "? as nodes, now() as written_at", [seed, days, nodes])
    finally:
        con.close()
    print_summary(res)
    _print_validation(res)
    day = res.days[0]["day"] if res.days else "2026-06-01"
    console.print(f"\nWarehouse written to {db} (the demo's own; `recon run` writes "
                  f"data/recon.duckdb). Next, with --db {db}:\n"
                  f"  uv run recon query --db {db} \"select code, resource_id, day, "
                  f"amount_at_stake, message from marts.findings order by amount_at_stake "
                  f"desc limit 10\"\n"
                  f"  uv run recon report --db {db} --day {day}\n"
                  f"  uv run recon check --db {db} --day {day}\n"
                  f"  uv run recon whatif --db {db} --cooldown 60 --idle-timeout 2",
                  soft_wrap=True, markup=False)


@app.command()
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
    con = _open_db(db)
    # closed before the command returns: the lock holds for the database instance, which
    # DuckDB shares among the connections of one process to the same file
    try:
        _query(con, sql, format, allow_files)
    finally:
        con.close()


def _query(con, sql: str, format: str, allow_files: bool) -> None:
    from .guard import lock_down

    lock_down(con, allow_files=allow_files)
    try:
        rel = con.sql(sql)
    except Exception as e:  # duckdb errors carry the SQL position
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


def _table(*columns: str, numeric: tuple[str, ...] = (), **kw) -> Table:
    """A table that never cuts a value short: where the terminal (80 columns when piped) is too
    narrow, a long word folds onto the next line instead of ending in '…' (rich's default,
    which showed `recon query`'s finding codes as SAVINGS_PLAN_UNUS…)."""
    t = Table(**kw)
    for c in columns:
        t.add_column(c, overflow="fold", justify="right" if c in numeric else "left")
    return t


def _cell(v) -> str:
    """A value as `recon query` shows it: a decimal in plain digits (str() gives 0E-12 for a zero
    amount and 3.6E-11 for a small one), everything else as str()."""
    if v is None:
        return ""
    if isinstance(v, Decimal):
        return format(v, "f")
    return str(v)


@app.command()
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


@app.command()
def serve(landing_dir: Path = typer.Option(Path("data/landing"), help="Landing area to load"),
          db: Path = typer.Option(Path("data/recon.duckdb"), help="DuckDB file to write"),
          cron: str = typer.Option("30 2 * * *", help="UTC cron; each run reconciles the day before"),
          port: int = typer.Option(4200, help="Port of the local Prefect server started when "
                                              "PREFECT_API_URL is not set"),
          exports_dir: str = typer.Option("data/exports", help="Folder for each day's finance "
                                          "CSVs, written once its gate passed ('' for none)"),
          settle: int = typer.Option(600, "--settle", help="Leave files modified less than this "
                                     "many seconds ago for the next run (the collector's open "
                                     "hour)")):
    """Run the daily reconciliation on its schedule from this process (no work pool needed).

    Example: recon serve --landing-dir /data/landing --db data/recon.duckdb
    """
    from flows.serve import serve_daily

    serve_daily(str(landing_dir), str(db), cron, port, exports_dir or None, settle)


def _open_db(db: Path, need_marts: bool = False):
    """The warehouse, read-only; a missing file (or, with `need_marts`, one no run has built
    yet) is a clear error and exit 2, not DuckDB's traceback."""
    from .db import connect

    if not db.exists():
        _fail(f"{db} does not exist; run `recon run` or `recon demo` first")
    from .guard import WarehouseBusy

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


@app.command("export")
def export_cmd(out: Path = typer.Option(..., "--out", help="Folder to write the files into"),
               day: str | None = typer.Option(None, "--day", help="UTC day YYYY-MM-DD: "
                                                 "costs_<day>.csv and findings_<day>.csv"),
               month: str | None = typer.Option(None, "--month", help="YYYY-MM: daily files for "
                                                   "every day with data plus focus_<month>.csv/.parquet"),
               db: Path = typer.Option(Path("data/recon.duckdb")),
               account_id: str = typer.Option("runpod", help="FOCUS BillingAccountId"),
               account_name: str = typer.Option("Runpod account", help="FOCUS BillingAccountName")):
    """Write finance CSVs (costs by team, findings) and a FOCUS 1.2 file; totals tie to the bill.

    Example: recon export --month 2026-06 --out exports/
    """
    from .outputs import exports

    if (day is None) == (month is None):
        _fail("give exactly one of --day or --month")
    try:
        if day is not None:
            exports.parse_day(day)
        else:
            exports.parse_month(month)
    except ValueError as e:
        _fail(str(e))
    con = _open_db(db, need_marts=True)
    if day is not None and (msg := _no_data(con, exports.parse_day(day), db)):
        err.print(f"[yellow]warning:[/yellow] {escape(msg)}: the files hold no rows")
    try:
        if day is not None:
            paths = exports.export_day(con, day, out)
        else:
            paths = exports.export_month(con, month, out, account_id, account_name)
    except ValueError as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001 - see _environment_failure
        _environment_failure(e, f"writing into {out}")
    for p in paths:
        console.print(f"wrote {p}")


@app.command("report")
def report_cmd(day: str = typer.Option(..., "--day", help="UTC day YYYY-MM-DD"),
               db: Path = typer.Option(Path("data/recon.duckdb")),
               out: Path | None = typer.Option(None, "--out",
                                                  help="HTML file (default: report_<day>.html)")):
    """Write a self-contained HTML page for a day: bill split, findings, instance timelines, trend.

    Example: recon report --day 2026-06-01 --out report.html
    """
    from .outputs.exports import parse_day
    from .outputs.report import write_report

    try:
        parse_day(day)
    except ValueError as e:
        _fail(str(e))
    con = _open_db(db, need_marts=True)
    if msg := _no_data(con, parse_day(day), db):
        err.print(f"[yellow]warning:[/yellow] {escape(msg)}: the page shows nothing billed")
    try:
        path = write_report(con, day, out or Path(f"report_{day}.html"), db_label=str(db))
    except ValueError as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001 - see _environment_failure
        _environment_failure(e, f"writing {out or f'report_{day}.html'}")
    console.print(f"wrote {path}")


@app.command("schema")
def schema_cmd(markdown: bool = typer.Option(False, "--markdown", help="Print Markdown tables")):
    """List the marts and what each column means.

    Example: recon schema --markdown
    """
    from .schema import MARTS
    from .schema import markdown as schema_markdown

    if markdown:
        sys.stdout.write(schema_markdown())
        return
    for table, spec in MARTS.items():
        t = _table("column", "meaning", title=f"marts.{table} — {spec['grain']}",
                   title_justify="left")
        for col, desc in spec["columns"].items():
            t.add_row(Text(col), Text(desc))
        console.print(t)


@app.command()
def collect(landing: Path = typer.Option(Path("data/landing"), help="Landing area to append to"),
            kubeconfig: str | None = typer.Option(None, help="kubeconfig path (default: "
                                                  "in-cluster, else ~/.kube/config)"),
            context: list[str] = typer.Option([], help="kube context; repeat for several "
                                              "clusters, or 'all'"),
            once: bool = typer.Option(False, help="List everything once and exit"),
            run_seconds: float | None = typer.Option(None, help="Stop after this long"),
            verbose: bool = typer.Option(False, "-v")):
    """Watch pods, events, nodes, jobs and KEDA objects; append every version to LANDING.

    Example: recon collect --landing /data/landing --context prod-eu --context prod-us
    """
    import binascii
    import signal
    import threading

    import yaml
    from kubernetes.config.config_exception import ConfigException

    from connectors.kubernetes import check_unique_names, collect_once, default_clusters
    from connectors.kubernetes import collect as k8s_collect

    _logging(verbose)
    kc_name = kubeconfig or "the default kubeconfig (~/.kube/config or $KUBECONFIG)"
    where = kc_name
    try:
        clusters = default_clusters(kubeconfig, (context if context != ["all"] else "all") or None)
        check_unique_names(clusters)
        # loaded here, once, and handed to the collector: a bad context (missing user, bad
        # base64 key data) is this error, not a traceback from inside the collector
        configurations = {}
        for cl in clusters:
            where = ("the in-cluster service account" if cl.in_cluster
                     else f"{kc_name}, context {cl.context!r}" if cl.context else kc_name)
            configurations[cl.name] = cl.configuration()
    # a traceback until 0.10.6, and until 0.10.8 for a mistyped --context, two contexts of one
    # cluster name, bad base64 key data (ValueError), a file that is not a mapping or an entry
    # of the wrong type (TypeError, AttributeError)
    except (ConfigException, OSError, yaml.YAMLError, ValueError, TypeError,
            AttributeError) as e:
        if isinstance(e, binascii.Error):
            why = f"certificate or key data is not valid base64 ({e})"
        elif isinstance(e, (TypeError, AttributeError)):
            why = ("not a kubeconfig, or an entry of the wrong type (a YAML mapping with lists "
                   f"of clusters, contexts and users is expected; {type(e).__name__}: {e})")
        else:
            # a YAML error may quote the offending line (a token): only its position is kept
            why = " ".join(ln.strip() for ln in str(e).splitlines()
                           if ln.strip() and not ln.startswith("    "))
        _fail(f"{where}: {why}")
    if once:
        c = collect_once(landing, clusters, configurations=configurations)
        if failed := c.failed_lists():  # exit 0 with nothing landed until 0.10.6
            console.print(c.snapshot()["totals"])
            _fail(f"{len(failed)} list(s) failed: {', '.join(failed)} (the errors above say why); "
                  "what did list was landed", code=1)
    else:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        err.print(f"collecting from {len(clusters)} cluster(s) into {landing}; Ctrl-C or SIGTERM stops")
        try:
            c = k8s_collect(landing, clusters, stop_event=stop, run_seconds=run_seconds,
                            on_progress=lambda snap: err.print(
                                f"[dim]{escape(str(snap['totals']))}[/dim]"),
                            configurations=configurations)
        except KeyboardInterrupt:
            stop.set()
            return
    console.print(c.snapshot()["totals"])


@app.command("whatif")
def whatif_cmd(cooldown: Optional[int] = typer.Option(None, min=0,
                                                      help="KEDA cooldownPeriod (1 → 0), seconds"),
               stabilization: Optional[int] = typer.Option(
                   None, min=0, help="HPA scaleDown stabilizationWindowSeconds (N → 1), seconds"),
               scale_down_delay: Optional[int] = typer.Option(None, min=0,
                                                              help="Node scale-down grace, seconds"),
               idle_timeout: Optional[int] = typer.Option(None, min=0,
                                                          help="Serverless idle timeout, s"),
               day_from: Optional[str] = typer.Option(None, "--from"),
               day_to: Optional[str] = typer.Option(None, "--to"),
               db: Path = typer.Option(Path("data/recon.duckdb"))):
    """Re-price observed tails and serverless idle under other settings: the modelled cost at
    today's settings, under the ones given, and the difference (money saved) per workload.

    Example: recon whatif --cooldown 60 --idle-timeout 2
    """
    from .outputs.whatif import aggregate, whatif

    if cooldown is None and stabilization is None and scale_down_delay is None and idle_timeout is None:
        _fail("give --cooldown, --stabilization, --scale-down-delay and/or --idle-timeout")
    lo, hi = _window(day_from, day_to)
    con = _open_db(db, need_marts=True)
    # default: the days the last run built (all of them after a run without --from/--to)
    last = con.execute("select cfg('day_from')::date, cfg('day_to')::date").fetchone()
    lo, hi = lo or last[0], hi or last[1]
    try:
        res = whatif(con, lo, hi, cooldown, scale_down_delay, idle_timeout, stabilization)
    except ValueError as e:
        _fail(str(e))
    rows = aggregate(res)
    t = _table("team", "namespace", "workload", "what", "today s", "what-if s", "today USD",
               "what-if USD", "saved USD",
               numeric=("today s", "what-if s", "today USD", "what-if USD", "saved USD"),
               title="What if (model: see recon/whatif.py)", title_justify="left")
    for team, ns, wl, kind, obs, new, base_usd, new_usd, saved in rows:
        t.add_row(*map(Text, (team, ns or "", wl or "", kind, f"{obs:,.0f}", f"{new:,.0f}",
                              f"{base_usd:.2f}", f"{new_usd:.2f}", f"{saved:.2f}")))
    console.print(t)
    base = sum((r[6] for r in rows), 0)
    new = sum((r[7] for r in rows), 0)
    console.print(f"Baseline (today's settings): {base:.2f} USD; what-if: {new:.2f} USD")
    console.print(f"Total saved: {base - new:.2f} USD")
    if res.not_scaled_down:
        console.print(f"{res.not_scaled_down} compute session(s) left out: their nodes did not scale "
                      "down within today's expected tail, so no setting explains them "
                      "(BILLED_AFTER_EXIT holds their excess)")


@app.command("check")
def check_cmd(day: str = typer.Option(..., "--day", help="UTC day YYYY-MM-DD"),
              db: Path = typer.Option(Path("data/recon.duckdb"))):
    """Scheduling verification in four steps for a day; exits 1 when a step fails.

    Example: recon check --day 2026-06-01
    """
    from .outputs.check import run_checks

    the_day = _day(day)
    con = _open_db(db, need_marts=True)
    if msg := _no_data(con, the_day, db):
        _fail(f"{msg}: nothing to check")
    steps = run_checks(con, the_day)
    for s in steps:
        console.print(f"[{'green' if s.passed else 'red'}]{'PASS' if s.passed else 'FAIL'}[/] "
                      f"{s.title}", soft_wrap=True)
        for line in s.lines:
            console.print(f"    {line}", soft_wrap=True, markup=False)
    if not all(s.passed for s in steps):
        raise typer.Exit(1)


def main():
    app()


if __name__ == "__main__":
    main()
