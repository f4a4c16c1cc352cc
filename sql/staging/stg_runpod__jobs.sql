-- grain: one row per serverless job record (endpoint_id, job_id), as the submitter recorded /status.
-- Each document is parsed once (json_transform into a struct), not once per field.
-- (its `incremental` setting, sql/staging/_models.toml, is the dedupe: the build keeps one row
-- per key, the first in that order)
-- (its `bounds` setting keeps meta.bounds__stg_runpod__jobs: when each worker's jobs
-- completed, first and last, for sql/scope/stg_runpod__jobs.sql; completed_at is never null)
with source as materialized (
    select
        source_file,
        record_no,
        json_transform(doc, '{"endpointId": "VARCHAR", "id": "VARCHAR", "workerId": "VARCHAR",
            "status": "VARCHAR", "delayTime": "VARCHAR", "executionTime": "VARCHAR",
            "submittedAt": "VARCHAR", "completedAt": "VARCHAR"}') as j
    from raw.serverless_jobs
),

typed as (
    select
        j.endpointId as endpoint_id,
        j.id as job_id,
        j.workerId as worker_id,
        j.status as status,
        try_cast(j.delayTime as bigint) as delay_ms,
        try_cast(j.executionTime as bigint) as execution_ms,
        try_cast(j.submittedAt as timestamptz) as submitted_at,
        try_cast(j.completedAt as timestamptz) as completed_at,
        j.submittedAt is null as no_submitted_at,
        source_file,
        record_no
    from source
),

final as (
    select
        endpoint_id, job_id, worker_id, status, delay_ms, execution_ms, submitted_at, completed_at,
        completed_at - to_milliseconds(coalesce(execution_ms, 0)) as execution_started_at,
        source_file, record_no
    from typed
    -- the rest are in staging.quarantine: no completedAt timestamp, or a submittedAt that is
    -- there but no timestamp
    where completed_at is not null and (submitted_at is not null or no_submitted_at)
)

select * from final
