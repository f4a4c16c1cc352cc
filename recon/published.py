"""Which UTC days the daily steps published, so that a backfill resumes where it stopped.

A day's marts rows are written by its build and committed before the data-quality gate runs,
so rows in `marts.resource_day` do not say the day is done: a day whose gate failed critically
has rows too, and nothing was published for it. `meta.published_days` records a day when its
summary was published, with the gate's run id, or none when the run asked for no gate.

A backfill (flows/backfill.py) skips exactly the days recorded here (`published`), and with
the gate on, only those whose gate passed: a day built without the gate is built and checked
again.

A day whose provider bill has not landed (`day_states`: an `awaiting_bill` row in
marts.settlement, sql/intermediate/int_billing__bill_days.sql) is never published: it would
read $0 billed, pass the gate, and be skipped by every backfill after. It is built again by the
next daily run (`awaiting_before`) or backfill, and published once its bill lands. A day with
neither lifecycle data nor a bill is an error (`recon check` refuses it too).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta

AWAITING = "awaiting_bill"
EMPTY = "empty"
BILLED = "billed"

DDL = """create table if not exists meta.published_days (
    day date primary key,
    validation_run varchar,           -- the gate's run id; null: published without the gate
    published_at timestamptz not null)"""


def mark_published(con, days: Iterable[date], validation_run: str | None) -> None:
    """Record `days` as published, with the gate run that passed for them (None: no gate).
    A later publication of a day replaces its row."""
    rows = [(d, validation_run, datetime.now(UTC)) for d in sorted(set(days))]
    if not rows:
        return
    con.execute("create schema if not exists meta")
    con.execute(DDL)
    con.executemany("insert or replace into meta.published_days values (?, ?, ?)", rows)


def unmark_published(con, days: Iterable[date]) -> None:
    """Withdraw the publication of `days` (found awaiting their bill: a $0 day published before
    its bill could be told apart), so that the next backfill builds them again."""
    wanted = sorted(set(days))
    if wanted and _has_table(con, "meta", "published_days"):
        con.execute("delete from meta.published_days where day in (select unnest(?::date[]))",
                    [wanted])


def _has_table(con, schema: str, table: str) -> bool:
    return bool(con.execute("select count(*) from information_schema.tables where "
                            "table_schema = ? and table_name = ?", [schema, table]).fetchone()[0])


def day_states(con, days: Iterable[date]) -> dict[date, str]:
    """Each of `days` as built in the marts: AWAITING (a resource of the day awaits the day's
    bill), EMPTY (no row in marts.resource_day: no lifecycle data and no bill), else BILLED."""
    wanted = sorted(set(days))
    if not wanted:
        return {}
    rows = dict(con.execute(
        "select day, bool_or(state = ?) from marts.settlement where day between ? and ? "
        "group by day", [AWAITING, wanted[0], wanted[-1]]).fetchall())
    return {d: EMPTY if d not in rows else AWAITING if rows[d] else BILLED for d in wanted}


def awaiting_before(con, day: date) -> list[date]:
    """Days before `day` built while their bill had not landed and not published since: the
    daily run builds them again, so that a late bill reaches its day without a backfill."""
    if not _has_table(con, "marts", "settlement"):
        return []
    done = ("and day not in (select day from meta.published_days)"
            if _has_table(con, "meta", "published_days") else "")
    return [r[0] for r in con.execute(
        f"select distinct day from marts.settlement where state = ? and day < ? {done} "
        "order by day", [AWAITING, day]).fetchall()]


def awaiting_summary(con, day: date, arrival_minutes: int | None = None) -> dict:
    """What a day awaiting its bill holds so far: its resources, the money billed so far and
    the settlement amount (unbilled work priced from lifecycle × rate), the latest pull of a
    line of the day, and the instant a pull must reach for the day's bill to have landed."""
    n, billed, amount = con.execute(
        "select count(*), coalesce(sum(d.billed_amount), 0), coalesce(sum(s.amount), 0) "
        "from marts.settlement s join marts.resource_day d using (resource_id, day) "
        "where s.day = ?", [day]).fetchone()
    last = None
    if _has_table(con, "intermediate", "int_billing__bill_days"):
        last = next(iter(con.execute("select last_pulled_at from intermediate."
                                     "int_billing__bill_days where day = ?", [day]).fetchall()),
                    (None,))[0]
    if arrival_minutes is None:
        arrival_minutes = int(con.execute("select coalesce(cfg_int('bill_arrival_minutes'), 60)")
                              .fetchone()[0])
    after = datetime.combine(day + timedelta(days=1), time(), UTC) + timedelta(
        minutes=arrival_minutes)
    return {"resources": n, "billed": billed, "amount": amount, "last_pulled_at": last,
            "landed_after": after, "arrival_minutes": arrival_minutes}


def published(con, days: Iterable[date], validated: bool) -> list[date]:
    """The days among `days` that were published; with `validated`, only those whose gate
    passed. A warehouse without the table (nothing published yet, or built before it
    existed) has none."""
    wanted = sorted(set(days))
    if not wanted:
        return []
    has = con.execute("select count(*) from information_schema.tables where table_schema = "
                      "'meta' and table_name = 'published_days'").fetchone()[0]
    if not has:
        return []
    rows = con.execute(
        "select day from meta.published_days where day between ? and ?"
        + (" and validation_run is not null" if validated else "") + " order by day",
        [wanted[0], wanted[-1]]).fetchall()
    keep = set(wanted)
    return [r[0] for r in rows if r[0] in keep]


def batches(days: Iterable[date], size: int) -> list[list[date]]:
    """`days` (sorted) cut into runs of consecutive days, each at most `size` long: a window
    `--from first --to last` builds exactly one of them."""
    if size < 1:
        raise ValueError(f"a batch holds at least one day, got {size}")
    out: list[list[date]] = []
    for d in sorted(set(days)):
        if out and len(out[-1]) < size and (d - out[-1][-1]).days == 1:
            out[-1].append(d)
        else:
            out.append([d])
    return out
