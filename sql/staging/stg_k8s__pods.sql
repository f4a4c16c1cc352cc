-- grain: one row per distinct Pod version (cluster, pod_uid, resource_version).
-- Renames and casts only; the main container is the first one with a GPU limit (else the first).
with source as (
    select * from raw.k8s_objects where kind = 'Pod'
),

typed as (
    select
        cluster,
        uid as pod_uid,
        coalesce(nullif(resource_version, ''), md5(doc::varchar)) as resource_version,
        event_type,
        source_file,
        record_no,
        doc ->> '$.metadata.namespace' as namespace,
        doc ->> '$.metadata.name' as pod_name,
        doc ->> '$.spec.nodeName' as node_name,
        try_cast(doc ->> '$.metadata.creationTimestamp' as timestamptz) as created_at,
        try_cast(doc ->> '$.metadata.deletionTimestamp' as timestamptz) as deletion_at,
        try_cast(doc ->> '$.metadata.deletionGracePeriodSeconds' as bigint) as deletion_grace_seconds,
        try_cast(doc ->> '$.status.startTime' as timestamptz) as kubelet_started_at,
        doc ->> '$.status.phase' as phase,
        doc -> '$.metadata.labels' as labels,
        json_transform(doc -> '$.status.conditions',
            '[{"type":"VARCHAR","status":"VARCHAR","lastTransitionTime":"TIMESTAMPTZ","reason":"VARCHAR"}]'
        ) as conditions,
        json_transform(doc -> '$.spec.containers',
            '[{"name":"VARCHAR","resources":{"limits":"JSON","requests":"JSON"},
               "startupProbe":{"periodSeconds":"BIGINT","failureThreshold":"BIGINT","initialDelaySeconds":"BIGINT"}}]'
        ) as containers,
        json_transform(doc -> '$.status.containerStatuses',
            '[{"name":"VARCHAR","restartCount":"BIGINT","started":"BOOLEAN","ready":"BOOLEAN",
               "state":{"running":{"startedAt":"TIMESTAMPTZ"},
                        "terminated":{"startedAt":"TIMESTAMPTZ","finishedAt":"TIMESTAMPTZ","reason":"VARCHAR","exitCode":"BIGINT"}},
               "lastState":{"terminated":{"startedAt":"TIMESTAMPTZ","finishedAt":"TIMESTAMPTZ","reason":"VARCHAR","exitCode":"BIGINT"}}}]'
        ) as container_statuses
    from source
    where try_cast(doc ->> '$.metadata.creationTimestamp' as timestamptz) is not null
),

with_main as (
    select
        *,
        coalesce(
            list_filter(containers, lambda c: coalesce(try_cast(c.resources.limits ->> '$."nvidia.com/gpu"' as bigint), 0) > 0)[1],
            containers[1]
        ) as main_container,
        list_sum(list_transform(containers,
            lambda c: coalesce(try_cast(c.resources.limits ->> '$."nvidia.com/gpu"' as bigint), 0))) as gpus,
        list_sum(list_transform(containers,
            lambda c: coalesce(try_cast(c.resources.requests ->> '$."nvidia.com/gpu"' as bigint), 0))) as gpus_requested
    from typed
),

final as (
    select
        cluster, pod_uid, resource_version, event_type, namespace, pod_name, node_name,
        created_at, deletion_at, deletion_grace_seconds, kubelet_started_at, phase, labels,
        coalesce(gpus, 0) as gpus,
        coalesce(gpus_requested, 0) as gpus_requested,
        main_container.name as main_container_name,
        main_container.startupProbe.periodSeconds as startup_period_seconds,
        main_container.startupProbe.failureThreshold as startup_failure_threshold,
        list_filter(conditions, lambda c: c.type = 'PodScheduled' and c.status = 'True')[1].lastTransitionTime
            as scheduled_at,
        list_filter(conditions, lambda c: c.type in ('Ready', 'ContainersReady') and c.status = 'True')[1].lastTransitionTime
            as ready_at,
        list_filter(container_statuses, lambda s: s.name = main_container.name)[1] as main_status,
        source_file,
        record_no
    from with_main
    qualify row_number() over (
        partition by cluster, pod_uid, resource_version order by source_file, record_no) = 1
)

select * from final
