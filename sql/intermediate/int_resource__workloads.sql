-- grain: one row per GPU workload (pod with a GPU limit, scheduled on a node) with its resource.
with workloads as (
    select * from intermediate.int_k8s__workloads
),

node_resources as (
    select * from intermediate.int_k8s__node_resources
),

final as (
    select
        w.cluster, w.pod_uid, w.namespace, w.pod_name, w.node_name, w.team, w.workload, w.gpus,
        r.resource_id,
        w.scheduled_at,
        w.ready_at,
        w.window_end_at
    from workloads w
    join node_resources r using (cluster, node_name)
    where w.gpus > 0 and w.scheduled_at is not null and w.window_end_at > w.scheduled_at
)

select * from final
