"""`recon run`, `recon demo` and `recon serve`: land, build, validate and summarise."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import typer

from ..guard import visible  # data's control characters shown, not acted on by the terminal
from ..outputs.summary import console, err, print_summary
from ..outputs.summary import shown as _shown
from .app import (
    _environment_failure,
    _fail,
    _logging,
    _window,
)


def run_cmd(input: str = typer.Option(..., "--input", help="Folder of input files (any layout), "
                                     "or s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, az://CONTAINER/"
                                     "PREFIX (credentials from the environment)"),
            db: Path = typer.Option(Path("data/recon.duckdb"), help="DuckDB file to write"),
            config: Path | None = typer.Option(None, help="recon TOML (default: INPUT/recon.toml)"),
            day_from: str | None = typer.Option(None, "--from", help="First UTC day (YYYY-MM-DD)"),
            day_to: str | None = typer.Option(None, "--to", help="Last UTC day, inclusive"),
            verbose: bool = typer.Option(False, "-v", help="Log every quarantined record"),
            validate: bool = typer.Option(True, help="Run the Great Expectations suites (a few "
                                                     "seconds); a critical failure exits 1"),
            settle: float = typer.Option(0, "--settle", help="Leave files modified less than "
                                         "this many seconds ago for a later run (still being "
                                         "written)"),
            cache: Path | None = typer.Option(None, "--cache", help="With an s3://, gs:// or az:// input: the "
                                              "folder its objects are mirrored into (default: "
                                              "landing-cache/ beside --db)"),
            shard: str | None = typer.Option(None, "--shard", help="Run one shard of the "
                                             "config's [shards] (or __unassigned__) into its "
                                             "own --db: its clusters' files and its own rows"),
            claims: list[str] | None = typer.Option(None, "--claims", help="With --shard "
                                                    "__unassigned__: a named shard's warehouse "
                                                    "or published marts folder (repeat for each)"),
            account: Path | None = typer.Option(None, "--account", help="With a named --shard: "
                                                "the __unassigned__ shard's warehouse, landed "
                                                "first; the shard takes its rows of the "
                                                "provider's files from it instead of landing "
                                                "them all"),
            land_only: bool = typer.Option(False, "--land-only", help="Land the input and build "
                                           "nothing (the __unassigned__ shard's first step, "
                                           "before the named shards take from it)")):
    """Load every file of a folder (or of an object store's prefix), build the marts, print the summary.

    Example: recon run --input /data/landing --db data/recon.duckdb --from 2026-06-01 --to 2026-06-01
    """
    from ..ingest.mirror import ObjectStoreError
    from ..pipeline import run

    _logging(verbose)
    try:
        res = run(input, db, config, *_window(day_from, day_to),
                  progress=_every_tenth("loaded"), validate=validate,
                  settle_seconds=settle, on_stage=_stage_printer(), cache_dir=cache,
                  on_download=_every_tenth("downloaded"), shard=shard, claims=claims or None,
                  account=account, land_only=land_only)
    except ObjectStoreError as e:  # denied, no such bucket, the store down past the retries
        _fail(str(e), code=1)
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001 - a lock or a full disk is a sentence, else re-raised
        _environment_failure(e, f"writing {db}")
    if res.mirror is not None:
        err.print(f"[dim]{_shown(res.mirror.summary())}[/dim]")
    if res.land_only:
        console.print(f"Landed {len(res.files)} file(s) into {res.db}: {res.records_in} "
                      f"record(s), {res.loaded} loaded, {res.quarantined} quarantined, "
                      f"{res.skipped} skipped. Nothing built (--land-only).")
        if res.loaded == 0:
            _fail(f"no record of {input} loaded; see `recon quarantine --db {res.db}`", code=1)
        return
    if res.taken is not None:
        from ..shards import describe_taken

        err.print(f"[dim]{_shown('The shard ' + describe_taken(res.taken))}.[/dim]")
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


def _every_tenth(verb: str):
    """A progress callback printing `verb i/n name` at every tenth of a batch of more than 20
    (files landed, objects downloaded)."""
    def show(i: int, n: int, name: str) -> None:
        if n > 20 and i % max(1, n // 10) == 0:
            err.print(f"[dim]{verb} {i}/{n} {_shown(name)}[/dim]")
    return show


def _print_awaiting(res) -> None:
    """The days whose provider bill has not landed: their money is not reconciled yet."""
    from ..db import connect
    from ..published import AWAITING, day_states

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


STAGE_AFTER_SECONDS = 3.0  # recon run shows its stages once it has run this long


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


def _print_validation(res) -> None:
    v = res.validation
    if v is None:
        return
    console.print(visible(v.summary()), soft_wrap=True, markup=False)
    if not v.success:
        err.print("[red]validation failed:[/red] the marts are written, but critical "
                  "expectations failed (see marts.validation_results)")
        raise typer.Exit(1)


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


def demo(db: Path = typer.Option(DEMO_DB, help="DuckDB file to write: its own, never `recon "
                                 "run`'s; a file the demo did not write is left as it is"),
         days: int = 2, nodes: int = 4, seed: int = 7):
    """Simulate a small fleet into a temporary folder, reconcile it, print the summary.

    Example: recon demo
    """
    from ..db import connect
    from ..pipeline import run
    from ..simulate import simulate as sim

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


def serve(landing_dir: str = typer.Option("data/landing", help="Landing area to load: a folder, "
                                          "or s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, az://CONTAINER/PREFIX"),
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
    import os

    # The schedule is served by flows/serve.py: flows wire the library's steps into Prefect flows,
    # so the library never imports them (the arrows run one way). This process becomes
    # `python -m flows.serve` with the same options (exec: the same process, so a service
    # manager's signals reach the server and its Prefect child directly).
    argv = [sys.executable, "-m", "flows.serve", "--landing-dir", str(landing_dir), "--db", str(db),
            "--cron", cron, "--port", str(port), "--exports-dir", exports_dir,
            "--settle", str(settle)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)
