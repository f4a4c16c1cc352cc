-- grain: one row per KEDA ScaledObject / ScaledJob (cluster, kind, namespace, name), latest version.
-- (its `incremental` setting, sql/staging/_models.toml, is the dedupe: the build keeps one row
-- per key, the first in that order)
-- cooldownPeriod is KEDA's and only for a ScaledObject's 1 → 0 (a ScaledJob has none); N → 1 is
-- the HPA's, held by behavior.scaleDown.stabilizationWindowSeconds, 300 s when unset
-- (k8s.io/api autoscaling/v2 HPAScalingRules: "For scale down: 300"). The HPA KEDA made for a
-- ScaledObject is named in its status.hpaName, else advanced.horizontalPodAutoscalerConfig.name,
-- else keda-hpa-<name> (kedacore/keda controllers/keda/hpa.go, getHPAName); its events name it.
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
        case when kind = 'ScaledObject'
             then coalesce(try_cast(doc ->> '$.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds'
                                    as bigint), 300) end
            as stabilization_seconds,
        case when kind = 'ScaledObject'
             then coalesce(doc ->> '$.status.hpaName',
                           doc ->> '$.spec.advanced.horizontalPodAutoscalerConfig.name',
                           'keda-hpa-' || (doc ->> '$.metadata.name')) end
            as hpa_name,
        coalesce(try_cast(doc ->> '$.spec.minReplicaCount' as bigint), 0) as min_replicas,
        resource_version,
        source_file,
        record_no
    from source
)

select * from final
