-- grain: one row per serverless worker id seen only in workers responses that do not name their
-- endpoint (GET /v2/serverless/{endpointId}/workers saved as the API returns it: the endpoint is
-- in the URL, not in the body), with the endpoint other inputs tie it to, or NULL and the reason.
-- The sources, in this order, the first that names exactly one endpoint:
--   job records: a job's workerId with its endpointId (stg_runpod__jobs);
--   per-worker billing: a v1 /billing/endpoints line grouped by podId names the worker's pod id
--     (a serverless worker is a pod: its id is the worker id) and its endpointId;
--   the file's path (stg_runpod__worker_snapshots.path_endpoint_id), when some input knows that
--     id as an endpoint (inventory, serverless bills, rates, these workers' job records, workers
--     that name theirs): a folder such as runpod/ is no endpoint.
-- Built whole every run (no `incremental` setting): what ties a worker may land after it (a later
-- day's job records), and only a rebuild sees that. It reads the unnamed workers' rows and the
-- job records completed since the first of them started: with none (the connector's files name
-- their endpoint) it reads nothing; with some, every run reads those jobs again.
with unnamed as (
    select worker_id, min(started_at) as started_at, min(first_seen_at) as first_seen_at,
           max(last_seen_at) as last_seen_at, min(path_endpoint_id) as path_endpoint_id,
           arg_max(last_started_at, last_seen_at) as last_started_at,
           arg_max(last_status, last_seen_at) as last_status
    from staging.stg_runpod__workers
    where endpoint_id is null
    group by worker_id
),

since as (
    -- no job of a worker completes before it started: zone maps skip older jobs' row groups
    select coalesce(min(least(started_at, first_seen_at)), '-infinity'::timestamptz) - interval 1 day as lo
    from unnamed
),

by_jobs as (
    select worker_id, min(endpoint_id) as endpoint_id, count(distinct endpoint_id) as endpoints
    from staging.stg_runpod__jobs
    where worker_id in (select worker_id from unnamed)
      and completed_at >= (select lo from since)
    group by worker_id
),

by_bill as (
    select doc ->> '$.podId' as worker_id, min(doc ->> '$.endpointId') as endpoint_id,
           count(distinct doc ->> '$.endpointId') as endpoints
    from raw.runpod_billing
    where source = 'v1_serverless' and doc ->> '$.podId' in (select worker_id from unnamed)
    group by all
),

known as (
    select distinct endpoint_id from (
        select endpoint_id from staging.stg_runpod__endpoints
        union all select endpoint_id from staging.stg_runpod__serverless_billing
        union all select match_key from config.rates where rate_kind = 'serverless_per_second'
        union all select endpoint_id from by_jobs
        union all select endpoint_id from staging.stg_runpod__workers where endpoint_id is not null
    )
    where endpoint_id in (select path_endpoint_id from unnamed)
),

tied as (
    select
        u.*,
        case when j.endpoints = 1 then j.endpoint_id
             when b.endpoints = 1 then b.endpoint_id
             when k.endpoint_id is not null then k.endpoint_id end as endpoint_id,
        case when j.endpoints = 1 then 'job records'
             when b.endpoints = 1 then 'per-worker billing'
             when k.endpoint_id is not null then 'file path' end as tied_by,
        'job records: ' || case when j.endpoints > 1 then 'jobs of ' || j.endpoints || ' endpoints'
                                else 'no job with this workerId' end
        || '; per-worker billing: ' || case when b.endpoints > 1 then 'lines of ' || b.endpoints || ' endpoints'
                                            else 'no v1 line with this podId and an endpointId' end
        || '; file path: ' || case when u.path_endpoint_id is null then 'names no endpoint'
                                   else '''' || u.path_endpoint_id || ''' is no endpoint any input names' end
            as tried
    from unnamed u
    left join by_jobs j using (worker_id)
    left join by_bill b using (worker_id)
    left join known k on k.endpoint_id = u.path_endpoint_id
),

final as (
    select
        worker_id, endpoint_id, tied_by, started_at, first_seen_at, last_seen_at,
        last_started_at, last_status,
        case when endpoint_id is null then
            'serverless worker ' || worker_id || ': its workers response does not name its endpoint '
            || '(GET /v2/serverless/{id}/workers has it only in the URL) and no input ties it to one ('
            || tried || ')' end as reason
    from tied
)

select * from final
