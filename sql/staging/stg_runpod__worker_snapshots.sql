-- grain: one row per worker item of a landed workers snapshot: the fields stg_runpod__workers
-- folds, typed. Each item is parsed once, in the run that lands its file (the fold used to parse
-- every snapshot of history each run: +0.45 s a day of history at 500 nodes, bench/README.md).
-- incremental: append
-- bounds: key (endpoint_id, worker_id) span (pulled_at)
with source as materialized (
    select
        endpoint_id,
        pulled_at,
        source_file,
        record_no,
        json_transform(doc, '{"id": "VARCHAR", "startedAt": "VARCHAR"}') as j
    from raw.runpod_inventory
    where inventory_kind = 'workers'
),

final as (
    select
        endpoint_id,
        j.id as worker_id,
        try_cast(j.startedAt as timestamptz) as started_at,
        try_cast(pulled_at as timestamptz) as pulled_at,
        source_file,
        record_no
    from source
)

select * from final
