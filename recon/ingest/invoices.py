"""Invoices as an input: the amounts finance was invoiced, one row per invoice total or line.

Runpod has no invoice API: invoices are monthly per cost center in the console (a preview during
the month, the PDF after it closes, itemized by service), and new spend can take up to 60 minutes
to appear on them. So finance writes (or exports) what the invoice says into a small file, CSV or
JSON, documented in docs/reference.md ("Invoice files"); no PDF is read.

CSV: a header naming at least `invoice_id`, `billing_period_start` and `amount` is an invoice
file (recognised by that content, never by the file's name). One row per amount:

    invoice_id,issuer,billing_period_start,billing_period_end,cost_center,currency,amount,issued_at,service,resource_id,description
    INV-2026-06-research,Runpod,2026-06-01,2026-07-01,research,USD,2.00,2026-06-02T01:00:00Z,pods,,

A row without `service` is the invoice's total; a row with one is a line item (`resource_id`
optional). JSON: an object whose `invoices` is a list of invoices with the same keys and an
optional `lines` list of {service, resource_id, amount, description}; each invoice lands as its
total row (when it has an `amount`) and one row per line.

Each row is checked on its own: a row missing a required value, with an amount that is not a
decimal number, a period bound that is not an ISO 8601 date or UTC date/time, an empty period,
a currency other than the bill's (USD) or an unknown service is quarantined with its line and
the reason, naming what would be accepted; the file's other rows land in `raw.invoice_lines`.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from .focus import csv_rows, parse_focus_datetime

REQUIRED = ("invoice_id", "issuer", "billing_period_start", "billing_period_end", "cost_center",
            "currency", "amount")
OPTIONAL = ("issued_at", "service", "resource_id", "description")
SIGNATURE = {"invoice_id", "billing_period_start", "amount"}
#: The service kinds the tie-out knows (marts.invoice_tieout): the four the bill itemizes
#: (Runpod's /v2/billing/pods split into compute and disk, /v2/billing/serverless,
#: /v2/billing/networkvolumes), the savings-plan purchases of config `[[savings_plans]]`, and
#: credits, which no input of the project carries.
SERVICES = ("pods", "pod_storage", "serverless", "network_volumes", "savings_plans", "credits")
#: Runpod bills in US dollars; the bill the invoice is tied out against is in USD.
CURRENCIES = ("USD",)


def looks_like_invoice_header(first_line: str) -> bool:
    cols = {c.strip().strip('"').lstrip("\ufeff").lower() for c in first_line.split(",")}
    return SIGNATURE <= cols


def is_invoice_document(doc) -> bool:
    """A JSON invoice file: {"invoices": [{"invoice_id": …}, …]}."""
    return (isinstance(doc, dict) and isinstance(doc.get("invoices"), list)
            and any(isinstance(x, dict) and "invoice_id" in x for x in doc["invoices"][:50]))


def check_row(row: dict) -> str | None:
    """Why `row` cannot be loaded, naming what would be accepted; None when it can."""
    missing = [c for c in REQUIRED if not row.get(c)]
    if missing:
        return (f"missing required invoice value(s) {', '.join(missing)} (an invoice row needs "
                f"{', '.join(REQUIRED)})")
    try:
        amount = Decimal(str(row["amount"]).strip())
    except InvalidOperation:
        return (f"amount is not a decimal number: {str(row['amount'])[:40]!r} (write e.g. "
                f"1234.56, a point for decimals, no currency sign or thousands separator)")
    if not amount.is_finite():
        return f"amount is not finite: {row['amount']}"
    bounds = {}
    for c in ("billing_period_start", "billing_period_end", "issued_at"):
        v = row.get(c)
        if c == "issued_at" and not v:
            continue
        d = parse_focus_datetime(str(v))
        if d is None:
            return (f"{c} is not an ISO 8601 date or UTC date/time: {str(v)[:40]!r} (write "
                    f"2026-06-01 or 2026-06-02T01:00:00Z)")
        bounds[c] = d
    if bounds["billing_period_end"] <= bounds["billing_period_start"]:
        return (f"billing_period_end {row['billing_period_end']} is not after "
                f"billing_period_start {row['billing_period_start']} (the period is "
                f"[start, end): a June invoice is 2026-06-01 to 2026-07-01)")
    if str(row["currency"]).strip().upper() not in CURRENCIES:
        return (f"currency {str(row['currency'])[:10]!r} is not the bill's: accepted "
                f"{', '.join(CURRENCIES)} (Runpod bills in US dollars)")
    service = row.get("service")
    if service and str(service).strip().lower() not in SERVICES:
        return (f"service {str(service)[:40]!r} is unknown: accepted {', '.join(SERVICES)}, or "
                f"empty for the invoice's total")
    return None


def _clean(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if k is None:
            continue
        k = str(k).lstrip("\ufeff").strip().lower()
        v = None if v is None else str(v).strip()
        out[k] = v or None
    if out.get("service"):
        out["service"] = out["service"].lower()
    if out.get("currency"):
        out["currency"] = out["currency"].upper()
    return out


def _one(res, locator: str, no: int, row: dict) -> None:
    row = _clean(row)
    why = check_row(row)
    if why:
        res.quarantine(locator, no, why, row)
    else:
        res.try_add("invoice_lines", locator, no, row)


def read_invoice_csv(res, text: str) -> None:
    res.kind = "invoice_csv"
    for line, row in csv_rows(res, text):
        if not any((v or "").strip() for v in row.values()):
            continue  # a blank line a spreadsheet left
        _one(res, f"line {line}", line, row)


def read_invoice_json(res, doc: dict) -> None:
    res.kind = "invoice_json"
    no = 0
    for i, inv in enumerate(doc["invoices"]):
        loc = f"invoices[{i}]"
        no += 1
        if not isinstance(inv, dict):
            res.quarantine(loc, no, "invoice is not a JSON object", inv)
            continue
        head = {k: v for k, v in inv.items() if k != "lines"}
        lines = inv.get("lines")
        if lines is not None and not isinstance(lines, list):
            res.quarantine(loc, no, "lines is not a list of {service, resource_id, amount}", inv)
            continue
        if inv.get("amount") is not None or not lines:
            _one(res, loc, no, {**head, "service": None, "resource_id": None})
        for j, line in enumerate(lines or []):
            no += 1
            if not isinstance(line, dict):
                res.quarantine(f"{loc}.lines[{j}]", no, "line is not a JSON object", line)
                continue
            _one(res, f"{loc}.lines[{j}]", no, {**head, **line})
