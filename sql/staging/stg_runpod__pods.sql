-- grain: one row per pod inventory snapshot (/v2/pods item at pulled_at).
with source as (
    select * from raw.runpod_inventory where inventory_kind = 'pods'
),

final as (
    select
        doc ->> '$.id' as pod_id,
        doc ->> '$.name' as pod_name,
        try_cast(pulled_at as timestamptz) as snapshot_at,
        doc ->> '$.status' as status,
        coalesce(try_cast(doc ->> '$.adjustedCostPerHr' as decimal(38, 12)),
                 try_cast(doc ->> '$.costPerHr' as decimal(38, 12)),
                 try_cast(doc ->> '$.cost' as decimal(38, 12))) as cost_per_hour_usd,
        coalesce(doc ->> '$.gpu.id', doc ->> '$.gpuTypeId', doc ->> '$.machine.gpuTypeId') as gpu_type,
        coalesce(try_cast(doc ->> '$.gpu.count' as bigint), try_cast(doc ->> '$.gpuCount' as bigint))
            as gpu_count,
        -- v2 `Pod.cloud` (required, `Cloud`: SECURE or COMMUNITY), v1 `cloudType`: which of the
        -- catalog's list prices is the pod's; NULL when the snapshot names neither
        upper(coalesce(doc ->> '$.cloud', doc ->> '$.cloudType')) as cloud,
        coalesce(try_cast(doc ->> '$.disk' as bigint), try_cast(doc ->> '$.containerDiskInGb' as bigint))
            as container_disk_gb,
        -- v2 `mounts` holds at most one of `persistent` (the pod volume) and `network`: a pod
        -- listed with `mounts` and no `persistent` has no pod volume (0 GB, not unknown)
        coalesce(try_cast(doc ->> '$.mounts.persistent.size' as bigint),
                 try_cast(doc ->> '$.volumeInGb' as bigint),
                 case when json_type(doc, '$.mounts') = 'OBJECT' then 0 end) as volume_gb,
        coalesce(doc ->> '$.mounts.networkVolume.id', doc ->> '$.networkVolumeId') as network_volume_id,
        try_cast(doc ->> '$.createdAt' as timestamptz) as created_at,
        try_cast(doc ->> '$.startedAt' as timestamptz) as started_at
    from source
)

select * from final
