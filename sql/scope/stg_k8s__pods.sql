-- grain: as staging.stg_k8s__pods (every version), for the pods a windowed run needs: those whose
-- life [created, window end) overlaps the window, those of a billed instance's compute island
-- after the window (a task there makes the window's gap idle rather than tail), and, before the
-- window, only the island's last workload. A pod is kept whole or not at all.
with life as (
    select l.cluster, l.pod_uid, l.created_at, l.window_end_at, l.gpus, l.mig_devices, l.scheduled_at,
           n.resource_id, r.scope_start, r.scope_end
    from staging.stg_k8s__pod_life l
    left join intermediate.int_k8s__node_resources n
      on n.cluster is not distinct from l.cluster and n.node_name = l.node_name
    left join scope.resource_bounds r on r.resource_id = n.resource_id
),

during as (
    select cluster, pod_uid, created_at
    from life cross join scope.window w
    where created_at < coalesce(scope_end, w.hi) and window_end_at > w.lo
),

-- Before the window, the segments a windowed run keeps (its days) depend on the island's pods
-- only through the last_finished_at of the session that runs into the window (tail or idle gap,
-- int_resource__session_context; BILLED_AFTER_EXIT names that pod): the latest end among its
-- workloads. Every workload that ended before the window within the island is a candidate; the
-- latest of them belongs to that session whenever the session has one. The island's pods before
-- its last workload are left out, so an instance up for weeks does not make each daily run read
-- weeks of pods. A candidate is a sure workload of int_resource__workloads when its own
-- PodScheduled time is known (`scheduled_at` comes first there); candidates without one fall back
-- to events or the kubelet's start, so those at or after the latest sure one are kept too.
before as (
    select l.cluster, l.pod_uid, l.created_at, l.window_end_at, l.resource_id,
           l.scheduled_at is not null and l.window_end_at > l.scheduled_at as sure
    from life l cross join scope.window w
    where l.resource_id is not null and (l.gpus > 0 or l.mig_devices > 0)
      and l.window_end_at <= w.lo and l.window_end_at > l.scope_start
),

last_before as (
    select cluster, pod_uid, created_at
    from (select *, max(window_end_at) filter (where sure) over (partition by resource_id) as last_sure
          from before)
    where window_end_at >= coalesce(last_sure, '-infinity'::timestamptz)
),

kept as (
    select * from during
    union all
    select * from last_before
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
