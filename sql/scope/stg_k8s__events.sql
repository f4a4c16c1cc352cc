-- grain: as staging.stg_k8s__events, for the window: events seen in it, and every event about a
-- pod in scope.stg_k8s__pods (its Scheduled event may be older).
with pods as materialized (
    select cluster, pod_uid, min(created_at) as created_at
    from scope.stg_k8s__pods
    group by all
),

-- An event about a pod is not older than the pod: its last time is at or after the earliest
-- creation among those pods, less a day (an event carries the reporting component's clock, a
-- pod the API server's). The scan below then skips the row groups of older events instead of
-- joining every event of history with the pods (0.6 s at 30 days of the 500-node fleet).
reach as (
    select min(created_at) - interval 1 day as lo from pods
),

final as (
    select e.*
    from staging.stg_k8s__events e
    cross join scope.window w
    -- (first_at is null when an event carries a last time only: its last time then counts)
    where e.last_at >= w.lo and coalesce(e.first_at, e.last_at) < w.hi
    union all
    select e.*
    from staging.stg_k8s__events e
    cross join scope.window w
    cross join reach r
    semi join pods p on p.cluster is not distinct from e.cluster and p.pod_uid = e.object_uid
    where e.last_at >= r.lo and not (e.last_at >= w.lo and coalesce(e.first_at, e.last_at) < w.hi)
)

select * from final
