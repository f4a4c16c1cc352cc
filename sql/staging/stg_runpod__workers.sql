-- grain: one row per serverless worker (endpoint_id, worker_id): when it was first seen started.
-- endpoint_id NULL: workers responses that do not name their endpoint (one row per worker id;
-- stg_runpod__worker_endpoints ties it to one).
-- Refolded only for the workers a run's new snapshots name.
with final as (
    select
        endpoint_id,
        worker_id,
        min(started_at) as started_at,
        min(pulled_at) as first_seen_at,
        max(pulled_at) as last_seen_at,
        min(path_endpoint_id) as path_endpoint_id
    from staging.stg_runpod__worker_snapshots
    group by endpoint_id, worker_id
)

select * from final
