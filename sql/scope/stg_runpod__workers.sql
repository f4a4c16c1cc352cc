-- grain: as staging.stg_runpod__workers, for the window: the workers of scope.stg_runpod__jobs
-- (int_serverless__worker_sessions takes their startedAt). Read through the span of those
-- workers' rows (meta.bounds__stg_runpod__workers, `-- bounds:` in stg_runpod__workers.sql),
-- not every worker of history.
with keys as (
    select distinct endpoint_id, worker_id
    from scope.stg_runpod__jobs
    where worker_id is not null
),

span as (
    select min(b.lo) as lo, max(b.hi) as hi
    from meta.bounds__stg_runpod__workers b
    semi join (select hash(endpoint_id, worker_id) as h from keys) k using (h)
),

final as (
    select w.*
    from staging.stg_runpod__workers w
    cross join span s
    semi join keys k on k.endpoint_id is not distinct from w.endpoint_id and k.worker_id = w.worker_id
    where (w.last_seen_at >= s.lo and w.last_seen_at <= s.hi) or w.last_seen_at is null
)

select * from final
