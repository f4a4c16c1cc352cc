-- grain: one row per distinct Pod version (cluster, pod_uid, resource_version).
-- Renames and casts only; the main container is the first one with a GPU or MIG limit (else the
-- first).
-- Each document is parsed once (json_transform into a struct), not once per field, and every
-- field it needs comes out typed (metadata, the GPU limits: a map, since MIG resources are named
-- by their profile): nothing is parsed a second time
-- (`labels: null` and no labels both stage as NULL; every reader takes keys of them with ->>).
-- owner_kind, owner_name: the pod's controller as metadata.ownerReferences names it (the entry
-- with `controller: true`, else the first; NULL for a bare pod): a ReplicaSet, Job,
-- StatefulSet, DaemonSet... int_k8s__pod_owners resolves the workload behind it.
-- (its `incremental` setting, sql/staging/_models.toml, is the dedupe: the build keeps one row
-- per key, the first in that order;
-- a version landed again with the same document is dropped before parsing, below, which keeps
-- the same rows: the first valid row of a key is the first of its own document's rows)
-- (its `bounds` setting keeps meta.bounds__stg_k8s__pods: when each pod's versions were
-- created, first and last, so that refolding stg_k8s__pod_life for the pods a run touched
-- reads only those row groups)
with versions as materialized (
    -- no documents here (a CTE read three times is kept in memory): keys and a hash of each
    select cluster, uid, source_file, record_no, hash(doc) as doc_hash,
           coalesce(nullif(resource_version, ''), md5(doc::varchar)) as resource_version
    from raw.k8s_objects
    where kind = 'Pod'
),

-- the same version landed again with the same document (a relist, a second collector):
-- only its first row is parsed. Groups are found on hashes, and only their rows are ranked.
repeated as (
    select cluster, uid, resource_version, doc_hash
    from versions
    group by all
    having count(*) > 1
),

again as (
    select source_file, record_no
    from versions semi join repeated using (cluster, uid, resource_version, doc_hash)
    qualify row_number() over (partition by cluster, uid, resource_version, doc_hash
                               order by source_file, record_no) > 1
),

source as materialized (
    select
        cluster, uid, event_type, source_file, record_no,
        coalesce(nullif(resource_version, ''), md5(doc::varchar)) as resource_version,
        json_transform(doc, '{
            "metadata": {"namespace": "VARCHAR", "name": "VARCHAR", "creationTimestamp": "VARCHAR",
                         "deletionTimestamp": "VARCHAR", "deletionGracePeriodSeconds": "VARCHAR",
                         "labels": "JSON",
                         "ownerReferences": [{"kind": "VARCHAR", "name": "VARCHAR", "controller": "BOOLEAN"}]},
            "spec": {"nodeName": "VARCHAR",
                     "containers": [{"name": "VARCHAR",
                                     "resources": {"limits": "MAP(VARCHAR, VARCHAR)",
                                                   "requests": {"nvidia.com/gpu": "VARCHAR"}},
                                     "startupProbe": {"periodSeconds": "BIGINT", "failureThreshold": "BIGINT",
                                                      "initialDelaySeconds": "BIGINT"}}]},
            "status": {"startTime": "VARCHAR", "phase": "VARCHAR",
                       "conditions": [{"type": "VARCHAR", "status": "VARCHAR",
                                       "lastTransitionTime": "TIMESTAMPTZ", "reason": "VARCHAR"}],
                       "containerStatuses": [{"name": "VARCHAR", "restartCount": "BIGINT",
                            "started": "BOOLEAN", "ready": "BOOLEAN",
                            "state": {"running": {"startedAt": "TIMESTAMPTZ"},
                                      "terminated": {"startedAt": "TIMESTAMPTZ", "finishedAt": "TIMESTAMPTZ",
                                                     "reason": "VARCHAR", "exitCode": "BIGINT"}},
                            "lastState": {"terminated": {"startedAt": "TIMESTAMPTZ", "finishedAt": "TIMESTAMPTZ",
                                                         "reason": "VARCHAR", "exitCode": "BIGINT"}}}]}
        }') as j
    from raw.k8s_objects anti join again using (source_file, record_no)
    where kind = 'Pod'
),

typed as (
    select
        cluster,
        uid as pod_uid,
        resource_version,
        event_type,
        source_file,
        record_no,
        j.metadata.namespace as namespace,
        j.metadata.name as pod_name,
        j.spec.nodeName as node_name,
        try_cast(j.metadata.creationTimestamp as timestamptz) as created_at,
        try_cast(j.metadata.deletionTimestamp as timestamptz) as deletion_at,
        try_cast(j.metadata.deletionGracePeriodSeconds as bigint) as deletion_grace_seconds,
        try_cast(j.status.startTime as timestamptz) as kubelet_started_at,
        j.status.phase as phase,
        j.metadata.labels as labels,
        coalesce(list_filter(j.metadata.ownerReferences, lambda r: r.controller)[1],
                 j.metadata.ownerReferences[1]) as owner_ref,
        j.status.conditions as conditions,
        j.spec.containers as containers,
        j.status.containerStatuses as container_statuses
    from source
    where try_cast(j.metadata.creationTimestamp as timestamptz) is not null
),

with_main as (
    select
        *,
        coalesce(
            list_filter(containers, lambda c: coalesce(try_cast(c.resources.limits['nvidia.com/gpu'] as bigint), 0) > 0
                or list_bool_or(list_transform(map_keys(c.resources.limits),
                                               lambda k: starts_with(k, 'nvidia.com/mig-'))))[1],
            containers[1]
        ) as main_container,
        list_sum(list_transform(containers,
            lambda c: coalesce(try_cast(c.resources.limits['nvidia.com/gpu'] as bigint), 0))) as gpus,
        list_sum(list_transform(containers,
            lambda c: coalesce(try_cast(c.resources.requests."nvidia.com/gpu" as bigint), 0))) as gpus_requested,
        -- MIG devices the pod holds instead of whole GPUs (the mixed strategy's resources,
        -- `nvidia.com/mig-<n>g.<memory>gb`, NVIDIA k8s-device-plugin README): how many, their
        -- compute slices (<n> each) and their names, for int_k8s__node_gpus' fraction
        flatten(list_transform(containers, lambda c: list_filter(map_entries(c.resources.limits),
            lambda e: regexp_matches(e.key, '^nvidia\.com/mig-[0-9]+g\.')
                      and coalesce(try_cast(e.value as bigint), 0) > 0))) as mig_limits
    from typed
),

final as (
    select
        cluster, pod_uid, resource_version, event_type, namespace, pod_name, node_name,
        created_at, deletion_at, deletion_grace_seconds, kubelet_started_at, phase, labels,
        owner_ref.kind as owner_kind,
        owner_ref.name as owner_name,
        coalesce(gpus, 0) as gpus,
        coalesce(gpus_requested, 0) as gpus_requested,
        coalesce(list_sum(list_transform(mig_limits, lambda e: try_cast(e.value as bigint))), 0) as mig_devices,
        coalesce(list_sum(list_transform(mig_limits, lambda e: try_cast(e.value as bigint)
            * cast(regexp_extract(e.key, '^nvidia\.com/mig-([0-9]+)g\.', 1) as bigint))), 0) as mig_slices,
        nullif(array_to_string(list_sort(list_transform(mig_limits,
            lambda e: substr(e.key, 12) || ': ' || try_cast(e.value as bigint))), ', '), '') as mig_profiles,
        main_container.name as main_container_name,
        main_container.startupProbe.periodSeconds as startup_period_seconds,
        main_container.startupProbe.failureThreshold as startup_failure_threshold,
        list_filter(conditions, lambda c: c.type = 'PodScheduled' and c.status = 'True')[1].lastTransitionTime
            as scheduled_at,
        list_filter(conditions, lambda c: c.type in ('Ready', 'ContainersReady') and c.status = 'True')[1].lastTransitionTime
            as ready_at,
        list_filter(container_statuses, lambda s: s.name = main_container.name)[1] as main_status,
        -- flat copy for sql/scope/ (reads every version each run; a struct costs more to read)
        list_filter(container_statuses, lambda s: s.name = main_container.name)[1].state.terminated.finishedAt
            as main_finished_at,
        source_file,
        record_no
    from with_main
)

select * from final
