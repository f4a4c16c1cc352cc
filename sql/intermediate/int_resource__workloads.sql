-- grain: one row per GPU workload (pod with a GPU or MIG limit, scheduled on a node) with its
-- resource and what it held of the node's GPUs, in slots (intermediate.int_k8s__node_gpus): each
-- `nvidia.com/gpu` is `slots_per_gpu_request` slots (one replica of a time-sliced GPU, a whole
-- MIG GPU's 7 compute slices, else one GPU), each MIG device its profile's <n> compute slices
-- (`nvidia.com/mig-1g.10gb` 1) where the node's MIG labels are whole, else one slot (a whole GPU).
-- gpu_fraction: the physical GPUs that is, slots ÷ slots per physical GPU (1/4 for one replica of
-- a GPU time-sliced 4 ways, 1/7 for a 1g MIG device of an A100), rounded to 6 places for reading;
-- the shares are computed from the slots.
with workloads as (
    select * from intermediate.int_k8s__workloads
),

node_resources as (
    select * from intermediate.int_k8s__node_resources
),

node_gpus as (
    select * from intermediate.int_k8s__node_gpus
),

held as (
    select
        w.*,
        r.resource_id,
        w.gpus * coalesce(n.slots_per_gpu_request, 1)
            + case when n.mig_fractional then w.mig_slices
                   else w.mig_devices * coalesce(n.slots_per_gpu_request, 1) end as gpu_slots,
        coalesce(n.slots_per_gpu, 1) as slots_per_gpu
    from workloads w
    join node_resources r using (cluster, node_name)
    left join node_gpus n using (cluster, node_name)
),

final as (
    select
        cluster, pod_uid, namespace, pod_name, node_name, team, workload, gpus,
        resource_id,
        scheduled_at,
        ready_at,
        window_end_at,
        mig_devices, mig_profiles, gpu_slots, slots_per_gpu,
        cast(gpu_slots / slots_per_gpu as decimal(18, 6)) as gpu_fraction
    from held
    where gpu_slots > 0 and scheduled_at is not null and window_end_at > scheduled_at
)

select * from final
