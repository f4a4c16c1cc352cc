-- grain: as staging.stg_k8s__events, for the window: events seen in it, and every event about a
-- pod in scope.stg_k8s__pods (its Scheduled event may be older).
with final as (
    select e.*
    from staging.stg_k8s__events e
    cross join scope.window w
    where e.last_at >= w.lo and e.first_at < w.hi
    union all
    select e.*
    from staging.stg_k8s__events e
    cross join scope.window w
    semi join (select distinct cluster, pod_uid from scope.stg_k8s__pods) p
      on p.cluster is not distinct from e.cluster and p.pod_uid = e.object_uid
    where not (e.last_at >= w.lo and e.first_at < w.hi)
)

select * from final
