-- grain: one row per serverless job record (endpoint_id, job_id), as the submitter recorded /status.
with source as (
    select * from raw.serverless_jobs
),

final as (
    select
        doc ->> '$.endpointId' as endpoint_id,
        doc ->> '$.id' as job_id,
        doc ->> '$.workerId' as worker_id,
        doc ->> '$.status' as status,
        try_cast(doc ->> '$.delayTime' as bigint) as delay_ms,
        try_cast(doc ->> '$.executionTime' as bigint) as execution_ms,
        try_cast(doc ->> '$.submittedAt' as timestamptz) as submitted_at,
        try_cast(doc ->> '$.completedAt' as timestamptz) as completed_at,
        try_cast(doc ->> '$.completedAt' as timestamptz)
            - to_milliseconds(coalesce(try_cast(doc ->> '$.executionTime' as bigint), 0)) as execution_started_at
    from source
    where try_cast(doc ->> '$.completedAt' as timestamptz) is not null
    qualify row_number() over (partition by doc ->> '$.endpointId', doc ->> '$.id'
                               order by source_file desc, record_no desc) = 1
)

select * from final
