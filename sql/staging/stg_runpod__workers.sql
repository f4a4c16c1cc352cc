-- grain: one row per serverless worker (endpoint_id, worker_id): when it was first seen started.
with source as (
    select
        endpoint_id,
        pulled_at,
        json_transform(doc, '{"id": "VARCHAR", "startedAt": "VARCHAR"}') as j
    from raw.runpod_inventory
    where inventory_kind = 'workers'
),

final as (
    select
        endpoint_id,
        j.id as worker_id,
        min(try_cast(j.startedAt as timestamptz)) as started_at,
        min(try_cast(pulled_at as timestamptz)) as first_seen_at,
        max(try_cast(pulled_at as timestamptz)) as last_seen_at
    from source
    group by all
)

select * from final
