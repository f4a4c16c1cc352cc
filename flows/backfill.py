"""Backfill: reconcile a range of UTC days, one day at a time, resumable.

A day whose marts already hold rows for it is skipped unless `force`, so a rerun after a
failure carries on where it stopped. Each day runs the daily flow's steps (pull, build,
validate, publish), so every day gets its own summary artifacts.

    python flows/backfill.py --start 2026-06-01 --end 2026-06-07 --landing-dir DIR --db PATH
"""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

try:
    from flows.common import days_between, logger
    from flows.daily_reconciliation import pull_provider_window, reconcile_day
except ImportError:  # pragma: no cover - the project is not installed
    from common import days_between, logger  # type: ignore
    from daily_reconciliation import pull_provider_window, reconcile_day  # type: ignore


@task(cache_policy=NO_CACHE)
def days_done(db: str, days: list[date]) -> list[date]:
    """Days among `days` for which marts.resource_day already holds rows."""
    from recon.warehouse import connect

    if not Path(db).exists():
        return []
    con = connect(db, read_only=True)
    try:
        have = con.execute("select count(*) from information_schema.tables "
                           "where table_schema = 'marts' and table_name = 'resource_day'"
                           ).fetchone()[0]
        if not have:
            return []
        rows = con.execute("select distinct day from marts.resource_day where day between ? and ?",
                           [min(days), max(days)]).fetchall()
    finally:
        con.close()
    return sorted(r[0] for r in rows if r[0] in set(days))


@flow(name="backfill", flow_run_name="backfill-{start}..{end}")
def backfill(start: str, end: str, landing_dir: str = "data/landing",
             db: str = "data/recon.duckdb", config: str | None = None, force: bool = False,
             pull_provider: bool = False, validation: bool = True) -> dict:
    """Reconcile every UTC day from start to end (both included), oldest first.

    Args:
        start: First UTC day, YYYY-MM-DD.
        end: Last UTC day, YYYY-MM-DD (included).
        landing_dir: Landing area to load (relative to the worker's working directory).
        db: DuckDB warehouse file.
        config: recon TOML. Default: LANDING_DIR/recon.toml.
        force: Rebuild days whose marts already exist.
        pull_provider: First pull Runpod billing once for the days still to build (the
            connector splits it into 7-day requests; tag `runpod-api`).
        validation: Run the data-quality gate after each day's build; a critical failure
            stops the backfill at that day (a rerun resumes there).
    """
    days = days_between(start, end)
    done = set() if force else set(days_done(str(db), days))
    log = logger()
    out = {"built": [], "skipped": []}
    todo = [d for d in days if d not in done]
    if pull_provider and todo:
        pull_provider_window(str(landing_dir), todo[0], todo[-1])
    for day in days:
        if day in done:
            log.info("%s: marts already hold this day, skipped (force=true rebuilds it)", day)
            out["skipped"].append(day.isoformat())
            continue
        reconcile_day(day, str(landing_dir), str(db), str(config) if config else None,
                      validation=validation)
        out["built"].append(day.isoformat())
    log.info("backfill %s..%s: %d built, %d skipped", days[0], days[-1], len(out["built"]),
             len(out["skipped"]))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Reconcile a range of UTC days (Prefect flow).")
    p.add_argument("--start", required=True, help="first UTC day YYYY-MM-DD")
    p.add_argument("--end", required=True, help="last UTC day YYYY-MM-DD (included)")
    p.add_argument("--landing-dir", default="data/landing")
    p.add_argument("--db", default="data/recon.duckdb")
    p.add_argument("--config")
    p.add_argument("--force", action="store_true", help="rebuild days that already exist")
    p.add_argument("--pull-provider", action="store_true", help="pull Runpod billing first")
    p.add_argument("--no-validate", action="store_true", help="skip the data-quality gate")
    a = p.parse_args(argv)
    backfill(start=a.start, end=a.end, landing_dir=a.landing_dir, db=a.db, config=a.config,
             force=a.force, pull_provider=a.pull_provider, validation=not a.no_validate)


if __name__ == "__main__":
    main()
