-- grain: one row per compute session with a workload that ended before its compute stopped: what
-- ended the node's last workload, and so how long the node may be billed after it (the expected
-- tail of BILLED_AFTER_EXIT, and the model `recon whatif` re-prices). By the last pod's owner:
-- * a ScaledJob's Job pod: a Job ends with its task, a ScaledJob has no cooldownPeriod; what
--   follows is the node's scale-down (cluster autoscaler or the provider): scale_down_grace_seconds;
-- * a ScaledObject's replica ended by KEDA's scale to zero (its KEDAScaleTargetDeactivated at or
--   before the pod's end): cooldownPeriod ran before that, while the replica lived (its delay is
--   SCALE_TO_ZERO_LATE's); after the pod, the node's scale-down;
-- * a replica ended while its ScaledObject was not scaled to zero: the HPA's N → 1, after its
--   behavior.scaleDown.stabilizationWindowSeconds (cooldownPeriod applies only to 1 → 0:
--   kedacore/keda#6844), also before the pod's end; after it, the node's scale-down;
-- * no ScaledObject or ScaledJob of the input owns it: KEDA's default cooldownPeriod
--   (keda_cooldown_seconds) is allowed after the task as well, so a scaler unseen is not blamed.
-- Which ScaledObject or ScaledJob owns a pod: intermediate.int_k8s__pod_owners (its name rule);
-- an owner of another kind there (a Deployment, a Job) is no scaler: `unknown`, as none.
-- The last pod's namespace, owner and team are kept: marts.findings names them on the tail's
-- BILLED_AFTER_EXIT.
with sessions as (
    select * from intermediate.int_resource__session_context
    where mapped and workloads > 0 and last_finished_at < end_at
),

objects as (
    select * from staging.stg_k8s__scaled_objects
),

last_pod as (
    -- pods that ended together: the greatest (pod, namespace, cluster) is the last one, a total
    -- order, so the same files name the same pod on every run
    select s.session_id,
           arg_max(w.cluster, row(w.pod_name, w.namespace, w.cluster)) as cluster,
           arg_max(w.pod_uid, row(w.pod_name, w.namespace, w.cluster)) as pod_uid,
           arg_max(w.namespace, row(w.pod_name, w.namespace, w.cluster)) as namespace,
           arg_max(w.pod_name, row(w.pod_name, w.namespace, w.cluster)) as pod_name,
           min(w.node_name) as node_name,
           arg_max(w.scheduled_at, row(w.pod_name, w.namespace, w.cluster)) as scheduled_at
    from sessions s
    join intermediate.int_resource__workloads w
      on w.resource_id = s.resource_id and w.window_end_at = s.last_finished_at
    group by s.session_id
),

pod_owners as (
    select l.session_id, p.team, p.owner_kind, p.owner_name
    from last_pod l
    join intermediate.int_k8s__pod_owners p
      on p.cluster is not distinct from l.cluster and p.pod_uid = l.pod_uid
),

owners as (
    select p.session_id, p.owner_kind, o.namespace || '/' || o.name as owner, p.owner_name,
           o.cooldown_seconds, o.stabilization_seconds
    from pod_owners p
    join last_pod l using (session_id)
    join objects o
      on o.cluster is not distinct from l.cluster and o.namespace = l.namespace
     and o.kind = p.owner_kind and o.name = p.owner_name
),

scaled_to_zero as (
    -- the scale to zero that ended the replica: the latest deactivation between its scheduling
    -- and its end (a minute's slack: the event carries KEDA's clock, the pod the kubelet's)
    select s.session_id, max(d.deactivated_at) as deactivated_at
    from sessions s
    join last_pod l using (session_id)
    join owners o using (session_id)
    join intermediate.int_keda__deactivations d
      on d.cluster is not distinct from l.cluster and d.namespace || '/' || d.name = o.owner
     and d.deactivated_at >= l.scheduled_at and d.deactivated_at <= s.last_finished_at + interval 60 second
    where o.owner_kind = 'ScaledObject'
    group by s.session_id
),

classified as (
    select
        s.session_id, s.resource_id, s.last_finished_at, s.end_at, s.covered_until,
        l.namespace || '/' || l.pod_name as last_pod, l.node_name,
        case when o.owner_kind = 'ScaledJob' then 'scaled_job'
             when o.owner_kind = 'ScaledObject' and z.deactivated_at is not null then 'scale_to_zero'
             when o.owner_kind = 'ScaledObject' then 'hpa_scale_in'
             else 'unknown' end as scaler,
        o.owner, z.deactivated_at,
        -- the pod's owner as int_k8s__pod_owners names it (a Deployment or Job too), whatever
        -- scaler the KEDA object, if any, says
        l.cluster, l.namespace, p.owner_kind, p.owner_name, p.team,
        case when o.owner_kind = 'ScaledObject' then o.cooldown_seconds
             when o.owner_kind is null then cfg_int('keda_cooldown_seconds') end as cooldown_seconds,
        o.stabilization_seconds,
        cfg_int('scale_down_grace_seconds') as grace_seconds,
        cfg_int('tail_tolerance_seconds') as tolerance_seconds
    from sessions s
    join last_pod l using (session_id)
    left join pod_owners p using (session_id)
    left join owners o using (session_id)
    left join scaled_to_zero z using (session_id)
),

final as (
    select
        *,
        -- the seconds allowed after the last task: only the unknown scaler's cooldown is in them
        case when scaler = 'unknown' then cooldown_seconds else 0 end + grace_seconds + tolerance_seconds
            as allowed_seconds,
        case scaler
            when 'scaled_job' then 'ScaledJob ' || owner || ': no cooldownPeriod, a Job ends with its task'
            when 'scale_to_zero' then 'KEDA scaled ScaledObject ' || owner || ' to zero at '
                || strftime(deactivated_at, '%Y-%m-%dT%H:%M:%SZ') || ', after its cooldownPeriod '
                || cooldown_seconds || ' s, which ran while the replica lived (1 → 0), 0 s after it'
            when 'hpa_scale_in' then 'the HPA of ScaledObject ' || owner || ' scaled the replica in (N → 1) after its '
                || 'scaleDown stabilizationWindowSeconds ' || stabilization_seconds
                || ' s, which ran while the replica lived (cooldownPeriod applies only to 1 → 0), 0 s after it'
            else 'no ScaledObject or ScaledJob in the input owns it: KEDA cooldownPeriod '
                || cooldown_seconds || ' s (keda_cooldown_seconds)'
        end || ' + node scale-down (cluster autoscaler or the provider) scale_down_grace_seconds '
            || grace_seconds || ' s + tail_tolerance_seconds ' || tolerance_seconds || ' s' as allowed_parts
    from classified
)

select * from final
