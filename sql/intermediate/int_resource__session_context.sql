-- grain: one row per compute session, with what the classification needs: whether the resource
-- maps to any Kubernetes node, when a node of it became Ready, and when its last workload ended.
-- After a windowed run, `workloads` counts the session's workloads in the run's scope: before
-- the window that is only the last of them (sql/scope/stg_k8s__pods.sql); whether it is 0 and
-- last_finished_at are those of a full run.
with sessions as (
    select * from intermediate.int_resource__compute_sessions
),

mapped as (
    select distinct resource_id from intermediate.int_k8s__node_resources
),

ready as (
    select
        s.session_id,
        min(n.ready_at) filter (where n.ready_at >= s.start_at and n.ready_at < s.end_at) as ready_in_session,
        bool_or(n.ready_at < s.start_at) as ready_before,
        count(n.node_uid) as node_objects,
        -- the end of the observed node life: after it, billed seconds are BILLED_EXCEEDS_RUNTIME's
        max(coalesce(n.removed_at, '2100-01-01'::timestamptz))
            filter (where n.registered_at < s.end_at
                      and coalesce(n.removed_at, '2100-01-01'::timestamptz) > s.start_at) as covered_until
    from sessions s
    left join intermediate.int_k8s__node_ready n on n.resource_id = s.resource_id
    group by s.session_id
),

last_work as (
    select s.session_id, max(w.window_end_at) as last_finished_at, count(w.pod_uid) as workloads
    from sessions s
    join intermediate.int_resource__workloads w
      on w.resource_id = s.resource_id and w.scheduled_at < s.end_at and w.window_end_at > s.start_at
    group by s.session_id
),

final as (
    select
        s.*,
        m.resource_id is not null as mapped,
        coalesce(r.ready_in_session,
                 case when r.ready_before or r.node_objects = 0 then s.start_at end,
                 s.end_at) as node_ready_at,
        l.last_finished_at,
        coalesce(r.covered_until, '2100-01-01'::timestamptz) as covered_until,
        coalesce(l.workloads, 0) as workloads
    from sessions s
    left join mapped m using (resource_id)
    left join ready r using (session_id)
    left join last_work l using (session_id)
)

select * from final
