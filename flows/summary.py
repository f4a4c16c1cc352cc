"""What the daily steps publish for a day: its summary (money by category, top findings) as the
Prefect artifact shows it, or, for a day whose provider bill has not landed, what it awaits.

Flows only wire library steps together; this renders what `recon.pipeline.summarise` and
`recon.published.awaiting_summary` compute.
"""

from __future__ import annotations

import html
import re
from datetime import date
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from recon.outputs.present import SUMMARY_ROWS, usd, utc_cell

try:  # run as `python flows/daily_reconciliation.py` or imported as `flows.daily_reconciliation`
    from flows.common import WAREHOUSE_TAG, days_between, logger
except ImportError:  # pragma: no cover - the project is not installed
    from common import WAREHOUSE_TAG, days_between, logger  # type: ignore

SUMMARY_KEY = "recon-daily-summary"
TOP_FINDINGS = 10


def day_summary(db: str, day: date) -> tuple[dict, list[dict]]:
    """The day's summary row (as `recon run` prints it) and its findings, most money first."""
    from recon.db import connect
    from recon.pipeline import summarise

    con = connect(db, read_only=True)
    try:
        summary = next((d for d in summarise(con) if d["day"] == day), None)
        cur = con.execute(
            "select finding_id, code, severity, resource_id, day, window_start, window_end, "
            "seconds, amount_at_stake, message from marts.findings where day = ? "
            "order by amount_at_stake desc nulls last, code, resource_id, finding_id", [day])
        cols = [c[0] for c in cur.description]
        findings = [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()
    return summary, findings


# Markdown's own punctuation where data may stand: `[text](url)` would be a link, `|` would end
# the table cell, a backtick a code span
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _md(v) -> str:
    """A value from data (pod, namespace and file names, messages quoting them) as text in a
    markdown table cell: the UI renders HTML in markdown, so `<img>`/`<svg>` from a pod name
    would be rendered; its &, < and > become entities, and markdown's punctuation is escaped."""
    text = html.escape(utc_cell(v), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\r", " ").replace("\n", " ")


def render_markdown(day: date, db: str, summary: dict | None, findings: list[dict],
                    load: dict | None, validation: dict | None = None) -> str:
    lines = [f"# GPU billing reconciliation, {day} (UTC)", ""]
    if summary is None:
        lines += [f"No billed resource for {day} in `{db}`.", ""]
    else:
        lines += ["| category | USD |", "|---|---:|"]
        lines += [f"| {label} | {usd(summary[key])} |" for label, key in SUMMARY_ROWS]
        lines += [f"| At stake ({summary['findings']} findings) | {usd(summary['at_stake'])} |",
                  ("| of it outside the day's bill (savings-plan upfront, unbilled work, "
                   "balance shortfall, shared-GPU overcharge) | "
                   f"{usd(summary.get('at_stake_outside_bill', 0))} |"),
                  ""]
    if findings:
        top = findings[:TOP_FINDINGS]
        lines += [f"## Top {len(top)} findings by money at stake", "",
                  "| # | code | severity | resource | USD at stake | message |",
                  "|---:|---|---|---|---:|---|"]
        lines += [f"| {i} | {f['code']} | {f['severity']} | {_md(f['resource_id'])} | "
                  f"{usd(f['amount_at_stake'])} | {_md(f['message'])} |"
                  for i, f in enumerate(top, 1)]
        lines.append("")
    if load:
        first, last = load.get("window") or (str(day), str(day))
        built = "" if first == last else f" (the build of {first}..{last}, this day's batch)"
        lines.append(f"Input{built}: {load['files']} files, {load['records_in']} records: "
                     f"{load['loaded']} loaded, {load['quarantined']} quarantined at load, "
                     f"{load['staging_quarantined']} quarantined in staging, {load['skipped']} "
                     f"skipped (not billing data).")
    if validation and "evaluated" in validation:
        lines.append(f"Validation `{validation['run_id']}`: {validation['passed']} of "
                     f"{validation['evaluated']} expectations held, "
                     f"{len(validation['warnings'])} warning(s) "
                     f"(`marts.validation_results`).")
        lines += [f"* warning: {_md(w)}" for w in validation["warnings"][:TOP_FINDINGS]]
    elif validation:
        lines.append(f"Validation skipped: {validation['skipped']}.")
    given_up = (load or {}).get("provider_given_up") or []
    if given_up:
        lines.append(f"Provider pull: gave up {len(given_up)} call(s) at a deadline (not "
                     "landed; the next run's trailing days pull them again):")
        lines += [f"* {_md(g)}" for g in given_up[:TOP_FINDINGS]]
    lines.append(f"Warehouse: `{db}` (`marts.findings`, `marts.resource_day`, "
                 f"`marts.billed_segments`).")
    return "\n".join(lines) + "\n"


def render_awaiting(day: date, db: str, held: dict, load: dict | None,
                    validation: dict | None = None) -> str:
    """The artifact of a day whose provider bill has not landed (`recon.published`): nothing of
    its money is published, and it says what the day waits for and what is known so far."""
    last = held.get("last_pulled_at")
    pulled = (f"the latest pull holding a line of the day was made at "
              f"{utc_cell(last)}" if last
              else "no bill line of the day has landed")
    lines = [f"# GPU billing reconciliation, {day} (UTC)", "",
             f"**Awaiting the provider's bill: {day} is not published.**", "",
             (f"{held['resources']} resource(s) have lifecycle data or bill lines on {day}, and "
             f"the day's bill has not landed: no bill line of the day comes from a pull made at "
             f"or after {utc_cell(held['landed_after'])} (the day's end + "
             f"bill_arrival_minutes = "
             f"{held['arrival_minutes']}); {pulled}. Known so far: {usd(held['billed'])} USD "
             f"billed, {usd(held['amount'])} USD with the unbilled work priced from lifecycle × "
             f"rate (`marts.settlement`, state `awaiting_bill`)."), "",
             ("No finance CSVs were written and the day is not recorded as published: the "
              "next daily run or a backfill builds it again and publishes it once its bill "
              "lands."), ""]
    if load:
        lines.append(f"Input: {load['files']} files, {load['records_in']} records: "
                     f"{load['loaded']} loaded, {load['quarantined']} quarantined at load.")
    if validation and "evaluated" in validation:
        lines.append(f"Validation `{validation['run_id']}`: {validation['passed']} of "
                     f"{validation['evaluated']} expectations held.")
    lines.append(f"Warehouse: `{db}`.")
    return "\n".join(lines) + "\n"


@task(tags=[WAREHOUSE_TAG], cache_policy=NO_CACHE)
def bill_states(db: str, day: date, last_day: date | None = None) -> dict[date, str]:
    """Each day of `day`..`last_day` as built: `awaiting_bill`, `empty` or `billed`
    (recon.published.day_states)."""
    from recon.db import connect
    from recon.published import day_states

    con = connect(db, read_only=True)
    try:
        return day_states(con, days_between(day, last_day or day))
    finally:
        con.close()


@task(cache_policy=NO_CACHE)
def hold_awaiting(db: str, day: date, load: dict | None = None,
                  validation: dict | None = None) -> dict:
    """A day whose provider bill has not landed: its artifact says so (the summary's key, so it
    is the latest one for the deployment), nothing is exported, and the day is not recorded as
    published (a publication recorded for it before is withdrawn), so that the next daily run
    or backfill builds it again."""
    from recon.db import connect
    from recon.published import awaiting_summary, unmark_published

    con = connect(db, read_only=True)
    try:
        held = awaiting_summary(con, day)
    finally:
        con.close()
    create_markdown_artifact(render_awaiting(day, db, held, load, validation), key=SUMMARY_KEY,
                             description=f"{day} (UTC) awaits the provider's bill: not published")
    con = connect(db)
    try:
        unmark_published(con, [day])
    finally:
        con.close()
    logger().warning("%s: awaiting the provider's bill (%d resource(s), %s USD billed so far): "
                     "not published; built again by the next run", day, held["resources"],
                     usd(held["billed"]))
    return {"day": day.isoformat(), "state": "awaiting_bill", "published": False,
            "resources": held["resources"], "billed": usd(held["billed"]),
            "estimated": usd(held["amount"])}


def empty_days_error(db: str, empty: list[date]) -> RuntimeError:
    from recon.db import connect
    from recon.pipeline import billed_span

    con = connect(db, read_only=True)
    try:
        span = billed_span(con)
    finally:
        con.close()
    cover = f"the landed bills cover {span[0]}..{span[1]}" if span else "no bill was landed"
    return RuntimeError(f"no lifecycle data and no bill on {', '.join(map(str, empty))} in {db} "
                        f"({cover}): nothing to reconcile, nothing published for "
                        f"{'it' if len(empty) == 1 else 'them'}; is the landing area complete?")


def _awaiting_before(db: str, first: date) -> list[date]:
    from recon.db import connect
    from recon.published import awaiting_before

    if not Path(db).exists():
        return []
    con = connect(db, read_only=True)
    try:
        return awaiting_before(con, first)
    finally:
        con.close()
