-- grain: one row per compute session of an instance: a maximal run of billed compute.
-- Bills give seconds per hourly bucket, not where in the hour; a partial bucket is placed
-- against its billed neighbour (the session continues through the boundary), or, if isolated,
-- at the pod's inventory startedAt when that falls inside the bucket, else at the registration of
-- its Kubernetes node (compute ran no later than that), else at the bucket's end.
with buckets as (
    select * from intermediate.int_runpod__pod_buckets where compute_ms > 0
),

neighbours as (
    select
        *,
        coalesce(lag(bucket_end) over w = bucket_start, false) as cont_prev,
        coalesce(lead(bucket_start) over w = bucket_end, false) as cont_next
    from buckets
    window w as (partition by pod_id order by bucket_start)
),

hints as (
    select n.*,
           (select min(p.started_at) from staging.stg_runpod__pods p
             where p.pod_id = n.pod_id and p.started_at >= n.bucket_start
               and p.started_at < n.bucket_end) as start_hint,
           (select min(k.registered_at) from intermediate.int_k8s__node_ready k
             where k.resource_id = n.pod_id and k.registered_at >= n.bucket_start
               and k.registered_at < n.bucket_end) as node_hint
    from neighbours n
),

placed as (
    select
        pod_id, bucket_start, bucket_end, compute_ms,
        case when compute_ms >= bucket_ms then bucket_start
             when cont_prev then bucket_start
             when cont_next then bucket_end - to_milliseconds(compute_ms)
             when start_hint is not null
                  and start_hint + to_milliseconds(compute_ms) <= bucket_end then start_hint
             when node_hint is not null then least(node_hint, bucket_end - to_milliseconds(compute_ms))
             else bucket_end - to_milliseconds(compute_ms) end as start_at,
        case when compute_ms >= bucket_ms or cont_prev or cont_next then 'bill'
             when start_hint is not null
                  and start_hint + to_milliseconds(compute_ms) <= bucket_end then 'inventory_start'
             when node_hint is not null then 'node_registered'
             else 'assumed_end_of_bucket' end as placed_by
    from hints
),

intervals as (
    select *, start_at + to_milliseconds(compute_ms) as end_at,
           case when start_at = lag(start_at + to_milliseconds(compute_ms)) over w then 0 else 1 end as new_session
    from placed
    window w as (partition by pod_id order by bucket_start)
),

numbered as (
    select *, sum(new_session) over (partition by pod_id order by bucket_start) as session_no
    from intervals
),

final as (
    select
        pod_id as resource_id,
        pod_id || '#' || session_no as session_id,
        min(start_at) as start_at,
        max(end_at) as end_at,
        string_agg(distinct placed_by, ',' order by placed_by) as placed_by
    from numbered
    group by pod_id, session_no
)

select * from final
