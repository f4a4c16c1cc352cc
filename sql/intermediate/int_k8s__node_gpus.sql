-- grain: one row per Kubernetes node (cluster, node_name) with a GPU capacity or NVIDIA labels:
-- how its GPUs are shared, and the unit every GPU share on it is counted in (`slots`).
-- Sources (NVIDIA k8s-device-plugin README, "Shared Access to GPUs" and "Catalog of Labels";
-- docs/gfd_labels.md):
-- * time-slicing (`sharing.timeSlicing.resources[].replicas`) and MPS: the node advertises
--   physical GPUs × replicas `nvidia.com/gpu`; GPU feature discovery labels it
--   `nvidia.com/gpu.sharing-strategy` = `time-slicing` / `mps`, `nvidia.com/gpu.replicas` and
--   `nvidia.com/gpu.count` (physical GPUs). One slot is one replica: a physical GPU is
--   `replicas` slots, and a pod holding r replicas holds r / replicas of a GPU.
-- * MIG, mixed strategy (`nvidia.com/mig.strategy` = `mixed`): pods request
--   `nvidia.com/mig-<n>g.<memory>gb`, a GPU instance of <n> compute slices. One slot is one
--   compute slice: a physical GPU is 7 slots on an A100 or H100 (`nvidia.com/gpu.product`), a
--   whole `nvidia.com/gpu` 7, `nvidia.com/mig-1g.10gb: 1` 1 (1/7 of a GPU); the node's GPUs are
--   its `nvidia.com/gpu.count`.
-- * anything else (no sharing labels): one slot is one `nvidia.com/gpu`, as it always was.
-- A node whose sharing labels are missing or malformed (replicas not a positive integer, the
-- capacity not physical × replicas, a MIG product without a known slice count, no GPU count)
-- falls back to whole GPUs (each `nvidia.com/gpu` and each MIG device one slot) and says why
-- in `gpu_note`. MIG's single strategy (each `nvidia.com/gpu` is a MIG device) is one of them.
-- Labels are the last version's landed (a device plugin reconfigured mid-life keeps one rule).
with versions as (
    select * from staging.stg_k8s__nodes
),

labelled as (
    select
        cluster,
        node_name,
        max(gpu_capacity) as gpu_capacity,
        arg_max(labels, (source_file, record_no)) as labels
    from versions
    group by all
),

parsed as (
    select
        cluster, node_name, gpu_capacity as advertised, coalesce(gpu_capacity, 0) as gpu_capacity,
        labels ->> '$."nvidia.com/gpu.sharing-strategy"' as sharing_strategy,
        labels ->> '$."nvidia.com/gpu.replicas"' as replicas_label,
        labels ->> '$."nvidia.com/gpu.count"' as count_label,
        labels ->> '$."nvidia.com/gpu.product"' as gpu_product,
        labels ->> '$."nvidia.com/mig.strategy"' as mig_strategy,
        try_cast(labels ->> '$."nvidia.com/gpu.replicas"' as integer) as replicas,
        try_cast(labels ->> '$."nvidia.com/gpu.count"' as integer) as gpu_count,
        -- compute slices of one GPU: 7 on an A100 and an H100 (NVIDIA MIG user guide)
        case when regexp_matches(labels ->> '$."nvidia.com/gpu.product"', 'A100|H100') then 7 end
            as mig_gpu_slices
    from labelled
),

ruled as (
    select
        *,
        coalesce(sharing_strategy in ('time-slicing', 'mps'), false) as replica_sharing,
        coalesce(sharing_strategy in ('time-slicing', 'mps')
                 and replicas >= 1 and gpu_capacity > 0 and gpu_capacity % replicas = 0
                 and (count_label is null or gpu_count * replicas = gpu_capacity), false) as replicas_ok,
        coalesce(mig_strategy = 'mixed', false) as mig_mixed,
        coalesce(mig_strategy = 'mixed' and mig_gpu_slices is not null and gpu_count >= 1, false) as mig_ok
    from parsed
),

final as (
    select
        cluster,
        node_name,
        advertised as gpu_capacity,
        case when replicas_ok then sharing_strategy
             when mig_ok then 'mig-mixed'
             else 'none' end as gpu_sharing,
        case when replicas_ok then replicas else 1 end as gpu_replicas,
        case when replicas_ok then gpu_capacity // replicas
             when mig_ok then gpu_count
             when mig_mixed and gpu_count >= 1 then greatest(gpu_count, gpu_capacity)
             else advertised end as physical_gpus,
        -- slots in one physical GPU, and in one whole `nvidia.com/gpu` a pod holds
        case when replicas_ok then replicas when mig_ok then mig_gpu_slices else 1 end as slots_per_gpu,
        case when mig_ok then mig_gpu_slices else 1 end as slots_per_gpu_request,
        mig_ok as mig_fractional,
        case when replicas_ok then gpu_capacity
             when mig_ok then gpu_count * mig_gpu_slices
             when mig_mixed and gpu_count >= 1 then greatest(gpu_count, gpu_capacity)
             else gpu_capacity end as capacity_slots,
        gpu_product,
        case
            when replica_sharing and not replicas_ok then
                'nvidia.com/gpu.sharing-strategy=' || sharing_strategy || ' but nvidia.com/gpu.replicas='
                || coalesce(replicas_label, '(missing)') || ', nvidia.com/gpu.count=' || coalesce(count_label, '(missing)')
                || ' and capacity nvidia.com/gpu=' || gpu_capacity
                || ' do not make capacity = GPUs × replicas: counted in whole nvidia.com/gpu'
            when mig_mixed and not mig_ok then
                'nvidia.com/mig.strategy=mixed but ' || case when mig_gpu_slices is null
                    then 'nvidia.com/gpu.product=' || coalesce(gpu_product, '(missing)')
                         || ' has no known MIG slice count (7: A100, H100)'
                    else 'nvidia.com/gpu.count=' || coalesce(count_label, '(missing)') || ' is not a GPU count' end
                || ': each MIG device counted as a whole GPU'
            when mig_strategy = 'single' then
                'nvidia.com/mig.strategy=single: each nvidia.com/gpu is a MIG device, counted as a whole GPU'
        end as gpu_note
    from ruled
)

select * from final
