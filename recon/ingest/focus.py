"""FOCUS 1.x cost-and-usage files (CSV or Parquet) as a provider source.

Each row lands whole (every column, as text) in `raw.focus_rows`; a row whose mandatory
columns are missing, whose cost is not a number or whose charge period is not a FOCUS date/time
is quarantined with its line and reason.

A usage-only row (BilledCost empty, as CoreWeave's FOCUS export writes every row: "This release
returns usage quantities only", docs.coreweave.com/billing/focus-export-api) lands when it carries
a usage quantity, ConsumedQuantity or PricingQuantity: the quantity is what the project prices
and reconciles (sql/staging/stg_focus__charges.sql `usage_only`). Without a cost and without a
quantity a row says nothing and is quarantined. Columns are checked by name, so 1.2 and 1.3 (which adds
ServiceProviderName, HostProviderName, ContractApplied, Allocated*) both load; unknown columns
ride along in the JSON.

A null is what the file writes for one: an empty cell, a Parquet null, or the literal `NULL`
(any case), as the FinOps Foundation's FOCUS-Sample-Data writes nulls in its CSV files. It lands
as a JSON null, so a NULL ResourceId is no resource and a NULL quantity is no number.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

REQUIRED = ("ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory")
#: what a row without a BilledCost must carry instead: a usage-only export's quantity
QUANTITY = ("ConsumedQuantity", "PricingQuantity")
NUMERIC = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ConsumedQuantity",
           "PricingQuantity", "ContractedUnitPrice", "ListUnitPrice")
SIGNATURE = {"ChargePeriodStart", "BilledCost"}
#: a usage-only export's header, should it leave the cost columns out instead of empty
USAGE_SIGNATURE = {"ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "PricingQuantity"}
#: The FOCUS Date/Time Format (FOCUS_Spec specification/attributes/datetime_format.md): "values
#: MUST be in UTC", "extended ISO 8601 format with UTC offset ('YYYY-MM-DDTHH:mm:ssZ')". Read as
#: such: a date, or a date and time separated by `T` (or the space SQL exports write), seconds
#: and fractions optional, ending in `Z`, an offset (`+00:00`; another is unambiguous and is
#: converted) or nothing (UTC by that rule). A time may also end in ` UTC`: BigQuery writes a
#: TIMESTAMP so when it extracts a table to CSV ("bq extract outputs TIMESTAMP fields using the
#: 'UTC' suffix instead of 'Z'", bxparks/bigquery-schema-generator#19), which is how Google
#: Cloud's FOCUS export (a BigQuery table) reaches a file. Anything else (a US `4/1/25`, a
#: day-first date, a month name) is quarantined: casting it would guess the year.
#: stg_focus__charges applies the same pattern.
FOCUS_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}| UTC)?"
    r"|(?:Z|[+-]\d{2}:?\d{2})?)")
PERIOD = ("ChargePeriodStart", "ChargePeriodEnd")


def parse_focus_datetime(v: str) -> datetime | None:
    """A FOCUS date/time as an aware UTC datetime, or None when it is not one."""
    v = v.strip()
    if not FOCUS_DATETIME.fullmatch(v):
        return None
    if v.endswith(" UTC"):
        v = v[:-4] + "+00:00"
    try:
        d = datetime.fromisoformat(v.replace(" ", "T", 1).replace("Z", "+00:00"))
    except ValueError:  # 2026-02-30, 25:00
        return None
    if d.tzinfo is None:
        return d.replace(tzinfo=UTC)
    return d


def is_focus_columns(cols) -> bool:
    cols = set(cols)
    return SIGNATURE <= cols or USAGE_SIGNATURE <= cols


def looks_like_focus_header(first_line: str) -> bool:
    return is_focus_columns(c.strip().strip('"').lstrip("\ufeff") for c in first_line.split(","))


def _check(row: dict) -> str | None:
    missing = [c for c in REQUIRED if not row.get(c)]
    if missing:
        return f"missing mandatory FOCUS column value(s) {', '.join(missing)}"
    if not row.get("BilledCost") and not any(row.get(c) for c in QUANTITY):
        return ("no BilledCost and no usage quantity: a FOCUS row needs a BilledCost, or (a "
                "usage-only export that bills no cost) a ConsumedQuantity or PricingQuantity")
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
    start, end = (parse_focus_datetime(row[c]) for c in PERIOD)
    for c, d in zip(PERIOD, (start, end), strict=True):
        if d is None:
            return (f"{c} is not a FOCUS date/time (ISO 8601 in UTC, YYYY-MM-DDTHH:mm:ssZ): "
                    f"{row[c][:40]!r}")
    if end <= start:
        return f"ChargePeriodEnd {row['ChargePeriodEnd']} is not after ChargePeriodStart {row['ChargePeriodStart']}"
    return None


def _null(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, list | dict):
        # a nested Parquet value (Tags is key-value data, FOCUS_Spec columns/tags.md, which a
        # Parquet writer may type as a map, a struct or a list): its JSON, as a CSV export
        # writes it, not Python's repr of it
        return json.dumps(v, default=str, ensure_ascii=False)
    v = str(v)
    return None if v == "" or v.strip().upper() == "NULL" else v


def _clean(row: dict) -> dict:
    return {k.lstrip("\ufeff"): _null(v) for k, v in row.items() if k is not None}


def csv_rows(res, text: str):
    """(line number, row) of a CSV with a header; a row with more cells than the header has
    columns is quarantined here, naming the line and the counts (FOCUS and invoice files)."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    for row in reader:
        line = reader.line_num
        if None in row:  # more cells than header columns
            res.quarantine(f"line {line}", line, f"{len(row[None])} cell(s) beyond the "
                           f"{len(header)} header columns", str(row)[:2000])
            continue
        yield line, row


def read_focus_csv(res, text: str) -> None:
    res.kind = "focus_csv"
    for line, row in csv_rows(res, text):
        row = _clean(row)
        why = _check(row)
        if why:
            res.quarantine(f"line {line}", line, why, row)
        else:
            res.try_add("focus_rows", f"line {line}", line, row)


def read_focus_parquet(res, path) -> bool:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if not is_focus_columns(table.column_names):
        return False
    res.kind = "focus_parquet"
    # pyarrow gives a map's value as a list of (key, value) pairs: a map is a JSON object
    maps = [f.name for f in table.schema if pa.types.is_map(f.type)]
    for i, row in enumerate(table.to_pylist(), start=1):
        for c in maps:
            if row[c] is not None:
                row[c] = dict(row[c])
        row = _clean(row)
        why = _check(row)
        if why:
            res.quarantine(f"row {i}", i, why, row)
        else:
            res.try_add("focus_rows", f"row {i}", i, row)
    return True
