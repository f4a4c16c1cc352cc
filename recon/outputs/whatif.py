"""`recon whatif`: re-price the observed tails and serverless idle under other settings.

Model (the one BILLED_AFTER_EXIT's expected tail uses; marts.compute_sessions carries it).
A compute session's setting-driven seconds around its last task, by what ended that task:
* a ScaledJob's Job: the node's scale-down only, min(tail, scale-down delay);
* a replica KEDA scaled to zero (1 → 0): cooldownPeriod, which ran while the replica lived, +
  min(tail, scale-down delay);
* a replica the HPA scaled in (N → 1): its scaleDown stabilizationWindowSeconds +
  min(tail, scale-down delay) (cooldownPeriod does not apply to N → 1);
* a pod no ScaledObject or ScaledJob owns: min(tail, cooldown + scale-down delay).
The baseline is that model at today's settings (each ScaledObject's own cooldownPeriod and
window, the configured scale-down grace), the scenario the same model with the settings given;
savings = baseline − scenario, so a longer setting never saves (it costs more where it is not
bounded by what was observed). A session whose tail exceeded today's expected tail did not scale
down as the settings say (BILLED_AFTER_EXIT holds its excess): no setting is credited with it,
and it is left out and counted. Seconds are priced at the session's billed tail cost per second,
else its compute rate.
Serverless: each worker session's idle after its last request would have been the new idle
timeout instead of the configured one (idle beyond the timeout is kept: it is not the setting's
doing). Not modelled: the extra cold starts a shorter idle timeout can cause, so serverless
savings are an upper bound. Savings are attributed to the workload whose finish started the
tail, or to the endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..build.guards import require_built
from ..sqlfiles import query


@dataclass
class Saving:
    team: str
    namespace: str
    workload: str
    resource_id: str
    kind: str
    observed_seconds: Decimal  # the model's seconds at today's settings
    whatif_seconds: Decimal  # the model's seconds under the settings given
    saved_usd: Decimal  # baseline_usd − whatif_usd
    baseline_usd: Decimal = Decimal(0)
    whatif_usd: Decimal = Decimal(0)


class WhatIf(list):
    """The savings, and how many sessions were left out because their nodes did not scale down
    within today's expected tail."""

    not_scaled_down: int = 0


def _money(x) -> Decimal:
    """USD to the warehouse's 12 decimals, so that saved = baseline − what-if exactly."""
    return Decimal(x).quantize(Decimal("0.000000000001"))


def modelled_seconds(scaler: str, tail: Decimal, cooldown: int | None, stabilization: int | None,
                     grace: int) -> Decimal:
    """The setting-driven seconds of one session under one set of settings (module docstring)."""
    node = min(tail, Decimal(grace))
    if scaler == "scale_to_zero":
        return Decimal(cooldown or 0) + node
    if scaler == "hpa_scale_in":
        return Decimal(stabilization or 0) + node
    if scaler == "unknown":
        return min(tail, Decimal((cooldown or 0) + grace))
    return node  # scaled_job: no cooldown


def whatif(con, day_from, day_to, cooldown_s: int | None = None, grace_s: int | None = None,
           idle_timeout_s: int | None = None, stabilization_s: int | None = None) -> WhatIf:
    require_built(con, day_from, day_to, "what-if")
    out = WhatIf()
    if cooldown_s is not None or grace_s is not None or stabilization_s is not None:
        for (team, ns, wl, rid, scaler, tail_ms, allowed_s, cd0, win0, gr0, tail_usd, billed_ms,
             rate_h) in con.execute(query("whatif__tails"), [day_from, day_to]).fetchall():
            tail = Decimal(tail_ms) / 1000
            if tail > allowed_s:
                out.not_scaled_down += 1
                continue
            if billed_ms:
                per_s = Decimal(tail_usd) * 1000 / Decimal(billed_ms)
            else:
                per_s = Decimal(rate_h or 0) / 3600
            base = modelled_seconds(scaler, tail, cd0, win0, gr0)
            new = modelled_seconds(scaler, tail, cd0 if cooldown_s is None else cooldown_s,
                                   win0 if stabilization_s is None else stabilization_s,
                                   gr0 if grace_s is None else grace_s)
            base_usd, new_usd = _money(base * per_s), _money(new * per_s)
            out.append(Saving(team, ns, wl, rid, f"tail ({scaler})", base, new,
                              base_usd - new_usd, base_usd, new_usd))
    if idle_timeout_s is not None:
        for ep, sessions, timeout_s, idle_s, rate in con.execute(
                query("whatif__idle"), [day_from, day_to, day_from, day_to]).fetchall():
            rate = rate or Decimal(0)
            observed_post = Decimal(str(timeout_s))  # the post-request idle the timeout explains
            new_post = Decimal(idle_timeout_s) * sessions
            idle = Decimal(str(idle_s))
            extra = max(idle - observed_post, Decimal(0))  # lingering beyond the timeout: kept
            new = max(new_post + extra, Decimal(0))
            base_usd, new_usd = _money(idle * rate), _money((idle - observed_post + new_post) * rate)
            out.append(Saving("__unallocated__", "serverless", ep, ep, "serverless_idle",
                              idle, new, base_usd - new_usd, base_usd, new_usd))
    return out


def aggregate(savings: list[Saving]) -> list[tuple]:
    """(team, namespace, workload, kind, today s, what-if s, today USD, what-if USD, saved USD)
    per workload and kind, most saved first."""
    acc: dict[tuple, list] = {}
    for s in savings:
        a = acc.setdefault((s.team, s.namespace, s.workload, s.kind), [Decimal(0)] * 5)
        for i, v in enumerate((s.observed_seconds, s.whatif_seconds, s.baseline_usd, s.whatif_usd,
                               s.saved_usd)):
            a[i] += v
    return sorted(((*k, *v) for k, v in acc.items()), key=lambda r: -r[8])
