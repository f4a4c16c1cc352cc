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
        -- the life seen last: `startedAt` is when the worker last started (openapi-v2 `Worker`),
        -- so a restart shows as a later one; SERVERLESS_STUCK_WORKER measures from it
        arg_max(started_at, pulled_at) as last_started_at,
        arg_max(status, pulled_at) as last_status,
        min(path_endpoint_id) as path_endpoint_id
    from staging.stg_runpod__worker_snapshots
    group by endpoint_id, worker_id
)

select * from final
