-- grain: one row per billed resource with Kubernetes nodes: the GPUs its node exposes
-- (status.capacity nvidia.com/gpu, the largest seen) and the same capacity in slots, the unit
-- GPU shares are counted in (intermediate.int_k8s__node_gpus: one replica of a time-sliced GPU,
-- one compute slice of a MIG GPU, else one GPU), the denominator of GPU shares.
with node_gpus as (
    select * from intermediate.int_k8s__node_gpus
),

node_resources as (
    select * from intermediate.int_k8s__node_resources
),

final as (
    select r.resource_id, max(n.gpu_capacity) as gpus, max(n.capacity_slots) as slots,
           max(n.physical_gpus) as physical_gpus, max(n.slots_per_gpu) as slots_per_gpu
    from node_gpus n
    join node_resources r using (cluster, node_name)
    group by all
)

select * from final
