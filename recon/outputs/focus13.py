"""FOCUS 1.3 rows from the FOCUS 1.2 rows of :func:`recon.outputs.focus.focus_rows`.

A separate mapping over the 1.2 row dicts, so the 1.2 export (the default) and its rows stay
as they are and a column added to the 1.2 rows flows into the 1.3 file unchanged. Requirement
texts below are FOCUS_Spec's `specification/datasets/cost_and_usage/columns/<column>.md`
(FinOps Foundation, "Introduced (version) 1.3" or "Deprecated (version) 1.3").

What 1.3 changes for this file:

* ServiceProviderName "MUST be present" and "MUST NOT be null" (serviceprovidername.md);
  HostProviderName "MUST be present", may be null only where no infrastructure or no single host
  is involved (a tax), "MUST reflect the name of the host provider when the service provider
  exposes the underlying hosting provider" and "MUST equal ServiceProviderName in all other
  cases" (hostprovidername.md). ProviderName and PublisherName are deprecated but keep their
  requirements ("MUST be present", "MUST NOT be null"; providername.md, publishername.md), so
  they stay. Runpod's rows name Runpod in all four: its bill names no host. A landed FOCUS
  charge keeps its own: the ServiceProviderName and HostProviderName a 1.3 file named
  (marts.focus_charges keeps them); from a 1.2 file, ServiceProviderName is its ProviderName and
  HostProviderName the same (a 1.2 file exposes no host).
* Split cost allocation (attributes/data_generator_calculated_split_cost_allocation_handling.md,
  allocatedmethodid.md, allocatedmethoddetails.md,
  allocatedresourceid.md, allocatedresourcename.md, allocatedtags.md). Runpod's rows are a split:
  the origin charge is one resource's billed category on one day (the 1.2 ChargeDescription
  "<type> <id>: <category> on <day>"), cut by marts.allocation into rows per team × owner ×
  cause. Each such row carries :data:`METHOD_ID` and its share of the origin charge as
  AllocatedMethodDetails ``{"Elements": [{"AllocatedRatio", "UsageUnit", "UsageQuantity"}]}``.
  The money no team was charged (`__idle__`, `__unallocated__`, `__unattributed__`: no Tags,
  no x_Workload in the 1.2 row) is the "unallocated portion of the origin charge", whose
  AllocatedResourceId "MUST be null". A landed FOCUS charge is no split of ours: every
  Allocated* column "MUST be null when a charge is not related to a data generator-calculated
  split cost allocation".
* ContractApplied: "MUST be present ... when the provider supports contract commitments"; no
  charge here is tied to one (Runpod's bill has none; marts.focus_charges keeps no contract), so
  the column is present and null throughout.

The FOCUS version is metadata in FOCUS ("The FocusVersion MUST be provided in the metadata",
specification/metadata/schema/focusversion.md): the Parquet file carries it as key-value
metadata, and both files as the ``x_FocusVersion`` column, since a CSV has no metadata.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, Decimal

from .focus import FOCUS_SPEC, SERVICE

VERSION = "1.3"
#: AllocatedMethodId of Runpod's rows: the rules of marts.allocation (docs/reference.md,
#: "FOCUS 1.3" documents it: "documentation ... MUST reference a single AllocatedMethodId value")
METHOD_ID = "recon-gpu-seconds-share"
#: the FOCUS columns 1.3 adds
ADDED = (
    ("ServiceProviderName", "str"), ("HostProviderName", "str"),
    ("AllocatedMethodId", "str"), ("AllocatedMethodDetails", "str"),
    ("AllocatedResourceId", "str"), ("AllocatedResourceName", "str"), ("AllocatedTags", "str"),
    ("ContractApplied", "str"),
)
#: FOCUS columns first (the 1.2 file's in their order, then 1.3's), then the custom x_ columns
#: in their 1.2 order and x_FocusVersion: "All FOCUS columns SHOULD be first in the provided
#: dataset", "Custom columns SHOULD be listed after all FOCUS columns and SHOULD NOT be
#: intermixed" (Column Handling, attributes/column_naming_and_ordering.md). The 1.2 file keeps
#: its order for readers by position; the 1.3 file has none yet.
FOCUS13_SPEC = (*(c for c in FOCUS_SPEC if not c[0].startswith("x_")), *ADDED,
                *(c for c in FOCUS_SPEC if c[0].startswith("x_")), ("x_FocusVersion", "str"))
FOCUS13_COLUMNS = tuple(c for c, _ in FOCUS13_SPEC)
#: Parquet key-value metadata of a 1.3 file
PARQUET_METADATA = {"FocusVersion": VERSION}
RATIO_PLACES = Decimal("1e-12")


def is_split(r: dict) -> bool:
    """A row of Runpod's bill as marts.allocation split it: a Usage row of a pod, endpoint or
    network volume with an allocation category. A landed FOCUS charge has none (`other_charge`
    or none at all); a savings plan's Purchase and Unused rows (focus_commitments.py) are the
    plan's, of no resource's bill."""
    return (r.get("ChargeCategory") == "Usage" and r.get("x_ResourceKind") in SERVICE
            and r.get("x_Category") not in (None, "other_charge"))


def _origin(r: dict) -> tuple:
    return r["ResourceId"], r["ChargePeriodStart"], r["x_Category"]


def ratios(rows: list[dict]) -> list[Decimal]:
    """Each row's share of the origin charge the rows split, at 12 places, adding up to 1
    exactly ("The sum of ... AllocatedRatio across all allocated charges related to a single
    origin charge MUST be equal to 1"): by BilledCost; by PricingQuantity when the charge bills
    nothing; evenly when it measures nothing. What rounding loses goes to the largest share."""
    for col in ("BilledCost", "PricingQuantity"):
        weights = [Decimal(r[col] or 0) for r in rows]
        total = sum(weights, Decimal(0))
        if total:
            break
    else:
        weights, total = [Decimal(1)] * len(rows), Decimal(len(rows))
    out = [(w / total).quantize(RATIO_PLACES, rounding=ROUND_HALF_EVEN) for w in weights]
    big = max(range(len(out)), key=lambda i: (abs(out[i]), -i))
    out[big] += Decimal(1) - sum(out, Decimal(0))
    return out


def _num(d: Decimal) -> str:
    """A decimal as a JSON number, exactly (json.dumps would go through a float)."""
    s = format(d, "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


def method_details(ratio: Decimal, seconds, category: str) -> str:
    """AllocatedMethodDetails: the AllocatedMethodDetailsObject, one element. UsageUnit is what
    the ratio was measured in (the allocation cuts seconds: GPU-slot-weighted busy seconds, the
    owners' GPU-seconds of a gap, storage by the compute split) and UsageQuantity the row's
    seconds; custom keys are "prefixed with x_" (allocatedmethoddetails.md)."""
    qty = "" if seconds is None else f',"UsageQuantity":{_num(Decimal(seconds))}'
    return (f'{{"Elements":[{{"AllocatedRatio":{_num(ratio)},"UsageUnit":"Seconds"{qty},'
            f'"x_Category":{json.dumps(category)}}}]}}')


def allocated_resource(r: dict) -> tuple[str | None, str | None]:
    """(AllocatedResourceId, AllocatedResourceName) of a split row: the workload the money went
    to, as namespace/workload, or the node whose team label took it; (None, None) for the
    unallocated portion (no team was charged: no x_Workload in the 1.2 row)."""
    wl = r.get("x_Workload")
    if wl is None:
        return None, None
    ns = r.get("x_Namespace")
    return (f"{ns}/{wl}" if ns else f"node/{wl}"), wl


def focus13_rows(rows12: list[dict]) -> list[dict]:
    """The 1.3 rows of the 1.2 rows, in their order; the 1.2 dicts are left as they are."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows12):
        if is_split(r):
            groups.setdefault(_origin(r), []).append(i)
    ratio: dict[int, Decimal] = {}
    for idx in groups.values():
        ratio.update(zip(idx, ratios([rows12[i] for i in idx]), strict=True))
    out = []
    for i, r in enumerate(rows12):
        service = r.get("ServiceProviderName") or r.get("ProviderName")
        row = {**r, "ServiceProviderName": service,
               "HostProviderName": r.get("HostProviderName") or service,
               **dict.fromkeys(("AllocatedMethodId", "AllocatedMethodDetails",
                                "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags",
                                "ContractApplied")),
               "x_FocusVersion": VERSION}
        if i in ratio:
            rid, name = allocated_resource(r)
            row.update({"AllocatedMethodId": METHOD_ID,
                        "AllocatedMethodDetails": method_details(ratio[i], r["PricingQuantity"],
                                                                 r["x_Category"]),
                        "AllocatedResourceId": rid, "AllocatedResourceName": name})
            # the team label is the allocated workload's (or node's) tag, not the billed Runpod
            # resource's: it moves to AllocatedTags ("MUST include all applicable user-defined
            # ... tags for the AllocatedResourceId"; "MUST NOT include resource tags already
            # present in Tags"). Tags is the origin charge's, the same on all its pieces
            # ("FOCUS column values in allocated charges MUST match the corresponding value in
            # the origin charge when the FOCUS column represents a dimension",
            # attributes/data_generator_calculated_split_cost_allocation_handling.md), and
            # Runpod's bill tags no resource.
            row["AllocatedTags"], row["Tags"] = (r.get("Tags") if rid is not None else None), None
        out.append(row)
    return out
