-- grain: one row per distinct Node version (cluster, node_uid, resource_version).
-- (its `incremental` setting, sql/staging/_models.toml, is the dedupe: the build keeps one row
-- per key, the first in that order)
with source as (
    select * from raw.k8s_objects where kind = 'Node'
),

final as (
    select
        cluster,
        uid as node_uid,
        coalesce(nullif(resource_version, ''), md5(doc::varchar)) as resource_version,
        event_type,
        doc ->> '$.metadata.name' as node_name,
        doc -> '$.metadata.labels' as labels,
        doc ->> '$.spec.providerID' as provider_id,
        try_cast(doc ->> '$.metadata.creationTimestamp' as timestamptz) as created_at,
        try_cast(doc ->> '$.metadata.deletionTimestamp' as timestamptz) as deletion_at,
        try_cast(doc ->> '$.status.capacity."nvidia.com/gpu"' as bigint) as gpu_capacity,
        list_filter(
            json_transform(doc -> '$.status.conditions',
                '[{"type":"VARCHAR","status":"VARCHAR","lastTransitionTime":"TIMESTAMPTZ"}]'),
            lambda c: c.type = 'Ready')[1] as ready_condition,
        source_file,
        record_no
    from source
)

select * from final
