-- grain: one row per distinct ScaledObject version (cluster, namespace, name, resource_version):
-- status.lastActiveTime and the Active condition as the collector saw them over time. KEDA moves
-- lastActiveTime on every poll with an active trigger and scales to zero only once
-- lastActiveTime + cooldownPeriod has passed (kedacore/keda pkg/scaling/executor/
-- scale_scaledobjects.go, scaleToZeroOrIdle); a later activation moves it past the earlier
-- deactivation, so one version (the latest) cannot date every scale to zero.
-- (its `incremental` setting, sql/staging/_models.toml, is the dedupe: the build keeps one row
-- per key, the first in that order)
with source as (
    select * from raw.k8s_objects where kind = 'ScaledObject'
),

final as (
    select
        cluster,
        doc ->> '$.metadata.namespace' as namespace,
        doc ->> '$.metadata.name' as name,
        coalesce(nullif(resource_version, ''), md5(doc::varchar)) as resource_version,
        try_cast(doc ->> '$.status.lastActiveTime' as timestamptz) as last_active_at,
        list_filter(
            json_transform(doc -> '$.status.conditions',
                '[{"type":"VARCHAR","status":"VARCHAR","reason":"VARCHAR","lastTransitionTime":"VARCHAR"}]'),
            lambda c: c.type = 'Active')[1] as active_condition,
        source_file,
        record_no
    from source
)

select * from final
