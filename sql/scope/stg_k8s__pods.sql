-- grain: as staging.stg_k8s__pods (every version), for the pods whose life [created, window end)
-- overlaps the window, or the island of the instance their node runs on (its tail and first
-- start need the pods that ran before the window). A pod is kept whole or not at all.
with kept as (
    select l.cluster, l.pod_uid
    from staging.stg_k8s__pod_life l
    cross join scope.window w
    left join intermediate.int_k8s__node_resources n
      on n.cluster is not distinct from l.cluster and n.node_name = l.node_name
    left join scope.resource_bounds r on r.resource_id = n.resource_id
    where l.created_at < coalesce(r.scope_end, w.hi) and l.window_end_at > coalesce(r.scope_start, w.lo)
),

final as (
    select p.*
    from staging.stg_k8s__pods p
    semi join kept k on k.cluster is not distinct from p.cluster and k.pod_uid = p.pod_uid
)

select * from final
