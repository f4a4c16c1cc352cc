-- grain: as staging.stg_k8s__pods (every version), for the pods whose life [created, window end)
-- overlaps the window, or the island of the instance their node runs on (its tail and first
-- start need the pods that ran before the window). A pod is kept whole or not at all.
with life as (
    select cluster, pod_uid, max(node_name) as node_name, min(created_at) as created_at,
           coalesce(max(main_finished_at),
                    min(deletion_at - to_seconds(coalesce(deletion_grace_seconds, 0))),
                    '2100-01-01'::timestamptz) as window_end_at
    from staging.stg_k8s__pods
    group by all
),

kept as (
    select l.cluster, l.pod_uid
    from life l
    cross join scope.window w
    left join intermediate.int_k8s__node_resources n
      on n.cluster is not distinct from l.cluster and n.node_name = l.node_name
    left join scope.resource_bounds r on r.resource_id = n.resource_id
    where l.created_at < w.hi and l.window_end_at > coalesce(r.scope_start, w.lo)
),

final as (
    select p.*
    from staging.stg_k8s__pods p
    semi join kept k on k.cluster is not distinct from p.cluster and k.pod_uid = p.pod_uid
)

select * from final
