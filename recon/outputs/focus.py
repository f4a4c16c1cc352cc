"""The FOCUS 1.2 cost-and-usage export: ``focus_<YYYY-MM>.csv`` and ``.parquet``.

Runpod's bill: one row per resource × day × charge category × team × owner × waste cause
(:data:`FOCUS_COLUMNS`) of the month's reconciled bill; the team is the row's FOCUS ``Tags``
(``{"team": …}``), the owner and cause its ``x_`` columns; its ``BilledCost`` ties to
``marts.resource_day`` the same way the costs file does, since both read the shares of
``marts.allocation`` (:func:`recon.outputs.exports.allocate`).

A landed FOCUS file's charges (``marts.focus_charges``): one row per charge and UTC day, as the
file named it (provider, account, service, SKU, resource id, units, quantities, costs), with the
``x_`` columns of its resource-day where it is instance compute. A file exported so lands again
as the same marts: its pieces lie within one day, so splitting them again changes nothing. The files follow
the CSV and Parquet rules of :mod:`recon.outputs.exports` and are written with its atomic writers.
A month's export also writes the daily costs and findings CSVs of every day with data.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

from . import focus_commitments
from .exports import (
    allocate,
    cost_centers,
    export_day,
    parse_month,
    safe_target,
    write_csv,
    write_parquet,
)

# (name, kind): the cell kinds of exports.py (str | money | seconds | ts | period | date | bool)
FOCUS_SPEC = (
    ("BillingAccountId", "str"), ("BillingAccountName", "str"), ("BillingCurrency", "str"),
    ("BillingPeriodStart", "period"), ("BillingPeriodEnd", "period"),
    ("ChargePeriodStart", "period"), ("ChargePeriodEnd", "period"),
    ("ChargeCategory", "str"), ("ChargeClass", "str"), ("ChargeDescription", "str"),
    ("ChargeFrequency", "str"),
    ("BilledCost", "money"), ("EffectiveCost", "money"), ("ListCost", "money"),
    ("ContractedCost", "money"),
    ("PricingQuantity", "quantity"), ("PricingUnit", "str"),
    ("ConsumedQuantity", "quantity"), ("ConsumedUnit", "str"),
    ("ServiceName", "str"), ("ServiceCategory", "str"), ("ServiceSubcategory", "str"),
    ("ProviderName", "str"), ("PublisherName", "str"), ("InvoiceIssuerName", "str"),
    ("InvoiceId", "str"),
    ("ResourceId", "str"), ("ResourceName", "str"), ("ResourceType", "str"), ("Tags", "str"),
    ("x_ResourceKind", "str"), ("x_Category", "str"), ("x_ExpectedCost", "money"),
    ("x_BilledSeconds", "seconds"), ("x_TaskFinishedAt", "ts"), ("x_ComputeStoppedAt", "ts"),
    ("x_BilledAfterExitSeconds", "seconds"), ("x_LingeringStorageSeconds", "seconds"),
    ("x_ServerlessIdleSeconds", "seconds"), ("x_FindingCodes", "str"),
    ("x_SecondsDerived", "bool"), ("x_RateMissing", "bool"),
    # who the row's money went to (marts.allocation) and, for money that was not work, why
    ("x_Namespace", "str"), ("x_Workload", "str"), ("x_OwnerKind", "str"), ("x_OwnerName", "str"),
    ("x_WasteCause", "str"),
    # appended, so a reader by position keeps its columns: what a landed FOCUS row names (empty
    # on Runpod's rows)
    ("SkuId", "str"), ("SkuPriceId", "str"), ("SubAccountId", "str"), ("RegionId", "str"),
    ("CommitmentDiscountId", "str"), ("CommitmentDiscountStatus", "str"),
    ("ContractedUnitPrice", "money"), ("ListUnitPrice", "money"),
    # appended for the same reason: a savings plan's commitment columns (focus_commitments.py)
    ("CommitmentDiscountCategory", "str"), ("CommitmentDiscountName", "str"),
    ("CommitmentDiscountType", "str"), ("CommitmentDiscountQuantity", "quantity"),
    ("CommitmentDiscountUnit", "str"),
    # FOCUS 1.2 asks for both where a provider has unit prices; null while SkuId is (Runpod's bill
    # names no SKU ids, and a landed FOCUS file's are not kept)
    ("SkuMeter", "str"), ("SkuPriceDetails", "str"),
    # the team's cost center (`[mapping] cost_centers`, as in the costs file); empty without one
    ("x_CostCenter", "str"),
)
#: Stable column order of the FOCUS files.
FOCUS_COLUMNS = tuple(c for c, _ in FOCUS_SPEC)
#: FOCUS 1.2 mandatory columns (all present in FOCUS_COLUMNS).
FOCUS_MANDATORY = (
    "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingAccountId",
    "BillingAccountName", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
    "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodStart", "ChargePeriodEnd",
    "PricingQuantity", "PricingUnit", "ServiceName", "ServiceCategory", "ProviderName",
    "PublisherName", "InvoiceIssuerName",
)


SERVICE = {  # resource_kind → (ServiceName, ResourceType, ServiceSubcategory)
    "instance": ("Runpod Pods", "Pod", "Virtual Machines"),
    "serverless": ("Runpod Serverless", "Serverless Endpoint", "Serverless Compute"),
    "network_volume": ("Runpod Network Volumes", "Network Volume", "File Storage"),
}
STORAGE_CATEGORIES = {"storage_running": "Block Storage", "storage_lingering": "Block Storage",
                      "network_volume": "File Storage"}


# the invoice service (recon/ingest/invoices.py SERVICES) a row of Runpod's bill is itemized under
def _invoice_service(kind: str, storage: bool) -> str:
    if kind == "instance":
        return "pod_storage" if storage else "pods"
    return {"serverless": "serverless", "network_volume": "network_volumes"}.get(kind, kind)


def invoices_of(con, start: date, nxt: date) -> list[tuple]:
    """The invoices (marts.invoice_tieout) whose billing period overlaps [start, nxt): (period
    start, period end, service, resource ids or None for the account, invoice id), by id."""
    try:
        rows = con.execute(
            "select period_start, period_end, service, scope, invoice_id from marts.invoice_tieout "
            "where period_start < ? and period_end > ? order by invoice_id, service",
            [_midnight(nxt), _midnight(start)]).fetchall()
    except Exception:  # noqa: BLE001 - a warehouse built before invoices were an input has none
        return []
    return [(ps, pe, svc, None if covers == "account" else set(covers.split(",")), iid)
            for ps, pe, svc, covers, iid in rows]


def invoice_id(invoices: list[tuple], rid: str, day: date, service: str) -> str | None:
    """FOCUS InvoiceId of a charge of `rid` on `day`: the invoice whose billing period holds the
    charge period [day, day + 1) and whose line of that service (or total) covers the resource;
    the first by id when several do (cost-center assignment is the console's, not the project's).
    None before the period is invoiced: FOCUS InvoiceId "MUST NOT be null when the charge is
    associated with an issued or provisional invoice" (FOCUS 1.2, columns/invoiceid.md), and may
    be null until then."""
    lo, hi = _midnight(day), _midnight(day + timedelta(days=1))
    for ps, pe, svc, covers, iid in invoices:
        if ps <= lo and hi <= pe and svc in (service, "total") and (covers is None or rid in covers):
            return iid
    return None


#: the rows that split a resource-day's billed compute (marts.allocation's categories): the rows
#: its list amount (marts.list_cost) is apportioned to, by their seconds
COMPUTE_CATEGORIES = {"instance": {"startup", "busy", "idle_gap", "tail", "unobserved"},
                      "serverless": {"cold_start", "execution", "idle", "rounding", "unobserved"}}
#: ListUnitPrice's places: a row's seconds have 3 (exports.SECONDS_SCALE), so the unit price ×
#: PricingQuantity is exact at the file's 12 (exports.MONEY_SCALE), as FOCUS 1.2 requires of
#: ListCost = ListUnitPrice × PricingQuantity (columns/listunitprice.md, listcost.md)
LIST_UNIT_PLACES = Decimal("1e-9")


def list_unit_prices(con, start: date, nxt: date) -> dict[tuple, Decimal]:
    """(resource id, day) → Runpod's list USD per billed second of its compute: the day's list
    amount (marts.list_cost, the catalog's USD per GPU-hour × GPUs × hours) ÷ its priced seconds,
    rounded half-even to 9 places (a price per hour ÷ 3600 seldom ends: $4.98/h is
    $0.0013833…/s). Resource-days whose list amount is unknown are absent."""
    try:
        rows = con.execute(
            "select resource_id, day, list_amount, priced_seconds from marts.list_cost "
            "where day >= ? and day < ? and resource_kind in ('instance', 'serverless') "
            "and list_amount is not null and priced_seconds > 0", [start, nxt]).fetchall()
    except Exception:  # noqa: BLE001 - a warehouse built before list prices were an input has none
        return {}
    return {(rid, day): (amount / secs).quantize(LIST_UNIT_PLACES, rounding=ROUND_HALF_EVEN)
            for rid, day, amount, secs in rows}


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def focus_rows(con, month: date, account_id: str = "runpod",
               account_name: str = "Runpod account") -> list[dict]:
    """FOCUS 1.2 rows for one month: resource × day × category × team × owner × cause of the
    reconciled bill (the rows of marts.allocation summed over its namespaces' workloads)."""
    start = month.replace(day=1)
    nxt = (start + timedelta(days=32)).replace(day=1)
    shares = allocate(con, start, nxt - timedelta(days=1))
    rd = {(r[0], r[1]): r[2:] for r in con.execute(
        "select resource_id, day, billed_seconds, task_finished_at, compute_stopped_at, "
        "seconds_derived, rate_missing, resource_name from marts.resource_day "
        "where day >= ? and day < ?",
        [start, nxt]).fetchall()}
    codes = {(r, d): c for r, d, c in con.execute(
        "select resource_id, day, string_agg(distinct code, ';' order by code) "
        "from marts.findings where day >= ? and day < ? group by all", [start, nxt]).fetchall()}
    # resources a landed FOCUS file bills are exported from its own charges (focus_charge_rows)
    from_focus = {r[0] for r in con.execute(
        "select distinct resource_id from marts.focus_charges where day >= ? and day < ? "
        "and reconciled", [start, nxt]).fetchall()}
    invoices = invoices_of(con, start, nxt)
    centers = cost_centers(con)
    list_units = list_unit_prices(con, start, nxt)
    # what every row of Runpod's bill (and of a savings plan) says alike; the columns only a
    # landed FOCUS row or a savings plan names stay null
    base = {**dict.fromkeys(FOCUS_COLUMNS),
            "BillingAccountId": account_id, "BillingAccountName": account_name,
            "BillingCurrency": "USD", "BillingPeriodStart": _midnight(start),
            "BillingPeriodEnd": _midnight(nxt), "ProviderName": "Runpod",
            "PublisherName": "Runpod", "InvoiceIssuerName": "Runpod"}
    acc: dict[tuple, list] = {}
    for s in shares:
        if s.resource_id in from_focus:
            continue
        a = acc.setdefault((s.resource_id, s.day, s.category, s.resource_kind, s.team, s.namespace,
                            s.workload, s.owner_kind or "", s.owner_name or "", s.cause or ""),
                           [Decimal(0), Decimal(0), None])
        a[0] += s.seconds
        a[1] += s.amount
        if s.expected is not None:
            a[2] = (a[2] or Decimal(0)) + s.expected
    rows = []
    for (rid, day, cat, kind, team, ns, wl, okind, oname, cause), (secs, amount, expected) in sorted(acc.items()):
        billed_secs, finished, stopped, derived, missing, name = rd.get((rid, day), (None,) * 6)
        service, rtype, sub = SERVICE.get(kind, ("Runpod", kind, "Other (Compute)"))
        storage = cat in STORAGE_CATEGORIES
        if kind == "instance" and storage:  # FOCUS: one ServiceCategory per ServiceName
            service = "Runpod Pod Storage"
        contracted = expected if expected is not None else amount
        # Runpod's list price where the catalog gives one (its compute rows), else no discount
        unit = list_units.get((rid, day)) if cat in COMPUTE_CATEGORIES.get(kind, ()) else None
        # a network volume's lingering share is its own row (cause network_volume_unused)
        lingering = secs if cause in ("storage_lingering", "network_volume_unused") else None
        rows.append({
            **base,
            "ChargePeriodStart": _midnight(day), "ChargePeriodEnd": _midnight(day + timedelta(1)),
            "ChargeCategory": "Usage", "ChargeClass": None,
            "ChargeDescription": f"{rtype} {rid}: {cat.replace('_', ' ')} on {day.isoformat()}",
            "ChargeFrequency": "Usage-Based",
            "BilledCost": amount, "EffectiveCost": amount,
            "ListCost": contracted if unit is None else unit * secs, "ListUnitPrice": unit,
            "ContractedCost": contracted,
            "PricingQuantity": secs, "PricingUnit": "Seconds",
            "ConsumedQuantity": secs, "ConsumedUnit": "Seconds",
            "ServiceName": service, "ServiceCategory": "Storage" if storage else "Compute",
            "ServiceSubcategory": STORAGE_CATEGORIES.get(cat, sub) if storage else sub,
            "InvoiceId": invoice_id(invoices, rid, day, _invoice_service(kind, storage)),
            # FOCUS ResourceName "MUST NOT duplicate ResourceId": the inventory's display name,
            # null when no snapshot gave one or the name is the id itself
            "ResourceId": rid, "ResourceName": None if name == rid else name, "ResourceType": rtype,
            # the team is a user-defined tag (the workload's or node's team label); a marker
            # (__idle__, __unallocated__) is no tag: no team was charged
            "Tags": None if team.startswith("__") else json.dumps({"team": team}, ensure_ascii=False),
            "x_ResourceKind": kind, "x_Category": cat, "x_ExpectedCost": expected,
            "x_BilledSeconds": billed_secs, "x_TaskFinishedAt": finished,
            "x_ComputeStoppedAt": stopped,
            "x_BilledAfterExitSeconds": secs if cat == "tail" else None,
            "x_LingeringStorageSeconds": lingering,
            "x_ServerlessIdleSeconds": secs if kind == "serverless" and cat == "idle" else None,
            "x_FindingCodes": codes.get((rid, day)),
            "x_SecondsDerived": derived, "x_RateMissing": missing,
            "x_Namespace": None if ns.startswith("__") else ns,
            "x_Workload": None if team.startswith("__") else wl,
            "x_OwnerKind": okind or None, "x_OwnerName": oname or None,
            "x_WasteCause": cause or None,
            "x_CostCenter": centers.get(team),
        })
    plans = focus_commitments.apply(con, rows, start, nxt, base,
                                    lambda rid, day, svc: invoice_id(invoices, rid, day, svc))
    return rows + plans + focus_charge_rows(con, start, nxt, rd, codes)


FOCUS_CHARGE_COLUMNS = (
    # (FOCUS column, marts.focus_charges column)
    ("BillingAccountId", "billing_account_id"), ("BillingAccountName", "billing_account_name"),
    ("BillingCurrency", "billing_currency"), ("ChargePeriodStart", "charge_period_start"),
    ("ChargePeriodEnd", "charge_period_end"), ("ChargeCategory", "charge_category"),
    ("ChargeClass", "charge_class"), ("ChargeDescription", "charge_description"),
    ("ChargeFrequency", "charge_frequency"), ("BilledCost", "billed_cost"),
    ("EffectiveCost", "effective_cost"), ("ListCost", "list_cost"),
    ("ContractedCost", "contracted_cost"), ("PricingQuantity", "pricing_quantity"),
    ("PricingUnit", "pricing_unit"), ("ConsumedQuantity", "consumed_quantity"),
    ("ConsumedUnit", "consumed_unit"), ("ServiceName", "service_name"),
    ("ServiceCategory", "service_category"), ("ServiceSubcategory", "service_subcategory"),
    ("ProviderName", "provider_name"), ("PublisherName", "publisher_name"),
    # FOCUS 1.3's (recon/outputs/focus13.py writes them; not FOCUS 1.2 columns)
    ("ServiceProviderName", "service_provider_name"), ("HostProviderName", "host_provider_name"),
    ("InvoiceIssuerName", "invoice_issuer_name"), ("InvoiceId", "invoice_id"),
    ("ResourceId", "focus_resource_id"), ("ResourceName", "resource_name"),
    ("ResourceType", "resource_type"), ("SkuId", "sku_id"), ("SkuPriceId", "sku_price_id"),
    ("SubAccountId", "sub_account_id"), ("RegionId", "region_id"),
    ("CommitmentDiscountId", "commitment_discount_id"),
    ("CommitmentDiscountStatus", "commitment_discount_status"),
    ("ContractedUnitPrice", "contracted_unit_price"), ("ListUnitPrice", "list_unit_price"),
    ("CommitmentDiscountCategory", "commitment_discount_category"),
    ("CommitmentDiscountName", "commitment_discount_name"),
    ("CommitmentDiscountType", "commitment_discount_type"),
    ("CommitmentDiscountQuantity", "commitment_discount_quantity"),
    ("CommitmentDiscountUnit", "commitment_discount_unit"), ("SkuMeter", "sku_meter"),
    ("SkuPriceDetails", "sku_price_details"),
)


def focus_charge_rows(con, start: date, nxt: date, rd: dict, codes: dict) -> list[dict]:
    """The month's landed FOCUS charges (marts.focus_charges) as they were named, one row per
    charge and day; instance compute carries its resource-day's x_ columns."""
    # a warehouse built before the mart kept FOCUS 1.3's provider names has none: NULL, as a
    # 1.2 file's rows have
    have = {r[0] for r in con.execute(
        "select column_name from information_schema.columns "
        "where table_schema = 'marts' and table_name = 'focus_charges'").fetchall()}
    cols = ", ".join(c if c in have else f"null as {c}" for _, c in FOCUS_CHARGE_COLUMNS)
    cur = con.execute(f"select resource_id, day, reconciled, {cols} from marts.focus_charges "
                      "where day >= ? and day < ? order by all", [start, nxt])
    rows = []
    for rid, day, reconciled, *vals in cur.fetchall():
        r = dict.fromkeys(FOCUS_COLUMNS)
        r.update(zip((f for f, _ in FOCUS_CHARGE_COLUMNS), vals, strict=True))
        r["BillingPeriodStart"], r["BillingPeriodEnd"] = _midnight(start), _midnight(nxt)
        if reconciled:
            billed_secs, finished, stopped, derived, missing, _name = rd.get((rid, day), (None,) * 6)
            r.update({"x_ResourceKind": "instance", "x_BilledSeconds": billed_secs,
                      "x_TaskFinishedAt": finished, "x_ComputeStoppedAt": stopped,
                      "x_FindingCodes": codes.get((rid, day)), "x_SecondsDerived": derived,
                      "x_RateMissing": missing})
        else:
            r["x_Category"] = "other_charge"
        rows.append(r)
    return rows


FOCUS_VERSIONS = ("1.2", "1.3")


def export_month(con, month: str, out_dir: str | Path, account_id: str = "runpod",
                 account_name: str = "Runpod account", focus_version: str = "1.2") -> list[Path]:
    """Daily costs/findings for every day of the month with data, plus focus_<month>.csv/.parquet
    in FOCUS `focus_version` (1.3: :mod:`recon.outputs.focus13` maps the 1.2 rows)."""
    if focus_version not in FOCUS_VERSIONS:
        raise ValueError(f"FOCUS version {focus_version!r}: expected one of {', '.join(FOCUS_VERSIONS)}")
    m = parse_month(month)
    csv_t = safe_target(out_dir, f"focus_{month}.csv")
    pq_t = safe_target(out_dir, f"focus_{month}.parquet")
    nxt = (m + timedelta(days=32)).replace(day=1)
    days = [r[0] for r in con.execute(
        "select distinct day from (select day from marts.resource_day union all "
        "select day from marts.focus_charges) where day >= ? and day < ? order by 1",
        [m, nxt]).fetchall()]
    paths = []
    for d in days:
        paths += export_day(con, d.isoformat(), out_dir)
    rows, spec, meta = focus_rows(con, m, account_id, account_name), FOCUS_SPEC, None
    if focus_version == "1.3":
        from . import focus13

        rows, spec, meta = focus13.focus13_rows(rows), focus13.FOCUS13_SPEC, focus13.PARQUET_METADATA
    paths += [write_csv(csv_t, spec, rows), write_parquet(pq_t, spec, rows, meta)]
    return paths
