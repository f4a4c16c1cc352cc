-- grain: one row per KEDAScaleTargetDeactivated of a ScaledObject (cluster, namespace, name,
-- deactivated_at), with when it was last active and where that came from.
-- KEDA scales to zero only once status.lastActiveTime + cooldownPeriod has passed, then records
-- the event (kedacore/keda pkg/scaling/executor/scale_scaledobjects.go, scaleToZeroOrIdle:
-- `LastActiveTime.Add(cooldownPeriod).Before(time.Now())`); so the scale to zero was due at
-- last active + cooldownPeriod, not cooldownPeriod after the event. "Last active", best first:
-- lastActiveTime as the collector saw it over its versions (the latest before the event), the
-- one version there is (the object's final status), the Active condition's turn to False (KEDA
-- sets it on the first poll without an active trigger: lastActiveTime is no later), the
-- KEDAScaleTargetActivated event (lastActiveTime is set then; it may have moved on after it).
-- A value older than the object's previous deactivation belongs to an earlier cycle.
with events as (
    select * from staging.stg_k8s__events
    where object_kind = 'ScaledObject' and reason in ('KEDAScaleTargetDeactivated', 'KEDAScaleTargetActivated')
),

objects as (
    select * from staging.stg_k8s__scaled_objects where kind = 'ScaledObject'
),

versions as (
    select * from staging.stg_k8s__scaled_object_versions
),

deactivated as (
    select distinct e.cluster, e.object_namespace as namespace, e.object_name as name, e.last_at as deactivated_at
    from events e
    where e.reason = 'KEDAScaleTargetDeactivated'
),

cycles as (
    select d.*,
           lag(d.deactivated_at) over (partition by d.cluster, d.namespace, d.name order by d.deactivated_at)
               as previous_deactivated_at
    from deactivated d
),

version_counts as (
    select cluster, namespace, name, count(*) as n from versions group by all
),

sourced as (
    select
        c.*,
        o.target_name, o.cooldown_seconds, o.polling_interval_seconds,
        (select max(v.last_active_at) from versions v
          where v.cluster is not distinct from c.cluster and v.namespace = c.namespace and v.name = c.name
            and v.last_active_at < c.deactivated_at
            and v.last_active_at >= coalesce(c.previous_deactivated_at, '-infinity'::timestamptz)) as status_at,
        (select max(try_cast(v.active_condition.lastTransitionTime as timestamptz)) from versions v
          where v.cluster is not distinct from c.cluster and v.namespace = c.namespace and v.name = c.name
            and v.active_condition.status = 'False'
            and try_cast(v.active_condition.lastTransitionTime as timestamptz) < c.deactivated_at
            and try_cast(v.active_condition.lastTransitionTime as timestamptz)
                >= coalesce(c.previous_deactivated_at, '-infinity'::timestamptz)) as condition_at,
        (select max(e.last_at) from events e
          where e.reason = 'KEDAScaleTargetActivated'
            and e.cluster is not distinct from c.cluster and e.object_namespace = c.namespace
            and e.object_name = c.name and e.last_at < c.deactivated_at
            and e.last_at >= coalesce(c.previous_deactivated_at, '-infinity'::timestamptz)) as activated_at,
        coalesce(n.n, 0) as versions_seen
    from cycles c
    join objects o
      on o.cluster is not distinct from c.cluster and o.namespace = c.namespace and o.name = c.name
    left join version_counts n
      on n.cluster is not distinct from c.cluster and n.namespace = c.namespace and n.name = c.name
),

final as (
    select
        cluster, namespace, name, target_name, cooldown_seconds, polling_interval_seconds,
        deactivated_at, previous_deactivated_at,
        coalesce(status_at, condition_at, activated_at) as last_active_at,
        case when status_at is not null and versions_seen > 1
                 then 'status.lastActiveTime as the collector saw it (' || versions_seen || ' versions)'
             when status_at is not null then 'the ScaledObject''s final status.lastActiveTime'
             when condition_at is not null then 'the Active condition''s turn to False'
             when activated_at is not null
                 then 'the KEDAScaleTargetActivated event (no status seen: the delay is at most this)'
        end as last_active_source,
        coalesce(status_at, condition_at, activated_at) + to_seconds(cooldown_seconds) as due_at
    from sourced
)

select * from final
