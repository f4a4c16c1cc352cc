-- grain: one row per serverless endpoint (/v2/serverless), latest snapshot.
with source as (
    select * from raw.runpod_inventory where inventory_kind = 'serverless'
),

final as (
    select
        doc ->> '$.id' as endpoint_id,
        doc ->> '$.name' as endpoint_name,
        -- v2 `Endpoint.workers` {min, max, idleTimeout}; a saved v1 endpoint has them at its top
        coalesce(try_cast(doc ->> '$.workers.idleTimeout' as bigint),
                 try_cast(doc ->> '$.idleTimeout' as bigint)) as idle_timeout_seconds,
        coalesce(try_cast(doc ->> '$.workers.min' as bigint),
                 try_cast(doc ->> '$.workersMin' as bigint)) as workers_min,
        -- a saved v1 endpoint's `workersStandby`: what the console calls active workers, set
        -- server-side when a client leaves it out (runpod/flash#364: workers=(0, N) deployed
        -- workersStandby = 1, one worker kept warm); the v2 Endpoint has no such field
        try_cast(doc ->> '$.workersStandby' as bigint) as workers_standby,
        -- per-request execution timeout in milliseconds: v2 `Endpoint.timeout`, v1
        -- `executionTimeoutMs` (openapi-v2.json / openapi-v1.json); NULL: Runpod's default
        -- (thresholds.serverless_execution_timeout_seconds)
        coalesce(try_cast(doc ->> '$.timeout' as bigint),
                 try_cast(doc ->> '$.executionTimeoutMs' as bigint)) as execution_timeout_ms,
        -- v2 `Endpoint.gpu` (`EndpointGpuConfig`): the serverless pools its workers are placed
        -- on and the GPUs per worker (`count`, default 1); NULL pools for a CPU endpoint or a
        -- saved v1 endpoint, whose GPUs are named otherwise
        case when json_type(doc, '$.gpu.pools') = 'ARRAY'
             then cast(doc -> '$.gpu.pools' as varchar[]) end as gpu_pools,
        case when json_type(doc, '$.gpu') = 'OBJECT'
             then coalesce(try_cast(doc ->> '$.gpu.count' as bigint), 1) end as gpu_count,
        try_cast(pulled_at as timestamptz) as snapshot_at
    from source
    qualify row_number() over (partition by doc ->> '$.id'
                               -- then the file and its record: two snapshots of one pull
                               -- time would otherwise be kept by whichever the sort met first
                               order by try_cast(pulled_at as timestamptz) desc nulls last,
                                        source_file desc, record_no desc) = 1
)

select * from final
