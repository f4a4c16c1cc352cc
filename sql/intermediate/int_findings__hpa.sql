-- grain: one row per HPA_SCALE_DOWN_SLOW finding: a ScaledObject × a spell without an active
-- trigger × a billed resource one of its surplus replicas held. Columns as marts.findings before
-- ids (code … ms, amount_at_stake, message), then the owner: the ScaledObject, whose HPA was slow.
--
-- Between minReplicas and N the HPA scales, not KEDA (kedacore/keda#6844: "the cooldownPeriod is
-- from 1 to 0. From N to 1 is done by the HPA"). The HPA scales in at the first sync after every
-- recommendation of its last behavior.scaleDown.stabilizationWindowSeconds is lower (kubernetes
-- pkg/controller/podautoscaler/horizontal.go, stabilizeRecommendationWithBehaviors: for scale
-- down, the max of the recommendations newer than now − the window); until then its AbleToScale
-- condition reads ScaleDownStabilized.
--
-- When demand fell, from what is landed. The HPA object is not landed, and would not tell it:
-- setConditionInList moves a condition's lastTransitionTime only when its status changes, and
-- AbleToScale stays True from ReadyForNewScale to ScaleDownStabilized. The metric's series is
-- not landed either. What is landed is KEDA's view: the ScaledObject's Active condition turns
-- False at KEDA's first poll with no trigger above its activation threshold (its versions here:
-- the turn's lastTransitionTime, the least among the versions that share the spell's
-- lastActiveTime). A trigger at or below its activation threshold is at or below its target
-- (where the activation threshold is at most the target; KEDA's default is 0), so from then
-- every HPA recommendation is its minReplicas: the ScaledObject's minReplicaCount, 1 when that
-- is 0 (kedacore/keda controllers/keda/hpa.go, getHPAMinReplicas). That instant is the latest
-- demand can have fallen; a fall below target while a trigger stayed active (the HPA's own
-- N → N−1) is not visible in the landed data, and is not judged.
--
-- Due: that instant + stabilizationWindowSeconds + hpa_scale_down_tolerance_seconds (the HPA
-- syncs every 15 s). Replicas of the target alive then beyond minReplicas are surplus: those
-- that lived longest are kept, the rest are held [due, their deletion request) (the HPA's
-- scale-in as it reached the pod; the termination after it is the pod's), and no later than
-- the next active poll (demand back) nor, with minReplicaCount 0, lastActiveTime +
-- cooldownPeriod: from there KEDA scales the whole target to zero, N → 0 (kedacore/keda#7770),
-- and a delay is SCALE_TO_ZERO_LATE's, so no second is money twice. A replica's seconds are
-- those its node billed compute for (its compute sessions), priced as SCALE_TO_ZERO_LATE's: the
-- node's compute rate × the replica's share of the node's GPUs.
with objects as (
    select * from staging.stg_k8s__scaled_objects where kind = 'ScaledObject'
),

versions as (
    select *, try_cast(active_condition.lastTransitionTime as timestamptz) as turned_at
    from staging.stg_k8s__scaled_object_versions
),

spells as (
    select cluster, namespace, name, last_active_at, min(turned_at) as fell_at
    from versions
    where active_condition.status = 'False' and turned_at is not null
      and turned_at >= coalesce(last_active_at, '-infinity'::timestamptz)
    group by all
),

judged as (
    select
        s.*, o.target_name, o.hpa_name, o.stabilization_seconds, o.cooldown_seconds, o.min_replicas,
        greatest(o.min_replicas, 1) as hpa_min_replicas,
        s.fell_at + to_seconds(o.stabilization_seconds + cfg_int('hpa_scale_down_tolerance_seconds')) as due_at,
        coalesce(least(
            (select min(v.last_active_at) from versions v
              where v.cluster is not distinct from s.cluster and v.namespace = s.namespace and v.name = s.name
                and v.last_active_at > coalesce(s.last_active_at, '-infinity'::timestamptz)),
            case when o.min_replicas = 0 then s.last_active_at + to_seconds(o.cooldown_seconds) end),
            '2100-01-01'::timestamptz) as judged_until
    from spells s
    join objects o
      on o.cluster is not distinct from s.cluster and o.namespace = s.namespace and o.name = s.name
),

replicas as (
    -- a replica is held until its deletion was requested, else its end; no later than the end
    -- of its node's compute session (a replica whose end the watch did not see is not held
    -- past its node's bill)
    select j.*, w.resource_id, w.pod_name, w.gpus, w.team,
           least(k.deletion_requested_at, w.window_end_at, c.end_at) as held_until
    from judged j
    join intermediate.int_k8s__pod_owners p
      on p.cluster is not distinct from j.cluster and p.namespace = j.namespace
     and p.owner_kind = 'ScaledObject' and p.owner_name = j.name
    join intermediate.int_resource__workloads w
      on w.cluster is not distinct from p.cluster and w.pod_uid = p.pod_uid
    left join intermediate.int_k8s__workloads k
      on k.cluster is not distinct from w.cluster and k.pod_uid = w.pod_uid
    left join intermediate.int_resource__compute_sessions c
      on c.resource_id = w.resource_id and c.start_at <= w.scheduled_at and c.end_at > w.scheduled_at
    where w.scheduled_at < j.due_at
),

alive as (
    -- the replicas alive at the due time, the longest-held first (of two held as long, the
    -- greater name, so that runs agree): the first hpa_min_replicas of them are the HPA's floor
    select *,
           count(*) over spell as replicas_at_due,
           row_number() over (spell order by held_until desc, pod_name desc) as held_rank
    from replicas
    where held_until > due_at
    window spell as (partition by cluster, namespace, name, fell_at)
),

surplus as (
    select *, least(held_until, judged_until) as surplus_until
    from alive
    where held_rank > hpa_min_replicas and least(held_until, judged_until) > due_at
),

billed as (
    -- the part of each surplus span its node billed compute for
    select u.*, greatest(u.due_at, c.start_at) as billed_from, least(u.surplus_until, c.end_at) as billed_until
    from surplus u
    join intermediate.int_resource__compute_sessions c
      on c.resource_id = u.resource_id and c.start_at < u.surplus_until and c.end_at > u.due_at
),

scale_ins as (
    -- the HPA's first scale-in after the fall: core/v1 SuccessfulRescale, "New size: %d; reason:
    -- %s", the reason "All metrics below target" when it scales in (horizontal.go,
    -- reconcileAutoscaler)
    select s.cluster, s.namespace, s.name, s.fell_at,
           min(e.last_at) as scaled_in_at, arg_min(e.message, row(e.last_at, e.message)) as scaled_in_message
    from (select distinct cluster, namespace, name, hpa_name, fell_at from billed) s
    join staging.stg_k8s__events e
      on e.cluster is not distinct from s.cluster and e.object_namespace = s.namespace
     and e.object_kind = 'HorizontalPodAutoscaler' and e.object_name = s.hpa_name
     and e.reason = 'SuccessfulRescale' and e.message like '%All metrics below target%'
     and e.last_at >= s.fell_at
    group by all
),

final as (
    select
        'HPA_SCALE_DOWN_SLOW' as code, 'warning' as severity, u.resource_id,
        cast(date_trunc('day', u.due_at) as date) as day,
        min(u.billed_from) as window_start, max(u.billed_until) as window_end,
        sum(epoch_ms(u.billed_until) - epoch_ms(u.billed_from)) as ms,
        cast(sum(r.compute_rate_per_hour * (epoch_ms(u.billed_until) - epoch_ms(u.billed_from))
                 / 3600000 * u.gpus / greatest(coalesce(g.gpus, u.gpus), u.gpus)) as decimal(38, 12))
            as amount_at_stake,
        'The HPA ' || any_value(u.hpa_name) || ' of ScaledObject ' || u.namespace || '/' || u.name || ' kept '
            || any_value(u.replicas_at_due) || ' replicas of ' || u.namespace || '/' || any_value(u.target_name)
            || ' (its minReplicas ' || any_value(u.hpa_min_replicas) || ') for '
            || ((epoch_ms(max(u.surplus_until)) - epoch_ms(u.due_at)) // 1000)
            || ' s beyond its scale-down stabilizationWindowSeconds ' || any_value(u.stabilization_seconds)
            || ' s + hpa_scale_down_tolerance_seconds ' || cfg_int('hpa_scale_down_tolerance_seconds')
            || ' s: demand fell by ' || strftime(u.fell_at, '%Y-%m-%dT%H:%M:%SZ')
            || ' (the ScaledObject''s Active condition turned False: no trigger above its activation'
            || ' threshold, last active ' || coalesce(strftime(any_value(u.last_active_at), '%Y-%m-%dT%H:%M:%SZ'), '?')
            || '), so it was due to scale in by ' || strftime(u.due_at, '%Y-%m-%dT%H:%M:%SZ') || '; '
            || coalesce('it scaled in at ' || strftime(any_value(i.scaled_in_at), '%Y-%m-%dT%H:%M:%SZ')
                        || ' (SuccessfulRescale "' || any_value(i.scaled_in_message) || '")',
                        'no SuccessfulRescale scale-in of it is in the input')
            || '. ' || count(distinct u.pod_name) || ' surplus replica(s) on ' || u.resource_id || ' ('
            || string_agg(distinct u.pod_name, ', ' order by u.pod_name) || '): '
            || (sum(epoch_ms(u.billed_until) - epoch_ms(u.billed_from)) // 1000) || ' s billed.' as message,
        -- the ScaledObject whose HPA held them owns it; its replicas' team (the least, should
        -- they differ, so that runs agree)
        u.namespace, 'ScaledObject' as owner_kind, u.name as owner_name, min(u.team) as team
    from billed u
    left join scale_ins i
      on i.cluster is not distinct from u.cluster and i.namespace = u.namespace and i.name = u.name
     and i.fell_at = u.fell_at
    left join intermediate.int_runpod__pod_rates r on r.pod_id = u.resource_id
    left join intermediate.int_resource__gpu_capacity g using (resource_id)
    group by u.resource_id, u.cluster, u.namespace, u.name, u.fell_at, u.due_at
)

select * from final
