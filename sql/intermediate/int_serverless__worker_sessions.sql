-- grain: one row per serverless worker session (endpoint_id, worker_id), from the job records the
-- submitter kept and worker snapshots. A worker session starts at the worker's startedAt (else its
-- first job's submission) and is expected to stop idle_timeout after its last request.
with jobs as (
    -- only the columns used: the window below materialises every column it carries (2 M rows a day)
    select endpoint_id, worker_id, execution_ms, submitted_at,
           epoch_ms(execution_started_at) as exec_start_ms, epoch_ms(completed_at) as done_ms
    from staging.stg_runpod__jobs
    where worker_id is not null
),

gaps as (
    select *,
           exec_start_ms - lag(done_ms) over (partition by endpoint_id, worker_id
                                              order by exec_start_ms) as gap_before_ms
    from jobs
),

per_worker as (
    select
        endpoint_id, worker_id,
        min(exec_start_ms) as first_exec_ms,
        max(done_ms) as last_done_ms,
        sum(execution_ms) as execution_ms,
        coalesce(sum(greatest(gap_before_ms, 0)), 0) as between_ms,
        min(epoch_ms(submitted_at)) as first_submitted_ms,
        count(*) as jobs
    from gaps
    group by all
),

final as (
    select
        p.*,
        coalesce(epoch_ms(least(w.started_at, r.started_at)),
                 least(p.first_submitted_ms, p.first_exec_ms)) as start_ms,
        w.started_at is null and r.started_at is null as start_assumed,
        coalesce(e.idle_timeout_seconds, cfg_int('serverless_idle_timeout_seconds')) * 1000 as idle_timeout_ms
    from per_worker p
    left join staging.stg_runpod__workers w using (endpoint_id, worker_id)
    -- workers seen in responses that do not name their endpoint, tied to one by other inputs
    left join staging.stg_runpod__worker_endpoints r using (endpoint_id, worker_id)
    left join staging.stg_runpod__endpoints e using (endpoint_id)
)

select
    *,
    greatest(first_exec_ms - start_ms, 0) as cold_start_ms,
    -- rounding: the billed duration is rounded up to a whole second
    (1000 - (last_done_ms + idle_timeout_ms - start_ms) % 1000) % 1000 as rounding_est_ms,
    cast(make_timestamp(start_ms * 1000) as date) as day
from final
