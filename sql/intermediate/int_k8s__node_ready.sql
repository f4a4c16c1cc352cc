-- grain: one row per Node object (cluster, node_uid) with the resource it maps to and when it
-- first became Ready, and when it was removed (a watch DELETED; its deletionTimestamp).
with nodes as (
    select * from staging.stg_k8s__nodes
),

node_resources as (
    select * from intermediate.int_k8s__node_resources
),

final as (
    select
        n.cluster,
        n.node_uid,
        n.node_name,
        r.resource_id,
        min(n.created_at) as registered_at,
        min(case when n.ready_condition.status = 'True' then n.ready_condition.lastTransitionTime end)
            as ready_at,
        case when bool_or(n.event_type = 'DELETED')
             then coalesce(min(n.deletion_at), max(n.created_at)) end as removed_at
    from nodes n
    join node_resources r using (cluster, node_name)
    group by all
)

select * from final
