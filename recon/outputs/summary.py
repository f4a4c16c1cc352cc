"""The run summary `recon run` and `recon demo` print (money by category with its seconds, the
findings and money at stake per day, what landing quarantined, left settling or warned of), and
the terminal it is printed on: standard output, and standard error for what needs a look."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..guard import visible  # data's control characters shown, not acted on by the terminal
from .present import TERMINAL_LABELS, seconds_text

console = Console()
err = Console(stderr=True, soft_wrap=True)


def shown(text) -> str:
    """Text from data or a file name inside a rich markup string: neither its brackets read as
    markup nor its control characters acted on."""
    return escape(visible(text, keep_newlines=False))


def print_summary(res) -> None:
    from ..pipeline import SUMMARY_METRICS

    if not res.days:
        console.print("Reconciliation summary: no day with a billed or active resource.")
    t = Table(title="Reconciliation summary: USD (seconds)", title_justify="left",
              caption="The rows under billed add up to it; each is rounded to the cent on its "
                      "own, so their shown sum may differ by a few cents. Storage seconds run "
                      "beside compute seconds: billed seconds count compute only. Money at "
                      "stake outside the bill: unused savings-plan upfront, work the bill "
                      "has no line for, a balance's shortfall, what whole-GPU pricing of a "
                      "shared GPU would overcharge.",
              caption_justify="left")
    t.add_column("", overflow="fold")
    for d in res.days:
        t.add_column(str(d["day"]), justify="right", overflow="fold")
    for m in SUMMARY_METRICS:
        t.add_row(TERMINAL_LABELS[m], *[f"{d[m]} ({seconds_text(d[m + '_seconds'])} s)" for d in res.days])
    if any(d["other_charges"] for d in res.days):
        # FOCUS charges without a lifecycle: on the bill, in no segment above
        t.add_row("other charges (FOCUS, carried through)", *[str(d["other_charges"]) for d in res.days])
        t.add_row("bill total", *[str(d["bill_total"]) for d in res.days])
    t.add_row("findings", *[str(d["findings"]) for d in res.days])
    t.add_row("money at stake", *[str(d["at_stake"]) for d in res.days])
    t.add_row("  of it outside the bill", *[str(d["at_stake_outside_bill"]) for d in res.days])
    if res.days:
        console.print(t)
    if res.empty_days:
        span = (f"the landed bills cover {res.billed_span[0]}..{res.billed_span[1]}"
                if res.billed_span else "no bill was landed")
        days = ", ".join(str(d) for d in res.empty_days[:5]) + (
            f" and {len(res.empty_days) - 5} more" if len(res.empty_days) > 5 else "")
        err.print(f"[yellow]no billed or active resource on {days} ({span}): are --from/--to "
                  f"right, and is the landing area complete for those days?[/yellow]")
    console.print(
        f"Input: {len(res.files)} files, {res.records_in} records: {res.loaded} loaded, "
        f"{res.quarantined} quarantined at load, {res.staging_quarantined} quarantined in staging, "
        f"{res.skipped} skipped (not billing data)."
    )
    for f in res.files:
        staged = res.staging_quarantined_by_file.get(str(f.path), 0)
        if f.quarantined or staged:
            parts = ([f"{f.quarantined} at load"] if f.quarantined else []) + (
                [f"{staged} in staging"] if staged else [])
            err.print(f"[yellow]{shown(f.path)}: {f.quarantined + staged} record(s) "
                      f"quarantined ({', '.join(parts)}; see `recon quarantine`)[/yellow]")
        if f.kind == "settling":
            err.print(f"[yellow]{shown(f.path)}: {shown(f.skip_reason)}[/yellow]")
        for w in f.warnings:
            err.print(f"[yellow]warning: {shown(w)}[/yellow]")
