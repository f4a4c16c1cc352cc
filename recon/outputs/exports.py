"""Finance exports: daily costs by team and findings, as CSV; the file rules they share with the
FOCUS 1.2 export (`recon.outputs.focus`).

Files (written into one `--out` folder, never outside it; each written to a temp file in the same
folder and renamed into place, so a reader never sees half a file):

* ``costs_<YYYY-MM-DD>.csv`` — one row per day × team × namespace × workload × category × cause
  × resource (:data:`COSTS_COLUMNS`). Its ``billed_amount`` adds up **exactly** (all 12 decimals) to
  ``sum(marts.resource_day.billed_amount)`` for the day, plus the FOCUS charges carried through
  without a lifecycle (``marts.focus_charges`` not reconciled), in ``other_charge`` rows. Its
  ``billed_amount_cents`` rounds each amount to cents by largest remainder
  (:func:`largest_remainder_cents`), so the cent rows of a currency add up exactly to its total
  rounded to cents; ``cost_center`` comes from ``[mapping] cost_centers`` by team.
* ``findings_<YYYY-MM-DD>.csv`` — ``marts.findings`` for the day (:data:`FINDINGS_COLUMNS`).
* ``focus_<YYYY-MM>.csv`` and ``.parquet`` — written by `recon.outputs.focus` with the
  validation, cell formats, writers and allocation here.

Allocation (how bill money becomes team rows) is `marts.allocation`; its rules are written
once, in ``sql/marts/allocation.sql``. The costs file aggregates that mart by day, team,
namespace, workload, category, cause and resource, quantised to the file's scale (the mart's own, 12 decimals:
its rows already tie to the bill exactly, so quantising changes no digit and the file ties to
``marts.resource_day`` exactly).

CSV format: UTF-8, header row, ``,`` separated, ``\\n`` line ends; text cells are always
double-quoted (so ids stay strings), numbers and timestamps never; NULL is an empty unquoted
cell. Timestamps are ISO-8601 UTC with ``Z`` (event instants ``YYYY-MM-DDTHH:MM:SS.fffZ``,
FOCUS period columns ``YYYY-MM-DDTHH:MM:SSZ``); days ``YYYY-MM-DD``. Money has exactly 12
decimals (the marts' scale), rounded cents 2, seconds 3; never float-formatted. A text cell
starting with ``= + - @``, tab or CR is prefixed with ``'`` (spreadsheet formula neutralisation); numeric
cells are left alone, so negative amounts stay numbers. Parquet holds the raw values
(decimal128, timestamp[ms, UTC]).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from pathlib import Path

from ..build.guards import require_built

IDLE = "__idle__"
UNALLOCATED = "__unallocated__"
MONEY_SCALE = 12
SECONDS_SCALE = 3

# (name, kind): kind is str | money | seconds | quantity | ts | period | date | bool
COSTS_SPEC = (
    ("day", "date"), ("team", "str"), ("namespace", "str"), ("workload", "str"),
    ("category", "str"), ("seconds", "seconds"), ("billed_amount", "money"),
    ("expected_amount", "money"),
    # appended, so a reader by position keeps its columns: why money that was not work was
    # billed (marts.waste's cause; empty for work)
    ("cause", "str"),
    # appended for the same reason: the billed resource (the row's grain includes it), the
    # currency of the money, the team's cost center (`[mapping] cost_centers`; empty when the
    # team has none), the row's seconds apart by kind (storage: storage_running,
    # storage_lingering, network_volume; the rest compute), and billed_amount rounded to cents
    # by largest remainder so the file's cent rows add up to its total rounded to cents
    ("resource_id", "str"), ("currency", "str"), ("cost_center", "str"),
    ("compute_seconds", "seconds"), ("storage_seconds", "seconds"),
    ("billed_amount_cents", "cents"),
    # appended: true where billed_amount is the rate card's price of a usage-only FOCUS file's
    # usage (the file bills no cost; marts.resource_day.amount_priced), which no provider billed
    ("amount_priced", "bool"),
)
FINDINGS_SPEC = (
    ("finding_id", "str"), ("code", "str"), ("severity", "str"), ("resource_id", "str"),
    ("day", "date"), ("window_start", "ts"), ("window_end", "ts"), ("seconds", "seconds"),
    ("amount_at_stake", "money"), ("message", "str"),
    # appended, so a reader by position keeps its columns: who the finding is about (empty where
    # no workload explains it)
    ("namespace", "str"), ("owner_kind", "str"), ("owner_name", "str"), ("team", "str"),
)
#: allocation categories whose seconds are storage seconds (marts.billed_segments); the others
#: count compute seconds (an instance's, or a serverless worker's)
STORAGE_CATEGORIES = frozenset({"storage_running", "storage_lingering", "network_volume"})
#: the currency of the bill marts.resource_day holds (Runpod bills USD; focus.py says the same)
BILL_CURRENCY = "USD"
CENT = Decimal("0.01")

#: Stable column orders of the two daily CSV files (copy to the README).
COSTS_COLUMNS = tuple(c for c, _ in COSTS_SPEC)
FINDINGS_COLUMNS = tuple(c for c, _ in FINDINGS_SPEC)

_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MONTH_RE = re.compile(r"\d{4}-\d{2}")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# ---------------------------------------------------------------- validation and writing

def parse_day(s: str) -> date:
    """A `YYYY-MM-DD` UTC day; anything else (paths, `..`, spaces) raises ValueError."""
    if not isinstance(s, str) or not _DAY_RE.fullmatch(s):
        raise ValueError(f"day must be YYYY-MM-DD, got {s!r}")
    return date.fromisoformat(s)


def parse_month(s: str) -> date:
    """A `YYYY-MM` month → its first day; anything else raises ValueError."""
    if not isinstance(s, str) or not _MONTH_RE.fullmatch(s):
        raise ValueError(f"month must be YYYY-MM, got {s!r}")
    return date.fromisoformat(s + "-01")


def safe_target(out_dir: str | Path, name: str) -> Path:
    """`out_dir/name`, refusing any name that is not a plain file name inside `out_dir`."""
    if not _NAME_RE.fullmatch(name) or ".." in name:
        raise ValueError(f"refusing output file name {name!r}")
    root = Path(out_dir).resolve()
    target = (root / name).resolve()
    if target.parent != root:
        raise ValueError(f"refusing to write {target} outside {root}")
    return target


def atomic_write(target: Path, write) -> Path:
    """Call `write(binary_file)` on a temp file beside `target`, fsync, then os.replace."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def fmt_decimal(v, scale: int) -> str:
    """Exact fixed-point text with `scale` decimals (half-even), never via float."""
    if isinstance(v, float):
        raise TypeError("refusing to format a float as money/seconds")
    q = Decimal(v).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_EVEN)
    return format(q.copy_abs() if q.is_zero() else q, "f")


def fmt_ts(v: datetime | None, millis: bool = True) -> str:
    if v is None:
        return ""
    u = v.astimezone(UTC)
    if not millis:
        return u.strftime("%Y-%m-%dT%H:%M:%SZ")
    return u.strftime("%Y-%m-%dT%H:%M:%S.") + f"{u.microsecond // 1000:03d}Z"


def neutralise(s: str) -> str:
    """Prefix `'` to text a spreadsheet would run as a formula."""
    return "'" + s if s.startswith(_FORMULA_START) else s


def _cell(v, kind: str) -> str:
    if v is None:
        return ""
    if kind == "str":
        return '"' + neutralise(str(v)).replace('"', '""') + '"'
    if kind == "money":
        return fmt_decimal(v, MONEY_SCALE)
    if kind == "seconds":
        return fmt_decimal(v, SECONDS_SCALE)
    if kind == "cents":  # already whole cents (largest_remainder_cents); 2 places, never rounded
        return fmt_decimal(v, 2)
    if kind == "quantity":  # a FOCUS quantity: a day's piece of a row is exact at 12 places
        return fmt_decimal(v, MONEY_SCALE)
    if kind in ("ts", "period"):
        return fmt_ts(v, millis=kind == "ts")
    if kind == "date":
        return v.isoformat()
    if kind == "bool":
        return "true" if v else "false"
    raise ValueError(kind)


def csv_bytes(spec, rows) -> bytes:
    """Rows (dicts or tuples in spec order) → CSV bytes per the module's format rules."""
    names = [n for n, _ in spec]
    lines = [",".join(names)]
    for r in rows:
        vals = [r[n] for n in names] if isinstance(r, dict) else r
        lines.append(",".join(_cell(v, k) for v, (_, k) in zip(vals, spec, strict=True)))
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_csv(target: Path, spec, rows) -> Path:
    data = csv_bytes(spec, rows)
    return atomic_write(target, lambda f: f.write(data))


def write_parquet(target: Path, spec, rows: list[dict], metadata: dict | None = None) -> Path:
    """`rows` as Parquet typed by `spec`; `metadata` is written as the schema's key-value
    metadata (the FOCUS export's FocusVersion)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"str": pa.string(), "money": pa.decimal128(38, MONEY_SCALE),
             "cents": pa.decimal128(38, 2),
             "seconds": pa.decimal128(38, SECONDS_SCALE), "quantity": pa.decimal128(38, MONEY_SCALE),
             "ts": pa.timestamp("ms", tz="UTC"),
             "period": pa.timestamp("ms", tz="UTC"), "date": pa.date32(), "bool": pa.bool_()}

    def norm(v, kind):
        if v is None:
            return None
        if kind in ("money", "quantity"):
            return Decimal(fmt_decimal(v, MONEY_SCALE))
        if kind == "seconds":
            return Decimal(fmt_decimal(v, SECONDS_SCALE))
        if kind == "cents":
            return Decimal(fmt_decimal(v, 2))
        return v

    schema = pa.schema([(n, types[k]) for n, k in spec], metadata=metadata)
    table = pa.table({n: pa.array([norm(r[n], k) for r in rows], type=types[k]) for n, k in spec},
                     schema=schema)
    return atomic_write(target, lambda f: pq.write_table(table, f))


# ---------------------------------------------------------------- allocation

@dataclass(frozen=True)
class Share:
    """A piece of one resource-day's bill attributed to one team/namespace/workload/category."""
    resource_id: str
    resource_kind: str
    day: date
    team: str
    namespace: str
    workload: str
    category: str
    seconds: Decimal
    amount: Decimal
    expected: Decimal | None
    # who owns the piece and, for money that was not work, why it was billed (marts.waste's cause)
    owner_kind: str | None = None
    owner_name: str | None = None
    cause: str | None = None


def _q(v: Decimal, scale: int) -> Decimal:
    return v.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_EVEN)


def network_volume_lingering(con, d0: date, d1: date) -> dict[tuple, tuple[Decimal, Decimal]]:
    """(volume_id, day) → (lingering seconds, lingering USD): `marts.network_volume_lingering`
    (each hour's amount × its lingering fraction, in exact decimals)."""
    require_built(con, d0, d1, "network volume lingering")
    return {(vid, day): (secs, amount) for vid, day, secs, amount in con.execute(
        "select volume_id, day, lingering_seconds, lingering_amount "
        "from marts.network_volume_lingering where day between ? and ?", [d0, d1]).fetchall()}


def allocate(con, day_from: date, day_to: date) -> list[Share]:
    """Every billed dollar of [day_from, day_to] as Shares that tie to marts.resource_day.

    The split itself is `marts.allocation` (sql/marts/allocation.sql holds the rules), and it
    ties each resource-day to `marts.resource_day.billed_amount` exactly, in decimals at 12
    places: its `tie` adds what cutting the shares lost to the largest row (or an `unreconciled`
    row). The export's scale is the mart's (MONEY_SCALE = 12, SECONDS_SCALE = 3), so quantising
    changes no digit and the file ties without a second tie here.
    """
    rows = con.execute(
        "select a.resource_id, coalesce(d.resource_kind, 'instance'), a.day, a.team, a.namespace, "
        "a.workload, a.category, a.seconds, a.amount, a.expected_amount, a.owner_kind, a.owner_name, a.cause "
        "from marts.allocation a left join (select distinct resource_id, day, resource_kind "
        "from marts.resource_day) d using (resource_id, day) "
        "where a.day between ? and ? order by all", [day_from, day_to]).fetchall()
    return [Share(rid, kind, day, team, ns, wl, cat, _q(secs, SECONDS_SCALE),
                  _q(amount, MONEY_SCALE), None if exp is None else _q(exp, MONEY_SCALE),
                  okind, oname, cause)
            for rid, kind, day, team, ns, wl, cat, secs, amount, exp, okind, oname, cause in rows]


# ---------------------------------------------------------------- the daily files

def largest_remainder_cents(amounts: list[Decimal]) -> list[Decimal]:
    """Each amount rounded to whole cents so that the cents add up exactly to the sum of the
    amounts rounded to cents (half-even, as :func:`fmt_decimal` rounds): every amount is floored
    to the cent, and the cents still missing go one each to the largest remainders (ties to the
    earlier amount, so the same rows give the same cents). Rounding each amount on its own can
    miss the total by up to half a cent per row."""
    floors = [a.quantize(CENT, rounding=ROUND_FLOOR) for a in amounts]
    target = sum(amounts, Decimal(0)).quantize(CENT, rounding=ROUND_HALF_EVEN)
    missing = int((target - sum(floors, Decimal(0))) / CENT)  # 0 ≤ missing ≤ len(amounts)
    order = sorted(range(len(amounts)), key=lambda i: (-(amounts[i] - floors[i]), i))
    for i in order[:missing]:
        floors[i] += CENT
    return floors


def with_cents(rows: list[dict]) -> list[dict]:
    """`rows` (the costs file's, in file order) with `billed_amount_cents` filled: largest
    remainder over each currency's rows, so a currency's cent rows add up to its total."""
    by_currency: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_currency.setdefault(r["currency"], []).append(i)
    for idx in by_currency.values():
        for i, c in zip(idx, largest_remainder_cents([rows[i]["billed_amount"] for i in idx]),
                        strict=True):
            rows[i]["billed_amount_cents"] = c
    return rows


def cost_centers(con) -> dict[str, str]:
    """team → cost center: `[mapping] cost_centers` as the build wrote it (config.settings); an
    empty mapping for a warehouse built without one."""
    import json

    try:
        v = con.execute("select value from config.settings where name = 'cost_centers'").fetchone()
    except Exception:  # noqa: BLE001 - a warehouse without config tables maps nothing
        return {}
    return json.loads(v[0]) if v and v[0] else {}


def cost_rows(shares: list[Share], centers: dict[str, str] | None = None) -> list[dict]:
    """One row per day × team × namespace × workload × category × cause × resource; the cents
    column is left for :func:`with_cents` (it needs the whole file)."""
    centers = centers or {}
    acc: dict[tuple, list] = {}
    for s in shares:
        k = (s.day, s.team, s.namespace, s.workload, s.category, s.cause or "", s.resource_id)
        a = acc.setdefault(k, [Decimal(0), Decimal(0), None])
        a[0] += s.seconds
        a[1] += s.amount
        if s.expected is not None:
            a[2] = (a[2] or Decimal(0)) + s.expected
    rows = []
    for (day, team, ns, wl, cat, cause, rid), (secs, amount, expected) in sorted(acc.items()):
        storage = cat in STORAGE_CATEGORIES
        rows.append(dict(zip(COSTS_COLUMNS, (
            day, team, ns, wl, cat, secs, amount, expected, cause or None, rid, BILL_CURRENCY,
            centers.get(team), Decimal(0) if storage else secs, secs if storage else Decimal(0),
            None, False))))
    return rows


def other_cost_rows(con, day: date, centers: dict[str, str] | None = None) -> list[dict]:
    """The day's FOCUS charges carried through without a lifecycle (marts.focus_charges not
    reconciled: storage, networking, purchases, credits, taxes): on the bill, so in the costs
    file, as `other_charge` rows no team was charged, one per service (or charge category),
    resource and currency. No seconds: a FOCUS charge without a lifecycle has none."""
    centers = centers or {}
    rows = con.execute(
        "select coalesce(service_name, charge_category), resource_id, billing_currency, "
        "sum(billed_cost) from marts.focus_charges "
        # a usage-only row with no BilledCost is on no bill: no amount to carry (its priced_cost
        # is the rate card's, marts.focus_charges)
        "where day = ? and not reconciled and billed_cost is not null group by all order by all",
        [day]).fetchall()
    return [dict(zip(COSTS_COLUMNS, (day, UNALLOCATED, UNALLOCATED, what, "other_charge",
                                     Decimal(0), _q(amount, MONEY_SCALE), None, None, rid,
                                     currency or BILL_CURRENCY, centers.get(UNALLOCATED),
                                     Decimal(0), Decimal(0), None, False)))
            for what, rid, currency, amount in rows]


def day_cost_rows(con, d: date) -> list[dict]:
    """The rows of costs_<day>.csv, cents included."""
    centers = cost_centers(con)
    rows = with_cents(cost_rows(allocate(con, d, d), centers) + other_cost_rows(con, d, centers))
    priced = {r[0] for r in con.execute(
        "select resource_id from marts.resource_day where day = ? and amount_priced", [d]).fetchall()}
    for r in rows:
        r["amount_priced"] = r["category"] != "other_charge" and r["resource_id"] in priced
    return rows


def finding_rows(con, day: date) -> list[dict]:
    cur = con.execute(f"select {', '.join(FINDINGS_COLUMNS)} from marts.findings where day = ? "
                      "order by amount_at_stake desc, finding_id", [day])
    return [dict(zip(FINDINGS_COLUMNS, r)) for r in cur.fetchall()]


def export_day(con, day: str, out_dir: str | Path) -> list[Path]:
    """Write costs_<day>.csv and findings_<day>.csv."""
    d = parse_day(day)
    costs = safe_target(out_dir, f"costs_{d.isoformat()}.csv")
    findings = safe_target(out_dir, f"findings_{d.isoformat()}.csv")
    return [write_csv(costs, COSTS_SPEC, day_cost_rows(con, d)),
            write_csv(findings, FINDINGS_SPEC, finding_rows(con, d))]
