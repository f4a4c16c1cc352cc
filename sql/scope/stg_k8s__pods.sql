-- grain: as staging.stg_k8s__pods (every version), for the pods whose life [created, window end)
-- overlaps the window, or the island of the instance their node runs on (its tail and first
-- start need the pods that ran before the window). A pod is kept whole or not at all.
-- scope: view
with kept as (
    select l.cluster, l.pod_uid, l.created_at
    from staging.stg_k8s__pod_life l
    cross join scope.window w
    left join intermediate.int_k8s__node_resources n
      on n.cluster is not distinct from l.cluster and n.node_name = l.node_name
    left join scope.resource_bounds r on r.resource_id = n.resource_id
    where l.created_at < coalesce(r.scope_end, w.hi) and l.window_end_at > coalesce(r.scope_start, w.lo)
),

-- every version of a kept pod was created at or after the earliest of their creations
-- (stg_k8s__pod_life.created_at is the least over the pod's versions; staging drops versions
-- without one): the scan below then skips the row groups of pods created before it instead of
-- reading every pod version of history (zone maps on created_at)
span as (
    select min(created_at) as lo from kept
),

final as (
    select p.*
    from staging.stg_k8s__pods p
    cross join span s
    semi join kept k on k.cluster is not distinct from p.cluster and k.pod_uid = p.pod_uid
    where p.created_at >= s.lo
)

select * from final
