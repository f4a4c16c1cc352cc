-- grain: one row per serverless worker (endpoint_id, worker_id) whose sessions the window needs:
-- it completed a job in the window or started in it, or a job of it was submitted or began in the
-- window and completed after it (a worker not seen started has its session start at that job, in
-- the window; a run the next morning has the jobs completed after midnight, a rerun of an older
-- day the later days), or the workers API showed it up in the window after it started before it
-- (a worker that did not scale down: SERVERLESS_STUCK_WORKER). A copy: the jobs' and the
-- workers' scopes both read it.
with final as (
    select endpoint_id, worker_id
    from staging.stg_runpod__jobs cross join scope.window w
    where completed_at >= w.lo and completed_at < w.hi and worker_id is not null
    union
    select endpoint_id, worker_id
    from staging.stg_runpod__jobs cross join scope.window w
    -- (only jobs completed after the window: row-group statistics skip the rest)
    where completed_at >= w.hi and least(submitted_at, execution_started_at) < w.hi
      and worker_id is not null
    union
    select endpoint_id, worker_id
    from staging.stg_runpod__workers cross join scope.window w
    where started_at >= w.lo and started_at < w.hi and endpoint_id is not null
    union
    select endpoint_id, worker_id
    from staging.stg_runpod__worker_endpoints cross join scope.window w
    where started_at >= w.lo and started_at < w.hi and endpoint_id is not null
    union
    select endpoint_id, worker_id
    from staging.stg_runpod__workers cross join scope.window w
    where last_seen_at >= w.lo and started_at < w.lo and endpoint_id is not null
    union
    select endpoint_id, worker_id
    from staging.stg_runpod__worker_endpoints cross join scope.window w
    where last_seen_at >= w.lo and started_at < w.lo and endpoint_id is not null
)

select * from final
