"""`recon export`, `recon publish`, `recon report`, `recon whatif`, `recon waste` and `recon check`: what a
built day gives finance and the people who run the fleet."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.text import Text  # a cell shown as is: data is never read as rich markup

from ..outputs.summary import console, err
from .app import (
    _day,
    _environment_failure,
    _fail,
    _no_data,
    _open_db,
    _table,
    _window,
)


def export_cmd(out: Path = typer.Option(..., "--out", help="Folder to write the files into"),
               day: str | None = typer.Option(None, "--day", help="UTC day YYYY-MM-DD: "
                                                 "costs_<day>.csv and findings_<day>.csv"),
               month: str | None = typer.Option(None, "--month", help="YYYY-MM: daily files for "
                                                   "every day with data plus focus_<month>.csv/.parquet"),
               db: Path = typer.Option(Path("data/recon.duckdb")),
               account_id: str = typer.Option("runpod", help="FOCUS BillingAccountId"),
               account_name: str = typer.Option("Runpod account", help="FOCUS BillingAccountName"),
               focus_version: str | None = typer.Option(
                   None, "--focus-version", help="FOCUS version of the month's file: 1.2 "
                   "(default) or 1.3")):
    """Write finance CSVs (costs by team, findings) and a FOCUS 1.2 or 1.3 file; totals tie to
    the bill.

    Example: recon export --month 2026-06 --out exports/ --focus-version 1.3
    """
    from ..outputs import exports, focus

    if (day is None) == (month is None):
        _fail("give exactly one of --day or --month")
    if focus_version is not None and day is not None:
        _fail("--focus-version is for --month (the FOCUS file); --day writes no FOCUS file")
    if focus_version is not None and focus_version not in focus.FOCUS_VERSIONS:
        _fail(f"--focus-version {focus_version}: expected {' or '.join(focus.FOCUS_VERSIONS)}")
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
            paths = focus.export_month(con, month, out, account_id, account_name,
                                       focus_version or "1.2")
    except ValueError as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001 - see _environment_failure
        _environment_failure(e, f"writing into {out}")
    for p in paths:
        console.print(f"wrote {p}")


def report_cmd(day: str = typer.Option(..., "--day", help="UTC day YYYY-MM-DD"),
               db: Path = typer.Option(Path("data/recon.duckdb")),
               out: Path | None = typer.Option(None, "--out",
                                                  help="HTML file (default: report_<day>.html)")):
    """Write a self-contained HTML page for a day: bill split, findings, instance timelines, trend.

    Example: recon report --day 2026-06-01 --out report.html
    """
    from ..outputs.exports import parse_day
    from ..outputs.report import write_report

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


def whatif_cmd(cooldown: int | None = typer.Option(None, min=0,
                                                      help="KEDA cooldownPeriod (1 → 0), seconds"),
               stabilization: int | None = typer.Option(
                   None, min=0, help="HPA scaleDown stabilizationWindowSeconds (N → 1), seconds"),
               scale_down_delay: int | None = typer.Option(None, min=0,
                                                              help="Node scale-down grace, seconds"),
               idle_timeout: int | None = typer.Option(None, min=0,
                                                          help="Serverless idle timeout, s"),
               day_from: str | None = typer.Option(None, "--from"),
               day_to: str | None = typer.Option(None, "--to"),
               db: Path = typer.Option(Path("data/recon.duckdb"))):
    """Re-price observed tails and serverless idle under other settings: the modelled cost at
    today's settings, under the ones given, and the difference (money saved) per workload.

    Example: recon whatif --cooldown 60 --idle-timeout 2
    """
    from ..outputs.whatif import aggregate, whatif

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
               title="What if (model: see recon/outputs/whatif.py)", title_justify="left")
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


WASTE_BY = ("team", "namespace", "owner", "cause")


def waste_cmd(by: str = typer.Option("team", "--by", help="team | namespace | owner | cause"),
              day_from: str | None = typer.Option(None, "--from"),
              day_to: str | None = typer.Option(None, "--to"),
              db: Path = typer.Option(Path("data/recon.duckdb"))):
    """Billed money that was not work (marts.waste), by team, namespace, owning workload or
    cause; what no owner explains is its own row, never spread over the others.

    Example: recon waste --by team --from 2026-06-01 --to 2026-06-07
    """
    from ..sqlfiles import query

    if by not in WASTE_BY:
        _fail(f"--by {by!r}: expected {', '.join(WASTE_BY)}")
    lo, hi = _window(day_from, day_to)
    con = _open_db(db, need_marts=True)
    if not con.execute("select count(*) from duckdb_tables() where schema_name = 'marts' "
                       "and table_name = 'waste'").fetchone()[0]:
        _fail(f"{db} has no marts.waste yet; run `recon run` again to build it")
    # default: every day the warehouse holds
    span = con.execute("select min(day), max(day) from marts.waste").fetchone()
    lo, hi = lo or span[0], hi or span[1]
    rows = con.execute(query("waste__by"),
                       {"by": by, "day_from": lo, "day_to": hi}).fetchall() if lo else []
    total = sum((r[3] for r in rows), 0)
    t = _table(by, "resources", "seconds", "USD", "share",
               numeric=("resources", "seconds", "USD", "share"),
               title=f"Waste by {by}, {lo} to {hi} (marts.waste)", title_justify="left")
    for key, n, secs, usd in rows:
        share = f"{usd / total:.1%}" if total else ""
        t.add_row(*map(Text, (str(key), str(n), f"{secs:,.0f}", f"{usd:,.2f}", share)))
    console.print(t)
    console.print(f"Total waste: {total:,.2f} USD")


def check_cmd(day: str | None = typer.Option(None, "--day", help="UTC day YYYY-MM-DD"),
              month: str | None = typer.Option(None, "--month", help="YYYY-MM: tie the "
                                               "month's invoices out against the bill"),
              db: Path = typer.Option(Path("data/recon.duckdb"))):
    """Scheduling verification in four steps for a day (or the invoice tie-out of a month);
    exits 1 when a step fails.

    Example: recon check --day 2026-06-01
    """
    from ..outputs.check import invoice_step, run_checks

    if (day is None) == (month is None):
        _fail("give exactly one of --day or --month")
    if month is not None:
        from ..outputs.exports import parse_month

        try:
            the_month = parse_month(month)
        except ValueError as e:
            _fail(str(e))
        con = _open_db(db, need_marts=True)
        steps = [invoice_step(con, the_month)]
    else:
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


def publish_cmd(out: str = typer.Option(..., "--out", help="Folder, s3://BUCKET/PREFIX or "
                                        "az://CONTAINER/PREFIX (credentials from the environment)"),
                db: Path = typer.Option(Path("data/recon.duckdb")),
                day_from: str | None = typer.Option(None, "--from", help="First UTC day "
                                                    "(YYYY-MM-DD) of the partitions written"),
                day_to: str | None = typer.Option(None, "--to", help="Last UTC day, inclusive")):
    """Write the marts as Hive-partitioned Parquet (OUT/marts/<table>/day=D/part-0.parquet)
    and OUT/marts/_manifest.json, for engines that do not read DuckDB files; replaces only those
    files, deletes nothing.

    Example: recon publish --out s3://analytics/gpu-recon --from 2026-06-01 --to 2026-06-07
    """
    from ..ingest.mirror import ObjectStoreError
    from ..outputs.publish import publish
    from .run import _every_tenth

    lo, hi = _window(day_from, day_to)
    con = _open_db(db, need_marts=True)
    try:
        res = publish(con, out, lo, hi, progress=_every_tenth("published"))
    except ObjectStoreError as e:  # denied, no such bucket, the store down past the retries
        _fail(str(e), code=1)
    except ValueError as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001 - see _environment_failure
        _environment_failure(e, f"writing into {out}")
    finally:
        con.close()
    console.print(res.summary(), soft_wrap=True, markup=False)
