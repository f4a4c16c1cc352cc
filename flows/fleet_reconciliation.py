"""Fleet reconciliation: one UTC day of every shard (recon.toml `[shards]`), each shard a run of
the daily flow on its own warehouse, then the tie-out of the shards against the account's bill.

Order, per day: the `__unassigned__` child lands the landing area (every provider file, and the
clusters no shard names) and builds nothing yet; then the named shards' children at the same
time, each landing only its clusters' Kubernetes files and taking its rows of the provider's
files from the `__unassigned__` warehouse (`take_from_account`), so that a shard's cost
follows its own resources, not the account's; then the `__unassigned__` child again, which
reads from the named shards' warehouses which billed resources their nodes claim, builds, and
keeps the rest (clusters in no shard, bill lines no shard's nodes claim, account-wide rows);
then `recon.shards.tieout` over every shard's warehouse: each shard's bill is the account's
for the resources it claims, the shards' billed totals add up to the account's bill to the
cent, and no resource is claimed twice.

With `deployment` (a deployment of the daily flow, `daily-reconciliation/shard` in prefect.yaml)
each child is a flow run of that deployment, started with `run_deployment`, so a work pool's
worker runs it: a process pool on one machine, a Kubernetes pool (one Job per shard) in
production. Without it the children run in this process, each in its own thread.

Run directly (a temporary local Prefect API starts if PREFECT_API_URL is not set):

    python flows/fleet_reconciliation.py --day 2026-06-01 --landing-dir DIR --warehouse-dir DIR
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import acreate_markdown_artifact
from prefect.cache_policies import NO_CACHE

from recon.ingest.mirror import is_remote
from recon.shards import UNASSIGNED

try:  # run as `python flows/fleet_reconciliation.py` or imported as `flows.fleet_reconciliation`
    from flows.common import days_between, local_api_defaults, logger, parse_day
    from flows.daily_reconciliation import daily_reconciliation, pull_provider_window
    from flows.summary import _md
except ImportError:  # pragma: no cover - the project is not installed
    from common import days_between, local_api_defaults, logger, parse_day  # type: ignore
    from daily_reconciliation import daily_reconciliation, pull_provider_window  # type: ignore
    from summary import _md  # type: ignore

FLEET_SUMMARY_KEY = "recon-fleet-summary"
SHARD_DEPLOYMENT = "daily-reconciliation/shard"
# a child still not finished after this long is cancelled and fails the parent: a pool with no
# worker polling it would otherwise keep the parent waiting for ever (a shard-day runs minutes)
CHILD_TIMEOUT_SECONDS = 4 * 3600


# ------------------------------------------------------------------------------------- tasks
@task(cache_policy=NO_CACHE)
def plan_shards(landing_dir: str, config: str | None) -> list[str]:
    """The named shards of the config (`recon.shards.shard_names`), in its order.

    An `s3://` landing area needs `config`: its `recon.toml` is read by the children from their
    mirror, and a parent that found no `[shards]` would run everything as `__unassigned__`."""
    from recon.pipeline import find_config
    from recon.shards import shard_names

    if config is None and is_remote(landing_dir):
        raise ValueError(f"the landing area {landing_dir} is a bucket prefix: give `config`, a "
                         f"recon.toml with [shards] that the parent and every child can read")
    cfg = find_config(Path(landing_dir), config)
    names = shard_names(cfg)
    logger().info("shards: %s, then %s", ", ".join(names) or "(none named)", UNASSIGNED)
    return names


@task(cache_policy=NO_CACHE)
def tie_out(warehouses: list[str], landing_dir: str, config: str | None) -> dict:
    """`recon.shards.tieout` over every shard's warehouse (read-only; every shard of the config
    must be among them), per day: each shard's own billed amount, their sum, the account's
    (every provider line, as `__unassigned__` landed them), the difference; and what is off
    (`problems`: a difference, a resource two shards claim, a shard whose bill of the
    resources it claims is not the account's)."""
    from recon.pipeline import find_config
    from recon.shards import tieout

    res = tieout(warehouses, find_config(Path(landing_dir), config))
    days = sorted(set(res.account) | set(res.differences))
    return {"ok": res.ok,
            "days": [{"day": d,
                      "shards": {s: by_day.get(d, Decimal(0)) for s, by_day in res.shards.items()},
                      "shards_total": res.account.get(d, Decimal(0)) - res.differences.get(d, 0),
                      "account_total": res.account.get(d, Decimal(0)),
                      "difference": res.differences.get(d, Decimal(0))} for d in days],
            "claimed_twice": [f"{r} ({', '.join(s)})" for r, s in res.conflicts],
            "problems": res.problems()}


# ------------------------------------------------------------------------------------ children
async def check_deployment(deployment: str) -> None:
    """The children's deployment exists on the API the parent talks to: else every child would
    fail alike, after the provider pull, with Prefect's own 404."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    async with get_client() as client:
        try:
            await client.read_deployment_by_name(deployment)
        except ObjectNotFound:
            raise ValueError(f"no deployment {deployment!r} on the Prefect API: deploy it "
                             f"(`prefect --no-prompt deploy --name shard`, prefect.yaml), or "
                             f"give deployment='' to run the children in this process") from None


def warehouse_of(warehouse_dir: str, shard: str) -> str:
    """A shard's warehouse: `<warehouse_dir>/<shard>.duckdb` (shard names are file-name safe,
    recon/config.py)."""
    return str(Path(warehouse_dir) / f"{shard}.duckdb")


def child_parameters(shard: str, day: date, landing_dir: str, warehouse_dir: str,
                     config: str | None, validation: bool, settle_seconds: int,
                     exports_dir: str | None, marts_dir: str | None,
                     claims: list[str] | None = None, account: str | None = None,
                     land_only: bool = False) -> dict:
    """The daily flow's parameters for one shard and day. Each shard has its own finance CSV
    folder (`<exports_dir>/<shard>`: the files are named by day only); the published marts
    share `marts_dir`, each shard under its own `shard=` folder. The provider pull is the
    parent's, once for the account, never a child's: children share the landing area."""
    params = {"day": day.isoformat(), "landing_dir": landing_dir,
              "db": warehouse_of(warehouse_dir, shard), "config": config,
              "pull_provider": False, "validation": validation,
              "settle_seconds": settle_seconds, "shard": shard,
              "exports_dir": str(Path(exports_dir) / shard) if exports_dir else None,
              "marts_dir": marts_dir}
    if claims is not None:
        params["claims"] = claims
    if account is not None:
        params["account"] = account
    if land_only:
        params["land_only"] = True
    return params


async def _run_child(deployment: str | None, shard: str, day: date, params: dict,
                     poll_seconds: float, timeout: float | None = CHILD_TIMEOUT_SECONDS) -> dict:
    """One child to its end: {shard, day, ok, state, message, flow_run_id}. Never raises for
    the child's own failure: the parent waits for every shard of the day, then fails naming
    each one that did not complete. A child of a deployment not finished within `timeout`
    seconds (None: no limit) is cancelled, so that it does not write its warehouse after the
    parent gave up on it."""
    name = f"daily-{day}-{shard}" + ("-landing" if params.get("land_only") else "")
    late = None
    if deployment:
        from prefect.deployments import arun_deployment

        fr = await arun_deployment(deployment, parameters=params, flow_run_name=name,
                                   timeout=timeout, poll_interval=poll_seconds)
        state, run_id = fr.state, fr.id
        if state is not None and not state.is_final():
            from prefect.client.orchestration import get_client
            from prefect.states import Cancelling

            late = (f"not finished within {timeout:g} s (is a worker polling the "
                    f"deployment's work pool?); cancelled")
            async with get_client() as client:
                await client.set_flow_run_state(run_id, Cancelling(message=late), force=True)
    else:
        # a sync flow called from a thread: asyncio.to_thread copies the context, so the child
        # is a subflow of this run, and the shards build their warehouses at the same time
        state = await asyncio.to_thread(daily_reconciliation, return_state=True, **params)
        run_id = state.state_details.flow_run_id
    ok = state is not None and state.is_completed()
    out = {"shard": shard, "day": day.isoformat(), "ok": ok,
           "state": state.type.value if state is not None else "UNKNOWN",
           "message": late or ((state.message or "") if state is not None else "no state"),
           "flow_run_id": str(run_id) if run_id else None}
    (logger().info if ok else logger().error)("%s: child %s %s%s", name, out["flow_run_id"],
                                              out["state"],
                                              "" if ok else f": {out['message']}")
    return out


def _failed(children: list[dict]) -> RuntimeError | None:
    bad = [c for c in children if not c["ok"]]
    if not bad:
        return None
    lines = [f"shard {c['shard']} on {c['day']}: child flow run {c['flow_run_id']} "
             f"{c['state']}: {c['message']}" for c in bad]
    return RuntimeError(f"{len(bad)} shard run(s) failed, nothing tied out:\n  "
                        + "\n  ".join(lines))


# ------------------------------------------------------------------------------------- summary
def _cents(v) -> str:
    from recon.outputs.present import usd

    return usd(v)


def render_fleet(days: list[date], children: list[dict], tie: dict) -> str:
    """The parent's markdown: per day, each shard's billed total, their sum, the account's total
    and the difference; resources two shards claim; the children's runs."""
    lines = [f"# GPU billing reconciliation of the fleet, "
             f"{days[0] if len(days) == 1 else f'{days[0]}..{days[-1]}'} (UTC)", "",
             f"**Tie-out: {'ok' if tie['ok'] else 'OFF'}.** The shards' billed totals add up "
             f"to the account's bill (every provider line) to the cent, and no billed resource is "
             f"claimed by two shards.", ""]
    for d in tie["days"]:
        lines += [f"## {d['day']}", "", "| shard | billed USD |", "|---|---:|"]
        lines += [f"| {_md(s)} | {_cents(v)} |" for s, v in d["shards"].items()]
        lines += [f"| sum of the shards | {_cents(d['shards_total'])} |",
                  f"| account (every provider line) | {_cents(d['account_total'])} |",
                  f"| difference | {_cents(d['difference'])} |", ""]
    if tie["problems"]:
        lines.append("What is off (`recon.shards.tieout`):")
        lines += [f"* {_md(p)}" for p in tie["problems"]]
        lines.append("")
    lines += ["| child | day | state | flow run |", "|---|---|---|---|"]
    lines += [f"| {_md(c['shard'])} | {c['day']} | {c['state']} | {c['flow_run_id']} |"
              for c in children]
    return "\n".join(lines) + "\n"


def tie_out_error(tie: dict) -> RuntimeError | None:
    """None if the tie-out holds; else what is off, with each shard's amount per day."""
    if tie["ok"]:
        return None
    lines = [*tie["problems"]]
    lines += [f"{d['day']}: " + ", ".join(f"{s} {_cents(v)}" for s, v in d["shards"].items())
              + f" = {_cents(d['shards_total'])} USD against the account's "
              f"{_cents(d['account_total'])} USD (difference {d['difference']} USD)"
              for d in tie["days"] if d["difference"]]
    return RuntimeError("the shards do not tie out to the account's bill:\n  "
                        + "\n  ".join(lines))


# ---------------------------------------------------------------------------------------- flow
def _run_name() -> str:
    from prefect.runtime import flow_run

    day = (flow_run.parameters or {}).get("day")
    return f"fleet-{day or 'yesterday'}"


@flow(name="fleet-reconciliation", flow_run_name=_run_name, log_prints=False)
async def fleet_reconciliation(day: str | None = None, landing_dir: str = "data/landing",
                               warehouse_dir: str = "data/shards", config: str | None = None,
                               trailing_days: int = 1, pull_provider: bool = False,
                               validation: bool = True, settle_seconds: int = 0,
                               exports_dir: str | None = None, marts_dir: str | None = None,
                               deployment: str | None = SHARD_DEPLOYMENT,
                               poll_seconds: float = 5.0,
                               child_timeout_seconds: float | None = CHILD_TIMEOUT_SECONDS,
                               take_from_account: bool = True) -> dict:
    """Reconcile the fleet shard by shard for one UTC day (or the trailing days ending with it)
    and tie the shards out to the account's bill.

    Args:
        day: UTC day, YYYY-MM-DD. Default: the day before the run's scheduled start.
        landing_dir: The shared landing area (every cluster's `k8s/cluster=<c>/` prefix and the
            account's provider files); each child reads it.
        warehouse_dir: Folder of the shards' warehouses, `<warehouse_dir>/<shard>.duckdb`
            (`__unassigned__.duckdb` included).
        config: recon TOML with `[shards]`. Default: LANDING_DIR/recon.toml (required with an
            `s3://` landing area).
        trailing_days: Days reconciled, ending with `day`, oldest first; each day's children
            run after the day before tied out its children.
        pull_provider: Pull the account's Runpod billing for those days once, before any
            child (the children never pull: they share the landing area).
        validation: Each child's data-quality gate.
        settle_seconds: Each child's settle time (files modified more recently are left).
        exports_dir: Finance CSVs per shard under `<exports_dir>/<shard>/`; empty: none.
        marts_dir: The shards' marts as Hive-partitioned Parquet under
            `marts/<table>/day=D/shard=<shard>/`; empty: none.
        deployment: The daily flow's deployment each child is a run of (a work pool's worker
            runs it); empty: the children run in this process, in threads.
        poll_seconds: How often the parent asks the API whether a child has ended.
        child_timeout_seconds: A child of `deployment` not finished this long after it was
            created (4 hours by default; null: no limit) is cancelled and fails the parent,
            named with its state (a pool no worker polls leaves it SCHEDULED). Children run
            in this process (no `deployment`) have no limit.
        take_from_account: The named shards take their rows of the provider's files from the
            `__unassigned__` warehouse, which lands first (every child must then read
            `warehouse_dir`, as the `__unassigned__` child already does for the claims); false:
            every named shard lands every provider file itself, and its cost grows with the
            account's.
    """
    if trailing_days < 1:
        raise ValueError("trailing_days must be at least 1")
    last = parse_day(day)
    days = days_between(last - timedelta(days=trailing_days - 1), last)
    landing = str(landing_dir)
    config = str(config) if config else None
    names = plan_shards(landing, config)
    if deployment:
        await check_deployment(deployment)
    if pull_provider:
        pull_provider_window(landing, days[0], days[-1])
    warehouses = [warehouse_of(warehouse_dir, s) for s in names]
    if not is_remote(str(warehouse_dir)):
        Path(warehouse_dir).mkdir(parents=True, exist_ok=True)

    account = warehouse_of(warehouse_dir, UNASSIGNED)

    def params(shard: str, d: date, **kw) -> dict:
        return child_parameters(shard, d, landing, str(warehouse_dir), config, validation,
                                settle_seconds, exports_dir or None, marts_dir or None, **kw)

    children: list[dict] = []

    async def step(d: date, shards: list[str], **kw) -> None:
        """Children of one step of day `d`, at the same time; the parent fails naming each one
        that did not complete, once they all ended."""
        done = await asyncio.gather(*(_run_child(deployment, s, d, params(s, d, **kw),
                                                 poll_seconds, child_timeout_seconds)
                                      for s in shards))
        children.extend(done)
        if err := _failed(done):
            raise err

    for d in days:
        if take_from_account:
            await step(d, [UNASSIGNED], land_only=True)
        await step(d, names, **({"account": account} if take_from_account else {}))
        await step(d, [UNASSIGNED], claims=warehouses)
    tie = tie_out([*warehouses, account], landing, config)
    await acreate_markdown_artifact(render_fleet(days, children, tie), key=FLEET_SUMMARY_KEY,
                                    description=f"Fleet reconciliation for {days[0]}..{days[-1]} "
                                                f"(UTC): the shards against the account's bill")
    if err := tie_out_error(tie):
        raise err
    logger().info("tie-out ok: %s", "; ".join(
        f"{d['day']} {_cents(d['account_total'])} USD in {len(d['shards'])} shards"
        for d in tie["days"]))
    return {"days": [d.isoformat() for d in days], "shards": [*names, UNASSIGNED],
            "children": children, "tieout": _jsonable(tie)}


def _jsonable(v):
    """The tie-out with amounts as strings (a flow's result is stored as JSON)."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, bool | int | str) or v is None:
        return v
    return str(v)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Reconcile the fleet shard by shard (Prefect flow).")
    p.add_argument("--day", help="UTC day YYYY-MM-DD (default: yesterday)")
    p.add_argument("--landing-dir", default="data/landing")
    p.add_argument("--warehouse-dir", default="data/shards")
    p.add_argument("--config", help="recon TOML with [shards] (default: LANDING_DIR/recon.toml)")
    p.add_argument("--no-validate", action="store_true", help="skip each child's gate")
    p.add_argument("--deployment", default="",
                   help="the daily flow's deployment for the children (default: in this process)")
    a = p.parse_args(argv)
    local_api_defaults()  # before the flow starts the temporary API
    asyncio.run(fleet_reconciliation(day=a.day, landing_dir=a.landing_dir,
                                     warehouse_dir=a.warehouse_dir, config=a.config,
                                     validation=not a.no_validate,
                                     deployment=a.deployment or None))


if __name__ == "__main__":
    main()
