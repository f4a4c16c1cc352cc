-- grain: one row per Kubernetes pod (cluster, pod_uid): its namespace, team and the KEDA object
-- that owns it (NULL when none of the input does). A pod is a ScaledJob's when its name starts
-- with the ScaledJob's name and a '-' (KEDA names the Jobs after it, and a Job's pods after the
-- Job), a ScaledObject's replica when it starts with the ScaledObject's scaleTargetRef name and
-- a '-' (Deployment → ReplicaSet → pod names); the longest such name wins, kind and name break a
-- tie of lengths. The one place the rule lives: the tail model (the scaler whose setting allows
-- a node's tail) and the findings' owner columns both read it.
with pods as (
    select cluster, pod_uid, namespace, pod_name, team
    from intermediate.int_k8s__workloads
),

objects as (
    select *, row(length(coalesce(target_name, name)), kind, name) as rank_key
    from staging.stg_k8s__scaled_objects
),

owners as (
    select p.cluster, p.pod_uid,
           arg_max(o.kind, o.rank_key) as owner_kind,
           arg_max(o.name, o.rank_key) as owner_name
    from pods p
    join objects o
      on o.cluster is not distinct from p.cluster and o.namespace = p.namespace
     and ((o.kind = 'ScaledJob' and starts_with(p.pod_name, o.name || '-'))
          or (o.kind = 'ScaledObject' and starts_with(p.pod_name, o.target_name || '-')))
    group by p.cluster, p.pod_uid
),

final as (
    select p.cluster, p.pod_uid, p.namespace, p.pod_name, p.team, o.owner_kind, o.owner_name
    from pods p
    left join owners o on o.cluster is not distinct from p.cluster and o.pod_uid = p.pod_uid
)

select * from final
