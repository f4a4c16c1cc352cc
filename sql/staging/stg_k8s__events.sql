-- grain: one row per Event object (cluster, event_uid), core/v1 and events.k8s.io/v1 unified.
-- Scheduler and KEDA events often carry only eventTime: fall back eventTime → lastTimestamp →
-- metadata.creationTimestamp (reference/kubernetes-lifecycle.md).
-- Each document is parsed once (json_transform into a struct), not once per field.
-- (its `incremental` setting, sql/staging/_models.toml, is the dedupe: the build keeps one row
-- per key, the first in that order)
with source as materialized (
    select
        cluster, uid, resource_version, source_file, record_no,
        json_transform(doc, '{
            "involvedObject": {"kind": "VARCHAR", "namespace": "VARCHAR", "name": "VARCHAR", "uid": "VARCHAR"},
            "regarding": {"kind": "VARCHAR", "namespace": "VARCHAR", "name": "VARCHAR", "uid": "VARCHAR"},
            "reason": "VARCHAR", "message": "VARCHAR", "note": "VARCHAR", "type": "VARCHAR",
            "count": "VARCHAR", "series": {"count": "VARCHAR", "lastObservedTime": "VARCHAR"},
            "firstTimestamp": "VARCHAR", "deprecatedFirstTimestamp": "VARCHAR", "eventTime": "VARCHAR",
            "lastTimestamp": "VARCHAR", "deprecatedLastTimestamp": "VARCHAR",
            "metadata": {"creationTimestamp": "VARCHAR"}
        }') as j
    from raw.k8s_objects
    where kind = 'Event'
),

unified as (
    select
        cluster,
        uid as event_uid,
        resource_version,
        coalesce(j.involvedObject.kind, j.regarding.kind) as object_kind,
        coalesce(j.involvedObject.namespace, j.regarding.namespace) as object_namespace,
        coalesce(j.involvedObject.name, j.regarding.name) as object_name,
        coalesce(j.involvedObject.uid, j.regarding.uid) as object_uid,
        j.reason as reason,
        coalesce(j.message, j.note) as message,
        j.type as event_type,
        coalesce(try_cast(j.count as bigint), try_cast(j.series.count as bigint), 1) as event_count,
        coalesce(
            try_cast(j.firstTimestamp as timestamptz),
            try_cast(j.deprecatedFirstTimestamp as timestamptz),
            try_cast(j.eventTime as timestamptz),
            try_cast(j.metadata.creationTimestamp as timestamptz)) as first_at,
        coalesce(
            try_cast(j.eventTime as timestamptz),
            try_cast(j.series.lastObservedTime as timestamptz),
            try_cast(j.lastTimestamp as timestamptz),
            try_cast(j.deprecatedLastTimestamp as timestamptz),
            try_cast(j.metadata.creationTimestamp as timestamptz)) as last_at,
        source_file,
        record_no
    from source
),

final as (
    select * from unified where last_at is not null
)

select * from final
