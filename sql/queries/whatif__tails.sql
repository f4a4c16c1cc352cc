-- `recon whatif`: each compute session whose last task finished in the window (parameters: its
-- first and last day), with the tail model's settings and its compute rate, the workload of its
-- last pod, and what its tail was billed (recon/whatif.py re-prices it under other settings).
with compute_sessions as (
    select * from marts.compute_sessions
),

workloads as (
    select * from marts.workloads
),

instance_segments as (
    select * from marts.instance_segments
),

sessions as (
    select m.*, epoch_ms(m.end_at) - epoch_ms(m.last_finished_at) as tail_ms
    from compute_sessions m
    where cast(date_trunc('day', m.last_finished_at) as date) between ? and ?
),

last_pod as (
    -- the pods whose task ended at the session's last finish: the greatest pod name wins
    select m.session_id, arg_max(coalesce(w.team, '__unallocated__'), w.pod_name) as team,
           arg_max(w.namespace, w.pod_name) as namespace, arg_max(w.workload, w.pod_name) as workload
    from sessions m join workloads w
      on w.resource_id = m.resource_id and w.window_end_at = m.last_finished_at
    group by m.session_id
),

amounts as (
    select g.session_id, sum(g.amount_usd) as tail_usd, sum(g.ms) as tail_billed_ms
    from instance_segments g
    where g.category = 'tail' group by g.session_id
)

select l.team, l.namespace, l.workload, m.resource_id, m.scaler, m.tail_ms, m.allowed_seconds,
       m.cooldown_seconds, m.stabilization_seconds, m.grace_seconds, a.tail_usd, a.tail_billed_ms,
       m.compute_rate_per_hour
from sessions m join last_pod l using (session_id)
left join amounts a using (session_id)
order by m.resource_id, m.last_finished_at
