"""Savings plans in the FOCUS export: the upfront purchase, its amortised share on the usage it
covered, and the share nothing used (FOCUS 1.2 attributes/discount_handling.md).

A Runpod savings plan is an upfront payment for a 3- or 6-month term on a number of GPUs of one
type (``[[savings_plans]]`` in the configuration); during the term its pods bill at the plan's
hourly rate. In FOCUS terms the upfront is a commitment discount:

* **Purchase** — one row on the plan's first day, in the month it starts: ``ChargeCategory``
  ``Purchase``, ``ChargeFrequency`` ``One-Time``, ``BilledCost`` the upfront and
  ``EffectiveCost`` 0 ("EffectiveCost MUST be 0 when ChargeCategory is Purchase and the purchase
  is intended to cover future eligible charges"), ``ResourceId`` = ``CommitmentDiscountId`` =
  ``plan:<id>`` (the id findings and the invoice tie-out use), ``CommitmentDiscountQuantity``
  the GPU-hours of the whole term.
* **Amortisation** — "Purchased discounts MUST be amortized": the upfront is spread over the
  term's days in equal shares, rounded on the cumulative sum (:func:`daily_shares`), so the
  shares of the term add up to the upfront to the last decimal.
* **Used** — on a day with data, the pods the plan covered (``marts.rates.savings_plan_id``)
  take the share of that day in proportion to the plan's capacity they used (GPU-seconds of
  their compute rows ÷ plan GPUs × 86,400 s, at most all of it), split among their rows by
  GPU-seconds: each row's ``EffectiveCost`` is its ``BilledCost`` (the plan's hourly rate) plus
  its piece, and it carries ``CommitmentDiscountStatus`` ``Used`` with its GPU-hours.
* **Unused** — the rest of the day's share is one ``Usage`` row with ``CommitmentDiscountStatus``
  ``Unused``, ``BilledCost`` 0 and ``EffectiveCost`` that rest ("If a commitment is not fully
  utilized, the provider MUST include a row that represents the unused portion").

Only days the warehouse has a bill for get Used or Unused rows: on a day without data the plan's
usage is unknown, and saying it was unused would be a guess. So over a whole term with data every
day, Used pieces plus Unused rows add up to the upfront; the invoice sees the purchase once, in
its month (``marts.invoice_tieout`` service ``savings_plans``).
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

SCALE = Decimal("0.000000000001")  # the marts' 12 decimals
UNIT = "GPU-Hours"  # FOCUS UnitFormat "<units>-<time unit>", as GB-Hours
PLAN_TYPE = "Savings Plan"
STORAGE = {"storage_running", "storage_lingering", "network_volume"}


def _q(v: Decimal) -> Decimal:
    return v.quantize(SCALE, rounding=ROUND_HALF_EVEN)


def daily_shares(upfront: Decimal, start: date, end: date) -> dict[date, Decimal]:
    """The upfront spread over the days of [start, end) in equal shares (:func:`apportion` by
    equal weights), so the shares sum to the upfront exactly (no remainder dropped or doubled)."""
    n = (end - start).days
    return {start + timedelta(days=i): v
            for i, v in enumerate(apportion(upfront, [Decimal(1)] * n))}


def apportion(total: Decimal, weights: list[Decimal]) -> list[Decimal]:
    """`total` split by `weights` on the cumulative sum, rounded to 12 decimals: the pieces add up
    to `total` exactly."""
    whole = sum(weights)
    if not weights or whole == 0:
        return [Decimal(0)] * len(weights)
    out, run, before = [], Decimal(0), Decimal(0)
    for w in weights:
        run += w
        after = _q(total * run / whole)
        out.append(after - before)
        before = after
    return out


def _plans(con) -> list[tuple]:
    try:
        return con.execute("select plan_id, gpu_type, gpu_count, usd_per_gpu_hour, start_day, "
                           "end_day, upfront_usd from config.savings_plans order by plan_id").fetchall()
    except Exception:  # noqa: BLE001 - a warehouse built before plans were configurable has none
        return []


def apply(con, rows: list[dict], start: date, nxt: date, base: dict, invoice_of) -> list[dict]:
    """Mark the month's `rows` (FOCUS dicts of focus_rows) a plan covered as Used, adding the
    amortised upfront to their EffectiveCost, and return the Purchase and Unused rows to add.

    `base` holds the columns every Runpod row shares (account, currency, billing period, provider
    names); `invoice_of(resource_id, day, service)` gives a charge's InvoiceId."""
    plans = _plans(con)
    if not plans:
        return []
    covered = {(r, d): (p, g) for r, d, p, g in con.execute(
        "select resource_id, day, savings_plan_id, gpu_count from marts.rates "
        "where day >= ? and day < ? and savings_plan_id is not null", [start, nxt]).fetchall()}
    data_days = {r[0] for r in con.execute(
        "select distinct day from marts.resource_day where day >= ? and day < ?",
        [start, nxt]).fetchall()}
    used: dict[tuple[str, date], list[tuple[dict, Decimal]]] = {}
    for r in rows:
        day = r["ChargePeriodStart"].date()
        hit = covered.get((r["ResourceId"], day))
        if hit is None or r["ChargeCategory"] != "Usage" or r.get("x_Category") in STORAGE:
            continue
        plan_id, gpus = hit
        used.setdefault((plan_id, day), []).append((r, Decimal(r["PricingQuantity"]) * (gpus or 1)))
    out = []
    for plan_id, gpu_type, gpu_count, _rate, p_start, p_end, upfront in plans:
        rid = f"plan:{plan_id}"
        term_hours = Decimal(gpu_count * (p_end - p_start).days * 24)
        about = {
            **base, "ResourceId": rid, "ResourceName": plan_id, "ResourceType": PLAN_TYPE,
            "ServiceName": "Runpod Pods", "ServiceCategory": "Compute",
            "ServiceSubcategory": "Virtual Machines",
            "CommitmentDiscountId": rid, "CommitmentDiscountName": plan_id,
            "CommitmentDiscountCategory": "Usage", "CommitmentDiscountType": PLAN_TYPE,
            "CommitmentDiscountUnit": UNIT, "x_ResourceKind": "savings_plan",
        }
        what = f"{gpu_count} x {gpu_type} from {p_start} to {p_end}"  # ChargeDescription: ASCII only
        if start <= p_start < nxt:
            out.append({
                **about, **_period(p_start), "ChargeCategory": "Purchase",
                "ChargeFrequency": "One-Time",
                "ChargeDescription": f"Savings plan {plan_id}: {what}, paid up front",
                "BilledCost": upfront, "EffectiveCost": Decimal(0), "ListCost": upfront,
                "ContractedCost": upfront, "PricingQuantity": term_hours, "PricingUnit": UNIT,
                "CommitmentDiscountQuantity": term_hours,
                "InvoiceId": invoice_of(rid, p_start, "savings_plans"),
                "x_Category": "savings_plan_purchase",
            })
        capacity = Decimal(gpu_count * 86400)
        for day, share in daily_shares(upfront, p_start, p_end).items():
            if not (start <= day < nxt) or day not in data_days:
                continue
            mine = used.get((plan_id, day), [])
            gpu_secs = sum((w for _, w in mine), Decimal(0))
            used_share = _q(share * min(gpu_secs, capacity) / capacity)
            for (r, w), piece in zip(mine, apportion(used_share, [w for _, w in mine]), strict=True):
                r.update({k: about[k] for k in ("CommitmentDiscountId", "CommitmentDiscountName",
                                                "CommitmentDiscountCategory",
                                                "CommitmentDiscountType", "CommitmentDiscountUnit")})
                r["CommitmentDiscountStatus"] = "Used"
                r["CommitmentDiscountQuantity"] = _q(w / 3600)
                r["EffectiveCost"] = r["BilledCost"] + piece
            if share == used_share:
                continue
            left = _q((capacity - min(gpu_secs, capacity)) / 3600)
            out.append({
                **about, **_period(day), "ChargeCategory": "Usage",
                "ChargeFrequency": "Usage-Based",
                "ChargeDescription": (f"Savings plan {plan_id}: {what}, unused share of "
                                      f"{day.isoformat()} ({left} of {gpu_count * 24} GPU-hours)"),
                "BilledCost": Decimal(0), "EffectiveCost": share - used_share,
                "ListCost": Decimal(0), "ContractedCost": Decimal(0),
                "PricingQuantity": left, "PricingUnit": UNIT,
                "CommitmentDiscountStatus": "Unused", "CommitmentDiscountQuantity": left,
                "InvoiceId": invoice_of(rid, day, "savings_plans"),
                "x_Category": "savings_plan_unused", "x_WasteCause": "savings_plan_unused",
            })
    return out


def _period(day: date) -> dict:
    from .focus import _midnight

    return {"ChargePeriodStart": _midnight(day), "ChargePeriodEnd": _midnight(day + timedelta(days=1))}
