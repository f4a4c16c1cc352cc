"""FOCUS 1.x cost-and-usage files (CSV or Parquet) as a provider source.

Each row lands whole (every column, as text) in `raw.focus_rows`; a row whose mandatory
columns are missing or whose cost is not a number is quarantined with its line and reason.
Columns are checked by name, so 1.2 and 1.3 (which adds ServiceProviderName, HostProviderName,
ContractApplied, Allocated*) both load; unknown columns ride along in the JSON.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal, InvalidOperation

REQUIRED = ("ChargePeriodStart", "ChargePeriodEnd", "BilledCost", "ChargeCategory")
NUMERIC = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ConsumedQuantity",
           "PricingQuantity", "ContractedUnitPrice", "ListUnitPrice")
SIGNATURE = {"ChargePeriodStart", "BilledCost"}


def looks_like_focus_header(first_line: str) -> bool:
    cols = {c.strip().strip('"').lstrip("\ufeff") for c in first_line.split(",")}
    return SIGNATURE <= cols


def _check(row: dict) -> str | None:
    missing = [c for c in REQUIRED if not row.get(c)]
    if missing:
        return f"missing mandatory FOCUS column value(s) {', '.join(missing)}"
    for c in NUMERIC:
        v = row.get(c)
        if v in (None, ""):
            continue
        try:
            d = Decimal(str(v))
        except InvalidOperation:
            return f"{c} is not a number: {str(v)[:40]!r}"
        if not d.is_finite():
            return f"{c} is not finite: {v}"
    return None


def _clean(row: dict) -> dict:
    return {k.lstrip("\ufeff"): (None if v in ("", None) else str(v)) for k, v in row.items()
            if k is not None}


def read_focus_csv(res, text: str) -> None:
    res.kind = "focus_csv"
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    for row in reader:
        line = reader.line_num
        if None in row:  # more cells than header columns
            res.quarantine(f"line {line}", line, f"{len(row[None])} cell(s) beyond the "
                           f"{len(header)} header columns", str(row)[:2000])
            continue
        row = _clean(row)
        why = _check(row)
        if why:
            res.quarantine(f"line {line}", line, why, row)
        else:
            res.try_add("focus_rows", f"line {line}", line, row)


def read_focus_parquet(res, path) -> bool:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if not SIGNATURE <= set(table.column_names):
        return False
    res.kind = "focus_parquet"
    for i, row in enumerate(table.to_pylist(), start=1):
        row = _clean(row)
        why = _check(row)
        if why:
            res.quarantine(f"row {i}", i, why, row)
        else:
            res.try_add("focus_rows", f"row {i}", i, row)
    return True
