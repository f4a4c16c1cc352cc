-- grain: one row per serverless worker (endpoint_id, worker_id): when it was first seen started.
with source as (
    select * from raw.runpod_inventory where inventory_kind = 'workers'
),

final as (
    select
        endpoint_id,
        doc ->> '$.id' as worker_id,
        min(try_cast(doc ->> '$.startedAt' as timestamptz)) as started_at,
        min(try_cast(pulled_at as timestamptz)) as first_seen_at,
        max(try_cast(pulled_at as timestamptz)) as last_seen_at
    from source
    group by all
)

select * from final
