-- grain: one row per serverless job record (endpoint_id, job_id), as the submitter recorded /status.
-- Each document is parsed once (json_transform into a struct), not once per field.
-- incremental: key (endpoint_id, job_id) order (source_file desc, record_no desc)
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
        source_file,
        record_no
    from source
),

keyed as materialized (
    select
        endpoint_id, job_id, worker_id, status, delay_ms, execution_ms, submitted_at, completed_at,
        completed_at - to_milliseconds(coalesce(execution_ms, 0)) as execution_started_at,
        source_file, record_no, hash(endpoint_id, job_id) as key_hash
    from typed
    where completed_at is not null
),

-- a job recorded twice keeps its last record. Only rows whose key hash repeats are ranked:
-- ranking all two million rows of a day costs ~3x more than finding the few repeats (a hash
-- collision merely ranks a few more rows, each in its own partition).
repeated as (
    select key_hash from keyed group by all having count(*) > 1
),

final as (
    select * exclude (key_hash) from keyed anti join repeated using (key_hash)
    union all
    (select * exclude (key_hash) from keyed semi join repeated using (key_hash)
     qualify row_number() over (partition by endpoint_id, job_id
                                order by source_file desc, record_no desc) = 1)
)

select * from final
