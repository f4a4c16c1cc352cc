-- grain: one row per pod known only from kube-state-metrics (cluster, namespace, pod_name):
-- its lifecycle from the *_time metrics' values. Coarser than a watch: sampled at the query
-- step; a pod that lived less than one step can be missing.
with m as (
    select * from staging.stg_prometheus__pod_metrics
),

final as (
    select
        cluster, namespace, pod_name,
        max(pod_uid) as pod_uid,
        max(node_name) filter (where metric = 'kube_pod_info') as node_name,
        max(team) filter (where metric = 'kube_pod_labels') as team,
        cast(coalesce(sum(last_value) filter (where metric = 'kube_pod_container_resource_limits' and resource = 'nvidia_com_gpu'), 0) as bigint) as gpus,
        to_timestamp(max(last_value) filter (where metric = 'kube_pod_created')) as created_at,
        to_timestamp(max(last_value) filter (where metric = 'kube_pod_status_scheduled_time')) as scheduled_at,
        to_timestamp(max(last_value) filter (where metric = 'kube_pod_start_time')) as started_at,
        to_timestamp(min(last_value) filter (where metric = 'kube_pod_status_ready_time')) as ready_at,
        to_timestamp(coalesce(max(last_value) filter (where metric = 'kube_pod_completion_time'),
                              max(last_value) filter (where metric = 'kube_pod_container_status_last_terminated_timestamp')))
            as task_finished_at,
        to_timestamp(max(last_seen_epoch) filter (where metric = 'kube_pod_info')) as last_seen_at
    from m
    where pod_name is not null
    group by cluster, namespace, pod_name
)

select * from final
