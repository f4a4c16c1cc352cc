"""Backfill: reconcile a range of UTC days, oldest first, in batches of days, resumable.

The days still to do are cut into batches of at most `batch_days` consecutive days. Each batch
is one build (`recon.pipeline.run --from FIRST --to LAST`: its files landed, its days' marts
built together), one data-quality gate over the batch's days and files, then every day's
summary artifacts, after which each day is recorded as published (`meta.published_days`).
A batch's build reads what its window depends on once instead of once per day, and its gate
imports and runs Great Expectations once: a 30-day backfill is several times faster than day
by day (bench/README.md).

A day already published is skipped unless `force` (with the gate on: published after a gate
that passed). A day whose provider bill has not landed is built and held, not published
(`recon.published`): a rerun builds it again, and publishes it once its bill is there. A day
with neither lifecycle data nor a bill fails the backfill once the other batches are done.
A day whose build or gate failed was not published, so a rerun builds it again:
a critical failure stops the backfill at that batch, and a rerun resumes there. `batch_days=1`
builds and gates day by day (a failure then holds back one day, not a batch).

    python flows/backfill.py --start 2026-06-01 --end 2026-06-07 --landing-dir DIR --db PATH
"""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

try:
    from flows.common import days_between, limited, local_api_defaults, logger, tags_with_limits
    from flows.daily_reconciliation import (
        build_marts,
        empty_days_error,
        publish_days,
        pull_provider_window,
        validate_marts,
        with_given_up,
    )
except ImportError:  # pragma: no cover - the project is not installed
    from common import (  # type: ignore
        days_between,
        limited,
        local_api_defaults,
        logger,
        tags_with_limits,
    )
    from daily_reconciliation import (  # type: ignore
        build_marts,
        empty_days_error,
        publish_days,
        pull_provider_window,
        validate_marts,
        with_given_up,
    )

BATCH_DAYS = 7


@task(cache_policy=NO_CACHE)
def days_done(db: str, days: list[date], validation: bool = True) -> list[date]:
    """Days among `days` already published (with `validation`: after a gate that passed).

    Marts rows alone do not make a day done: a day's build commits before its gate, so a day
    whose gate failed has rows and was never published (recon.published)."""
    from recon.db import connect
    from recon.published import published

    if not Path(db).exists():
        return []
    con = connect(db, read_only=True)
    try:
        return published(con, days, validated=validation)
    finally:
        con.close()


@flow(name="backfill", flow_run_name="backfill-{start}..{end}")
def backfill(start: str, end: str, landing_dir: str = "data/landing",
             db: str = "data/recon.duckdb", config: str | None = None, force: bool = False,
             pull_provider: bool = False, validation: bool = True,
             batch_days: int = BATCH_DAYS, exports_dir: str | None = None) -> dict:
    """Reconcile every UTC day from start to end (both included), oldest first.

    Args:
        start: First UTC day, YYYY-MM-DD.
        end: Last UTC day, YYYY-MM-DD (included).
        landing_dir: Landing area to load (relative to the worker's working directory).
        db: DuckDB warehouse file.
        config: recon TOML. Default: LANDING_DIR/recon.toml.
        force: Rebuild days already published.
        pull_provider: First pull Runpod billing once for the days still to build (the
            connector splits it into 7-day requests; tag `runpod-api`).
        validation: Run the data-quality gate after each batch's build; a critical failure
            stops the backfill at that batch, nothing of it published (a rerun resumes there).
        batch_days: Most consecutive days built and gated together (1: day by day).
        exports_dir: Folder for each day's finance CSVs (costs_<day>.csv, findings_<day>.csv),
            written after its batch's gate passed; empty or null (the default): none.
            prefect.yaml and `python flows/backfill.py` set data/exports.
    """
    from recon.published import batches

    if batch_days < 1:
        raise ValueError(f"batch_days must be at least 1, got {batch_days}")
    days = days_between(start, end)
    done = set() if force else set(days_done(str(db), days, validation))
    log = logger()
    out = {"built": [], "skipped": [], "batches": [], "awaiting": []}
    todo = [d for d in days if d not in done]
    for day in sorted(done):
        log.info("%s: already published, skipped (force=true rebuilds it)", day)
        out["skipped"].append(day.isoformat())
    limits = tags_with_limits()  # a task carries a tag only for its limit (flows/common.py)
    pulled = None
    if pull_provider and todo:
        pulled = limited(pull_provider_window, limits)(str(landing_dir), todo[0], todo[-1])
    cfg = str(config) if config else None
    empty = []
    for batch in batches(todo, batch_days):
        first, last = batch[0], batch[-1]
        load = limited(build_marts, limits)(str(landing_dir), str(db), first, cfg, last_day=last,
                                            prefetch_gate=validation)
        checked = (limited(validate_marts, limits)(str(db), first, last) if validation
                   else {"skipped": "validation=false"})
        load = with_given_up(load, pulled)
        done_days, none = publish_days(str(db), batch, load, checked,
                                       str(exports_dir) if exports_dir else None, limits)
        for d in done_days:
            out["awaiting" if d.get("state") == "awaiting_bill" else "built"].append(
                str(d["day"]))
        empty += none
        out["batches"].append([first.isoformat(), last.isoformat()])
    log.info("backfill %s..%s: %d built in %d batch(es), %d skipped, %d awaiting their bill",
             days[0], days[-1], len(out["built"]), len(out["batches"]), len(out["skipped"]),
             len(out["awaiting"]))
    if empty:
        raise empty_days_error(str(db), empty)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Reconcile a range of UTC days (Prefect flow).")
    p.add_argument("--start", required=True, help="first UTC day YYYY-MM-DD")
    p.add_argument("--end", required=True, help="last UTC day YYYY-MM-DD (included)")
    p.add_argument("--landing-dir", default="data/landing")
    p.add_argument("--db", default="data/recon.duckdb")
    p.add_argument("--config")
    p.add_argument("--force", action="store_true", help="rebuild days already published")
    p.add_argument("--pull-provider", action="store_true", help="pull Runpod billing first")
    p.add_argument("--no-validate", action="store_true", help="skip the data-quality gate")
    p.add_argument("--batch-days", type=int, default=BATCH_DAYS,
                   help=f"most days built and gated together (default {BATCH_DAYS}; 1: day by day)")
    p.add_argument("--exports-dir", default="data/exports",
                   help="folder for each day's finance CSVs ('' for none)")
    a = p.parse_args(argv)
    local_api_defaults()  # before the flow starts the temporary API
    backfill(start=a.start, end=a.end, landing_dir=a.landing_dir, db=a.db, config=a.config,
             force=a.force, pull_provider=a.pull_provider, validation=not a.no_validate,
             batch_days=a.batch_days, exports_dir=a.exports_dir or None)


if __name__ == "__main__":
    main()
