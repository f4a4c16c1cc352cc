"""How a run's results read wherever they are shown: the category labels, money, seconds and table
cells of the terminal (`recon run`'s summary, `recon query`), the daily flow's Prefect artifact
(`flows/summary.py`) and the HTML report (`report.py`). One place, so that the three say the
same thing the same way."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal

CENT = Decimal("0.01")

#: The run summary's categories, in `recon.pipeline.SUMMARY_METRICS`'s order (the rows under
#: billed add up to it): key → (its label in the terminal summary, its label in the artifact).
CATEGORY_LABELS = {
    "billed": ("billed", "Billed"),
    "busy": ("work (busy)", "Busy"),
    "serverless_execution": ("serverless execution", "Serverless execution"),
    "startup": ("startup / cold start", "Startup / cold start"),
    "tail": ("tail after last task", "Tail (billed after exit)"),
    "serverless_idle": ("serverless idle", "Serverless idle"),
    "serverless_rounding": ("serverless rounding", "Serverless rounding"),
    "idle_gap": ("idle, no task running", "Idle: node up, no task running"),
    "unobserved": ("unobserved (no workload)", "Unobserved: billed, no workload seen"),
    "storage_running": ("storage, compute running", "Storage, compute running"),
    "lingering_storage": ("storage, compute stopped", "Lingering storage"),
    "network_volume": ("network volumes", "Network volume"),
}
TERMINAL_LABELS = {key: terminal for key, (terminal, _) in CATEGORY_LABELS.items()}
#: (label, summary key) of the artifact's money table; its test reads these labels back
SUMMARY_ROWS = tuple((artifact, key) for key, (_, artifact) in CATEGORY_LABELS.items())

#: The HTML report's parts of the day's bill: key → (label, colour, marts.billed_segments
#: categories). The network volume category is split: its lingering share (no running pod
#: attached) is storage nobody used.
GROUPS = {
    "work": ("Work (busy + serverless execution)", "#2e7d32", ("busy", "execution")),
    "startup": ("Startup + cold start", "#f9a825", ("startup", "cold_start")),
    "tail": ("Tail after the last task", "#d84315", ("tail",)),
    "storage_unused": ("Storage nobody used", "#7b1fa2",
                       ("storage_lingering", "network_volume (lingering share)")),
    "serverless_idle": ("Serverless idle (+ rounding)", "#00838f", ("idle", "rounding")),
    # the timeline's colours for the same segments (report.SEGMENT_COLOURS)
    "idle_gap": ("Idle: node up, no task running", "#9e9e9e", ("idle_gap",)),
    "unobserved": ("Unobserved: billed, no workload seen", "#6d4c41", ("unobserved",)),
    "storage_in_use": ("Storage in use", "#90caf9",
                       ("storage_running", "network_volume (attached share)")),
    "unsplit": ("Billed but not split into segments", "#000000", ()),
}


def money(v) -> str:
    """USD rounded half-even to the cent, as the report and finance read it."""
    # `+ 0` turns a -0.00 (a negative residue below a cent) into 0.00: finance reads the sign
    return str(Decimal(v or 0).quantize(CENT, rounding=ROUND_HALF_EVEN) + 0)


def usd(v) -> str:
    """USD to the cent as the daily artifact writes it (half-even, a residue keeps its sign)."""
    return str(Decimal(v or 0).quantize(CENT))


def seconds_text(v) -> str:
    """Seconds as a reader takes them: 86,400 for a whole number, 688.588 for a fraction (the
    report, the terminal summary, `recon check` and finding messages alike)."""
    if v is None:
        return ""
    d = Decimal(v)
    return f"{d:,.0f}" if d == d.to_integral_value() else f"{d.normalize():,}"


def cell(v) -> str:
    """A value in a table cell (`recon query`): a decimal in plain digits (str() gives 0E-12 for a
    zero amount and 3.6E-11 for a small one), None as nothing, everything else as str()."""
    if v is None:
        return ""
    if isinstance(v, Decimal):
        return format(v, "f")
    return str(v)


def utc_cell(v) -> str:
    """`cell`, with a timestamp as ISO 8601 in UTC with a Z (the daily artifact and the flows'
    tables, read by people in every time zone)."""
    if isinstance(v, datetime):
        return v.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return cell(v)
