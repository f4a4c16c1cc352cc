"""The daily reconciliation as library calls: land a folder, build the marts, summarise."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path

from .config import Config, load_config
from .warehouse import build, connect, load_folder, write_config

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
    days: list[dict] = field(default_factory=list)
    timings: dict = field(default_factory=dict)


def find_config(input_dir: Path, config: str | Path | None) -> Config:
    if config is not None:
        return load_config(config)
    local = Path(input_dir) / "recon.toml"
    return load_config(local if local.exists() else None)


SUMMARY_SQL = """
with seg as (
    select day,
           sum(amount) as billed,
           sum(amount) filter (where category = 'busy') as busy,
           sum(amount) filter (where category in ('startup', 'cold_start')) as startup,
           sum(amount) filter (where category = 'tail') as tail,
           sum(amount) filter (where category in ('storage_lingering')) as lingering_storage,
           sum(amount) filter (where category = 'network_volume') as network_volume,
           sum(amount) filter (where category = 'idle') as serverless_idle,
           sum(amount) filter (where category in ('idle_gap', 'unobserved')) as idle_unobserved
    from marts.billed_segments group by day
),
f as (
    select day, count(*) as findings, sum(amount_at_stake) as at_stake
    from marts.findings group by day
)
select seg.day, seg.billed, seg.busy, seg.startup, seg.tail, seg.lingering_storage,
       seg.network_volume, seg.serverless_idle, seg.idle_unobserved,
       coalesce(f.findings, 0) as findings, coalesce(f.at_stake, 0) as at_stake
from seg left join f using (day)
order by seg.day
"""


def summarise(con) -> list[dict]:
    cur = con.execute(SUMMARY_SQL)
    cols = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        d = dict(zip(cols, row))
        for k, v in d.items():
            if isinstance(v, Decimal):
                d[k] = v.quantize(Decimal("0.01"))
            elif v is None and k != "day":
                d[k] = Decimal("0.00")
        out.append(d)
    return out


def run(input_dir: str | Path, db: str | Path | None = DEFAULT_DB, config: str | Path | None = None,
        day_from: date | None = None, day_to: date | None = None, progress=None) -> RunResult:
    """Land `input_dir` into `db`, rebuild every model, return the accounting and the summary."""
    input_dir = Path(input_dir)
    cfg = find_config(input_dir, config)
    con = connect(db)
    try:
        t0 = time.perf_counter()
        results = load_folder(con, input_dir, progress=progress)
        timings = {"load": time.perf_counter() - t0}
        write_config(con, cfg, day_from, day_to)
        build(con, timings)
        res = RunResult(db=str(db) if db else ":memory:", files=results, timings=timings)
        for r in results:
            res.records_in += r.records_in
            res.loaded += r.loaded
            res.quarantined += r.quarantined
            res.skipped += r.skipped
        res.staging_quarantined = con.execute("select count(*) from staging.quarantine").fetchone()[0]
        res.days = summarise(con)
        con.execute("checkpoint")
        return res
    finally:
        con.close()
