-- grain: one row per billed resource with Kubernetes nodes: the GPUs its node exposes
-- (status.capacity nvidia.com/gpu, the largest seen), the denominator of GPU shares.
with nodes as (
    select * from staging.stg_k8s__nodes
),

node_resources as (
    select * from intermediate.int_k8s__node_resources
),

final as (
    select r.resource_id, max(n.gpu_capacity) as gpus
    from nodes n
    join node_resources r using (cluster, node_name)
    group by all
)

select * from final
