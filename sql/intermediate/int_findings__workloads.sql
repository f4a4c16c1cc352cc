-- grain: one row per finding about workloads: STARTUP_BUDGET_EXCEEDED, UNSCHEDULABLE_GPU,
-- SCALE_TO_ZERO_LATE. Columns as marts.findings before ids (code … ms, amount_at_stake, message),
-- then the owner (namespace, owner_kind, owner_name, team): of the pod the finding is about
-- (intermediate.int_k8s__pod_owners), for SCALE_TO_ZERO_LATE the ScaledObject that scaled late.
with versions as (
    select * from staging.stg_k8s__pods
),

killed_runs as (
    -- runs of the main container that ended before the pod first became ready
    select distinct v.cluster, v.pod_uid,
           v.main_status.lastState.terminated.startedAt as run_start,
           v.main_status.lastState.terminated.finishedAt as run_end,
           v.startup_period_seconds * v.startup_failure_threshold as budget_s,
           v.startup_period_seconds as period_s
    from versions v
    where v.main_status.lastState.terminated.finishedAt is not null
      and v.startup_period_seconds is not null
),

budget as (
    select k.cluster, k.pod_uid, w.resource_id, w.namespace, w.pod_name, w.node_name, w.gpus, w.gpu_slots,
           min(k.run_start) as first_start, max(k.run_end) as last_kill,
           count(*) as restarts, any_value(k.budget_s) as budget_s,
           sum(epoch_ms(k.run_end) - epoch_ms(k.run_start)) as killed_ms
    from killed_runs k
    join intermediate.int_resource__workloads w using (cluster, pod_uid)
    where k.run_end <= coalesce(w.ready_at, w.window_end_at)
      and epoch_ms(k.run_end) - epoch_ms(k.run_start) >= (k.budget_s - k.period_s) * 1000
    group by all
),

startup_budget as (
    select
        'STARTUP_BUDGET_EXCEEDED' as code, 'warning' as severity, b.resource_id,
        cast(date_trunc('day', b.first_start) as date) as day,
        b.first_start as window_start, b.last_kill as window_end,
        b.killed_ms as ms,
        cast(r.compute_rate_per_hour * b.killed_ms / 3600000 * b.gpu_slots / greatest(coalesce(c.slots, b.gpu_slots), b.gpu_slots)
             as decimal(38, 12)) as amount_at_stake,
        'Pod ' || b.namespace || '/' || b.pod_name || ' on node ' || b.node_name || ' took longer to start than its'
            || ' startup probe allows (failureThreshold × periodSeconds = ' || b.budget_s || ' s): the probe killed it '
            || b.restarts || ' time(s), wasting ' || (b.killed_ms // 1000) || ' s of billed GPU time on '
            || b.gpus || ' GPU(s) before it started for good.' as message,
        o.namespace, o.owner_kind, o.owner_name, o.team
    from budget b
    left join intermediate.int_k8s__pod_owners o
      on o.cluster is not distinct from b.cluster and o.pod_uid = b.pod_uid
    left join intermediate.int_runpod__pod_rates r on r.pod_id = b.resource_id
    left join intermediate.int_resource__gpu_capacity c using (resource_id)
),

failed_scheduling as (
    select e.cluster, e.object_uid as pod_uid, e.object_namespace as namespace, e.object_name as pod_name,
           min(e.first_at) as first_at, max(e.last_at) as last_at, sum(e.event_count) as attempts,
           -- the first message; of two first seen at once, the smaller, so that runs agree
           arg_min(e.message, case when e.first_at is not null then (e.first_at, e.message) end)
               as message
    from staging.stg_k8s__events e
    where e.object_kind = 'Pod' and e.reason = 'FailedScheduling'
      and e.message like '%Insufficient nvidia.com/gpu%'
    group by all
),

pending as (
    select f.*, coalesce(w.scheduled_at, w.deleted_at, w.window_end_at, f.last_at) as pending_until,
           o.owner_kind, o.owner_name, o.team
    from failed_scheduling f
    left join intermediate.int_k8s__workloads w using (cluster, pod_uid)
    left join intermediate.int_k8s__pod_owners o
      on o.cluster is not distinct from f.cluster and o.pod_uid = f.pod_uid
),

unschedulable as (
    select
        'UNSCHEDULABLE_GPU', 'warning', 'pod:' || p.namespace || '/' || p.pod_name,
        cast(date_trunc('day', p.first_at) as date),
        p.first_at, greatest(least(p.pending_until, '2100-01-01'::timestamptz), p.first_at + interval 1 second),
        epoch_ms(greatest(least(p.pending_until, '2100-01-01'::timestamptz), p.first_at + interval 1 second))
            - epoch_ms(p.first_at),
        cast(0 as decimal(38, 12)),
        'Pod ' || p.namespace || '/' || p.pod_name || ' stayed Pending (' || p.attempts
            || ' FailedScheduling event(s): "' || p.message || '") while ' || count(distinct s.resource_id)
            || ' GPU node(s) were billed (' || string_agg(distinct s.resource_id, ', ' order by s.resource_id)
            || '). The money is in those nodes'' idle_gap rows, not counted again here.',
        p.namespace, p.owner_kind, p.owner_name, p.team
    from pending p
    join intermediate.int_resource__compute_sessions s
      on s.start_at < p.pending_until and s.end_at > p.first_at
    -- only GPU nodes of the pod's own cluster could have taken it
    semi join intermediate.int_k8s__node_resources r
      on r.resource_id = s.resource_id and r.cluster is not distinct from p.cluster
    group by p.cluster, p.namespace, p.pod_name, p.first_at, p.pending_until, p.attempts, p.message,
             p.owner_kind, p.owner_name, p.team
),

bad_spec as (
    select
        'UNSCHEDULABLE_GPU', 'warning', 'pod:' || w.namespace || '/' || w.pod_name,
        cast(date_trunc('day', w.created_at) as date), w.created_at, w.created_at + interval 1 second, 0,
        cast(0 as decimal(38, 12)),
        'Pod ' || w.namespace || '/' || w.pod_name || ' requests ' || w.gpus_requested || ' nvidia.com/gpu but limits '
            || w.gpus || ': extended resources must have request = limit (or a limit alone), so it cannot be scheduled.',
        w.namespace, o.owner_kind, o.owner_name, w.team
    from intermediate.int_k8s__workloads w
    left join intermediate.int_k8s__pod_owners o
      on o.cluster is not distinct from w.cluster and o.pod_uid = w.pod_uid
    where w.gpus_requested > 0 and w.gpus_requested <> w.gpus
),

late_deactivations as (
    -- lateness is deactivated_at − (last active + cooldownPeriod): KEDA polls every
    -- pollingInterval, so a scale to zero within one interval (+ the tolerance) is on time
    select d.*, epoch_ms(d.deactivated_at) - epoch_ms(d.due_at) as late_ms
    from intermediate.int_keda__deactivations d
    where d.due_at is not null
      and epoch_ms(d.deactivated_at) - epoch_ms(d.due_at)
          > (d.polling_interval_seconds + cfg_int('scale_to_zero_tolerance_seconds')) * 1000
),

late_replicas as (
    -- the target's replicas that lived through the delay: each is billed [due, deactivated)
    select d.*, w.resource_id, w.pod_name, w.gpus, w.gpu_slots, w.team,
           greatest(w.scheduled_at, d.due_at) as late_from,
           least(w.window_end_at, d.deactivated_at) as late_until
    from late_deactivations d
    join intermediate.int_resource__workloads w
      on w.cluster is not distinct from d.cluster and w.namespace = d.namespace
     and starts_with(w.pod_name, d.target_name || '-')
     and w.scheduled_at < d.deactivated_at and w.window_end_at > d.due_at
),

scale_to_zero as (
    select
        'SCALE_TO_ZERO_LATE', 'warning', l.resource_id, cast(date_trunc('day', l.due_at) as date),
        min(l.late_from), max(l.late_until),
        sum(epoch_ms(l.late_until) - epoch_ms(l.late_from)),
        cast(sum(r.compute_rate_per_hour * (epoch_ms(l.late_until) - epoch_ms(l.late_from))
                 / 3600000 * l.gpu_slots / greatest(coalesce(c.slots, l.gpu_slots), l.gpu_slots)) as decimal(38, 12)),
        'KEDA scaled ScaledObject ' || any_value(l.namespace) || '/' || any_value(l.name) || ' to zero at '
            || strftime(l.deactivated_at, '%Y-%m-%dT%H:%M:%SZ') || ', ' || (any_value(l.late_ms) // 1000)
            || ' s after it was due: last active ' || strftime(any_value(l.last_active_at), '%Y-%m-%dT%H:%M:%SZ')
            || ' (from ' || any_value(l.last_active_source) || ') + cooldownPeriod '
            || any_value(l.cooldown_seconds) || ' s = ' || strftime(l.due_at, '%Y-%m-%dT%H:%M:%SZ')
            || '; more than pollingInterval ' || any_value(l.polling_interval_seconds)
            || ' s + scale_to_zero_tolerance_seconds ' || cfg_int('scale_to_zero_tolerance_seconds') || ' s. '
            || count(*) || ' replica(s) of ' || any_value(l.namespace) || '/' || any_value(l.target_name)
            || ' ran on ' || l.resource_id || ' through the delay: '
            || ((sum(epoch_ms(l.late_until) - epoch_ms(l.late_from))) // 1000) || ' s billed.',
        -- the ScaledObject whose cooldown and polling made the delay owns it, not its Deployment;
        -- its replicas' team (the least, should they differ, so that runs agree)
        l.namespace, 'ScaledObject', l.name, min(l.team)
    from late_replicas l
    left join intermediate.int_runpod__pod_rates r on r.pod_id = l.resource_id
    left join intermediate.int_resource__gpu_capacity c using (resource_id)
    group by l.resource_id, l.cluster, l.namespace, l.name, l.deactivated_at, l.due_at
),

final as (
    select * from startup_budget
    union all select * from unschedulable
    union all select * from bad_spec
    union all select * from scale_to_zero
)

select * from final
