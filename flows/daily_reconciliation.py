"""Daily reconciliation: pull the provider's trailing window (optional), build one UTC day's
marts from the landing area, validate, publish a summary.

Run directly (a temporary local Prefect API starts if PREFECT_API_URL is not set):

    python flows/daily_reconciliation.py --day 2026-06-01 --landing-dir DIR --db PATH

Deployed: `prefect.yaml` (deployment `daily-reconciliation`, 02:30 UTC for the day before).
"""

from __future__ import annotations

import argparse
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import INPUTS, NO_CACHE

from recon.ingest.mirror import is_remote
from recon.outputs.present import utc_cell as _cell

try:  # run as `python flows/daily_reconciliation.py` or imported as `flows.daily_reconciliation`
    from flows.common import (
        RUNPOD_TAG,
        WAREHOUSE_TAG,
        days_between,
        disk_full_is_a_sentence,
        limited,
        local_api_defaults,
        logger,
        parse_day,
        pull_timeout_seconds,
        require_runpod_api_key,
        retry_transient,
        tags_with_limits,
    )
    from flows.summary import (
        SUMMARY_KEY,
        SUMMARY_ROWS,
        _awaiting_before,
        _md,
        bill_states,
        day_summary,
        empty_days_error,
        hold_awaiting,
        render_markdown,
    )
except ImportError:  # pragma: no cover - the project is not installed
    from common import (  # type: ignore
        RUNPOD_TAG,
        WAREHOUSE_TAG,
        days_between,
        disk_full_is_a_sentence,
        limited,
        local_api_defaults,
        logger,
        parse_day,
        pull_timeout_seconds,
        require_runpod_api_key,
        retry_transient,
        tags_with_limits,
    )
    from summary import (  # type: ignore # noqa: F401
        SUMMARY_KEY,
        SUMMARY_ROWS,
        _awaiting_before,
        _md,
        bill_states,
        day_summary,
        empty_days_error,
        hold_awaiting,
        render_markdown,
    )

FINDINGS_KEY = "recon-daily-findings"
MAX_TABLE_ROWS = 5000  # a table artifact is JSON in the Prefect database: keep it bounded


# ------------------------------------------------------------------------------------- tasks
@task(retries=3, retry_delay_seconds=[60, 300, 900], retry_jitter_factor=0.2,
      retry_condition_fn=retry_transient, tags=[RUNPOD_TAG],
      timeout_seconds=pull_timeout_seconds(),  # the pull's own deadline, and a margin
      # keyed on its inputs (landing dir, window, base url): a rerun within the hour skips a
      # pull that finished; later runs pull again, since recent buckets get restated
      cache_policy=INPUTS, cache_expiration=timedelta(hours=1))
def pull_provider_window(landing_dir: str, start: date, end: date,
                         base_url: str | None = None) -> dict:
    """Pull Runpod hourly billing for the UTC days [start, end] into the landing area.

    The API key is resolved here (Secret block `runpod-api-key`, else RUNPOD_API_KEY) so it
    is never a task parameter (parameters are stored by the Prefect API) and never logged.
    `base_url` points the client elsewhere (a proxy, or a loopback fake in tests).
    The pull ends by the connector's deadlines (connectors/runpod/settings.py): what it gave
    up is logged as a warning and returned in `given_up` (the summary shows it); the next
    run's trailing days pull those windows again.
    """
    from connectors.runpod import RunpodClient, pull_billing

    if is_remote(landing_dir):  # the pull writes files; a bucket's landing area is read-only here
        raise ValueError(f"pull_provider lands the Runpod pull in a local folder, and the landing "
                         f"area is {landing_dir}: pull into a folder that is synced to the bucket "
                         f"(docs/scaling-out.md), or run without pull_provider")
    key = require_runpod_api_key()
    t0 = datetime.combine(start, time(), UTC)
    t1 = datetime.combine(end + timedelta(days=1), time(), UTC)
    client = RunpodClient(key, base_url=base_url) if base_url else RunpodClient(key)
    try:
        with disk_full_is_a_sentence(f"landing the pull in {landing_dir}"):
            res = pull_billing(landing_dir, t0, t1, client=client)
    finally:
        client.close()
    for w in res.warnings:
        logger().warning(w)
    records = sum(f.record_count for f in res.files)
    provisional = sum(f.provisional_count for f in res.files)
    logger().info("Runpod billing %s..%s: %d files, %d records (%d still in progress)",
                  start, end, len(res.files), records, provisional)
    if res.given_up:
        logger().warning("Runpod billing %s..%s: gave up %d call(s) at a deadline, not landed: "
                         "%s", start, end, len(res.given_up), "; ".join(res.given_up))
    return {"files": len(res.files), "records": records, "provisional": provisional,
            "pulled_at": res.pulled_at.isoformat(), "given_up": list(res.given_up)}


@task(tags=[WAREHOUSE_TAG], cache_policy=NO_CACHE)
def build_marts(landing_dir: str, db: str, day: date, config: str | None = None,
                settle_seconds: int = 0, last_day: date | None = None,
                prefetch_gate: bool = False, shard: str | None = None,
                claims: list[str] | None = None, account: str | None = None,
                land_only: bool = False) -> dict:
    """Land new/changed files of the landing area and build the marts for one UTC day, or
    for the window `day`..`last_day` in one build (a backfill's batch). `prefetch_gate`: the
    gate follows, so Great Expectations starts importing during the build's commit.
    `account`, `land_only`: recon.pipeline.run's (a routed shard's rows taken from the
    account's warehouse; landing without a build)."""
    from recon.pipeline import run

    last_day = last_day or day
    with disk_full_is_a_sentence(f"writing {db}"):
        res = run(landing_dir, db, config, day_from=day, day_to=last_day,
                  settle_seconds=settle_seconds, prefetch_gate=prefetch_gate, shard=shard,
                  claims=claims, account=account, land_only=land_only)
    log = logger()
    if res.taken is not None:
        from recon.shards import describe_taken

        log.info("the shard %s", describe_taken(res.taken))
    if res.mirror is not None:  # a bucket's landing area: what was downloaded into the cache
        log.info("%s", res.mirror.summary())
    log.info("%s: landed %d files: %d records in = %d loaded + %d quarantined + %d skipped; "
             "%d quarantined in staging", _window(day, last_day), len(res.files), res.records_in,
             res.loaded, res.quarantined, res.skipped, res.staging_quarantined)
    for f in res.files:
        for w in f.warnings:
            log.warning("%s", w)
    if res.quarantined or res.staging_quarantined:
        log.warning("%d record(s) quarantined: run `recon quarantine --db %s`",
                    res.quarantined + res.staging_quarantined, db)
    return {"window": [day.isoformat(), last_day.isoformat()],
            "files": len(res.files), "records_in": res.records_in, "loaded": res.loaded,
            "quarantined": res.quarantined, "skipped": res.skipped,
            "staging_quarantined": res.staging_quarantined,
            "timings": {k: round(v, 3) for k, v in res.timings.items()}}


@task(tags=[WAREHOUSE_TAG], cache_policy=NO_CACHE)
def validate_marts(db: str, day: date, last_day: date | None = None) -> dict:
    """VALIDATION GATE: raise here to fail the run loudly before anything is published.

    Runs `recon.gate.run.validate` (the Great Expectations suites of expectations/, results
    in marts.validation_results) when that module exists, on one day or on the window
    `day`..`last_day` (a backfill's batch: one gate for the batch's days and files); any
    critical failure raises with the report. Warnings are logged and shown in the summary. A
    day without billed or active rows is a warning here; the flow fails it after the gate
    (`reconcile_day`: a day with neither lifecycle data nor a bill is not reconciled).
    """
    from recon.db import connect
    from recon.pipeline import empty_days

    last_day = last_day or day
    log = logger()
    con = connect(db, read_only=True)
    try:
        empty = empty_days(con, day, last_day)
    finally:
        con.close()
    for d in empty:
        log.warning("no billed or active resource on %s in %s: is the landing area "
                    "complete for that day?", d, db)
    try:
        from recon.gate.run import validate
        from recon.gate.scope import Scope
    except ImportError:
        log.warning("recon.gate not available: marts published without validation")
        return {"skipped": "recon.gate not available"}
    from prefect.runtime import flow_run

    run_id = f"{_window(day, last_day)}/{flow_run.id or 'local'}"
    con = connect(db)
    try:
        # the window's rows and the files landed since the last passed gate: its cost follows
        # the days, not the history (recon.gate.scope.Scope)
        report = validate(con, run_id, scope=Scope.for_run(con, day, last_day))
    finally:
        con.close()
    for w in report.warnings:
        log.warning("validation warning: %s", w)
    if not report.success:
        raise RuntimeError(f"validation failed, nothing published for "
                           f"{_window(day, last_day)}:\n{report.summary()}")
    log.info("validation %s: %d expectations, %d passed, %d warnings (%.1f s)", run_id,
             report.evaluated, report.passed, len(report.warnings), report.seconds)
    return {"run_id": run_id, "evaluated": report.evaluated, "passed": report.passed,
            "warnings": [str(w) for w in report.warnings]}


@task(tags=[WAREHOUSE_TAG], cache_policy=NO_CACHE)
def export_finance(db: str, day: date, exports_dir: str) -> list[str]:
    """The day's finance CSVs into `exports_dir`: costs_<day>.csv (money by team, workload and
    category; it ties to the bill) and findings_<day>.csv (`recon.outputs.exports.export_day`, the
    files `recon export --day` writes). Each file is written whole or not at all, and a
    rerun replaces it. Runs after the gate, so a day's files only exist once it passed."""
    from recon.db import connect
    from recon.outputs.exports import export_day

    con = connect(db, read_only=True)
    try:
        with disk_full_is_a_sentence(f"writing into {exports_dir}"):
            paths = [str(p) for p in export_day(con, day.isoformat(), exports_dir)]
    finally:
        con.close()
    logger().info("%s: wrote %s", day, ", ".join(paths))
    return paths


@task(tags=[WAREHOUSE_TAG], cache_policy=NO_CACHE)
def publish_marts(db: str, day_from: date, day_to: date, marts_dir: str) -> dict:
    """The batch's days of every mart as Hive-partitioned Parquet in `marts_dir`, a folder or
    `s3://BUCKET/PREFIX` or `az://CONTAINER/PREFIX` (`recon.outputs.publish`, what `recon publish` writes): after the gate,
    so another engine reads only days that passed it. A day rebuilt later (its bill landed or
    was restated) is written again by the run that rebuilds it."""
    from recon.db import connect
    from recon.outputs.publish import publish

    con = connect(db, read_only=True)
    try:
        with disk_full_is_a_sentence(f"writing into {marts_dir}"):
            res = publish(con, marts_dir, day_from, day_to)
    finally:
        con.close()
    logger().info("%s: %s", _window(day_from, day_to), res.summary())
    return {"files": len(res.written), "bytes": res.bytes}


@task(cache_policy=NO_CACHE)
def publish_summary(db: str, day: date, load: dict | None = None,
                    validation: dict | None = None) -> dict:
    """A markdown artifact (the day's money by category, top findings) and a table artifact
    (every finding of the day); then the day is recorded as published (`meta.published_days`,
    with the gate's run id), which is what a backfill skips. Returns the summary with amounts
    as strings."""
    summary, findings = day_summary(db, day)
    create_markdown_artifact(render_markdown(day, db, summary, findings, load, validation),
                             key=SUMMARY_KEY,
                             description=f"Reconciliation summary for {day} (UTC)")
    rows = [{k: _cell(v) for k, v in f.items()} for f in findings[:MAX_TABLE_ROWS]]
    more = len(findings) - len(rows)
    create_table_artifact(rows, key=FINDINGS_KEY,
                          description=f"Findings for {day} (UTC), most money first"
                          + (f"; {more} more in marts.findings" if more > 0 else ""))
    _mark_published(db, day, validation)
    out = {k: _cell(v) for k, v in (summary or {"day": day, "findings": 0}).items()}
    logger().info("%s: billed %s USD, %s findings, %s USD at stake (%s of it outside the "
                  "day's bill)", day, out.get("billed", "0.00"), out["findings"],
                  out.get("at_stake", "0.00"), out.get("at_stake_outside_bill", "0.00"))
    return out


def _mark_published(db: str, day: date, validation: dict | None) -> None:
    """The day is done: a backfill skips it from now on (recon.published)."""
    from recon.db import connect
    from recon.published import mark_published

    con = connect(db)
    try:
        mark_published(con, [day], (validation or {}).get("run_id"))
    finally:
        con.close()


def with_given_up(load: dict, pulled: dict | None) -> dict:
    """The build's result, plus what the provider pull before it gave up at a deadline
    (`provider_given_up`: the summary lists it beside the input it describes)."""
    given_up = (pulled or {}).get("given_up")
    return {**load, "provider_given_up": given_up} if given_up else load


def publish_days(db: str, days: list[date], load: dict | None, checked: dict | None,
                 exports_dir: str | None, limits: frozenset[str]) -> tuple[list[dict], list[date]]:
    """After a batch's gate: every day published (its CSVs, then its summary) unless it awaits
    its bill (held) or holds nothing (returned among the empty days, for the caller to fail)."""
    states = limited(bill_states, limits)(db, days[0], days[-1])
    out, empty = [], []
    for d in days:
        if states.get(d) == "empty":
            empty.append(d)
        elif states.get(d) == "awaiting_bill":
            out.append(hold_awaiting(db, d, load, checked))
        else:
            if exports_dir:
                limited(export_finance, limits)(db, d, exports_dir)
            out.append(publish_summary(db, d, load, checked))
    return out, empty


def _window(day: date, last_day: date) -> str:
    return str(day) if last_day == day else f"{day}..{last_day}"


# -------------------------------------------------------------------------------------- flow
def _run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters or {}
    shard = params.get("shard")  # a fleet run's children are told apart by their shard
    return (f"daily-{params.get('day') or 'yesterday'}" + (f"-{shard}" if shard else "")
            + ("-landing" if params.get("land_only") else ""))


def reconcile_day(day: date, landing_dir: str, db: str, config: str | None = None,
                  pull_provider: bool = False, trailing_days: int = 1,
                  validation: bool = True, settle_seconds: int = 0,
                  exports_dir: str | None = None, marts_dir: str | None = None,
                  shard: str | None = None, claims: list[str] | None = None,
                  account: str | None = None, land_only: bool = False) -> dict:
    """The daily steps in order (the daily flow; a backfill runs them by batches of days).

    With `pull_provider`, the days pulled again (`trailing_days`, ending with `day`) are the
    days rebuilt, gated, exported and published: the pull is there for the buckets the
    provider restated, and a restated bucket changes its own day's bill. Earlier days built
    while their bill had not landed (`recon.published.awaiting_before`) are built again first,
    in batches of consecutive days (pulled again with `pull_provider`), and published once
    their bill is there. A day awaiting its bill is held (`hold_awaiting`), not published; a
    day with neither lifecycle data nor a bill fails the run once the other days are done."""
    from recon.published import batches

    if pull_provider and trailing_days < 1:
        raise ValueError("trailing_days must be at least 1")
    limits = tags_with_limits()  # a task carries a tag only for its limit (flows/common.py)
    if land_only:  # the account's landing, which the routed shards take from: no build yet
        return limited(build_marts, limits)(landing_dir, db, day, config, settle_seconds,
                                            shard=shard, land_only=True)
    first = day - timedelta(days=trailing_days - 1) if pull_provider else day
    runs = [*batches(_awaiting_before(db, first), 7), days_between(first, day)]
    out, empty = None, []
    for batch in runs:
        pulled = None
        if pull_provider:
            pulled = limited(pull_provider_window, limits)(landing_dir, batch[0], batch[-1])
        load = limited(build_marts, limits)(landing_dir, db, batch[0], config, settle_seconds,
                                            last_day=batch[-1], prefetch_gate=validation,
                                            shard=shard, claims=claims, account=account)
        checked = (limited(validate_marts, limits)(db, batch[0], batch[-1]) if validation
                   else {"skipped": "validation=false"})
        load = with_given_up(load, pulled)
        done, none = publish_days(db, batch, load, checked, exports_dir, limits)
        if marts_dir and len(none) < len(batch):
            limited(publish_marts, limits)(db, batch[0], batch[-1], marts_dir)
        out = done[-1] if done else out  # `day` last: its artifacts are the latest
        empty += none
    if empty:
        raise empty_days_error(db, empty)
    return out


@flow(name="daily-reconciliation", flow_run_name=_run_name, log_prints=False)
def daily_reconciliation(day: str | None = None, landing_dir: str = "data/landing",
                         db: str = "data/recon.duckdb", config: str | None = None,
                         pull_provider: bool = False, trailing_days: int = 3,
                         validation: bool = True, settle_seconds: int = 0,
                         exports_dir: str | None = None, marts_dir: str | None = None,
                         shard: str | None = None, claims: list[str] | None = None,
                         account: str | None = None, land_only: bool = False) -> dict:
    """Reconcile one UTC day: landing area -> DuckDB marts -> finance CSVs, summary artifacts.

    Args:
        day: UTC day to reconcile, YYYY-MM-DD. Default: the day before the run's scheduled
            start (yesterday for an ad-hoc run).
        landing_dir: Folder the collectors and provider pulls write to; every new or changed
            file in it is loaded (relative paths are relative to the worker's working dir).
            Or `s3://BUCKET/PREFIX`, `gs://BUCKET/PREFIX`, `az://CONTAINER/PREFIX`: its
            changed objects are downloaded into `landing-cache/` beside `db` first
            (credentials from the worker's environment; not with pull_provider, which writes
            into the landing area).
        db: DuckDB warehouse file.
        config: recon TOML (thresholds, mapping, rates). Default: LANDING_DIR/recon.toml.
        pull_provider: First pull Runpod billing for the trailing window into the landing
            area (API key: Secret block `runpod-api-key`, else env RUNPOD_API_KEY).
        trailing_days: With pull_provider, the days pulled, rebuilt and published again,
            ending with `day` (Runpod restates recent buckets, so recent days are pulled
            again; a later pull of a bucket wins, and its day's marts and CSVs follow it).
        validation: Run the data-quality gate (recon.gate, Great Expectations suites)
            before publishing; a critical failure fails the run.
        settle_seconds: Leave files modified less than this long ago for a later run (the
            collector appends to the current hour's file; landing it half-written would make
            the next run land it again and rebuild staging in full). prefect.yaml sets 600.
        exports_dir: Folder for the day's finance CSVs (costs_<day>.csv, findings_<day>.csv),
            written after the gate passed; empty or null (the default): none. prefect.yaml
            and `python flows/daily_reconciliation.py` set data/exports.
        marts_dir: Folder, `s3://BUCKET/PREFIX` or `az://CONTAINER/PREFIX` for the marts as Hive-partitioned Parquet
            (`marts/<table>/day=<day>/part-0.parquet`, as `recon publish` writes them), the
            days built written after the gate passed; empty or null (the default): none.
        shard: One shard of the config's `[shards]` (or `__unassigned__`), into its own `db`:
            its clusters' files land, and its CSVs and published marts (under `shard=<name>/`)
            hold its own rows only. Null (the default): the whole landing area, unsharded.
        claims: With shard `__unassigned__`: the named shards' warehouse files or published
            marts folders, whose claimed resources are theirs, not the unassigned shard's.
        account: With a named shard: the `__unassigned__` shard's warehouse, landed first
            (`land_only`); the shard lands only its clusters' files and takes its rows of the
            provider's files from it, so that its cost follows its own resources.
        land_only: Land the landing area and stop: no build, gate or publish (the
            `__unassigned__` shard's first step in a fleet run, before the named shards take
            their rows from it; its build follows with their claims).
    """
    return reconcile_day(parse_day(day), str(landing_dir), str(db),
                         str(config) if config else None, pull_provider, trailing_days, validation,
                         settle_seconds, str(exports_dir) if exports_dir else None,
                         str(marts_dir) if marts_dir else None, shard or None,
                         [str(c) for c in claims] if claims else None,
                         str(account) if account else None, land_only)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Reconcile one UTC day (Prefect flow).")
    p.add_argument("--day", help="UTC day YYYY-MM-DD (default: yesterday)")
    p.add_argument("--landing-dir", default="data/landing")
    p.add_argument("--db", default="data/recon.duckdb")
    p.add_argument("--config", help="recon TOML (default: LANDING_DIR/recon.toml)")
    p.add_argument("--pull-provider", action="store_true", help="pull Runpod billing first")
    p.add_argument("--trailing-days", type=int, default=3)
    p.add_argument("--no-validate", action="store_true", help="skip the data-quality gate")
    p.add_argument("--exports-dir", default="data/exports",
                   help="folder for the day's finance CSVs ('' for none)")
    a = p.parse_args(argv)
    local_api_defaults()  # before the flow starts the temporary API
    landing = a.landing_dir if is_remote(a.landing_dir) else str(Path(a.landing_dir))
    daily_reconciliation(day=a.day, landing_dir=landing, db=str(Path(a.db)),
                         config=a.config, pull_provider=a.pull_provider,
                         trailing_days=a.trailing_days, validation=not a.no_validate,
                         exports_dir=a.exports_dir or None)


if __name__ == "__main__":
    main()
