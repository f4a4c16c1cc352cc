"""The daily reconciliation as library calls: land a folder, build the marts, summarise."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path

from . import shards
from .build.run import build
from .build.settings import write_config
from .config import Config, load_config
from .db import connect
from .ingest.land import load_folder
from .sqlfiles import query

log = logging.getLogger(__name__)
DEFAULT_DB = Path("data/recon.duckdb")


@dataclass
class RunResult:
    db: str
    files: list = field(default_factory=list)
    records_in: int = 0
    loaded: int = 0
    quarantined: int = 0
    skipped: int = 0
    staging_quarantined: int = 0
    # staging's quarantine by source file: `recon run` names each file with what it lost at
    # load *and* in staging (a file with one record quarantined at each counts 2, not 1)
    staging_quarantined_by_file: dict[str, int] = field(default_factory=dict)
    days: list[dict] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    validation: object | None = None  # recon.gate.run.ValidationReport when validated
    # days of the run's --from/--to window without a billed or active resource, and the first
    # and last day the landed bills cover (None: no bill landed): a window that misses the data
    # is a mistake worth saying, not an empty summary
    empty_days: list[date] = field(default_factory=list)
    billed_span: tuple[date, date] | None = None
    # an s3://, gs:// or az:// input: what its mirror into the cache folder listed, downloaded and removed
    # (recon.ingest.mirror.MirrorResult); None for a local folder
    mirror: object | None = None
    # a routed shard's rows taken from the account's warehouse (recon.shards.take_account)
    taken: dict | None = None
    land_only: bool = False


def _count(res: RunResult, results: list) -> None:
    for r in results:
        res.records_in += r.records_in
        res.loaded += r.loaded
        res.quarantined += r.quarantined
        res.skipped += r.skipped


def find_config(input_dir: Path, config: str | Path | None) -> Config:
    if config is not None:
        return load_config(config)
    local = Path(input_dir) / "recon.toml"
    return load_config(local if local.exists() else None)


SUMMARY_METRICS = {
    # metric: categories of marts.billed_segments it sums. The metrics after `billed` partition
    # the categories (tests/test_pipeline.py holds them to it), so that they add up to the bill:
    # serverless execution, storage while compute runs and rounding each have their row.
    "billed": None,
    "busy": ("busy",),
    "serverless_execution": ("execution",),
    "startup": ("startup", "cold_start"),
    "tail": ("tail",),
    "serverless_idle": ("idle",),
    "serverless_rounding": ("rounding",),
    # two causes with two remedies: nodes waiting between jobs (pack or schedule them), and
    # billed compute no workload explains (a pod that maps to no node, a node with no workload)
    "idle_gap": ("idle_gap",),
    "unobserved": ("unobserved",),
    "storage_running": ("storage_running",),
    "lingering_storage": ("storage_lingering",),
    "network_volume": ("network_volume",),
}


# findings whose money is not on the day's bill: a savings plan's upfront share (paid months
# before), work the bill has no line for (an estimate of what is missing from it), a balance's
# shortfall, what whole-GPU accounting would over-charge the pods of a time-sliced GPU (another
# accounting's charge, GPU_SHARED_OVERSUBSCRIBED: more than the node's bill), an invoice's
# unexplained difference from the bill (INVOICE_MISMATCH). The summary's `at_stake` counts them with the rest (a finance reader asked why the
# demo's day had $102.35 at stake on a $53.04 bill); `at_stake_outside_bill` says how much.
OUTSIDE_BILL_CODES = ("SAVINGS_PLAN_UNUSED", "ACTIVITY_WITHOUT_BILLING", "BALANCE_BELOW_ONE_HOUR",
                      "GPU_SHARED_OVERSUBSCRIBED", "INVOICE_MISMATCH")


def _summary_sql() -> str:
    """sql/queries/pipeline__summary.sql: its columns are SUMMARY_METRICS' (a test holds them)."""
    return query("pipeline__summary")


def summarise(con) -> list[dict]:
    cur = con.execute(_summary_sql())
    cols = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        d = dict(zip(cols, row))
        for k, v in d.items():
            if v is None and k != "day":
                v = d[k] = Decimal(0)
            if isinstance(v, Decimal) and not k.endswith("_seconds"):
                d[k] = v.quantize(Decimal("0.01"))
        out.append(d)
    return out


def empty_days(con, day_from: date, day_to: date) -> list[date]:
    """Days of [day_from, day_to] without a row in marts.resource_day (no billed or active
    resource): `recon run` and the daily flow's gate warn of them."""
    have = {r[0] for r in con.execute(
        "select distinct day from marts.resource_day where day between ? and ?",
        [day_from, day_to]).fetchall()}
    days = (day_from + timedelta(days=i) for i in range((day_to - day_from).days + 1))
    return [d for d in days if d not in have]


def billed_span(con) -> tuple[date, date] | None:
    """The first and last UTC day of the landed bills (Runpod bill lines, FOCUS charges)."""
    lo, hi = con.execute(
        "select min(d), max(d) from (select cast(bucket_start as date) as d "
        "from staging.stg_runpod__bill_lines union all "
        "select cast(charge_start as date) from staging.stg_focus__charges union all "
        "select cast(charge_end - interval 1 microsecond as date) from staging.stg_focus__charges)"
    ).fetchall()[0]
    return (lo, hi) if lo is not None else None


def run(input_dir: str | Path, db: str | Path | None = DEFAULT_DB, config: str | Path | None = None,
        day_from: date | None = None, day_to: date | None = None, progress=None,
        validate: bool = False, settle_seconds: float = 0, prefetch_gate: bool = False,
        on_stage=None, cache_dir: str | Path | None = None, on_download=None,
        shard: str | None = None, claims: list[str] | None = None,
        account: str | Path | None = None, land_only: bool = False) -> RunResult:
    """Land `input_dir` into `db`, rebuild every model, return the accounting and the summary.

    `input_dir` may be `s3://BUCKET/PREFIX`, `gs://BUCKET/PREFIX` or `az://CONTAINER/PREFIX`: its objects are first mirrored into a cache folder
    (`cache_dir`, default `landing-cache/` beside `db`), downloading only the objects changed
    since the last mirror, and that folder is landed with each file named by its object's URL
    (recon/ingest/mirror.py). `on_download(i, n, key)` is called as each download ends. The
    config defaults to the prefix's `recon.toml`.

    With `validate`, the Great Expectations suites run on the result (imported only then) and
    their results land in marts.validation_results; `RunResult.validation` holds the report.
    With `validate` or `prefetch_gate` (a gate follows in another call: the daily flow's next
    task), great_expectations starts importing on a thread during the commit
    (`recon.gate.gx.prefetch_gx`).
    With `shard` (a name of the config's `[shards]`, or `__unassigned__`), only that shard's
    clusters' Kubernetes files land and the warehouse's readers see the shard's own rows
    (recon/shards.py); `claims` (the `__unassigned__` shard only): the named shards'
    warehouses or published marts folders. `account` (a named shard only): the
    `__unassigned__` shard's warehouse, landed first (`land_only`); the shard then lands only
    its clusters' files and takes its rows of the provider's files from it
    (`recon.shards.take_account`), so that its cost follows its own resources. `land_only`:
    land and commit, build nothing (the account's landing, which the named shards take from;
    its build follows with their claims).
    `progress(i, n, file)` is called as each file lands; `on_stage(text)` as each other stage
    starts: "downloading" (an object store's input), "building staging", "building intermediate", …, "writing the warehouse",
    "validating".
    """
    if day_from is not None and day_to is not None and day_from > day_to:
        raise ValueError(f"the window ends before it starts: {day_from} is after {day_to}")
    from .ingest import mirror as objects

    url = str(input_dir) if objects.is_remote(str(input_dir)) else None
    if url is not None:  # a malformed URL or config is an error before anything is downloaded
        objects.parse_url(url)
        cfg = load_config(config) if config is not None else None
    else:
        input_dir = Path(input_dir)
        cfg = find_config(input_dir, config)
    if shard is not None and cfg is not None:
        shards.check_name(cfg, shard)
    if shard is not None and not db:
        raise ValueError("a shard runs into a warehouse file of its own (db)")
    if account is not None and shard in (None, shards.UNASSIGNED):
        raise ValueError(f"account: only a named shard takes its provider rows from the "
                         f"account's warehouse (the {shards.UNASSIGNED} shard's)")
    stage = on_stage or (lambda text: None)
    layer_now: list[str] = []

    def on_model(layer: str, name: str) -> None:
        if layer_now[-1:] != [layer]:
            layer_now.append(layer)
            stage(f"building {layer}")

    con = connect(db)
    try:
        timings = {}
        got = None
        if url is not None:  # once the warehouse is held: its runs download one at a time
            stage("downloading")
            t0 = time.perf_counter()
            got = objects.mirror(url, cache_dir or objects.default_cache_root(db),
                                 progress=on_download)
            timings["download"] = time.perf_counter() - t0
            input_dir = got.folder
            cfg = cfg or find_config(input_dir, None)
            if shard is not None:
                shards.check_name(cfg, shard)
        t0 = time.perf_counter()
        # one transaction: a run killed at any point leaves the warehouse as it was
        con.execute("begin transaction")
        try:
            shards.prepare(con, cfg, shard)
            keep = None if shard is None else partial(shards.keeps_path, cfg, shard,
                                                      routed=account is not None)
            results = load_folder(con, input_dir, progress=progress, transaction=False,
                                  settle_seconds=settle_seconds, limits=cfg.landing,
                                  source_root=got.url if got is not None else None, keep=keep)
            taken = None
            if shard == shards.UNASSIGNED:  # the named shards find their pods' rows by it
                shards.index_account(con)
            if account is not None:
                stage("taking the shard's rows from the account's warehouse")
                taken = shards.take_account(con, cfg, shard, account)
            timings["load"] = time.perf_counter() - t0
            if land_only:
                con.execute("commit")
                res = RunResult(db=str(db) if db else ":memory:", files=results,
                                timings=timings, mirror=got, land_only=True)
                _count(res, results)
                return res
            t1 = time.perf_counter()
            write_config(con, cfg, day_from, day_to)
            timings["config"] = time.perf_counter() - t1
            build(con, timings, transaction=False, on_model=on_model)
            shards.apply(con, cfg, shard, claims)
            if account is not None:
                shards.check_candidates(con, shard)
            if validate or prefetch_gate:
                from .gate.gx import prefetch_gx

                prefetch_gx()  # the commit below keeps one core busy, the import takes the other
            stage("writing the warehouse")
            t1 = time.perf_counter()
            con.execute("commit")
            timings["commit"] = time.perf_counter() - t1
        except BaseException:
            con.execute("rollback")
            raise
        res = RunResult(db=str(db) if db else ":memory:", files=results, timings=timings,
                        mirror=got, taken=taken)
        _count(res, results)
        res.staging_quarantined_by_file = dict(con.execute(
            "select source_file, count(*) from staging.quarantine group by all").fetchall())
        res.staging_quarantined = sum(res.staging_quarantined_by_file.values())
        t1 = time.perf_counter()
        res.days = summarise(con)
        if day_from is not None and day_to is not None:
            res.empty_days = empty_days(con, day_from, day_to)
            if res.empty_days:
                res.billed_span = billed_span(con)
        res.timings["summary"] = time.perf_counter() - t1
        if validate:
            import uuid

            from .gate.run import validate as run_validation
            from .gate.scope import Scope

            stage("validating")
            t1 = time.perf_counter()
            # the run's days (all of them without --from/--to) and the files landed since the
            # last validation that passed
            res.validation = run_validation(con, f"cli-{uuid.uuid4().hex[:12]}",
                                            scope=Scope.for_run(con, day_from, day_to))
            res.timings["validation"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        con.execute("checkpoint")
        res.timings["checkpoint"] = time.perf_counter() - t1
        if shard is not None:  # the summary of the shard's own rows, as its readers see them
            con.close()
            own = connect(db, read_only=True)
            try:
                res.days = summarise(own)
            finally:
                own.close()
        return res
    finally:
        con.close()
