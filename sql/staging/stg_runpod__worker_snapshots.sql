-- grain: one row per worker item of a landed workers snapshot: the fields stg_runpod__workers
-- folds, typed. Each item is parsed once, in the run that lands its file (a fold parsing every
-- snapshot of history each run would cost +0.45 s a day of history at 500 nodes, bench/README.md).
-- endpoint_id: x_recon.endpointId (the connector's); NULL for a response saved as the API
-- returns it, whose endpoint is only in the URL. path_endpoint_id: then the endpoint the file's
-- path may name (…/<endpointId>/workers.json, <endpointId>-workers.json, workers_<endpointId>.json);
-- stg_runpod__worker_endpoints decides whether it is one.
with source as materialized (
    select
        endpoint_id,
        pulled_at,
        source_file,
        record_no,
        json_transform(doc, '{"id": "VARCHAR", "status": "VARCHAR", "startedAt": "VARCHAR",
                             "uptimeSeconds": "VARCHAR"}') as j
    from raw.runpod_inventory
    where inventory_kind = 'workers'
),

final as (
    select
        endpoint_id,
        j.id as worker_id,
        -- openapi-v2 `WorkerStatus`: RUNNING (processing a job), IDLE, INITIALIZING, THROTTLED,
        -- UNHEALTHY
        j.status as status,
        try_cast(j.startedAt as timestamptz) as started_at,
        -- x_recon.pulledAt; a response saved as returned says it too: a worker's startedAt +
        -- uptimeSeconds is the instant it was read (openapi-v2 `Worker`; null until placed).
        -- (A null pulled_at costs every refold of the workers its row-group skipping.)
        coalesce(try_cast(pulled_at as timestamptz),
                 try_cast(j.startedAt as timestamptz) + to_seconds(try_cast(j.uptimeSeconds as bigint)))
            as pulled_at,
        source_file,
        record_no,
        case when endpoint_id is null then coalesce(
            nullif(regexp_extract(source_file, '([^/\\]+)[/\\]workers(?:[/\\.][^/\\]*)?$', 1), ''),
            nullif(regexp_extract(source_file, '[/\\]workers[-_]([A-Za-z0-9]+)(?:\.[^/\\]*)?$', 1), ''),
            nullif(regexp_extract(source_file, '[/\\]([A-Za-z0-9]+)[-_.]workers(?:\.[^/\\]*)?$', 1), ''))
        end as path_endpoint_id
    from source
)

select * from final
