-- grain: one row per Event object (cluster, event_uid), core/v1 and events.k8s.io/v1 unified.
-- Scheduler and KEDA events often carry only eventTime: fall back eventTime → lastTimestamp →
-- metadata.creationTimestamp (reference/kubernetes-lifecycle.md).
with source as (
    select * from raw.k8s_objects where kind = 'Event'
),

unified as (
    select
        cluster,
        uid as event_uid,
        resource_version,
        coalesce(doc ->> '$.involvedObject.kind', doc ->> '$.regarding.kind') as object_kind,
        coalesce(doc ->> '$.involvedObject.namespace', doc ->> '$.regarding.namespace') as object_namespace,
        coalesce(doc ->> '$.involvedObject.name', doc ->> '$.regarding.name') as object_name,
        coalesce(doc ->> '$.involvedObject.uid', doc ->> '$.regarding.uid') as object_uid,
        doc ->> '$.reason' as reason,
        coalesce(doc ->> '$.message', doc ->> '$.note') as message,
        doc ->> '$.type' as event_type,
        coalesce(try_cast(doc ->> '$.count' as bigint), try_cast(doc ->> '$.series.count' as bigint), 1)
            as event_count,
        coalesce(
            try_cast(doc ->> '$.firstTimestamp' as timestamptz),
            try_cast(doc ->> '$.deprecatedFirstTimestamp' as timestamptz),
            try_cast(doc ->> '$.eventTime' as timestamptz),
            try_cast(doc ->> '$.metadata.creationTimestamp' as timestamptz)) as first_at,
        coalesce(
            try_cast(doc ->> '$.eventTime' as timestamptz),
            try_cast(doc ->> '$.series.lastObservedTime' as timestamptz),
            try_cast(doc ->> '$.lastTimestamp' as timestamptz),
            try_cast(doc ->> '$.deprecatedLastTimestamp' as timestamptz),
            try_cast(doc ->> '$.metadata.creationTimestamp' as timestamptz)) as last_at,
        source_file,
        record_no
    from source
),

final as (
    select * from unified
    where last_at is not null
    qualify row_number() over (partition by cluster, event_uid
                               order by try_cast(resource_version as hugeint) desc nulls last,
                                        source_file desc, record_no desc) = 1
)

select * from final
