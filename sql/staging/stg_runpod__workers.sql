-- grain: one row per serverless worker (endpoint_id, worker_id): when it was first seen started.
-- Refolded only for the workers a run's new snapshots name.
-- incremental: recompute key (endpoint_id, worker_id) from stg_runpod__worker_snapshots
-- bounds: key (endpoint_id, worker_id) span (last_seen_at) within (pulled_at)
with final as (
    select
        endpoint_id,
        worker_id,
        min(started_at) as started_at,
        min(pulled_at) as first_seen_at,
        max(pulled_at) as last_seen_at
    from staging.stg_runpod__worker_snapshots
    group by all
)

select * from final
