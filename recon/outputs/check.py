"""`recon check --day D`: the scheduling verification in four steps, each passing or naming
the resources that fail (built on the marts: the same evidence as the findings). `recon check
--month M`: the month's invoices tied out against the reconciled bill (marts.invoice_tieout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC

from ..sqlfiles import query
from .report import seconds_text as _secs


@dataclass
class Step:
    title: str
    passed: bool
    lines: list[str] = field(default_factory=list)


def _findings(con, day, *codes):
    return con.execute(query("check__findings"), [day, list(codes)]).fetchall()


def run_checks(con, day) -> list[Step]:
    steps = []
    # the GPU nodes up during the day (one per Node object: registered before its end, not
    # removed before its start), and the most GPUs up at one instant. A node registered before
    # the day's end but gone before its start is not counted: it was not up (on the demo's
    # second day 7 nodes with 10 GPUs are up, 11 nodes with 15 GPUs registered).
    nodes = con.execute(query("check__gpu_nodes"), [day, day, day]).fetchone()
    pend = _findings(con, day, "UNSCHEDULABLE_GPU")
    s = Step("1. GPU capacity: nodes exposing nvidia.com/gpu, pods left Pending", not pend,
             [(f"{nodes[0]} GPU node(s) up during the day, {nodes[1]} nvidia.com/gpu between "
               f"them, at most {nodes[2]} at once")])
    s.lines += [f"FAIL {rid}: {msg}" for _, rid, msg in pend]
    steps.append(s)

    slow = _findings(con, day, "STARTUP_BUDGET_EXCEEDED")
    n = con.execute(query("check__startup"), [day]).fetchone()
    s = Step("2. Startup probe budget (failureThreshold × periodSeconds) vs observed startup",
             not slow, [f"{n[0]} GPU pod(s) became ready; the slowest took {n[1] or 0:.0f} s"])
    s.lines += [f"FAIL {rid}: {msg}" for _, rid, msg in slow]
    steps.append(s)

    late = _findings(con, day, "BILLED_AFTER_EXIT", "SCALE_TO_ZERO_LATE", "HPA_SCALE_DOWN_SLOW",
                     "BILLED_EXCEEDS_RUNTIME")
    s = Step("3. Scale to zero at last active + cooldownPeriod, N → 1 within the HPA's window, "
             "nodes after their scale-down (replicas and nodes)", not late)
    s.lines += [f"FAIL {code} {rid}: {msg}" for code, rid, msg in late]
    steps.append(s)

    rows = con.execute(query("check__resource_kinds"), [day]).fetchall()
    # ACTIVITY_WITHOUT_BILLING: the formula expects money the bill has no line for, so the
    # step fails (otherwise it would pass while its own line reads "billed $51.73 vs formula
    # $54.70")
    bad = _findings(con, day, "RATE_MISMATCH", "DUPLICATE_BILLING", "RATE_MISSING",
                    "ACTIVITY_WITHOUT_BILLING")
    # a day whose provider bill has not landed cannot tie to it: the step says so, where the
    # missing lines would otherwise pass for an unbilled day or a bill short of the formula
    awaiting = con.execute(query("check__awaiting_bill"), [day]).fetchone()[0]
    s = Step("4. Bill = POD_TOTAL (compute_s × rate + disk_s × disk_rate + volume_h × nv_rate) "
             "+ SERVERLESS_TOTAL (billable worker s × worker rate)", not bad and not awaiting)
    for kind, n, secs, billed, expected, linger, idle, stopped in rows:
        last = stopped.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if stopped else "-"
        expected = expected or 0
        gap = (f" (${abs(billed - expected):.2f} {'under' if billed < expected else 'over'} "
               f"the formula)" if round(billed, 2) != round(expected, 2) else "")
        s.lines.append(f"{kind}: {n} resource(s), {_secs(secs)} s billed, billed ${billed:.2f} vs "
                       f"formula ${expected:.2f}{gap}; storage with compute stopped "
                       f"{_secs(linger)} s; serverless idle {_secs(idle)} s; "
                       f"last compute stop {last}")
    s.lines += [f"FAIL {code} {rid}: {msg}" for code, rid, msg in bad]
    if awaiting:
        s.lines.append(f"FAIL AWAITING_BILL: the day's provider bill has not landed ({awaiting} "
                       "resource(s) `awaiting_bill` in marts.settlement: no bill line of the day "
                       "pulled at or after its end + bill_arrival_minutes); check it once the "
                       "bill is there")
    steps.append(s)
    return steps


def invoice_step(con, month) -> Step:
    """The invoices whose billing period overlaps `month` (its first day) against the bill: a
    row whose unexplained difference exceeds the tolerance fails (its INVOICE_MISMATCH); a month
    no invoice covers fails too, naming the file finance writes, since nothing was tied out."""
    from datetime import datetime, timedelta

    from .present import money

    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    nxt = (start + timedelta(days=32)).replace(day=1)
    rows = con.execute(
        "select invoice_id, cost_center, service, scope, invoice_amount, reconciled_amount, "
        "difference, unexplained_amount, tolerance, status, explanation from marts.invoice_tieout "
        "where period_start < ? and period_end > ? order by invoice_id, cost_center, service",
        [nxt, start]).fetchall()
    s = Step(f"Invoices of {start:%Y-%m} = the reconciled bill of their period and scope, "
             "but for usage landed or restated after their issue",
             bool(rows) and all(r[9] != "mismatch" for r in rows))
    for iid, cc, svc, scope, inv, rec, diff, unexplained, tol, status, why in rows:
        line = (f"{'FAIL ' if status == 'mismatch' else ''}{iid} {cc} {svc} ({scope}): invoiced "
                f"${money(inv)} vs reconciled ${money(rec)}, difference ${money(diff)}, unexplained "
                f"${money(unexplained)} (tolerance ${money(tol)}): {status}")
        s.lines.append(line + (f"; {why}" if why else ""))
    if not rows:
        s.lines.append("FAIL no invoice covers the month: land the invoice file finance writes "
                       "from the Runpod console (docs/reference.md, \"Invoice files\")")
    return s
