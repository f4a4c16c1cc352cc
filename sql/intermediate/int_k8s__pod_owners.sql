-- grain: one row per Kubernetes pod (cluster, pod_uid): its namespace, team and the object that
-- owns it: the KEDA object whose setting drives its scaling where one matches, else the workload
-- its ownerReferences name (NULL when neither does). The one place the rule lives: the tail
-- model (the scaler whose setting allows a node's tail) and the findings' owner columns read it.
-- * KEDA, by name: a pod is a ScaledJob's when its name starts with the ScaledJob's name and a
--   '-' (KEDA names the Jobs after it, and a Job's pods after the Job), a ScaledObject's replica
--   when it starts with the ScaledObject's scaleTargetRef name and a '-' (Deployment →
--   ReplicaSet → pod names); the longest such name wins, kind and name break a tie of lengths.
-- * Else the controller staging read from metadata.ownerReferences (stg_k8s__pods.owner_kind),
--   of the pod's latest version that names one, resolved to its workload:
--   - ReplicaSet → Deployment: the Deployment controller names its ReplicaSets
--     `<deployment>-<pod-template-hash>` and labels their pods `pod-template-hash`; with that
--     label the name loses exactly that suffix (a label that is not the suffix: a ReplicaSet of
--     its own, kept as one); without it, a last segment in the hash's alphabet (consonants and
--     2456789, 5 to 10 of them) is taken for the hash, else the ReplicaSet is kept;
--   - Job stays Job: a CronJob names its Jobs `<cronjob>-<scheduled minute>`, but no CronJob is
--     landed and Kubernetes labels neither Jobs nor pods with their CronJob, so a Job whose name
--     merely ends in digits may be anyone's;
--   - StatefulSet, DaemonSet (and a bare ReplicaSet) own their pods directly: as themselves;
--   - other kinds (a mirror pod's Node, an operator's custom resource) are not workloads this
--     model knows how to resolve: NULL, as a bare pod.
-- Pods known from kube-state-metrics only (no document) get the KEDA owner alone.
with pods as (
    select cluster, pod_uid, namespace, pod_name, team
    from intermediate.int_k8s__workloads
),

objects as (
    select *, row(length(coalesce(target_name, name)), kind, name) as rank_key
    from staging.stg_k8s__scaled_objects
),

keda as (
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

-- the controller of the latest version that names one (a pod's owner changes only when it is
-- orphaned or adopted); resource versions ordered as numbers, then as text, so runs agree
referenced as (
    select cluster, pod_uid,
           arg_max({'kind': owner_kind, 'name': owner_name,
                    'hash': nullif(labels ->> '$."pod-template-hash"', '')},
                   row(try_cast(resource_version as hugeint), resource_version)) as ref
    from staging.stg_k8s__pods
    where owner_kind is not null and owner_name is not null
    group by cluster, pod_uid
),

workload as (
    select cluster, pod_uid, ref.name as owner_name, ref.hash,
        case
            when ref.kind = 'ReplicaSet' and ref.hash is not null
                then case when ends_with(ref.name, '-' || ref.hash) and length(ref.name) > length(ref.hash) + 1
                          then 'Deployment' else 'ReplicaSet' end
            when ref.kind = 'ReplicaSet'
                then case when regexp_matches(ref.name, '.-[bcdfghjklmnpqrstvwxz2456789]{5,10}$')
                          then 'Deployment' else 'ReplicaSet' end
            when ref.kind in ('Job', 'StatefulSet', 'DaemonSet') then ref.kind
        end as owner_kind
    from referenced
),

workload_named as (
    select cluster, pod_uid, owner_kind,
           case when owner_kind = 'Deployment' and hash is not null
                    then left(owner_name, length(owner_name) - length(hash) - 1)
                when owner_kind = 'Deployment'
                    then regexp_replace(owner_name, '-[bcdfghjklmnpqrstvwxz2456789]{5,10}$', '')
                else owner_name end as owner_name
    from workload
    where owner_kind is not null
),

final as (
    select p.cluster, p.pod_uid, p.namespace, p.pod_name, p.team,
           coalesce(k.owner_kind, w.owner_kind) as owner_kind,
           case when k.owner_kind is not null then k.owner_name else w.owner_name end as owner_name
    from pods p
    left join keda k on k.cluster is not distinct from p.cluster and k.pod_uid = p.pod_uid
    left join workload_named w on w.cluster is not distinct from p.cluster and w.pod_uid = p.pod_uid
)

select * from final
