-- grain: one row per Kubernetes pod (cluster, pod_uid): its lifecycle, folded over every version.
-- A workload's window is [scheduled_at, window_end_at); window_end_at is the main container's
-- last finishedAt, else the deletion request, else open (2100-01-01: still running at data end).
with versions as (
    select * from staging.stg_k8s__pods
),

scheduled_events as (
    select cluster, object_uid as pod_uid, min(first_at) as scheduled_event_at
    from staging.stg_k8s__events
    where object_kind = 'Pod' and reason = 'Scheduled'
    group by all
),

folded as (
    select
        cluster,
        pod_uid,
        arg_max(namespace, created_at) as namespace,
        arg_max(pod_name, created_at) as pod_name,
        max(node_name) as node_name,
        max(gpus) as gpus,
        max(gpus_requested) as gpus_requested,
        max(mig_devices) as mig_devices,
        max(mig_slices) as mig_slices,
        max(mig_profiles) as mig_profiles,
        min(created_at) as created_at,
        min(scheduled_at) as scheduled_at,
        min(kubelet_started_at) as kubelet_started_at,
        min(least(main_status.state.running.startedAt, main_status.state.terminated.startedAt,
                  main_status.lastState.terminated.startedAt)) as started_at,
        min(ready_at) as ready_at,
        max(main_status.state.terminated.finishedAt) as task_finished_at,
        arg_max(main_status.state.terminated.reason, main_status.state.terminated.finishedAt) as exit_reason,
        arg_max(main_status.state.terminated.exitCode, main_status.state.terminated.finishedAt) as exit_code,
        coalesce(max(main_status.restartCount), 0) as restarts,
        min(deletion_at - to_seconds(coalesce(deletion_grace_seconds, 0))) as deletion_requested_at,
        bool_or(event_type = 'DELETED') as deleted,
        max(label_of(labels, team_labels())) as team,
        -- the workload a pod belongs to: a naming label, else its name without generated suffixes
        coalesce(nullif(max(labels ->> '$."app.kubernetes.io/name"'), ''), nullif(max(labels ->> '$.app'), ''),
                 nullif(max(labels ->> '$."scaledjob.keda.sh/name"'), ''),
                 nullif(regexp_replace(regexp_replace(arg_max(pod_name, created_at), '-[a-z0-9]{5}$', ''),
                                       '-([0-9]{8,}|[a-z0-9]{9,10})$', ''), '')) as workload,
        max(startup_period_seconds) as startup_period_seconds,
        max(startup_failure_threshold) as startup_failure_threshold,
        count(*) as versions_seen
    from versions
    group by cluster, pod_uid
),

watched as (
    select
        f.* exclude (scheduled_at),
        coalesce(f.scheduled_at, e.scheduled_event_at,
                 case when f.node_name is not null then f.kubelet_started_at end) as scheduled_at,
        -- the pod's removal: the earliest instant every version allows, the deletion request or,
        -- if later, the main container's finish (the kubelet removes a pod once its containers
        -- stopped). A real stream's DELETED version carries the request's deletionTimestamp with
        -- grace 0 (the earlier ones the same instant + 30 s with grace 30): the request is the
        -- grace period's start, not the removal. Not the collector's seenAt of the DELETED
        -- event: a watch resumed after a pause, or history replayed, delivers it late.
        case when f.deleted then greatest(f.deletion_requested_at, f.task_finished_at) end
            as deleted_at,
        coalesce(f.task_finished_at, f.deletion_requested_at, '2100-01-01'::timestamptz) as window_end_at,
        'watch' as lifecycle_source
    from folded f
    left join scheduled_events e using (cluster, pod_uid)
),

backfilled as (
    -- pods known only from kube-state-metrics (days before the collector ran): coarser
    select
        p.cluster, coalesce(p.pod_uid, p.namespace || '/' || p.pod_name) as pod_uid, p.namespace,
        p.pod_name, p.node_name, p.gpus, p.gpus as gpus_requested,
        -- kube-state-metrics' MIG resources are not read: such a pod holds none here
        0 as mig_devices, 0 as mig_slices, null as mig_profiles, p.created_at,
        p.started_at as kubelet_started_at, p.started_at, p.ready_at, p.task_finished_at,
        null as exit_reason, null as exit_code, 0 as restarts, null as deletion_requested_at,
        false as deleted, p.team,
        regexp_replace(regexp_replace(p.pod_name, '-[a-z0-9]{5}$', ''), '-([0-9]{8,}|[a-z0-9]{9,10})$', '')
            as workload,
        null as startup_period_seconds, null as startup_failure_threshold, 0 as versions_seen,
        coalesce(p.scheduled_at, p.started_at) as scheduled_at,
        null as deleted_at,
        coalesce(p.task_finished_at, p.last_seen_at, '2100-01-01'::timestamptz) as window_end_at,
        'prometheus' as lifecycle_source
    from intermediate.int_k8s__prometheus_pods p
    -- every watched pod, not only a windowed run's scope: a pod the watch saw is never backfilled
    where not exists (select 1 from staging.stg_k8s__pod_life f
                      where f.cluster = p.cluster and (f.pod_uid = p.pod_uid
                            or (f.namespace = p.namespace and f.pod_name = p.pod_name)))
),

final as (
    select * from watched
    union all by name
    select * from backfilled
)

select * from final
