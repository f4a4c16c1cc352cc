"""`recon whatif`: re-price the observed tails and serverless idle under other settings.

Model: a compute session's tail after its last task would have been
min(observed tail, cooldown + scale-down delay) under the new settings — a shorter cooldown
cuts the tail, never the work; each serverless worker session's idle after its last request
would have been the new idle timeout instead of the configured one (idle beyond the timeout is
kept: it is not the setting's doing). Not modelled: the extra cold starts a shorter idle timeout
can cause for requests that would have found a warm worker, so serverless savings are an upper
bound. Savings are attributed to the workload whose finish started the tail, or to the endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from .warehouse import require_built


@dataclass
class Saving:
    team: str
    namespace: str
    workload: str
    resource_id: str
    kind: str
    observed_seconds: Decimal
    whatif_seconds: Decimal
    saved_usd: Decimal


TAIL_SQL = """
with s as (
    select c.session_id, c.resource_id, c.last_finished_at, c.end_at,
           (epoch_ms(c.end_at) - epoch_ms(c.last_finished_at)) / 1000.0 as tail_s
    from intermediate.int_resource__session_context c
    where c.mapped and c.workloads > 0 and c.last_finished_at < c.end_at
      and cast(date_trunc('day', c.last_finished_at) as date) between ? and ?
),
last_pod as (
    select s.session_id, arg_max(coalesce(w.team, '__unallocated__'), w.window_end_at) as team,
           arg_max(w.namespace, w.window_end_at) as namespace,
           arg_max(w.workload, w.window_end_at) as workload
    from s join intermediate.int_resource__workloads w
      on w.resource_id = s.resource_id and w.window_end_at = s.last_finished_at
    group by s.session_id
),
amounts as (
    select g.session_id, sum(g.amount_usd) as tail_usd, sum(g.ms) / 1000.0 as tail_billed_s
    from intermediate.int_resource__instance_segments g
    where g.category = 'tail' group by g.session_id
)
select l.team, l.namespace, l.workload, s.resource_id, s.tail_s, a.tail_usd, a.tail_billed_s
from s join last_pod l using (session_id) join amounts a using (session_id)
"""

IDLE_SQL = """
select w.endpoint_id, count(*) as sessions,
       sum(w.idle_timeout_ms) / 1000.0 as timeout_s,
       any_value(e.idle_ms) / 1000.0 as idle_s, any_value(e.rate_per_second) as rate
from intermediate.int_serverless__worker_sessions w
join (select endpoint_id, sum(idle_ms) as idle_ms, any_value(rate_per_second) as rate_per_second
      from intermediate.int_serverless__endpoint_days where day between ? and ? group by all) e
  using (endpoint_id)
where w.day between ? and ?
group by w.endpoint_id
"""


def whatif(con, day_from, day_to, cooldown_s: int | None = None, grace_s: int | None = None,
           idle_timeout_s: int | None = None) -> list[Saving]:
    require_built(con, day_from, day_to, "what-if")
    out: list[Saving] = []
    if cooldown_s is not None or grace_s is not None:
        th = dict(con.execute("select name, value from config.settings").fetchall())
        cd = cooldown_s if cooldown_s is not None else int(th["keda_cooldown_seconds"])
        gr = grace_s if grace_s is not None else int(th["scale_down_grace_seconds"])
        for team, ns, wl, rid, tail_s, tail_usd, billed_s in con.execute(
                TAIL_SQL, [day_from, day_to]).fetchall():
            tail_s = Decimal(str(tail_s))
            new = min(tail_s, Decimal(cd + gr))
            per_s = tail_usd / Decimal(str(billed_s)) if billed_s else Decimal(0)
            out.append(Saving(team, ns, wl, rid, "tail", tail_s, new, (tail_s - new) * per_s))
    if idle_timeout_s is not None:
        for ep, sessions, timeout_s, idle_s, rate in con.execute(
                IDLE_SQL, [day_from, day_to, day_from, day_to]).fetchall():
            observed_post = Decimal(str(timeout_s))  # the post-request idle the timeout explains
            new_post = Decimal(idle_timeout_s) * sessions
            extra = Decimal(str(idle_s)) - observed_post  # lingering beyond the timeout: kept
            saved = (observed_post - new_post) * (rate or Decimal(0))
            out.append(Saving("__unallocated__", "serverless", ep, ep, "serverless_idle",
                              Decimal(str(idle_s)), max(new_post + max(extra, Decimal(0)),
                                                        Decimal(0)), saved))
    return out


def aggregate(savings: list[Saving]) -> list[tuple]:
    acc: dict[tuple, list] = {}
    for s in savings:
        a = acc.setdefault((s.team, s.namespace, s.workload, s.kind), [Decimal(0), Decimal(0),
                                                                       Decimal(0)])
        a[0] += s.observed_seconds
        a[1] += s.whatif_seconds
        a[2] += s.saved_usd
    return sorted(((*k, *v) for k, v in acc.items()), key=lambda r: -r[6])
