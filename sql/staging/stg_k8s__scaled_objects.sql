-- grain: one row per KEDA ScaledObject / ScaledJob (cluster, kind, namespace, name), latest version.
-- incremental: key (cluster, kind, namespace, name) order (try_cast(resource_version as hugeint) desc nulls last, source_file desc, record_no desc)
-- (that header is the dedupe: the build keeps one row per key, the first in that order)
with source as (
    select * from raw.k8s_objects where kind in ('ScaledObject', 'ScaledJob')
),

final as (
    select
        cluster,
        kind,
        doc ->> '$.metadata.namespace' as namespace,
        doc ->> '$.metadata.name' as name,
        doc ->> '$.spec.scaleTargetRef.name' as target_name,
        coalesce(try_cast(doc ->> '$.spec.pollingInterval' as bigint), 30) as polling_interval_seconds,
        case when kind = 'ScaledObject'
             then coalesce(try_cast(doc ->> '$.spec.cooldownPeriod' as bigint), 300) end
            as cooldown_seconds,
        coalesce(try_cast(doc ->> '$.spec.minReplicaCount' as bigint), 0) as min_replicas,
        resource_version,
        source_file,
        record_no
    from source
)

select * from final
